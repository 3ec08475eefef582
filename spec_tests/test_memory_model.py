"""cutile.interp.memory_model against slow per-element NumPy references (§6, §8, §9, §20)."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cutile
from cutile.enums import PaddingMode
from cutile.interp.memory_model import (
    OutOfBounds,
    PoisonObserved,
    atomic_positions,
    gather,
    poison_fill,
    scatter,
    tile_space_load,
    tile_space_store,
)
from cutile.padding import padding_fill

P = PaddingMode
BF16 = np.dtype(ml_dtypes.bfloat16)
F8 = np.dtype(ml_dtypes.float8_e5m2)
FLOAT_DTYPES = [np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64), F8]
ALL_DTYPES = FLOAT_DTYPES + [np.dtype(d) for d in (
    np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64)]


# ----------------------------------------------------------------------------------------------
# references and helpers


def bits(a) -> np.ndarray:
    """Bit pattern of an array, so NaN, -0.0 and ml_dtypes compare exactly."""
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}")


def assert_bits_equal(a, b):
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    np.testing.assert_array_equal(bits(a), bits(b))


def values(shape, dtype, start=1) -> np.ndarray:
    """Distinct, exactly representable values (small ints), C-contiguous."""
    n = int(np.prod(shape))
    v = np.arange(start, start + n) % (8 if dtype == F8 else 2048)
    if dtype == np.bool_:
        v = v % 2
    return v.astype(dtype).reshape(shape)


def ref_load(a, index, shape, order, steps, fill):
    """Per-element R-LOAD-2 / R-VIEW-2: t[x] = A'[i*step + x], fill outside (R-LOAD-4)."""
    ap = np.transpose(a, order)
    steps = shape if steps is None else steps
    out = np.empty(shape, a.dtype)
    oob = np.zeros(shape, bool)
    for x in np.ndindex(*shape):
        pos = tuple(i * s + xx for i, s, xx in zip(index, steps, x))
        if all(0 <= p < n for p, n in zip(pos, ap.shape)):
            out[x] = ap[pos]
        else:
            out[x] = fill
            oob[x] = True
    return out, oob


def ref_store(a, index, tile, order, steps):
    """Per-element R-STORE-3/5: in-bounds lanes written through transpose(a, order)."""
    ap = np.transpose(a, order)
    steps = tile.shape if steps is None else steps
    for x in np.ndindex(*tile.shape):
        pos = tuple(i * s + xx for i, s, xx in zip(index, steps, x))
        if all(0 <= p < n for p, n in zip(pos, ap.shape)):
            ap[pos] = tile[x]


def in_bounds(pos, shape):
    return all(0 <= int(p) < n for p, n in zip(pos, shape))


def ref_gather(a, idx, mask, padding):
    S = padding.shape
    out = np.array(padding, dtype=a.dtype)
    for k in np.ndindex(*S):
        pos = tuple(int(ix[k]) for ix in idx)
        if (mask is None or mask[k]) and in_bounds(pos, a.shape):
            out[k] = a[pos]
    return out


def ref_scatter(a, idx, value, mask):
    """Row-major application: the last writer of an element survives (module's documented rule)."""
    for k in np.ndindex(*value.shape):
        pos = tuple(int(ix[k]) for ix in idx)
        if (mask is None or mask[k]) and in_bounds(pos, a.shape):
            a[pos] = value[k]


# Layouts: (base shape from view shape, base memory order, view from base).  Each view lies
# strictly inside its base, so the rest of the base is a guard band that must stay untouched.
LAYOUTS = {
    "c_inner": (lambda s: tuple(n + 3 for n in s), "C",
                lambda b, s: b[tuple(slice(1, 1 + n) for n in s)]),
    "fortran": (lambda s: tuple(n + 3 for n in s), "F",
                lambda b, s: b[tuple(slice(2, 2 + n) for n in s)]),
    "strided": (lambda s: tuple(2 * n + 3 for n in s), "C",
                lambda b, s: b[tuple(slice(1, 1 + 2 * n, 2) for n in s)]),
    "negative": (lambda s: tuple(n + 3 for n in s), "C",
                 lambda b, s: b[tuple(slice(n, 0, -1) for n in s)]),
    "transposed": (lambda s: tuple(n + 2 for n in reversed(s)), "C",
                   lambda b, s: b[tuple(slice(1, 1 + n) for n in reversed(s))].T),
    "fortran_neg": (lambda s: tuple(2 * n + 4 for n in s), "F",
                    lambda b, s: b[tuple(slice(2 * n, 0, -2) for n in s)]),
}
GUARD = 99


def make_view(layout, shape, dtype):
    base_shape, mem_order, view_of = LAYOUTS[layout]
    base = np.full(base_shape(shape), GUARD, dtype=dtype, order=mem_order)
    view = view_of(base, shape)
    assert view.shape == tuple(shape) and np.shares_memory(view, base)
    view[...] = values(shape, dtype)
    return base, (lambda b: view_of(b, shape))


def load(a, index, shape, order=None, steps=None, padding=P.ZERO, check_bounds=True, **kw):
    order = tuple(range(a.ndim)) if order is None else order
    return tile_space_load(a, index, shape, order=order, steps=steps, padding=padding,
                           check_bounds=check_bounds, **kw)


def store(a, index, tile, order=None, steps=None, check_bounds=True, **kw):
    order = tuple(range(a.ndim)) if order is None else order
    return tile_space_store(a, index, np.asarray(tile, a.dtype), order=order, steps=steps,
                            check_bounds=check_bounds, **kw)


# ----------------------------------------------------------------------------------------------
# seed examples


def test_seed_tile_space_index():
    # R-SPACE-1: array (10,16), tile (2,4), index (1,2) covers rows 2-3, columns 8-11.
    a = np.arange(160).reshape(10, 16)
    t, poison = load(a, (1, 2), (2, 4))
    np.testing.assert_array_equal(t, a[2:4, 8:12])
    assert poison is None and t.dtype == a.dtype


def test_seed_order_F():
    # R-SPACE-2: load(a,(2,0),(1,4),order='F') == [[2,6,10,14]].
    a = np.arange(16).reshape(4, 4)
    t, _ = load(a, (2, 0), (1, 4), order=(1, 0))
    np.testing.assert_array_equal(t, [[2, 6, 10, 14]])


def test_seed_order_permutation():
    # R-SPACE-2: a = arange(8).reshape(2,2,2), order (0,2,1).
    a = np.arange(8).reshape(2, 2, 2)
    t, _ = load(a, (1, 0, 0), (1, 2, 2), order=(0, 2, 1))
    np.testing.assert_array_equal(t, [[[4, 6], [5, 7]]])


def test_seed_store_discard():
    # R-STORE-3: out-of-bounds lanes of a partial tile are discarded.
    x = np.zeros(6, np.int32)
    store(x, (0,), np.ones(4))
    store(x, (1,), 2 * np.ones(4))
    np.testing.assert_array_equal(x, [1, 1, 1, 1, 2, 2])


def test_seed_store_order():
    # R-STORE-5: store with order=P writes through np.transpose(array, P).
    a = np.zeros((4, 4), np.int64)
    store(a, (2, 0), [[1, 2, 3, 4]], order=(1, 0))
    expected = np.zeros((4, 4), np.int64)
    expected[:, 2] = [1, 2, 3, 4]
    np.testing.assert_array_equal(a, expected)


def test_arr_slice_example():
    # R-ARR-2: load(x.slice(0,1,3),(0,0),(2,4)) == [[4..7],[8..11]]  (slices are views).
    x = np.arange(16).reshape(4, 4)
    t, _ = load(x[1:3], (0, 0), (2, 4))
    np.testing.assert_array_equal(t, [[4, 5, 6, 7], [8, 9, 10, 11]])


@pytest.mark.parametrize("step, index, expected", [
    (2, 0, [0, 1, 2, 3]), (2, 1, [2, 3, 4, 5]), (2, 6, [12, 13, 14, 15]),
    (2, 7, [14, 15, -1, -1]),            # 8 tiles (R-VIEW-4): the last one is partial
    (8, 0, [0, 1, 2, 3]), (8, 1, [8, 9, 10, 11]),  # gaps (2 tiles)
    (3, 5, [15, -1, -1, -1]),
])
def test_view_steps_load(step, index, expected):
    # R-VIEW-2 / R-VIEW-4: tile i starts at i*step and spans tile_shape elements.
    a = np.arange(16, dtype=np.int32)
    t, poison = load(a, (index,), (4,), steps=(step,), padding=P.UNDETERMINED)
    exp = np.array(expected)
    np.testing.assert_array_equal(t[exp >= 0], exp[exp >= 0])
    if (exp < 0).any():
        np.testing.assert_array_equal(poison, exp < 0)
    else:
        assert poison is None


def test_view_steps_past_end_is_ub1():
    # R-UB-1: with N=16, tile 4, step 8 there are 2 tiles; tile 2 starts at 16.
    with pytest.raises(OutOfBounds) as e:
        load(np.arange(16), (2,), (4,), steps=(8,))
    assert e.value.rule == "R-UB-1"


def test_view_overlapping_stores_program_order():
    # R-VIEW-6: with overlapping tiles later stores overwrite earlier ones.
    x = np.zeros(8, np.int32)
    store(x, (0,), [1, 1, 1, 1], steps=(2,))
    store(x, (1,), [2, 2, 2, 2], steps=(2,))
    store(x, (3,), [3, 3, 3, 3], steps=(2,))  # elements 6..9, 8..9 discarded
    np.testing.assert_array_equal(x, [1, 1, 2, 2, 2, 2, 3, 3])


def test_view_steps_2d_and_gapped_store():
    # R-VIEW-2: steps per axis; a gapped store leaves the gap untouched.
    a = np.arange(48).reshape(6, 8)
    t, _ = load(a, (1, 2), (2, 2), steps=(3, 3))
    np.testing.assert_array_equal(t, a[3:5, 6:8])
    x = np.zeros(10, np.int8)
    for i in range(3):
        store(x, (i,), [i + 1, i + 1], steps=(4,))
    np.testing.assert_array_equal(x, [1, 1, 0, 0, 2, 2, 0, 0, 3, 3])


def test_negative_index_with_steps_is_entirely_outside():
    # R-UB-1 "including negative tile indices": with tile 4 / step 2, index -1 spans [-2, 2),
    # yet the whole tile is out of bounds (cuda.tile 1.7 on an H100 pads all four lanes and
    # stores nothing).  Strict: R-UB-1; flag off: the padding fill (as 1.7), write dropped.
    a = np.arange(16, dtype=np.float32)
    with pytest.raises(OutOfBounds) as e:
        load(a, (-1,), (4,), steps=(2,), padding=P.NEG_INF)
    assert e.value.rule == "R-UB-1"
    with pytest.raises(OutOfBounds) as e:
        store(a, (-1,), [7, 7, 8, 9], steps=(2,))
    assert e.value.rule == "R-UB-1"
    t, poison = load(a, (-1,), (4,), steps=(2,), padding=P.NEG_INF, strict=False)
    assert poison is None and (t == -np.inf).all()
    store(a, (-1,), [7, 7, 8, 9], steps=(2,), strict=False)
    np.testing.assert_array_equal(a, np.arange(16))
    b = np.arange(12, dtype=np.int32).reshape(3, 4)
    with pytest.raises(OutOfBounds) as e:
        load(b, (0, -1), (2, 4), steps=(2, 2), padding=P.ZERO)
    assert e.value.rule == "R-UB-1"


# ----------------------------------------------------------------------------------------------
# padding modes (R-PAD-1 / R-PAD-3)


EXPECTED_FILL = {P.ZERO: 0.0, P.NEG_ZERO: -0.0, P.NAN: np.nan, P.POS_INF: np.inf,
                 P.NEG_INF: -np.inf}


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
@pytest.mark.parametrize("mode", list(EXPECTED_FILL), ids=lambda m: m.name)
def test_padding_modes_float(dtype, mode):
    # R-PAD-1: out-of-bounds lanes get the mode's value, in-bounds lanes are read normally.
    a = values((3, 5), dtype)
    t, poison = load(a, (1, 1), (2, 4), padding=mode)
    assert poison is None and t.dtype == dtype
    fill = np.array(EXPECTED_FILL[mode]).astype(dtype)
    exp = np.full((2, 4), fill, dtype)
    exp[0, 0] = a[2, 4]
    assert_bits_equal(t, exp)
    if mode is P.NEG_ZERO:
        assert np.signbit(t[1, 3].astype(np.float32))
    if mode is P.ZERO:
        assert not np.signbit(t[1, 3].astype(np.float32))


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_padding_zero_and_undetermined_all_dtypes(dtype):
    # R-PAD-1 ZERO (False for bool) and R-PAD-3 UNDETERMINED poison + exact mask.
    a = values((5,), dtype)
    t, poison = load(a, (1,), (4,), padding=P.ZERO)
    assert poison is None
    assert_bits_equal(t, np.array([a[4], 0, 0, 0]).astype(dtype))
    t, poison = load(a, (1,), (4,), padding=P.UNDETERMINED)
    np.testing.assert_array_equal(poison, [False, True, True, True])
    assert t[0] == a[4]
    pv = poison_fill(dtype)
    assert_bits_equal(t[1:], np.full(3, pv, dtype))
    if dtype.kind == "b":
        assert pv  # R-PAD-3: not the benign value False
    elif dtype.kind in "iu":
        assert pv != 0 and set(np.array(pv).tobytes()) == {0x5A}
    else:
        assert np.isnan(np.float32(pv))
    # CUTILE_STRICT=0: the same mask, zeros in the lanes (cutile.padding, what the GPU backend
    # reads)
    t, poison = load(a, (1,), (4,), padding=P.UNDETERMINED, strict=False)
    np.testing.assert_array_equal(poison, [False, True, True, True])
    assert_bits_equal(t, np.array([a[4], 0, 0, 0]).astype(dtype))


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.bool_], ids=str)
@pytest.mark.parametrize("mode", [P.NEG_ZERO, P.NAN, P.POS_INF, P.NEG_INF])
def test_float_padding_on_int_rejected(dtype, mode):
    # R-PAD-2 (cutile): the type checker rejects these; the model asserts.
    with pytest.raises(AssertionError):
        padding_fill(dtype, mode)


def test_padding_fill_scalars():
    assert_bits_equal(np.array(padding_fill(np.float16, P.NEG_ZERO)), np.array(-0.0, np.float16))
    assert padding_fill(np.int64, P.ZERO) == 0
    assert padding_fill(np.bool_, P.ZERO) is np.False_ or not padding_fill(np.bool_, P.ZERO)
    assert np.isposinf(np.float32(padding_fill(BF16, P.POS_INF)))


def test_full_tile_poison_mask_none_and_copy():
    # A fully in-bounds UNDETERMINED load has no poison; the tile is a fresh C-contiguous copy.
    a = np.asfortranarray(np.arange(32, dtype=np.float32).reshape(4, 8))
    t, poison = load(a, (1, 0), (2, 4), order=(1, 0), padding=P.UNDETERMINED)
    assert poison is None and t.flags.c_contiguous
    np.testing.assert_array_equal(t, a.T[2:4, 0:4])
    t[...] = -1
    assert (a >= 0).all()


# ----------------------------------------------------------------------------------------------
# partial tiles on odd layouts, guard band untouched


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", [np.dtype(np.int32), np.dtype(np.float16), BF16], ids=str)
@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_partial_tiles_layouts(layout, dtype, order):
    # R-LOAD-4 / R-STORE-3 on non-contiguous, Fortran, negative-stride and transposed views.
    shape = (5, 7)
    base, view_of = make_view(layout, shape, dtype)
    a = view_of(base)
    ap_shape = tuple(shape[p] for p in order)
    tshape = (2, 4)
    for index in itertools.product(range(-(-ap_shape[0] // 2)), range(-(-ap_shape[1] // 4))):
        t, poison = load(a, index, tshape, order=order, padding=P.UNDETERMINED)
        exp, oob = ref_load(a, index, tshape, order, None, poison_fill(dtype))
        assert_bits_equal(t, exp)
        if oob.any():
            np.testing.assert_array_equal(poison, oob)
        else:
            assert poison is None
        # store a fresh tile at the same place; compare the whole base (guard band included)
        before = base.copy()
        tile = values(tshape, dtype, start=500)
        store(a, index, tile, order=order)
        expected = before.copy()
        ref_store(view_of(expected), index, tile, order, None)
        assert_bits_equal(base, expected)
    # explicit guard band check: everything outside the view still holds GUARD
    outside = np.ones(base.shape, bool)
    view_of(outside)[...] = False
    assert (base[outside] == GUARD).all()


def test_store_partial_into_slice_of_larger_buffer():
    # R-STORE-3: discarded lanes must not leak into neighbouring memory of the parent buffer.
    buf = np.full(12, -1, np.int32)
    x = buf[2:8]  # extent 6
    store(x, (1,), [5, 6, 7, 8])
    np.testing.assert_array_equal(buf, [-1, -1, -1, -1, -1, -1, 5, 6, -1, -1, -1, -1])


# ----------------------------------------------------------------------------------------------
# undefined behaviour (R-UB-1, R-UB-2, R-UB-3)


@pytest.mark.parametrize("index", [(5, 0), (0, 4), (-1, 0), (0, -1), (-3, -3), (100, 100)])
def test_fully_outside_is_ub1(index):
    # R-UB-1: no in-bounds element, for load and store; the array is left untouched.
    a = np.arange(160, dtype=np.float32).reshape(10, 16)
    before = a.copy()
    with pytest.raises(OutOfBounds) as e:
        load(a, index, (2, 4))
    assert e.value.rule == "R-UB-1"
    assert "(2, 4)" in str(e.value) and "(10, 16)" in str(e.value) and str(index) in str(e.value)
    with pytest.raises(OutOfBounds) as e:
        store(a, index, np.zeros((2, 4)))
    assert e.value.rule == "R-UB-1"
    np.testing.assert_array_equal(a, before)


def test_zero_extent_array_is_a_no_op_not_ub1():
    # cuda.tile 1.7 runs loads/stores on an array with no elements (docs/decisions.md): the
    # padding value in every lane, nothing written; a negative tile index is still R-UB-1
    t, poison = load(np.zeros((0, 4)), (0, 0), (1, 4), padding=P.ZERO)
    assert poison is None and t.shape == (1, 4) and (t == 0).all()
    empty = np.zeros((0, 4))
    store(empty, (0, 0), np.ones((1, 4)))
    with pytest.raises(OutOfBounds) as e:
        load(np.zeros((0, 4)), (-1, 0), (1, 4))
    assert e.value.rule == "R-UB-1"


def test_ub1_strict_off():
    # §6.6: with the strict flag off a tile entirely outside reads its padding fill (zero,
    # still marked poison, for UNDETERMINED), writes are dropped.
    a = np.arange(6, dtype=np.int16)
    t, poison = load(a, (3,), (2,), padding=P.ZERO, strict=False)
    assert poison is None and (t == 0).all()
    t, poison = load(a, (3,), (2,), padding=P.UNDETERMINED, strict=False)
    assert poison.all() and (bits(t) == 0).all()
    store(a, (3,), [9, 9], strict=False)
    np.testing.assert_array_equal(a, np.arange(6))


def test_check_bounds_false():
    # R-LOAD-5 / R-UB-3: fine while every element is in bounds, UB otherwise.
    a = np.arange(10, dtype=np.float64)
    t, poison = load(a, (1,), (4,), padding=P.ZERO, check_bounds=False)
    np.testing.assert_array_equal(t, [4, 5, 6, 7])
    assert poison is None
    with pytest.raises(OutOfBounds) as e:
        load(a, (2,), (4,), padding=P.ZERO, check_bounds=False)
    assert e.value.rule == "R-UB-3"
    with pytest.raises(OutOfBounds) as e:
        load(a, (4,), (4,), steps=(2,), padding=P.ZERO, check_bounds=False)  # span [8, 12)
    assert e.value.rule == "R-UB-3"
    with pytest.raises(OutOfBounds) as e:
        store(a, (2,), np.ones(4), check_bounds=False)
    assert e.value.rule == "R-UB-3"
    np.testing.assert_array_equal(a, np.arange(10))
    store(a, (0,), -np.ones(4), check_bounds=False)
    np.testing.assert_array_equal(a[:5], [-1, -1, -1, -1, 4])
    # strict off: OOB lanes are UNDETERMINED (poisoned, read as zeros) whatever the padding mode
    t, poison = load(a, (2,), (4,), padding=P.NAN, check_bounds=False, strict=False)
    np.testing.assert_array_equal(poison, [False, False, True, True])
    assert_bits_equal(t[2:], np.zeros(2))


def test_store_poison():
    # R-PAD-3 / R-UB-2: poisoned lanes stored in bounds raise; out of bounds they are discarded.
    a = np.arange(6, dtype=np.float32)
    t, poison = load(a, (1,), (4,), padding=P.UNDETERMINED)  # lanes 6,7 poisoned
    store(a, (1,), t * 2, poison=poison)  # load-modify-store idiom: fine
    np.testing.assert_array_equal(a, [0, 1, 2, 3, 8, 10])
    with pytest.raises(PoisonObserved) as e:
        store(a, (0,), t, poison=poison)  # lanes 2,3 of the tile land in bounds
    assert e.value.rule == "R-UB-2" and isinstance(e.value, OutOfBounds)
    assert "UNDETERMINED" in str(e.value)
    np.testing.assert_array_equal(a, [0, 1, 2, 3, 8, 10])  # nothing written
    store(a, (0,), np.zeros(4), poison=np.zeros(4, bool))


def test_poison_strict_off_is_written():
    # §6.6 with the strict flag off: no R-UB-2 error; in-bounds lanes (UNDETERMINED ones
    # included) are written, out-of-bounds lanes still dropped; the result says whether a
    # poisoned lane was written (the interpreter then warns).
    buf = np.full(10, -1, np.float32)
    a = buf[2:8]
    a[:] = np.arange(6)
    t, poison = load(a, (1,), (4,), padding=P.UNDETERMINED, strict=False)
    assert store(a, (1,), t, poison=poison, strict=False) is False   # padding dropped
    assert store(a, (0,), t, poison=poison, strict=False) is True
    np.testing.assert_array_equal(a, [4, 5, 0, 0, 4, 5])
    np.testing.assert_array_equal(buf[[0, 1, 8, 9]], -1)
    assert scatter(a, (np.array([0, 1, 9]),), np.full(3, 7, np.float32), mask=None,
                   check_bounds=True, poison=np.array([True, False, True]), strict=False)
    np.testing.assert_array_equal(a[:2], [7, 7])
    assert not scatter(a, (np.array([0, 9]),), np.full(2, 8, np.float32), mask=None,
                       check_bounds=True, poison=np.array([False, True]), strict=False)


def test_gather_with_accessed():
    # The interpreter drops poison of padding values at positions read from the array.
    a = np.arange(5, dtype=np.int32)
    r, acc = gather(a, (np.array([-1, 0, 4, 5]),), mask=np.array([True, True, False, True]),
                    padding=np.full(4, 9, np.int32), check_bounds=True, with_accessed=True)
    np.testing.assert_array_equal(r, [9, 0, 9, 9])
    np.testing.assert_array_equal(acc, [False, True, False, False])
    r, acc = gather(np.array(3, np.int16), (), mask=None, padding=np.zeros(2, np.int16),
                    check_bounds=True, with_accessed=True)
    np.testing.assert_array_equal(r, [3, 3])
    assert acc.shape == (2,) and acc.all()


# ----------------------------------------------------------------------------------------------
# gather / scatter (§9)


def test_gather_basic_and_broadcast_shape():
    # R-GS-2: ind0 (M,N,1) with ind1 (M,1,K) gives (M,N,K).
    a = np.arange(30, dtype=np.int32).reshape(5, 6)
    i0 = np.arange(2 * 4).reshape(2, 4, 1) % 5
    i1 = np.arange(2 * 2).reshape(2, 1, 2) % 6
    r = gather(a, (i0, i1), mask=None, padding=np.zeros((2, 4, 2), np.int32), check_bounds=True)
    assert r.shape == (2, 4, 2) and r.dtype == np.int32
    np.testing.assert_array_equal(r, a[i0, i1])


def test_gather_negative_and_out_of_range():
    # R-GS-3: negative indices are out of bounds (no wrap-around); padding value per position.
    a = np.arange(8, dtype=np.float32)
    idx = np.array([-1, 0, 7, 8, -8, 3], np.int32)
    pad = np.array([10, 11, 12, 13, 14, 15], np.float32)  # R-GS-4 tile padding value
    r = gather(a, (idx,), mask=None, padding=pad, check_bounds=True)
    np.testing.assert_array_equal(r, [10, 0, 7, 13, 14, 3])


@pytest.mark.parametrize("idt", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
                                 np.int64, np.uint64], ids=str)
def test_gather_index_dtypes(idt):
    # R-GS-1: signed or unsigned index dtypes; extremes never wrap or overflow.
    a = np.arange(300, dtype=np.int64)
    info = np.iinfo(idt)
    idx = np.array([0, 5, info.max, info.min, 127 if info.max >= 127 else 0], dtype=idt)
    r = gather(a, (idx,), mask=None, padding=np.full(5, -7, np.int64), check_bounds=True)
    exp = [a[int(i)] if 0 <= int(i) < 300 else -7 for i in idx]
    np.testing.assert_array_equal(r, exp)


def test_gather_huge_uint64():
    # uint64 values >= 2**63 must be out of bounds, not negative-wrapped to an in-bounds index.
    a = np.arange(4, dtype=np.int32)
    idx = np.array([2**64 - 1, 2**63, 2**63 - 1, 3, 2**64 - 4], np.uint64)
    r = gather(a, (idx,), mask=None, padding=np.full(5, -1, np.int32), check_bounds=True)
    np.testing.assert_array_equal(r, [-1, -1, -1, 3, -1])
    acc, ix = atomic_positions(a, (idx,), mask=None, check_bounds=True)
    np.testing.assert_array_equal(acc, [False, False, False, True, False])
    assert ix[0].dtype == np.int64 and ix[0][3] == 3


def test_gather_mask():
    # R-GS-5: masked-out positions are not accessed (even out-of-bounds ones with
    # check_bounds=False); effective mask = mask AND in-bounds.
    a = np.arange(10, dtype=np.int16)
    idx = np.array([1, 2, 30, -4], np.int64)
    mask = np.array([True, False, True, False])
    r = gather(a, (idx,), mask=mask, padding=np.full(4, 99, np.int16), check_bounds=True)
    np.testing.assert_array_equal(r, [1, 99, 99, 99])
    r = gather(a, (idx[:2],), mask=np.array([False, True]), padding=np.zeros(2, np.int16),
               check_bounds=False)
    np.testing.assert_array_equal(r, [0, 2])
    mask = np.array([True, True, False, False])
    r = gather(a, (idx,), mask=mask, padding=np.full(4, 5, np.int16), check_bounds=False)
    np.testing.assert_array_equal(r, [1, 2, 5, 5])


def test_gather_check_bounds_false_ub3():
    # R-GS-7 / R-UB-3: negative indices count as out of bounds too.
    a = np.arange(10, dtype=np.int32)
    for bad in (-1, 10):
        with pytest.raises(OutOfBounds) as e:
            gather(a, (np.array([0, bad]),), mask=None, padding=np.zeros(2, np.int32),
                   check_bounds=False)
        assert e.value.rule == "R-UB-3" and str(bad) in str(e.value)
    r = gather(a, (np.array([0, -1]),), mask=None, padding=np.zeros(2, np.int32),
               check_bounds=False, strict=False)
    assert r[0] == 0 and bits(r)[1] == 0          # UNDETERMINED: zero with strict off


@pytest.mark.parametrize("dtype", [np.dtype(np.float16), BF16, F8], ids=str)
def test_gather_scatter_small_floats(dtype):
    a = values((4, 4), dtype)
    i0 = np.array([[0], [3], [4]])
    i1 = np.array([[1, 3, -1]])
    pad = np.full((3, 3), np.nan).astype(dtype)
    r = gather(a, (i0, i1), mask=None, padding=pad, check_bounds=True)
    exp = ref_gather(a, np.broadcast_arrays(i0, i1), None, pad)
    assert_bits_equal(r, exp)
    v = values((3, 3), dtype, start=40)
    b, e = a.copy(), a.copy()
    scatter(b, (i0, i1), v, mask=None, check_bounds=True)
    ref_scatter(e, np.broadcast_arrays(i0, i1), v, None)
    assert_bits_equal(b, e)


def test_rank0_gather_scatter():
    # R-ARRAY-4: rank-0 arrays are accessed with indices ().
    a = np.array(3.5, np.float32)
    r = gather(a, (), mask=None, padding=np.array(0, np.float32), check_bounds=True)
    assert r.shape == () and r == 3.5
    r = gather(a, (), mask=np.array(False), padding=np.array(-2, np.float32), check_bounds=True)
    assert r == -2
    scatter(a, (), np.array(7, np.float32), mask=None, check_bounds=True)
    assert a == 7
    scatter(a, (), np.array(8, np.float32), mask=np.array(False), check_bounds=False)
    assert a == 7
    acc, ix = atomic_positions(a, (), mask=None, check_bounds=True)
    assert acc.shape == () and bool(acc) and ix == ()
    with pytest.raises(PoisonObserved):
        scatter(a, (), np.array(8, np.float32), mask=None, check_bounds=True,
                poison=np.array(True))


def test_scatter_basic_oob_mask():
    # R-GS-3 / R-GS-5: out-of-bounds and masked-out positions skip the write.
    a = np.zeros(6, np.int32)
    idx = np.array([0, -1, 6, 3, 5], np.int32)
    scatter(a, (idx,), np.array([1, 2, 3, 4, 5], np.int32),
            mask=np.array([True, True, True, True, False]), check_bounds=True)
    np.testing.assert_array_equal(a, [1, 0, 0, 4, 0, 0])


def test_scatter_duplicates_last_wins():
    # R-GS-6 leaves the survivor unspecified; the model keeps the last in row-major order.
    a = np.zeros(4, np.int64)
    idx = np.array([[1, 2, 1], [2, 1, 3]])
    scatter(a, (idx,), np.arange(1, 7).reshape(2, 3), mask=None, check_bounds=True)
    np.testing.assert_array_equal(a, [0, 5, 4, 6])


def test_scatter_check_bounds_false_and_poison():
    a = np.zeros(4, np.float32)
    with pytest.raises(OutOfBounds) as e:
        scatter(a, (np.array([0, 4]),), np.ones(2, np.float32), mask=None, check_bounds=False)
    assert e.value.rule == "R-UB-3"
    assert (a == 0).all()
    # R-PAD-3: poison scattered in bounds is observed; masked-out / OOB poison is fine.
    poison = np.array([False, True, True])
    with pytest.raises(PoisonObserved) as e:
        scatter(a, (np.array([0, 1, 9]),), np.ones(3, np.float32), mask=None,
                check_bounds=True, poison=poison)
    assert e.value.rule == "R-UB-2" and (a == 0).all()
    scatter(a, (np.array([0, 1, 9]),), np.ones(3, np.float32),
            mask=np.array([True, False, True]), check_bounds=True, poison=poison)
    np.testing.assert_array_equal(a, [1, 0, 0, 0])


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_scatter_views_guard_band(layout):
    # Scatter through non-contiguous / negative-stride views touches only the view's elements.
    base, view_of = make_view(layout, (3, 4), np.dtype(np.int32))
    expected = base.copy()
    i0 = np.array([0, 2, 3, -1, 1, 2])
    i1 = np.array([0, 3, 0, 0, 4, 1])
    v = np.arange(100, 106, dtype=np.int32)
    scatter(view_of(base), (i0, i1), v, mask=None, check_bounds=True)
    ref_scatter(view_of(expected), (i0, i1), v, None)
    np.testing.assert_array_equal(base, expected)


def test_atomic_positions_add_example():
    # R-ATOM-2: x = ones(4,int32); atomic_add(x, arange(4), full(4,10)) -> old [1,1,1,1],
    # x == [11,11,11,11]; simulated element by element as the interpreter will.
    x = np.ones(4, np.int32)
    acc, (ix,) = atomic_positions(x, (np.arange(4, dtype=np.uint32),), mask=None,
                                  check_bounds=True)
    old = np.zeros(4, np.int32)  # R-ATOM-6 (cutile): 0 for non-accessed positions
    for k in np.ndindex(*acc.shape):
        if acc[k]:
            old[k] = x[ix[k]]
            x[ix[k]] += 10
    np.testing.assert_array_equal(old, [1, 1, 1, 1])
    np.testing.assert_array_equal(x, [11, 11, 11, 11])


def test_atomic_positions_bounds_and_mask():
    # R-ATOM-6: out-of-bounds (incl. negative) positions perform no operation.
    x = np.zeros((3, 3), np.int64)
    i0 = np.array([[0], [2], [-1]], np.int8)
    i1 = np.array([[0, 2, 3]], np.int64)
    mask = np.array([[True, False, True]])
    acc, ix = atomic_positions(x, (i0, i1), mask=mask, check_bounds=True)
    assert acc.shape == (3, 3) and all(i.shape == (3, 3) and i.dtype == np.int64 for i in ix)
    np.testing.assert_array_equal(acc, [[1, 0, 0], [1, 0, 0], [0, 0, 0]])
    with pytest.raises(OutOfBounds) as e:
        atomic_positions(x, (i0, i1), mask=mask, check_bounds=False)
    assert e.value.rule == "R-UB-3"
    acc, _ = atomic_positions(x, (i0[:2], i1[:, :2]), mask=None, check_bounds=False)
    assert acc.all()


# ----------------------------------------------------------------------------------------------
# property tests against the per-element references


@st.composite
def tile_case(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=ndim, max_size=ndim)))
    order = tuple(draw(st.permutations(range(ndim))))
    tshape = tuple(draw(st.lists(st.sampled_from([1, 2, 4]), min_size=ndim, max_size=ndim)))
    steps = draw(st.one_of(st.none(), st.lists(st.integers(1, 5), min_size=ndim,
                                                 max_size=ndim).map(tuple)))
    index = tuple(draw(st.lists(st.integers(-3, 6), min_size=ndim, max_size=ndim)))
    layout = draw(st.sampled_from(list(LAYOUTS)))
    dtype = draw(st.sampled_from([np.dtype(np.int32), np.dtype(np.float64), BF16,
                                  np.dtype(np.bool_)]))
    return shape, order, tshape, steps, index, layout, dtype


def _ref_outside(shape, order, tshape, steps, index):
    ap_shape = tuple(shape[p] for p in order)
    steps = tshape if steps is None else steps
    # R-UB-1: a negative tile index is outside even when steps < tile make its span overlap.
    return any(i < 0 or i * s >= n for i, s, n in zip(index, steps, ap_shape))


@settings(max_examples=50, deadline=None)
@given(tile_case(), st.sampled_from([P.UNDETERMINED, P.ZERO, P.NAN]), st.booleans())
def test_property_load(case, mode, check_bounds):
    shape, order, tshape, steps, index, layout, dtype = case
    if mode is P.NAN and dtype.kind in "biu":
        mode = P.ZERO
    base, view_of = make_view(layout, shape, dtype)
    a = view_of(base)
    before = base.copy()
    if _ref_outside(shape, order, tshape, steps, index):
        with pytest.raises(OutOfBounds) as e:
            load(a, index, tshape, order, steps, mode, check_bounds)
        assert e.value.rule == "R-UB-1"
        return
    exp, oob = ref_load(a, index, tshape, order, steps, padding_fill(dtype, mode))
    if not check_bounds and oob.any():
        with pytest.raises(OutOfBounds) as e:
            load(a, index, tshape, order, steps, mode, check_bounds)
        assert e.value.rule == "R-UB-3"
        return
    t, poison = load(a, index, tshape, order, steps, mode, check_bounds)
    assert_bits_equal(t, exp)
    if mode is P.UNDETERMINED and oob.any():
        np.testing.assert_array_equal(poison, oob)
    else:
        assert poison is None
    assert_bits_equal(base, before)  # loads never write


@settings(max_examples=50, deadline=None)
@given(tile_case(), st.booleans(), st.booleans())
def test_property_store(case, check_bounds, with_poison):
    shape, order, tshape, steps, index, layout, dtype = case
    base, view_of = make_view(layout, shape, dtype)
    before = base.copy()
    tile = values(tshape, dtype, start=700)
    poison = None
    if with_poison:  # poison the lanes a load at the same place would have padded
        _, poison = ref_load(view_of(base), index, tshape, order, steps, 0)
    outside = _ref_outside(shape, order, tshape, steps, index)
    _, oob = ref_load(view_of(base), index, tshape, order, steps, 0)
    if outside or (not check_bounds and oob.any()):
        with pytest.raises(OutOfBounds) as e:
            store(view_of(base), index, tile, order, steps, check_bounds, poison=poison)
        assert e.value.rule == ("R-UB-1" if outside else "R-UB-3")
        assert_bits_equal(base, before)
        return
    store(view_of(base), index, tile, order, steps, check_bounds, poison=poison)
    expected = before.copy()
    ref_store(view_of(expected), index, tile, order, steps)
    assert_bits_equal(base, expected)


@st.composite
def gs_case(draw):
    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=ndim, max_size=ndim)))
    S = tuple(draw(st.lists(st.sampled_from([1, 2, 4]), min_size=0, max_size=3)))
    if ndim == 0:
        S = ()
    idt = draw(st.sampled_from([np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64]))
    info = np.iinfo(idt)
    elems = st.one_of(st.integers(-2, 6), st.sampled_from([int(info.min), int(info.max)]))
    elems = elems.filter(lambda v: info.min <= v <= info.max)
    idx = []
    for _ in range(ndim):  # each index array broadcastable to S
        ishape = tuple(draw(st.sampled_from([n, 1])) for n in S)
        n = int(np.prod(ishape))
        idx.append(np.array(draw(st.lists(elems, min_size=n, max_size=n)), idt).reshape(ishape))
    mask = draw(st.one_of(st.none(), st.lists(st.booleans(), min_size=int(np.prod(S)),
                                              max_size=int(np.prod(S)))))
    if mask is not None:
        mask = np.array(mask, bool).reshape(S)
    layout = draw(st.sampled_from(list(LAYOUTS))) if ndim else None
    return shape, S, tuple(idx), mask, layout


def _gs_array(shape, layout, dtype):
    if not shape:
        base = np.array(5, dtype)
        return base, (lambda b: b)
    return make_view(layout, shape, dtype)


@settings(max_examples=50, deadline=None)
@given(gs_case(), st.booleans())
def test_property_gather(case, check_bounds):
    shape, S, idx, mask, layout = case
    base, view_of = _gs_array(shape, layout, np.dtype(np.float32))
    a = view_of(base)
    pad = np.arange(int(np.prod(S)), dtype=np.float32).reshape(S) - 100
    bidx = tuple(np.broadcast_to(i, S) for i in idx)
    want = np.ones(S, bool) if mask is None else mask
    oob = np.array([not in_bounds(tuple(int(i[k]) for i in bidx), shape)
                    for k in np.ndindex(*S)], bool).reshape(S)
    if not check_bounds and (want & oob).any():
        with pytest.raises(OutOfBounds) as e:
            gather(a, idx, mask=mask, padding=pad, check_bounds=check_bounds)
        assert e.value.rule == "R-UB-3"
        return
    r = gather(a, idx, mask=mask, padding=pad, check_bounds=check_bounds)
    assert_bits_equal(r, ref_gather(a, bidx, mask, pad))
    acc, ix = atomic_positions(a, bidx, mask=mask, check_bounds=check_bounds)
    np.testing.assert_array_equal(acc, want & ~oob)
    for k in zip(*np.nonzero(acc)) if S else ([()] if acc else []):
        assert tuple(int(i[k]) for i in ix) == tuple(int(i[k]) for i in bidx)


@settings(max_examples=50, deadline=None)
@given(gs_case(), st.booleans())
def test_property_scatter(case, check_bounds):
    shape, S, idx, mask, layout = case
    base, view_of = _gs_array(shape, layout, np.dtype(np.int16))
    before = base.copy()
    v = (np.arange(int(np.prod(S))) + 300).astype(np.int16).reshape(S)
    bidx = tuple(np.broadcast_to(i, S) for i in idx)
    want = np.ones(S, bool) if mask is None else mask
    oob = np.array([not in_bounds(tuple(int(i[k]) for i in bidx), shape)
                    for k in np.ndindex(*S)], bool).reshape(S)
    if not check_bounds and (want & oob).any():
        with pytest.raises(OutOfBounds) as e:
            scatter(view_of(base), idx, v, mask=mask, check_bounds=check_bounds)
        assert e.value.rule == "R-UB-3"
        assert_bits_equal(base, before)
        return
    scatter(view_of(base), idx, v, mask=mask, check_bounds=check_bounds)
    expected = before.copy()
    ref_scatter(view_of(expected), bidx, v, mask)
    assert_bits_equal(base, expected)


@cutile.kernel
def _copy_slice(x, y, start: int, stop: int, T: cutile.Constant[int]):
    t = cutile.load(x.slice(0, start, stop), index=(0,), shape=(T,),
                    padding_mode=cutile.PaddingMode.ZERO)
    cutile.store(y.slice(0, start, stop), index=(0,), tile=t)
    cutile.store(y, index=(1,), tile=t + 1)


def test_load_store_on_an_empty_slice_is_a_no_op():
    # R-UB-1 does not apply to an array with no elements: cuda.tile 1.7 runs it (decisions.md)
    x = np.arange(16, dtype=np.float32)
    y = np.zeros(16, np.float32)
    cutile.launch(None, (1,), _copy_slice, (x, y, 4, 4, 8))
    np.testing.assert_array_equal(y, np.r_[np.zeros(8), np.ones(8)].astype(np.float32))

"""``ct.gather`` / ``ct.scatter`` (spec §9, R-GS-1..7): indices, bounds, masks, padding
values, rank-0 arrays, broadcasting and errors.  References are computed with NumPy."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import cutile as ct


def ref_gather(a, idx, mask=None, pad=0):
    """R-GS-2/3/5: per position, read a[idx] when masked in and in bounds, else pad."""
    idx = [np.asarray(i) for i in idx]
    shape = np.broadcast_shapes(*(i.shape for i in idx))
    idx = [np.broadcast_to(i, shape).astype(object) for i in idx]  # exact, no wrap-around
    mask = np.ones(shape, bool) if mask is None else np.broadcast_to(mask, shape)
    out = np.array(np.broadcast_to(np.asarray(pad, a.dtype), shape))
    for k in np.ndindex(*shape):
        pos = tuple(int(i[k]) for i in idx)
        if mask[k] and all(0 <= p < n for p, n in zip(pos, a.shape)):
            out[k] = a[pos]
    return out


# -- gather --------------------------------------------------------------------------------------
@ct.kernel
def gather_1d(x, idx, out, TILE: ct.Constant[int]):
    i = ct.load(idx, (0,), (TILE,))
    ct.store(out, (0,), ct.gather(x, i, padding_value=-7))


@pytest.mark.parametrize("idt", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                                 np.uint32, np.uint64])
def test_gather_index_dtypes_and_bounds(idt):
    # R-GS-1 (signed or unsigned index tiles), R-GS-3 (negative and >= extent are OOB: padding).
    x = np.arange(100, 110, dtype=np.int32)
    info = np.iinfo(idt)
    vals = [0, 9, 10, 3, 127, info.max, info.min, 5]
    if info.min < 0:
        vals[6] = -1
    idx = np.array(vals, dtype=idt)
    out = np.zeros(8, np.int32)
    ct.launch(None, (1,), gather_1d, (x, idx, out, 8))
    np.testing.assert_array_equal(out, ref_gather(x, [idx], pad=-7))


def test_gather_huge_unsigned_and_int64_indices():
    # R-GS-3: uint64 values >= 2**63 and int64 values beyond the extent are out of bounds.
    x = np.arange(100, 110, dtype=np.int32)
    idx = np.array([2**64 - 1, 2**63, 2**63 - 1, 1, 0, 2**32, 2**32 + 1, 9], dtype=np.uint64)
    out = np.zeros(8, np.int32)
    ct.launch(None, (1,), gather_1d, (x, idx, out, 8))
    np.testing.assert_array_equal(out, [-7, -7, -7, 101, 100, -7, -7, 109])
    idx64 = np.array([-2**63, -10, -1, 0, 2**31, 2**40, 4, 10], dtype=np.int64)
    ct.launch(None, (1,), gather_1d, (x, idx64, out, 8))
    np.testing.assert_array_equal(out, [-7, -7, -7, 100, -7, -7, 104, -7])


@ct.kernel
def gather_scalar_index(x, out, n):
    ct.store(out, (0,), ct.gather(x, 3))           # literal
    ct.store(out, (1,), ct.gather(x, n))           # runtime int32 scalar
    ct.store(out, (2,), ct.gather(x, n + 100))     # runtime, out of bounds -> padding 0
    ct.store(out, (3,), ct.gather(x, (n - 1,), padding_value=5))  # 1-tuple form
    ct.store(out, (4,), ct.gather(x, -1, padding_value=6))        # negative literal


def test_gather_scalar_indices():
    # R-GS-1/2: a scalar index gives a 0-D result.
    x = np.arange(10, 20, dtype=np.float64)
    out = np.zeros(5)
    ct.launch(None, (1,), gather_scalar_index, (x, out, 7))
    np.testing.assert_array_equal(out, [13, 17, 0, 16, 6])


@ct.kernel
def gather_2d(x, out):
    i = ct.arange(8, dtype=ct.int32) - 2
    j = ct.arange(4, dtype=ct.int32) * 3
    t = ct.gather(x, (i[:, None], j), padding_value=-1.0)  # (8,1) with (4,) -> (8,4)
    ct.store(out, (0, 0), t)
    r = ct.gather(x, (2, j))                                # scalar row, tile columns
    ct.store(out, (8, 0), r[None, :])


def test_gather_2d_broadcast_indices():
    # R-GS-1/2: index entries broadcast (R-BCAST) to the index shape.
    x = np.arange(5 * 10, dtype=np.float32).reshape(5, 10)
    out = np.zeros((9, 4), np.float32)
    ct.launch(None, (1,), gather_2d, (x, out))
    i = np.arange(8)[:, None] - 2
    j = np.arange(4) * 3
    np.testing.assert_array_equal(out[:8], ref_gather(x, [i, j], pad=-1.0))
    np.testing.assert_array_equal(out[8], ref_gather(x, [2, j]))


@ct.kernel
def gather_masks(x, m, out):
    ind = ct.arange(8, dtype=ct.int32) * 2 - 3
    mask = ct.load(m, (0,), (8,))
    ct.store(out, (0, 0), ct.gather(x, ind, mask=mask, padding_value=-1)[None, :])
    ct.store(out, (1, 0), ct.gather(x, ind, mask=True, padding_value=-2)[None, :])
    ct.store(out, (2, 0), ct.gather(x, ind, mask=False, padding_value=-3)[None, :])
    ct.store(out, (3, 0), ct.gather(x, ind, mask=mask, padding_value=-4,
                                    check_bounds=False)[None, :])


def test_gather_mask_and_bounds():
    # R-GS-5: masked-off positions give padding; with check_bounds the effective mask is
    # mask AND in-bounds; with check_bounds=False the mask alone decides (all masked-in
    # positions of row 3 are in bounds here).
    x = np.arange(100, 110, dtype=np.int32)
    ind = np.arange(8) * 2 - 3
    m = np.array([0, 0, 1, 1, 1, 0, 1, 0], bool)  # masked-in positions are in bounds
    out = np.zeros((4, 8), np.int32)
    ct.launch(None, (1,), gather_masks, (x, m, out))
    np.testing.assert_array_equal(out[0], ref_gather(x, [ind], mask=m, pad=-1))
    np.testing.assert_array_equal(out[1], ref_gather(x, [ind], pad=-2))
    np.testing.assert_array_equal(out[2], np.full(8, -3))
    np.testing.assert_array_equal(out[3], np.where(m, x[np.clip(ind, 0, 9)], -4))


@ct.kernel
def gather_mask_bcast(x, m, out):
    ind0 = ct.arange(4, dtype=ct.int32)[:, None]
    ind1 = ct.arange(4, dtype=ct.int32)
    mask = ct.gather(m, (ct.arange(4, dtype=ct.int32)[:, None], 0))  # (4, 1) bool
    t = ct.gather(x, (ind0, ind1), mask=mask, padding_value=0.0, check_bounds=False)
    ct.store(out, (0, 0), t)


def test_gather_mask_broadcast():
    # R-GS-5: a (4,1) mask broadcasts to the (4,4) index shape.
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    m = np.array([[True], [False], [True], [False]])
    out = np.full((4, 4), -1, np.float32)
    ct.launch(None, (1,), gather_mask_bcast, (x, m, out))
    np.testing.assert_array_equal(out, np.where(m, x, 0))


@ct.kernel
def gather_paddings(x, out, p):
    ind = ct.arange(8, dtype=ct.int32)
    ct.store(out, (0, 0), ct.gather(x, ind, padding_value=-math.inf)[None, :])
    ct.store(out, (1, 0), ct.gather(x, ind, padding_value=7)[None, :])   # loose int -> f32
    pad_tile = ct.arange(8, dtype=ct.int32).astype(ct.float32) * 10
    ct.store(out, (2, 0), ct.gather(x, ind, padding_value=pad_tile)[None, :])
    ct.store(out, (3, 0), ct.gather(x, ind, padding_value=p)[None, :])  # runtime f32 scalar
    ct.store(out, (4, 0), ct.gather(x, ind, padding_value=ct.int16(3))[None, :])  # i16 -> f32
    ind2 = ct.arange(8, dtype=ct.int32).reshape((4, 2)).transpose()   # (2, 4)
    t = ct.gather(x, ind2, padding_value=ct.arange(4, dtype=ct.int32).astype(ct.float32))
    ct.store(out.slice(0, 5, 7), (0, 0), t)


def test_gather_padding_values():
    # R-GS-4: scalar / tile padding values, broadcast to the index shape and cast (R-CAST).
    x = np.arange(100, 106, dtype=np.float32)
    out = np.zeros((7, 8), np.float32)
    ct.launch(None, (1,), gather_paddings, (x, out, np.float32(-0.5)))
    ind = np.arange(8)
    np.testing.assert_array_equal(out[0], ref_gather(x, [ind], pad=-np.inf))
    np.testing.assert_array_equal(out[1], ref_gather(x, [ind], pad=7))
    np.testing.assert_array_equal(out[2], ref_gather(x, [ind], pad=ind * 10.0))
    np.testing.assert_array_equal(out[3], ref_gather(x, [ind], pad=-0.5))
    np.testing.assert_array_equal(out[4], ref_gather(x, [ind], pad=3))
    ind2 = np.arange(8).reshape(4, 2).T
    ref5 = ref_gather(x, [ind2], pad=np.broadcast_to(np.arange(4.0), (2, 4)))
    np.testing.assert_array_equal(out[5:7, :4], ref5)
    np.testing.assert_array_equal(out[5:7, 4:], 0)


@ct.kernel
def rank0(a, out, flag):
    v = ct.gather(a, ())
    ct.scatter(out, (), v * 2)
    w = ct.gather(a, (), mask=flag > 0, padding_value=-1.0)
    ct.scatter(a, (), w + 1, mask=flag > 0)


@pytest.mark.parametrize("flag", [0, 1])
def test_rank0_arrays(flag):
    # R-ARRAY-4 / R-GS-1: rank-0 arrays use the empty index tuple; masks still apply.
    a = np.array(3.0, np.float32)
    out = np.array(0.0, np.float32)
    ct.launch(None, (1,), rank0, (a, out, flag))
    assert out == 6.0
    assert a == (4.0 if flag else 3.0)


# -- scatter -------------------------------------------------------------------------------------
@ct.kernel
def scatter_1d(y, idx, vals, TILE: ct.Constant[int]):
    i = ct.load(idx, (0,), (TILE,))
    v = ct.load(vals, (0,), (TILE,))
    ct.scatter(y, i, v)


@pytest.mark.parametrize("idt", [np.int8, np.int32, np.int64, np.uint8, np.uint32, np.uint64])
def test_scatter_skips_out_of_bounds(idt):
    # R-GS-3: OOB (negative or >= extent) positions are skipped; guard band untouched.
    buf = np.full(16, -9, np.float32)
    y = buf[4:12]
    info = np.iinfo(idt)
    idx = np.array([0, 7, 8, 2, 100, info.max, 5, 3 if info.min == 0 else -1], dtype=idt)
    vals = np.arange(1, 9, dtype=np.float32)
    ct.launch(None, (1,), scatter_1d, (y, idx, vals, 8))
    ref = np.full(8, -9, np.float32)
    for i, v in zip(idx.astype(object), vals):
        if 0 <= i < 8:
            ref[i] = v
    np.testing.assert_array_equal(y, ref)
    np.testing.assert_array_equal(buf[:4], -9)
    np.testing.assert_array_equal(buf[12:], -9)


@ct.kernel
def scatter_variants(y, m):
    ind = ct.arange(8, dtype=ct.int32)
    mask = ct.load(m, (0,), (8,))
    ct.scatter(y, (ind, 0), 1)                                   # scalar value broadcast
    ct.scatter(y, (ind, 1), ind * 10, mask=mask)                 # masked
    ct.scatter(y, (ind[:, None], ct.arange(2, dtype=ct.int32) + 2),
               ct.full((1, 2), 5, ct.int16))                     # (1,2) value -> (8,2)
    ct.scatter(y, (ind, 4), ind, mask=False)                     # nothing written
    ct.scatter(y, (ind - 4, 4), ind + 100, check_bounds=True)    # negative rows skipped
    ct.scatter(y, (3, 5), ct.int8(-1))                           # scalar position


def test_scatter_values_masks_broadcast():
    # R-GS-5/6: scalar/tile values broadcast to the index shape, are cast (R-CAST), and masks
    # select positions.
    y = np.zeros((8, 6), np.int32)
    m = np.array([1, 0, 1, 0, 0, 1, 1, 0], bool)
    ct.launch(None, (1,), scatter_variants, (y, m))
    ref = np.zeros((8, 6), np.int32)
    ref[:, 0] = 1
    ref[m, 1] = np.arange(8)[m] * 10
    ref[:, 2:4] = 5
    ref[0:4, 4] = np.arange(4, 8) + 100
    ref[3, 5] = -1
    np.testing.assert_array_equal(y, ref)


@ct.kernel
def scatter_duplicates(y):
    ind = ct.arange(8, dtype=ct.int32) // 4   # 0,0,0,0,1,1,1,1
    ct.scatter(y, ind, ct.arange(8, dtype=ct.int32) + 1)


def test_scatter_duplicate_positions_keep_one_value():
    # R-GS-6: which duplicate survives is unspecified; it must be one of the written values.
    y = np.zeros(4, np.int32)
    ct.launch(None, (1,), scatter_duplicates, (y,))
    assert y[0] in (1, 2, 3, 4) and y[1] in (5, 6, 7, 8)
    np.testing.assert_array_equal(y[2:], 0)


@ct.kernel
def gather_scatter_unchecked(x, y):
    ind = ct.arange(8, dtype=ct.int32)
    t = ct.gather(x, ind, check_bounds=False, latency=3)
    ct.scatter(y, ind, t, check_bounds=False, latency=10)


def test_check_bounds_false_in_bounds():
    # R-GS-3/7: check_bounds=False with in-bounds indices behaves like the checked form.
    x = np.arange(10, 18, dtype=np.float32)
    y = np.zeros(8, np.float32)
    ct.launch(None, (1,), gather_scatter_unchecked, (x, y))
    np.testing.assert_array_equal(y, x)


# -- errors --------------------------------------------------------------------------------------
def make_kernel(body):
    @ct.kernel
    def k(x2, x1, i8):
        body(x2, x1, i8)
    return k


def e_len(x2, x1, i8):
    ct.gather(x2, (0,))


def e_len_scalar_2d(x2, x1, i8):
    ct.gather(x2, ct.arange(4, dtype=ct.int32))


def e_len_scatter(x2, x1, i8):
    ct.scatter(x1, (0, 0), 1.0)


def e_float_index(x2, x1, i8):
    ct.gather(x1, ct.arange(4, dtype=ct.int32).astype(ct.float32))


def e_float_index_2d(x2, x1, i8):
    ct.gather(x2, (0, 1.0))


def e_bool_index(x2, x1, i8):
    ct.scatter(x1, ct.arange(4, dtype=ct.int32) > 1, 1.0)


def e_index_bcast(x2, x1, i8):
    ct.gather(x2, (ct.arange(4, dtype=ct.int32), ct.arange(8, dtype=ct.int32)))


def e_mask_dtype(x2, x1, i8):
    ct.gather(x1, ct.arange(8, dtype=ct.int32), mask=ct.arange(8, dtype=ct.int32))


def e_mask_dtype_scatter(x2, x1, i8):
    ct.scatter(x1, ct.arange(8, dtype=ct.int32), 1.0, mask=1)


def e_mask_shape(x2, x1, i8):
    ct.gather(x1, ct.arange(8, dtype=ct.int32), mask=ct.arange(4, dtype=ct.int32) > 0)


def e_mask_rank(x2, x1, i8):
    ct.gather(x1, ct.arange(8, dtype=ct.int32), mask=ct.zeros((2, 8), ct.bool_))


def e_pad_int8_range(x2, x1, i8):
    ct.gather(i8, ct.arange(8, dtype=ct.int32), padding_value=128)


def e_pad_float_into_int(x2, x1, i8):
    ct.gather(i8, ct.arange(8, dtype=ct.int32), padding_value=1.5)


def e_pad_tile_narrowing(x2, x1, i8):
    ct.gather(x1, ct.arange(8, dtype=ct.int32), padding_value=ct.zeros((8,), ct.float64))


def e_pad_shape(x2, x1, i8):
    ct.gather(x1, ct.arange(8, dtype=ct.int32), padding_value=ct.zeros((4,), ct.float32))


def e_value_shape(x2, x1, i8):
    ct.scatter(x1, ct.arange(4, dtype=ct.int32), ct.zeros((2, 4), ct.float32))


def e_value_cast(x2, x1, i8):
    ct.scatter(i8, ct.arange(4, dtype=ct.int32), ct.zeros((4,), ct.int32))


def e_value_const_cast(x2, x1, i8):
    ct.scatter(i8, 0, 1.0)


def e_latency(x2, x1, i8):
    ct.gather(x1, 0, latency=11)


def e_latency_scatter(x2, x1, i8):
    ct.scatter(x1, 0, 1.0, latency=0)


def e_check_bounds(x2, x1, i8):
    ct.gather(x1, 0, check_bounds=ct.bid(0) == 0)


ERRORS = [
    (e_len, ct.TileTypeError, "must be a tuple of length"),
    (e_len_scalar_2d, ct.TileTypeError, "must be a tuple of length 2"),
    (e_len_scatter, ct.TileTypeError, "must be a tuple of length 1"),
    (e_float_index, ct.TileTypeError, "has non-integer data type"),
    (e_float_index_2d, ct.TileTypeError, "has non-integer data type"),
    (e_bool_index, ct.TileTypeError, "has non-integer data type"),
    (e_index_bcast, ct.TileTypeError, "are not broadcastable to a common shape"),
    (e_mask_dtype, ct.TileTypeError, "Custom mask must have boolean dtype"),
    (e_mask_dtype_scatter, ct.TileTypeError, "Custom mask must have boolean dtype"),
    (e_mask_shape, ct.TileTypeError, "is not broadcastable"),
    (e_mask_rank, ct.TileTypeError, "is not broadcastable"),
    (e_pad_int8_range, ct.TileValueError, "128 is out of range"),
    (e_pad_float_into_int, ct.TileTypeError, "cannot implicitly cast"),
    (e_pad_tile_narrowing, ct.TileTypeError, "cannot implicitly cast float64 to float32"),
    (e_pad_shape, ct.TileTypeError, "is not broadcastable"),
    (e_value_shape, ct.TileTypeError, "is not broadcastable"),
    (e_value_cast, ct.TileTypeError, "Stored value is incompatible with array's dtype"),
    (e_value_const_cast, ct.TileTypeError, "Stored value is incompatible with array's dtype"),
    (e_latency, ct.TileValueError, "Latency must be between 1 and 10"),
    (e_latency_scatter, ct.TileValueError, "Latency must be between 1 and 10"),
    (e_check_bounds, ct.TileTypeError, "check_bounds"),
]


@pytest.mark.parametrize("body,exc,frag", ERRORS, ids=[e[0].__name__ for e in ERRORS])
def test_gather_scatter_errors(body, exc, frag):
    args = (np.zeros((4, 4), np.float32), np.zeros(8, np.float32), np.zeros(8, np.int8))
    with pytest.raises(exc, match=re.escape(frag)):
        ct.launch(None, (1,), make_kernel(body), args)

"""Atomics (spec §20 R-ATOM-1..9), tiled-view atomics (R-VIEW-7), RawArrayMemory (§7) and the
race tracker's view of atomics (R-EXEC-4).  References are serial loops written in NumPy.

The interpreter applies the positions of one call in row-major order (docs/ops_atomic.md); the
tests that check returned old values position by position rely on that order and run only
there (on another executor they check the final values and the old values as a multiset)."""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest
from spec_executor import interp_only_ub, test_backend

import cutile as ct
from cutile import TileTypeError, UndefinedBehaviorError

SERIAL = test_backend() == "interp"

OPS = {"xchg": ct.atomic_xchg, "add": ct.atomic_add, "max": ct.atomic_max,
       "min": ct.atomic_min, "and": ct.atomic_and, "or": ct.atomic_or, "xor": ct.atomic_xor}


def ref_rmw(kind, x, idx, upd):
    """Serial row-major reference (R-ATOM-2/3): returns (final array, old values)."""
    x = x.copy()
    old = np.zeros(len(idx), x.dtype)
    with np.errstate(over="ignore"):
        _serial(kind, x, old, idx, upd)
    return x, old


_STEP = {"xchg": lambda c, u: u, "add": lambda c, u: c + u, "max": max, "min": min,
         "and": lambda c, u: c & u, "or": lambda c, u: c | u, "xor": lambda c, u: c ^ u}


def _serial(kind, x, old, idx, upd):
    for k, (i, u) in enumerate(zip(idx, upd)):
        if not 0 <= i < x.size:
            continue
        c = x[i]
        old[k] = c
        x[i] = _STEP[kind](c, u)


def _rmw_kernel(fn):
    @ct.kernel
    def k(x, i, u, out, T: ct.Constant[int]):
        idx = ct.load(i, (0,), (T,))
        upd = ct.load(u, (0,), (T,))
        ct.store(out, (0,), fn(x, idx, upd))
    return k


KERNELS = {kind: _rmw_kernel(fn) for kind, fn in OPS.items()}


@pytest.mark.parametrize("kind", list(OPS))
@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.uint64])
def test_rmw_integer_colliding_indices(kind, dtype):
    """R-ATOM-2/3: every position applies, colliding ones see each other's updates."""
    rng = np.random.default_rng(7)
    info = np.iinfo(dtype)
    x = rng.integers(info.min // 2, info.max // 2, 8, dtype=dtype, endpoint=True)
    idx = rng.integers(0, 8, 32).astype(np.int32)
    upd = rng.integers(info.min // 4, info.max // 4, 32, dtype=dtype, endpoint=True)
    want, want_old = ref_rmw(kind, x, idx, upd)
    out = np.zeros(32, dtype)
    with np.errstate(over="ignore"):
        ct.launch(None, (1,), KERNELS[kind], (x, idx, upd, out, 32))
    if kind == "xchg" and not SERIAL:
        return            # the survivor of colliding exchanges depends on the order
    np.testing.assert_array_equal(x, want)
    if SERIAL:
        np.testing.assert_array_equal(out, want_old)


def test_atomic_add_spec_example():
    """R-ATOM-2: atomic_add(ones(4), arange(4), full(4, 10)) returns ones, leaves 11s."""
    @ct.kernel
    def k(x, out):
        old = ct.atomic_add(x, ct.arange(4, dtype=ct.int32), ct.full((4,), 10, dtype=ct.int32))
        ct.store(out, (0,), old)
    x, out = np.ones(4, np.int32), np.zeros(4, np.int32)
    ct.launch(None, (1,), k, (x, out))
    np.testing.assert_array_equal(out, [1, 1, 1, 1])
    np.testing.assert_array_equal(x, [11, 11, 11, 11])


def test_atomic_cas_spec_example_and_bounds():
    """R-ATOM-3/6: cas stores desired where equal; out-of-bounds positions return expected."""
    @ct.kernel
    def k(x, out):
        i = ct.arange(8, dtype=ct.int32) - 2          # -2, -1 and 4..5 are out of bounds
        ct.store(out, (0,), ct.atomic_cas(x, i, 0, 42))
    x, out = np.array([0, 1, 0, 1], np.int32), np.full(8, -5, np.int32)
    ct.launch(None, (1,), k, (x, out))
    np.testing.assert_array_equal(x, [42, 1, 42, 1])
    np.testing.assert_array_equal(out, [0, 0, 0, 1, 0, 1, 0, 0])


def test_atomic_cas_colliding_spin():
    """R-ATOM-2/3: eight positions race for one lock word; exactly one wins (serially the
    first, which sees 0)."""
    @ct.kernel
    def k(x, out):
        ct.store(out, (0,), ct.atomic_cas(x, ct.zeros((8,), ct.int32),
                                          0, ct.arange(8, dtype=ct.int32) + 1))
    x, out = np.zeros(1, np.int32), np.zeros(8, np.int32)
    ct.launch(None, (1,), k, (x, out))
    assert (out == 0).sum() == 1
    winner = int(np.flatnonzero(out == 0)[0])
    assert x[0] == winner + 1 and (out[out != 0] == x[0]).all()
    if SERIAL:
        assert winner == 0


def test_atomic_cas_float_compares_bits():
    """R-ATOM-3 (cutile): float cas compares bit patterns: -0.0 does not match 0.0."""
    @ct.kernel
    def k(x, out):
        ct.store(out, (0,), ct.atomic_cas(x, ct.arange(4, dtype=ct.int32), 0.0, 5.0))
    x = np.array([0.0, -0.0, 1.0, 0.0], np.float32)
    out = np.zeros(4, np.float32)
    ct.launch(None, (1,), k, (x, out))
    np.testing.assert_array_equal(x, [5.0, -0.0, 1.0, 5.0])
    assert np.signbit(x[1]) and np.signbit(out[1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16])
def test_float_add_serial_rounding(dtype):
    """R-ATOM-3/4: float add, one rounding per position in the interpreter's order."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal(4).astype(dtype)
    idx = rng.integers(0, 4, 16).astype(np.int32)
    upd = (rng.standard_normal(16) * 100).astype(dtype)
    want, want_old = x.copy(), np.zeros(16, dtype)
    for k, (i, u) in enumerate(zip(idx, upd)):
        want_old[k] = want[i]
        want[i] = (np.float32(want[i]) + np.float32(u)).astype(dtype) \
            if dtype in (np.float16, ml_dtypes.bfloat16) else want[i] + u
    out = np.zeros(16, dtype)
    ct.launch(None, (1,), KERNELS["add"], (x, idx, upd, out, 16))
    if SERIAL:
        np.testing.assert_array_equal(x.view(f"u{x.itemsize}"), want.view(f"u{x.itemsize}"))
        np.testing.assert_array_equal(out.view(f"u{x.itemsize}"),
                                      want_old.view(f"u{x.itemsize}"))


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_16bit_add_rounds_once_R_ATOM_3_4(dtype):
    """R-ATOM-3/4 on every executor: float16/bfloat16 add, distinct indices (one rounding
    each, old values returned); then colliding indices whose partial sums are all exact (the
    final values do not depend on the order; the old values of one element are the sums
    before each of its updates)."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal(16).astype(dtype)
    x[:3] = [1.0, -0.0, 2048.0 if dtype is np.float16 else 256.0]
    idx = rng.permutation(16).astype(np.int32)
    upd = (rng.standard_normal(16) * 3).astype(dtype)
    upd[np.flatnonzero(idx == 0)[0]] = 0.1                          # rounds at x[0] == 1
    want = x.copy()
    want[idx] = (x[idx].astype(np.float32) + upd.astype(np.float32)).astype(dtype)
    out = np.zeros(16, dtype)
    x0 = x.copy()
    ct.launch(None, (1,), KERNELS["add"], (x, idx, upd, out, 16))
    u = f"u{x.itemsize}"
    np.testing.assert_array_equal(x.view(u), want.view(u))
    np.testing.assert_array_equal(out.view(u), x0[idx].view(u))

    x = np.array([1, 2, 0, -4], dtype)
    idx = np.array([0, 1, 0, 3, 0, 1, 3, 0], np.int32)
    upd = np.array([0.5, 8, 0.25, 1, 2, 16, -2, 32], dtype)      # sums fit 8 bits
    out = np.zeros(8, dtype)
    ct.launch(None, (1,), KERNELS["add"], (x, idx, upd, out, 8))
    np.testing.assert_array_equal(x, np.array([35.75, 26, 0, -5], dtype))
    init = np.array([1, 2, 0, -4], dtype)
    for i in (0, 1, 3):          # one serial chain per element: old, old + update, ..., final
        pairs = [(float(out[k]), float(upd[k])) for k in np.flatnonzero(idx == i)]
        cur = float(init[i])
        while pairs:
            step = [p for p in pairs if p[0] == cur]
            assert step, (i, cur, pairs)
            pairs.remove(step[0])
            cur += step[0][1]
        assert cur == float(x[i])


@ct.kernel
def _raw_add16(x, out):
    o = ct.arange(4, dtype=ct.int32)
    ct.store(out, (0,), x.get_raw_memory().atomic_add_offset(o * x.strides[0] + 1, 0.5,
                                                             mask=o < 3))


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_16bit_raw_add_offset_R_ATOM_3(dtype):
    """§7 RawArrayMemory.atomic_add_offset on float16/bfloat16 (column 1 of rows 0..2)."""
    x = np.arange(16, dtype=dtype).reshape(4, 4)
    want = x.copy()
    want[:3, 1] += dtype(0.5)
    out = np.zeros(4, dtype)
    ct.launch(None, (1,), _raw_add16, (x, out))
    np.testing.assert_array_equal(x, want)
    np.testing.assert_array_equal(out[:3], np.array([1, 5, 9], dtype))


def test_float_xchg():
    """R-ATOM-3: xchg on float64 stores the update and returns the old value."""
    @ct.kernel
    def k(x, out):
        ct.store(out, (0,), ct.atomic_xchg(x, ct.arange(4, dtype=ct.int32), -2.5))
    x, out = np.array([1.0, np.nan, -0.0, np.inf]), np.zeros(4)
    ct.launch(None, (1,), k, (x, out))
    np.testing.assert_array_equal(x, [-2.5] * 4)
    np.testing.assert_array_equal(out, [1.0, np.nan, -0.0, np.inf])


def test_2d_indices_broadcast_and_scalar_update():
    """R-ATOM-1: a tuple of index tiles broadcast together; a scalar update broadcasts."""
    @ct.kernel
    def k(x, out):
        r = ct.arange(4, dtype=ct.int32)[:, None]      # (4, 1)
        c = ct.arange(2, dtype=ct.int32) * 2          # (2,)
        ct.store(out, (0, 0), ct.atomic_max(x, (r, c), 5))
    x = np.arange(16, dtype=np.int64).reshape(4, 4)
    out = np.zeros((4, 2), np.int64)
    before = x.copy()
    ct.launch(None, (1,), k, (x, out))
    want = before.copy()
    want[:, ::2] = np.maximum(want[:, ::2], 5)
    np.testing.assert_array_equal(x, want)
    np.testing.assert_array_equal(out, before[:, ::2])


def test_unsigned_max_min_compare_unsigned():
    """R-ATOM-3: max/min on unsigned dtypes compare unsigned."""
    @ct.kernel
    def k(x):
        ct.atomic_max(x, 0, ct.uint32(0x80000000))
        ct.atomic_min(x, 1, ct.uint32(0x80000000))
    x = np.array([5, 0xFFFFFFFF], np.uint32)
    ct.launch(None, (1,), k, (x,))
    np.testing.assert_array_equal(x, [0x80000000, 0x80000000])


@interp_only_ub
def test_check_bounds_false_out_of_bounds_is_ub():
    """R-ATOM-6: with check_bounds=False an out-of-bounds position is undefined behaviour."""
    @ct.kernel
    def k(x):
        ct.atomic_add(x, ct.arange(8, dtype=ct.int32), 1, check_bounds=False)
    with pytest.raises(UndefinedBehaviorError, match="R-UB-3"):
        ct.launch(None, (1,), k, (np.zeros(4, np.int32),))


def _compile_error(body_fn, arr):
    @ct.kernel
    def k(x):
        body_fn(x)
    ct.launch(None, (1,), k, (arr,))


@pytest.mark.parametrize("fn,dtype,match", [
    (lambda x: ct.atomic_max(x, 0, 1.0), np.float32, "Unsupported array dtype"),
    (lambda x: ct.atomic_add(x, 0, 1), np.int16, "Unsupported array dtype"),
    (lambda x: ct.atomic_xchg(x, 0, 1.0), np.float16, "Unsupported array dtype"),
    (lambda x: ct.atomic_cas(x, 0, 1, 2), np.int8, "Unsupported array dtype"),
    (lambda x: ct.atomic_and(x, 0, 1), np.int64, "exactly match the target dtype"),
    (lambda x: ct.atomic_or(x, 0, ct.int64(1)), np.int32, "exactly match the target dtype"),
    (lambda x: ct.atomic_add(x, 0, 1.5), np.int32, "cannot implicitly cast"),
    (lambda x: ct.atomic_add(x, 0, 1, memory_order=ct.MemoryOrder.WEAK), np.int32,
     "Invalid memory order for tile_atomic_rmw"),
    (lambda x: ct.atomic_cas(x, 0, 1, 2, memory_order=ct.MemoryOrder.WEAK), np.int32,
     "Invalid memory order for tile_atomic_cas"),
    (lambda x: ct.atomic_add(x, 0, 1, memory_scope=ct.MemoryScope.NONE), np.int32,
     "memory ordering requires a memory scope"),
    (lambda x: ct.atomic_add(x, 0, 1, memory_scope=ct.MemoryScope.CLUSTER), np.int32,
     "Invalid memory scope"),
    (lambda x: ct.atomic_add(x, (0, 0), 1), np.int32, "must be a tuple of length 1"),
    (lambda x: ct.atomic_add(x, 0, ct.ones((4,), ct.int32)), np.int32, "not broadcastable"),
    (lambda x: ct.atomic_add(x, 0.5, 1), np.int32, "non-integer data type"),
])
def test_type_errors(fn, dtype, match):
    """R-ATOM-1/4/5/7: dtypes, operand casts, memory order and scope, index shapes."""
    arr = np.zeros(4, dtype)
    with pytest.raises(TileTypeError, match=match):
        _compile_error(fn, arr)


@pytest.mark.parametrize("order", ["RELAXED", "ACQUIRE", "RELEASE", "ACQ_REL"])
@pytest.mark.parametrize("scope", ["BLOCK", "DEVICE", "SYS"])
def test_memory_orders_and_scopes_accepted(order, scope):
    """R-ATOM-7/8: every non-WEAK order with BLOCK/DEVICE/SYS (constant strings accepted)."""
    mo, ms = getattr(ct.MemoryOrder, order), getattr(ct.MemoryScope, scope)

    @ct.kernel
    def k(x):
        ct.atomic_add(x, 0, 1, memory_order=mo, memory_scope=ms)
        ct.atomic_cas(x, 1, 0, 7, memory_order=order, memory_scope=scope)
    x = np.zeros(2, np.int32)
    ct.launch(None, (1,), k, (x,))
    np.testing.assert_array_equal(x, [1, 7])


# -- tiled views (R-VIEW-7) ------------------------------------------------------------------
def test_view_atomic_store_add_overlapping_blocks():
    """R-VIEW-7: blocks add into the same tiles; partial tiles drop out-of-bounds lanes."""
    @ct.kernel
    def k(x):
        v = x.tiled_view((4, 4))
        v.atomic_store_add((ct.bid(0) % 2, 1), ct.full((4, 4), 1.5, ct.float32))
    x = np.zeros((6, 6), np.float32)
    ct.launch(None, (4,), k, (x,))
    want = np.zeros((6, 6), np.float32)
    want[0:4, 4:6] += 3.0
    want[4:6, 4:6] += 3.0
    np.testing.assert_array_equal(x, want)


def _v_add(v, i, t):
    v.atomic_store_add(i, t)


def _v_max(v, i, t):
    v.atomic_store_max(i, t)


def _v_min(v, i, t):
    v.atomic_store_min(i, t)


def _v_and(v, i, t):
    v.atomic_store_and(i, t)


def _v_or(v, i, t):
    v.atomic_store_or(i, t)


def _v_xor(v, i, t):
    v.atomic_store_xor(i, t)


_VIEW_FNS = {"add": _v_add, "max": _v_max, "min": _v_min, "and": _v_and, "or": _v_or,
             "xor": _v_xor}


@pytest.mark.parametrize("kind", ["add", "max", "min", "and", "or", "xor"])
def test_view_atomic_store_int_kinds(kind):
    """R-VIEW-7: every kind on int32, with traversal steps (overlapping tiles)."""
    fn = _VIEW_FNS[kind]

    @ct.kernel
    def k(x, u):
        v = x.tiled_view(4, traversal_steps=2)
        t = ct.load(u, (ct.bid(0),), (4,))
        fn(v, (ct.bid(0),), t)
    rng = np.random.default_rng(5)
    x = rng.integers(-50, 50, 10).astype(np.int32)
    u = rng.integers(-50, 50, 16).astype(np.int32)
    want = x.copy()
    for b in range(4):
        for j in range(4):
            p = 2 * b + j
            if p < 10:
                want[p] = ref_rmw(kind, want[p:p + 1], [0], [u[4 * b + j]])[0][0]
    ct.launch(None, (4,), k, (x, u))
    np.testing.assert_array_equal(x, want)


@pytest.mark.parametrize("fn,dtype,match", [
    (lambda v: v.atomic_store_max((0,), 1.0), np.float32, "Unsupported tiled view dtype"),
    (lambda v: v.atomic_store_add((0,), 1), np.int8, "Unsupported tiled view dtype"),
    (lambda v: v.atomic_store_add((0,), ct.ones((8,), ct.int32)), np.int32,
     "Update shape \\(8,\\) is not broadcastable"),
    (lambda v: v.atomic_store_xor((0,), 1), np.uint32, "exactly match the target dtype"),
    (lambda v: v.atomic_store_add((0, 0), 1), np.int32, "does not match the tiled view rank"),
])
def test_view_atomic_errors(fn, dtype, match):
    """R-VIEW-7: dtypes, update shapes, exact dtype for bitwise kinds, index rank."""
    with pytest.raises(TileTypeError, match=match):
        _compile_error(lambda x: fn(x.tiled_view(4)), np.zeros(8, dtype))


def test_view_atomic_f16_add():
    """R-VIEW-7: float16 add (rounded once per element)."""
    @ct.kernel
    def k(x):
        x.tiled_view((4,)).atomic_store_add((0,), ct.full((4,), 0.1, ct.float16))
    x = np.array([1, 2, 3, 2048], np.float16)
    ct.launch(None, (1,), k, (x,))
    np.testing.assert_array_equal(x, np.array([1, 2, 3, 2048], np.float16) + np.float16(0.1))


# -- RawArrayMemory (§7) ---------------------------------------------------------------------
def test_raw_memory_load_store_and_atomics():
    """§7: element offsets from the base; masks; padding; atomics return old values."""
    @ct.kernel
    def k(x, out):
        r = x.get_raw_memory()
        o = ct.arange(4, dtype=ct.int32)
        old = r.atomic_add_offset(o * 3, 100)
        got = r.load_offset(o * 2 + 1, mask=o < 3, padding_value=-1)
        r.store_offset(o + 12, got, mask=o != 1)
        ct.store(out, (0,), old * 1000 + got)
        ct.store(out, (1,), r.atomic_cas_offset(o, 100, 7))
    x = np.arange(16, dtype=np.int32)
    out = np.zeros(8, np.int32)
    ct.launch(None, (1,), k, (x, out))
    want = np.arange(16, dtype=np.int32)
    old = want[[0, 3, 6, 9]].copy()
    want[[0, 3, 6, 9]] += 100
    got = np.array([want[1], want[3], want[5], -1], np.int32)
    want[[12, 14, 15]] = got[[0, 2, 3]]
    cas_old = want[:4].copy()
    want[:4] = np.where(want[:4] == 100, 7, want[:4])
    np.testing.assert_array_equal(out[:4], old * 1000 + got)
    np.testing.assert_array_equal(out[4:], cas_old)
    np.testing.assert_array_equal(x, want)


def test_raw_memory_of_a_2d_slice_uses_strides():
    """§7: offsets count elements of the array's memory (row stride included)."""
    @ct.kernel
    def k(x, out):
        r = x.slice(0, 1, 3).get_raw_memory()
        ct.store(out, (0,), r.load_offset(ct.arange(8, dtype=ct.int32)))
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    out = np.zeros(8, np.float32)
    ct.launch(None, (1,), k, (x, out))
    np.testing.assert_array_equal(out, x[1])


@ct.kernel
def _raw_store_at(x, offs):
    x.get_raw_memory().store_offset(ct.load(offs, (0,), (2,)), 1)


@interp_only_ub
@pytest.mark.parametrize("offs", [np.array([0, 8], np.int32), np.array([0, -1], np.int64),
                                  np.array([0, 2**62], np.int64),
                                  np.array([0, 2**64 - 1], np.uint64)])
def test_raw_memory_offset_outside_the_array_is_ub(offs):
    """§7 (cutile): an offset that is not an element of the array is undefined behaviour
    (huge offsets included: no wrap-around back into the array)."""
    x = np.zeros(4, np.int32)
    with pytest.raises(UndefinedBehaviorError, match="not an element of the array"):
        ct.launch(None, (1,), _raw_store_at, (x, offs))
    assert x.tolist() == [0, 0, 0, 0]


def test_raw_memory_dtype_and_errors():
    """§7: ``RawArrayMemory.dtype``; RMW dtype rules as R-ATOM-4."""
    @ct.kernel
    def k(x, out):
        r = x.get_raw_memory()
        ct.store(out, (0,), ct.full((1,), 1, r.dtype))
    out = np.zeros(1, np.int64)
    ct.launch(None, (1,), k, (np.zeros(2, np.int64), out))
    assert out[0] == 1
    with pytest.raises(TileTypeError, match="Unsupported array dtype"):
        _compile_error(lambda x: x.get_raw_memory().atomic_max_offset(0, 1.0),
                       np.zeros(2, np.float32))


# -- races (R-EXEC-4) ------------------------------------------------------------------------
@ct.kernel
def _hist(data, bins, TILE: ct.Constant[int]):
    ct.atomic_add(bins, ct.load(data, (ct.bid(0),), (TILE,)), 1)


def test_atomics_of_different_blocks_do_not_race():
    """R-EXEC-4: atomic accesses of different blocks to one element are not a race."""
    data = np.random.default_rng(1).integers(0, 8, 64).astype(np.int32)
    bins = np.zeros(8, np.int32)
    ct.launch(None, (4,), _hist, (data, bins, 16))
    np.testing.assert_array_equal(bins, np.bincount(data, minlength=8))


@interp_only_ub
def test_plain_read_of_another_blocks_atomic_is_a_race():
    """R-EXEC-4: a plain load of an element another block modified atomically races."""
    @ct.kernel
    def k(x, out):
        ct.atomic_add(x, 0, 1)
        ct.store(out, (ct.bid(0),), ct.load(x, (0,), (1,)))
    with pytest.raises(UndefinedBehaviorError, match="R-EXEC-4.*modif|data race"):
        ct.launch(None, (2,), k, (np.zeros(1, np.int32), np.zeros(2, np.int32)))


@interp_only_ub
def test_plain_write_then_atomic_of_another_block_is_a_race():
    """R-EXEC-4: a plain store by one block and an atomic by another on one element race."""
    @ct.kernel
    def k(x):
        if ct.bid(0) == 0:
            ct.store(x, (0,), ct.full((1,), 5, ct.int32))
        else:
            ct.atomic_add(x, 0, 1)
    with pytest.raises(UndefinedBehaviorError, match="data race"):
        ct.launch(None, (2,), k, (np.zeros(1, np.int32),))


# -- acquire/release order plain accesses between blocks (R-ATOM-8, R-EXEC-4) -----------------
_ACQ, _REL, _RLX = ct.MemoryOrder.ACQUIRE, ct.MemoryOrder.RELEASE, ct.MemoryOrder.RELAXED


@ct.kernel
def _locked_rows(acc, lock, T: ct.Constant[int]):
    # NVIDIA's LayerNorm backward sample: a spin lock guards a plain read-modify-write
    while ct.atomic_cas(lock, 0, 0, 1, memory_order=_ACQ) == 1:
        pass
    ct.store(acc, (0,), ct.load(acc, (0,), (T,)) + (ct.bid(0) + 1))
    ct.atomic_xchg(lock, 0, 0, memory_order=_REL)


@pytest.mark.parametrize("shuffle", ["0", "1"])
def test_spin_lock_orders_the_critical_sections(monkeypatch, shuffle):
    """R-ATOM-8: a CAS with ACQUIRE that reads another block's RELEASE makes that block's
    accesses happen before this one's: lock-protected plain loads and stores are no race."""
    monkeypatch.setenv("CUTILE_SHUFFLE_BLOCKS", shuffle)
    acc, lock = np.zeros(8, np.int32), np.zeros(1, np.int32)
    ct.launch(None, (5,), _locked_rows, (acc, lock, 8))
    np.testing.assert_array_equal(acc, np.full(8, 15))
    assert lock[0] == 0


@interp_only_ub
@pytest.mark.parametrize("order,scope", [(_RLX, ct.MemoryScope.DEVICE),
                                         (_ACQ, ct.MemoryScope.BLOCK)])
def test_lock_without_acquire_release_is_a_race(order, scope):
    """R-ATOM-8/R-EXEC-4: RELAXED atomics, or BLOCK-scope ones, order nothing between blocks:
    the same critical sections race."""
    rel = _RLX if order is _RLX else _REL

    @ct.kernel
    def k(acc, lock, T: ct.Constant[int]):
        while ct.atomic_cas(lock, 0, 0, 1, memory_order=order, memory_scope=scope) == 1:
            pass
        ct.store(acc, (0,), ct.load(acc, (0,), (T,)) + 1)
        ct.atomic_xchg(lock, 0, 0, memory_order=rel, memory_scope=scope)
    with pytest.raises(UndefinedBehaviorError, match="R-EXEC-4.*data race"):
        ct.launch(None, (3,), k, (np.zeros(4, np.int32), np.zeros(1, np.int32), 4))


@ct.kernel
def _publish(data, flag, out, T: ct.Constant[int], WRITE_FIRST: ct.Constant[bool]):
    b = ct.bid(0)
    if b == 0:
        if WRITE_FIRST:
            ct.store(data, (0,), ct.full((T,), 7, ct.int32))
        ct.atomic_xchg(flag, 0, 1, memory_order=_REL)
        if not WRITE_FIRST:
            ct.store(data, (0,), ct.full((T,), 7, ct.int32))
    else:
        while ct.atomic_add(flag, 0, 0, memory_order=_ACQ) == 0:
            pass
        ct.store(out, (b,), ct.load(data, (0,), (T,)))


def test_flag_release_acquire_publishes_data():
    """R-ATOM-8: data stored before a RELEASE is visible, race-free, to a block whose ACQUIRE
    reads the flag (blocks in order: the waiting loop needs block 0 to have run)."""
    data, out = np.zeros(4, np.int32), np.zeros(12, np.int32)
    ct.launch(None, (3,), _publish, (data, np.zeros(1, np.int32), out, 4, True))
    np.testing.assert_array_equal(out, [0] * 4 + [7] * 8)


@interp_only_ub
def test_store_after_the_release_is_a_race():
    """R-EXEC-4: a store after the RELEASE is not published by it."""
    with pytest.raises(UndefinedBehaviorError, match="R-EXEC-4.*data race"):
        ct.launch(None, (3,), _publish, (np.zeros(4, np.int32), np.zeros(1, np.int32),
                                         np.zeros(12, np.int32), 4, False))


@ct.kernel
def _publish_by_store(data, flag, out, T: ct.Constant[int], ORDER: ct.Constant[int]):
    rel = _REL if ORDER else _RLX
    acq = _ACQ if ORDER else _RLX
    if ct.bid(0) == 0:
        ct.store(data, (0,), ct.full((T,), 7, ct.int32))
        ct.store(flag, (0,), ct.full((1,), 1, ct.int32), memory_order=rel,
                 memory_scope=ct.MemoryScope.DEVICE)
    else:
        while ct.load(flag, (0,), (1,), memory_order=acq,
                      memory_scope=ct.MemoryScope.DEVICE).item() == 0:
            pass
        ct.store(out, (ct.bid(0),), ct.load(data, (0,), (T,)))


def test_release_store_and_acquire_load_publish_data():
    """R-LOAD-7/R-STORE-4: a flag stored with RELEASE and loaded with ACQUIRE is an atomic
    access that orders the data written before it: no race, and the flag itself is no race."""
    data, out = np.zeros(4, np.int32), np.zeros(12, np.int32)
    ct.launch(None, (3,), _publish_by_store, (data, np.zeros(1, np.int32), out, 4, 1))
    np.testing.assert_array_equal(out, [0] * 4 + [7] * 8)


@interp_only_ub
def test_relaxed_flag_store_and_load_order_nothing():
    """R-LOAD-7/R-STORE-4: RELAXED loads and stores are atomic (the flag does not race) but
    publish nothing: the data read is a race."""
    with pytest.raises(UndefinedBehaviorError, match="R-EXEC-4.*data race.*reads"):
        ct.launch(None, (3,), _publish_by_store, (np.zeros(4, np.int32), np.zeros(1, np.int32),
                                                   np.zeros(12, np.int32), 4, 0))


def test_docs_examples_run(tmp_path):
    """docs/ops_atomic.md: every ```python block runs as is and its asserts hold."""
    import re
    import runpy
    doc = os.path.join(os.path.dirname(__file__), "..", "docs", "ops_atomic.md")
    blocks = re.findall(r"```python\n(.*?)```", open(doc).read(), re.S)
    assert len(blocks) >= 6
    for i, src in enumerate(blocks):
        if "from_foreign" in src and not SERIAL:
            continue                  # foreign pointers are interpreter-only (ops_atomic.md)
        path = tmp_path / f"doc_block_{i}.py"
        path.write_text(src)
        runpy.run_path(str(path))


def test_access_map_records_atomics():
    """cutile.debug.access_map: an atomic counts as a read and, where it changed the element,
    a write of its block (the recorder stands in for the race tracker)."""
    import cutile.debug
    data = np.array([0, 1, 1, 3, 3, 3, 0, 0], np.int32)
    bins = np.zeros(4, np.int32)
    maps = cutile.debug.access_map(_hist, (2,), (data, bins, 4))
    np.testing.assert_array_equal(bins, [3, 2, 0, 3])
    np.testing.assert_array_equal(maps["bins"].writes, [2, 1, 0, 2])
    np.testing.assert_array_equal(maps["bins"].reads, [2, 1, 0, 2])


def test_raw_store_and_load_do_not_widen_the_offsets():
    """§7 (1.7's test_no_offset_to_value_broadcasting): a stored value, a load's padding and a
    mask must broadcast to the offset tile's shape; the offsets are not broadcast up to them."""
    @ct.kernel
    def store_wide(y):
        y.get_raw_memory().store_offset(ct.arange(1, dtype=ct.int64),
                                        ct.arange(8, dtype=ct.float32))

    @ct.kernel
    def load_wide(y, z):
        ct.store(z, (0,), y.get_raw_memory().load_offset(
            ct.arange(1, dtype=ct.int64), padding_value=ct.zeros((8,), ct.float32)))

    y, z = np.zeros(8, np.float32), np.zeros(8, np.float32)
    with pytest.raises(TileTypeError, match=r"Value shape \(8,\) is not broadcastable to the "
                                            r"offset shape \(1,\)"):
        ct.launch(None, (1,), store_wide, (y,))
    with pytest.raises(TileTypeError, match=r"Padding shape \(8,\) is not broadcastable"):
        ct.launch(None, (1,), load_wide, (y, z))

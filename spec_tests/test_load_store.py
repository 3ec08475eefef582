"""Tile-space ``ct.load`` / ``ct.store`` / ``ct.num_tiles`` (spec §6): arguments, results,
padding modes and implicit casts.  Expected values are computed with NumPy."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import cutile as ct

P = ct.PaddingMode
MO, MS = ct.MemoryOrder, ct.MemoryScope
BF16 = np.dtype(ml_dtypes.bfloat16)
FLOAT_DTYPES = [np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64)]
INT_BOOL_DTYPES = [np.dtype(d) for d in (np.bool_, np.int8, np.uint8, np.int16, np.uint16,
                                         np.int32, np.uint32, np.int64, np.uint64)]


def bits(a) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}")


def make_kernel(body):
    """A kernel ``k(x2, x1, o1)`` whose whole body is the helper ``body(x2, x1, o1)``."""
    @ct.kernel
    def k(x2, x1, o1):
        body(x2, x1, o1)
    return k


def launch_case(body, x2=None, x1=None, o1=None):
    x2 = np.zeros((8, 8), np.float32) if x2 is None else x2
    x1 = np.zeros(8, np.int32) if x1 is None else x1
    o1 = np.zeros(8, np.float32) if o1 is None else o1
    ct.launch(None, (1,), make_kernel(body), (x2, x1, o1))


# -- argument errors (R-LOAD-1..7, R-STORE-1..5, R-SPACE-3/4) ------------------------------------
def e_index_size(x2, x1, o1):
    ct.load(x2, (0, 0, 0), (2, 2))


def e_index_size_scalar(x2, x1, o1):
    ct.load(x2, 0, (2, 2))


def e_index_unsigned(x2, x1, o1):
    ct.load(x2, (ct.uint32(0), 0), (2, 2))


def e_index_unsigned_tile(x2, x1, o1):
    ct.load(x2, (ct.full((), 0, dtype=ct.uint64), 0), (2, 2))


def e_index_float(x2, x1, o1):
    ct.load(x2, (0.0, 0), (2, 2))


def e_index_bool(x2, x1, o1):
    ct.load(x1, (True,), (2,))


def e_shape_len(x2, x1, o1):
    ct.load(x2, (0, 0), (2, 2, 2))


def e_shape_int_rank2(x2, x1, o1):
    ct.load(x2, (0, 0), 4)


def e_shape_pow2(x2, x1, o1):
    ct.load(x2, (0, 0), (2, 3))


def e_shape_zero(x2, x1, o1):
    ct.load(x2, (0, 0), (0, 2))


def e_shape_negative(x2, x1, o1):
    ct.load(x2, (0, 0), (2, -4))


def e_shape_nonint(x2, x1, o1):
    ct.load(x2, (0, 0), (2, 2.0))


def e_shape_runtime(x2, x1, o1):
    ct.load(x2, (0, 0), (2, ct.bid(0)))


def e_order_string(x2, x1, o1):
    ct.load(x2, (0, 0), (2, 2), order="A")


def e_order_length(x2, x1, o1):
    ct.load(x2, (0, 0), (2, 2), order=(1, 0, 2))


def e_order_range(x2, x1, o1):
    ct.load(x2, (0, 0), (2, 2), order=(0, 3))


def e_order_repeat(x2, x1, o1):
    ct.load(x2, (0, 0), (2, 2), order=(1, 1))


def e_order_repeat_negative(x2, x1, o1):
    ct.load(x2, (0, 0), (2, 2), order=(1, -1))


def e_order_runtime(x2, x1, o1):
    ct.load(x2, (0, 0), (2, 2), order=(ct.bid(0), 1))


def e_latency_high(x2, x1, o1):
    ct.load(x2, (0, 0), (2, 2), latency=11)


def e_latency_zero(x2, x1, o1):
    ct.load(x2, (0, 0), (2, 2), latency=0)


def e_latency_float(x2, x1, o1):
    ct.load(x2, (0, 0), (2, 2), latency=2.0)


def e_allow_tma_int(x2, x1, o1):
    ct.load(x2, (0, 0), (2, 2), allow_tma=1)


def e_load_release(x2, x1, o1):
    ct.load(x2, (0, 0), (2, 2), memory_order=MO.RELEASE, memory_scope=MS.DEVICE)


def e_load_acq_rel(x2, x1, o1):
    ct.load(x2, (0, 0), (2, 2), memory_order=MO.ACQ_REL, memory_scope=MS.DEVICE)


def e_load_weak_scope(x2, x1, o1):
    ct.load(x2, (0, 0), (2, 2), memory_scope=MS.BLOCK)


def e_load_relaxed_no_scope(x2, x1, o1):
    ct.load(x2, (0, 0), (2, 2), memory_order=MO.RELAXED)


def e_load_order_not_enum(x2, x1, o1):
    ct.load(x2, (0, 0), (2, 2), memory_order=1)


def e_padding_none(x2, x1, o1):
    ct.load(x2, (0, 0), (2, 2), padding_mode=None)


def e_padding_value_string(x2, x1, o1):
    ct.load(x2, (0, 0), (2, 2), padding_mode="zero")


def e_check_bounds_runtime(x2, x1, o1):
    ct.load(x2, (0, 0), (2, 2), check_bounds=ct.bid(0) == 0)


def e_check_bounds_int(x2, x1, o1):
    ct.load(x2, (0, 0), (2, 2), check_bounds=1)


def e_store_acquire(x2, x1, o1):
    ct.store(x2, (0, 0), ct.zeros((2, 2), ct.float32), memory_order=MO.ACQUIRE,
             memory_scope=MS.DEVICE)


def e_store_weak_scope(x2, x1, o1):
    ct.store(x2, (0, 0), ct.zeros((2, 2), ct.float32), memory_scope=MS.SYS)


def e_store_release_no_scope(x2, x1, o1):
    ct.store(x2, (0, 0), ct.zeros((2, 2), ct.float32), memory_order=MO.RELEASE)


def e_store_latency(x2, x1, o1):
    ct.store(x2, (0, 0), ct.zeros((2, 2), ct.float32), latency=100)


def e_store_index_size(x2, x1, o1):
    ct.store(x2, (0,), ct.zeros((2, 2), ct.float32))


def e_store_index_unsigned(x2, x1, o1):
    ct.store(x1, (ct.uint8(1),), ct.zeros((2,), ct.int32))


def e_store_rank_low(x2, x1, o1):
    ct.store(x2, (0, 0), ct.zeros((4,), ct.float32))


def e_store_rank_high(x2, x1, o1):
    ct.store(x1, (0,), ct.zeros((2, 2), ct.int32))


def e_store_f64_into_f32(x2, x1, o1):
    ct.store(x2, (0, 0), ct.zeros((2, 2), ct.float64))


def e_store_f32_into_i32(x2, x1, o1):
    ct.store(x1, (0,), ct.zeros((2,), ct.float32))


def e_store_float_const_into_int(x2, x1, o1):
    ct.store(x1, (0,), 1.5)


def e_store_const_out_of_range(x2, x1, o1):
    ct.store(x1, (0,), 2 ** 40)


def e_store_order_repeat(x2, x1, o1):
    ct.store(x2, (0, 0), ct.zeros((2, 2), ct.float32), order=(0, 0))


def e_store_order_string(x2, x1, o1):
    ct.store(x2, (0, 0), ct.zeros((2, 2), ct.float32), order="X")


def e_num_tiles_axis(x2, x1, o1):
    ct.num_tiles(x2, 2, (2, 2))


def e_num_tiles_shape(x2, x1, o1):
    ct.num_tiles(x2, 0, (2, 3))


def e_num_tiles_shape_len(x2, x1, o1):
    ct.num_tiles(x2, 0, (2,))


def e_num_tiles_order(x2, x1, o1):
    ct.num_tiles(x2, 0, (2, 2), order="Z")


def e_float_pad_on_int(x2, x1, o1):
    ct.load(x1, (0,), (4,), padding_mode=P.NEG_INF)


ERRORS = [
    # R-LOAD-1
    (e_index_size, ct.TileTypeError, "Index size 3 does not match the array rank 2"),
    (e_index_size_scalar, ct.TileTypeError, "Index size 1 does not match the array rank 2"),
    (e_index_unsigned, ct.TileTypeError, "Expected a tuple of signed integers"),
    (e_index_unsigned_tile, ct.TileTypeError, "Expected a tuple of signed integers"),
    (e_index_float, ct.TileTypeError, "Expected a tuple of signed integers"),
    (e_index_bool, ct.TileTypeError, "Expected a tuple of signed integers"),
    # R-LOAD-3 / R-TILE-1
    (e_shape_len, ct.TileTypeError, "Expected shape length to be 2, got 3"),
    (e_shape_int_rank2, ct.TileTypeError, "Expected shape length to be 2, got 1"),
    (e_shape_pow2, ct.TileTypeError, "is not a power of two"),
    (e_shape_zero, ct.TileTypeError, "is not positive"),
    (e_shape_negative, ct.TileTypeError, "is not positive"),
    (e_shape_nonint, ct.TileTypeError, "Expected a tuple of integers"),
    (e_shape_runtime, ct.TileTypeError, "Expected a constant integer tuple"),
    # R-SPACE-3
    (e_order_string, ct.TileTypeError, "Expected 'C' or 'F'"),
    (e_order_length, ct.TileTypeError, "Expected tuple of length"),
    (e_order_range, ct.TileTypeError, "Axis 3 is out of range for rank 2"),
    (e_order_repeat, ct.TileTypeError,
     "Axis order must be a permutation, but axis 1 is used at least twice"),
    (e_order_repeat_negative, ct.TileTypeError, "Axis order must be a permutation"),
    (e_order_runtime, ct.TileTypeError, "Expected a constant"),
    # R-LOAD-6
    (e_latency_high, ct.TileValueError, "Latency must be between 1 and 10"),
    (e_latency_zero, ct.TileValueError, "Latency must be between 1 and 10"),
    (e_latency_float, ct.TileTypeError, "latency"),
    (e_allow_tma_int, ct.TileTypeError, "allow_tma"),
    # R-LOAD-7
    (e_load_release, ct.TileTypeError, "Invalid memory order for tile_load"),
    (e_load_acq_rel, ct.TileTypeError, "Invalid memory order for tile_load"),
    (e_load_weak_scope, ct.TileTypeError, "WEAK memory ordering cannot specify a memory scope"),
    (e_load_relaxed_no_scope, ct.TileTypeError, "requires a memory scope"),
    (e_load_order_not_enum, ct.TileTypeError, "Expected MemoryOrder"),
    # R-PAD-2
    (e_padding_none, ct.TileTypeError, "Expected PaddingMode"),
    (e_padding_value_string, ct.TileTypeError, "Expected PaddingMode"),
    (e_float_pad_on_int, ct.TileTypeError, "NEG_INF"),
    # R-LOAD-5
    (e_check_bounds_runtime, ct.TileTypeError, "check_bounds"),
    (e_check_bounds_int, ct.TileTypeError, "check_bounds"),
    # R-STORE-4
    (e_store_acquire, ct.TileTypeError, "Invalid memory order for tile_store"),
    (e_store_weak_scope, ct.TileTypeError, "WEAK memory ordering cannot specify a memory scope"),
    (e_store_release_no_scope, ct.TileTypeError, "requires a memory scope"),
    (e_store_latency, ct.TileValueError, "Latency must be between 1 and 10"),
    # R-STORE-1
    (e_store_index_size, ct.TileTypeError, "Index size 1 does not match the array rank 2"),
    (e_store_index_unsigned, ct.TileTypeError, "Expected a tuple of signed integers"),
    (e_store_rank_low, ct.TileTypeError, "does not match the array rank 2"),
    (e_store_rank_high, ct.TileTypeError, "does not match the array rank 1"),
    # R-STORE-2 / R-CAST
    (e_store_f64_into_f32, ct.TileTypeError, "Stored tile is incompatible with array's dtype"),
    (e_store_f32_into_i32, ct.TileTypeError, "cannot implicitly cast float32 to int32"),
    (e_store_float_const_into_int, ct.TileTypeError,
     "Stored tile is incompatible with array's dtype"),
    (e_store_const_out_of_range, ct.TileValueError, "is out of range"),
    # R-STORE-5
    (e_store_order_repeat, ct.TileTypeError, "Axis order must be a permutation"),
    (e_store_order_string, ct.TileTypeError, "Expected 'C' or 'F'"),
    # R-SPACE-4
    (e_num_tiles_axis, ct.TileTypeError, "Axis 2 is out of range for rank 2"),
    (e_num_tiles_shape, ct.TileTypeError, "is not a power of two"),
    (e_num_tiles_shape_len, ct.TileTypeError, "Expected shape length to be 2, got 1"),
    (e_num_tiles_order, ct.TileTypeError, "Expected 'C' or 'F'"),
]


@pytest.mark.parametrize("body,exc,frag", ERRORS, ids=[e[0].__name__ for e in ERRORS])
def test_argument_errors(body, exc, frag):
    with pytest.raises(exc, match=re.escape(frag)) as info:
        launch_case(body)
    # The error points at the user's line inside the helper (R-CONV-3 location).
    assert body.__name__ in str(info.value)


@ct.kernel
def store_then_type_error(x, y):
    ct.store(y, (0,), 5.0)
    if ct.bid(0) == 3:
        ct.load(x, (0, 0, 0), (2, 2))


def test_type_errors_before_any_block_runs():
    # R-CONV-4: the whole specialisation is type-checked before block 0 stores anything.
    y = np.zeros(4, np.float32)
    with pytest.raises(ct.TileTypeError, match="Index size 3"):
        ct.launch(None, (4,), store_then_type_error, (np.zeros((4, 4), np.float32), y))
    np.testing.assert_array_equal(y, 0)


def v_valid_hints(x2, x1, o1):
    t = ct.load(x2, (0, 0), (2, 8), latency=1, allow_tma=True,
                memory_order=MO.ACQUIRE, memory_scope=MS.DEVICE)
    u = ct.load(x2, (1, 0), (2, 8), latency=10, allow_tma=False,
                memory_order=MO.RELAXED, memory_scope=MS.BLOCK)
    ct.store(x2, (2, 0), t + u, latency=3, allow_tma=None, memory_order=MO.RELEASE,
             memory_scope=MS.SYS)
    ct.store(x2, (3, 0), u, memory_order=MO.RELAXED, memory_scope=MS.DEVICE)
    ct.store(x2, (0, 0), t, memory_order=MO.WEAK, memory_scope=MS.NONE, check_bounds=True)


def test_hints_and_memory_orders_have_no_semantic_effect():
    # R-LOAD-6/7, R-STORE-4: valid hints and orders compile and do not change the data.
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    ref = x.copy()
    ref[4:6] = x[0:2] + x[2:4]
    ref[6:8] = x[2:4]
    launch_case(v_valid_hints, x2=x)
    np.testing.assert_array_equal(x, ref)


def v_member_name_strings(x2, x1, o1):
    t = ct.load(x1, (1,), (4,), padding_mode="ZERO", memory_order="RELAXED",
                memory_scope="DEVICE")
    ct.store(x1, (0,), t)


def test_enum_member_names_accepted_as_strings():
    # cuda.tile 1.7 (require_constant_enum) accepts a constant string naming a member.
    x = np.arange(1, 7, dtype=np.int32)
    launch_case(v_member_name_strings, x1=x)
    np.testing.assert_array_equal(x, [5, 6, 0, 0, 5, 6])


# -- results (R-LOAD-2/3, R-STORE-1/5) -----------------------------------------------------------
@ct.kernel
def load_elements(x, out):
    t = ct.load(x, (1, 2), ())  # shape (): all-ones tile space, 0-D result
    ct.store(out, (0,), t)
    ct.store(out, (1,), t.ndim)
    s = ct.load(x, (2, 3), (1, 1)).reshape(())
    ct.store(out, (2,), s)
    u = ct.load(x, (0, 2), (), order="F")  # element (2, 0) of the array
    ct.store(out, (3,), u)


def test_shape_empty_loads_one_element():
    # R-LOAD-3: shape () gives a 0-D tile and the index is an element index.
    x = np.arange(12, dtype=np.float64).reshape(3, 4)
    out = np.full(4, -1.0)
    ct.launch(None, (1,), load_elements, (x, out))
    np.testing.assert_array_equal(out, [x[1, 2], 0, x[2, 3], x[2, 0]])


@ct.kernel
def loop_elements(x, y):
    for i in range(x.shape[0]):
        a = ct.load(x, (i,), shape=())
        ct.store(y, index=(i,), tile=a + 1)
    b = ct.load(x, 2, shape=1)  # bare index and single-int shape for a 1-D array
    ct.store(y, index=3, tile=b.item() * 10)
    idx = ct.full((), 4, dtype=ct.int16)  # 0-D tile index of a narrow signed type
    ct.store(y, (idx,), ct.load(x, idx, (1,)) * 100)


def test_scalar_and_0d_tile_indices():
    # R-LOAD-1 (bare scalar for rank 1, 0-D int tiles), R-LOAD-3 (int shape), R-STORE-1.
    x = np.arange(1, 7, dtype=np.float16)
    y = np.zeros(6, np.float16)
    ct.launch(None, (1,), loop_elements, (x, y))
    ref = (x + 1).astype(np.float16)
    ref[3] = x[2] * 10
    ref[4] = x[4] * 100
    np.testing.assert_array_equal(y, ref)


@ct.kernel
def store_scalars(x):
    ct.store(x, (0, 1), tile=1)            # loose int into float32
    ct.store(x, (1, 0), tile=ct.int8(-3))  # strict int8 constant
    ct.store(x, (1, 1), tile=ct.full((), 2.5, dtype=ct.float32))  # 0-D tile
    ct.store(x, (2, 3), tile=True)         # bool into float32 (R-CAST-1)


def test_store_scalars_as_all_ones_tiles():
    # R-STORE-1: scalars and 0-D tiles are stored as all-ones tiles at an element index.
    x = np.zeros((3, 4), np.float32)
    ct.launch(None, (1,), store_scalars, (x,))
    ref = np.zeros((3, 4), np.float32)
    ref[0, 1], ref[1, 0], ref[1, 1], ref[2, 3] = 1, -3, 2.5, 1
    np.testing.assert_array_equal(x, ref)


def _order_roundtrip(order, shape):
    @ct.kernel
    def k(x, y):
        i, j, m = ct.bid(0), ct.bid(1), ct.bid(2)
        t = ct.load(x, (i, j, m), shape, order=order, padding_mode=P.ZERO)
        ct.store(y, (i, j, m), t + 1, order=order)
    return k


@pytest.mark.parametrize("order", ["C", "F", (0, 2, 1), (2, 0, 1), (-1, 0, -2)])
def test_order_load_store_is_transpose(order):
    # R-SPACE-2, R-STORE-5: both ops act on np.transpose(x, P) with the same tile index.
    x = np.arange(5 * 6 * 3, dtype=np.int32).reshape(5, 6, 3)
    y = np.zeros_like(x)
    perm = {"C": (0, 1, 2), "F": (2, 1, 0)}.get(order) if isinstance(order, str) else tuple(
        a % 3 for a in order)
    shape = (2, 4, 2)
    xt = np.transpose(x, perm)
    grid = tuple(-(-n // t) for n, t in zip(xt.shape, shape))
    ct.launch(None, grid, _order_roundtrip(order, shape), (x, y))
    np.testing.assert_array_equal(y, x + 1)


@ct.kernel
def cast_stores(f32, i64, f64):
    ct.store(f32, (0,), ct.arange(4, dtype=ct.int32))          # i32 -> f32
    ct.store(i64, (0,), ct.arange(4, dtype=ct.int8) - 2)       # i8 -> i64
    ct.store(f64, (0,), ct.full((4,), 0.1, dtype=ct.float16))  # f16 -> f64 (exact)
    ct.store(f32, (1,), ct.full((4,), 1.5, dtype=ct.bfloat16))  # bf16 -> f32


def test_store_implicit_widening_casts():
    # R-STORE-2 / R-CAST-1: widening conversions are implicit and exact.
    f32 = np.zeros(8, np.float32)
    i64 = np.zeros(4, np.int64)
    f64 = np.zeros(4, np.float64)
    ct.launch(None, (1,), cast_stores, (f32, i64, f64))
    np.testing.assert_array_equal(f32, [0, 1, 2, 3, 1.5, 1.5, 1.5, 1.5])
    np.testing.assert_array_equal(i64, [-2, -1, 0, 1])
    np.testing.assert_array_equal(f64, np.full(4, np.float16(0.1), np.float64))


@ct.kernel
def load_zero_d_array(a, out):
    t = ct.load(a, (), ())
    ct.store(out, (0,), t)


def test_tile_space_load_on_rank0_array_rejected():
    # R-ARRAY-4: rank-0 arrays are accessed with gather/scatter only.
    with pytest.raises(ct.TileTypeError, match="0-D array"):
        ct.launch(None, (1,), load_zero_d_array, (np.array(1.0, np.float32),
                                                  np.zeros(1, np.float32)))


@ct.kernel
def num_tiles_values(a, out):
    ct.store(out, (0,), ct.num_tiles(a, 0, (4, 2)))
    ct.store(out, (1,), ct.num_tiles(a, 1, (4, 2)))
    ct.store(out, (2,), ct.num_tiles(a, 0, (4, 2), order="F"))
    ct.store(out, (3,), ct.num_tiles(a, 1, (4, 2), order=(1, 0)))
    ct.store(out, (4,), ct.num_tiles(a, -1, ()))
    ct.store(out, (5,), ct.num_tiles(a, axis=0, shape=(1, 1)).dtype == ct.int32)


@pytest.mark.parametrize("shape", [(13, 7), (16, 2), (1, 1), (9, 33)])
def test_num_tiles(shape):
    # R-SPACE-4: cdiv(array.shape[P[axis]], shape[axis]) as a runtime int32.
    out = np.zeros(6, np.int32)
    ct.launch(None, (1,), num_tiles_values, (np.zeros(shape, np.float32), out))
    m, n = shape
    np.testing.assert_array_equal(out, [-(-m // 4), -(-n // 2), -(-n // 4), -(-m // 2), n, 1])


# -- padding modes (R-PAD-1/2, R-LOAD-4) ---------------------------------------------------------
FILLS = {P.ZERO: 0.0, P.NEG_ZERO: -0.0, P.NAN: np.nan, P.POS_INF: np.inf, P.NEG_INF: -np.inf}


def _pad_kernel(mode):
    @ct.kernel
    def k(x, out):
        t = ct.load(x, (1, 1), (4, 8), padding_mode=mode)
        ct.store(out, (0, 0), t)
        v = x.tiled_view((2, 8), padding_mode=mode)
        ct.store(out, (2, 0), v.load((2, 0)))
    return k


@pytest.mark.parametrize("mode", list(FILLS), ids=lambda m: m.name)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: d.name)
def test_padding_modes_float_bit_exact(dtype, mode):
    # R-PAD-1: OOB lanes of a partial tile hold the mode's fill; in-bounds lanes are read.
    x = (np.arange(6 * 11).reshape(6, 11) - 20).astype(dtype)
    out = np.zeros((6, 8), dtype)
    ct.launch(None, (1,), _pad_kernel(mode), (x, out))
    fill = np.array(FILLS[mode]).astype(dtype)
    padded = np.full((12, 16), fill, dtype)
    padded[:6, :11] = x
    ref = np.concatenate([padded[4:8, 8:16], padded[4:6, 0:8]])
    if mode is P.NAN:  # NaN payloads are not specified: compare NaN-ness plus the other bits
        assert np.array_equal(np.isnan(out.astype(np.float64)), np.isnan(ref.astype(np.float64)))
        keep = ~np.isnan(ref.astype(np.float64))
        np.testing.assert_array_equal(bits(out)[keep], bits(ref)[keep])
    else:
        np.testing.assert_array_equal(bits(out), bits(ref))  # -0.0 included


def _zero_pad_kernel():
    @ct.kernel
    def k(x, out):
        t = ct.load(x, (ct.bid(0),), (8,), padding_mode=P.ZERO)
        ct.store(out, (ct.bid(0),), t)
    return k


ZERO_PAD = _zero_pad_kernel()


@pytest.mark.parametrize("dtype", INT_BOOL_DTYPES, ids=lambda d: d.name)
def test_padding_zero_on_int_and_bool(dtype):
    # R-PAD-1: ZERO is 0 for integers and False for bool.
    x = (np.arange(11) % 3 + 1).astype(dtype)
    out = np.full(16, 1, dtype)
    ct.launch(None, (2,), ZERO_PAD, (x, out))
    ref = np.zeros(16, dtype)
    ref[:11] = x
    np.testing.assert_array_equal(out, ref)


def _float_mode_on(mode):
    @ct.kernel
    def k(x, out):
        ct.store(out, (0,), ct.load(x, (0,), (8,), padding_mode=mode))
    return k


def _float_mode_view(mode):
    @ct.kernel
    def k(x, out):
        ct.store(out, (0,), x.tiled_view(8, padding_mode=mode).load(0))
    return k


@pytest.mark.parametrize("mode", [P.NEG_ZERO, P.NAN, P.POS_INF, P.NEG_INF], ids=lambda m: m.name)
@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int64, np.bool_],
                         ids=lambda d: np.dtype(d).name)
def test_float_only_padding_rejected_on_int_arrays(dtype, mode):
    # R-PAD-2 (cutile decision): float-only fills are a type error on int/bool arrays,
    # for ct.load and for tiled views alike; nothing is written.
    x = np.ones(8, dtype)
    out = np.zeros(8, dtype)
    for make in (_float_mode_on, _float_mode_view):
        with pytest.raises(ct.TileTypeError, match=f"Padding mode {mode.name} requires a float"):
            ct.launch(None, (1,), make(mode), (x, out))
    np.testing.assert_array_equal(out, 0)


@ct.kernel
def undetermined_in_bounds_only(x, out):
    t = ct.load(x, (ct.bid(0),), (4,))  # default UNDETERMINED, tile fully in bounds
    ct.store(out, (ct.bid(0),), t)


def test_default_padding_full_tiles():
    # R-PAD-1: UNDETERMINED is the default; full tiles never observe padding.
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(16, np.float32)
    ct.launch(None, (4,), undetermined_in_bounds_only, (x, out))
    np.testing.assert_array_equal(out, x)

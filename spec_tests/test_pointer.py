"""Foreign pointers (§7): ``foreign_pointer_dtype``, ``Array.foreign_pointer`` and
``Array.from_foreign``, on every executor (``CUTILE_TEST_BACKEND=numba``: the Numba backend on
a GPU or under the simulator).  References are NumPy slices of the inputs."""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest
from spec_executor import interp_only_ub, test_backend

import cutile as ct
from cutile import TileTypeError, TileUnsupportedFeatureError, UndefinedBehaviorError
from cutile.dtypes import foreign_pointer_dtype, foreign_pointer_pointee_dtype


def test_foreign_pointer_dtype():
    """§7: one 64-bit non-numeric dtype per pointee; nesting is refused."""
    d = foreign_pointer_dtype(ct.float32)
    assert d is foreign_pointer_dtype(ct.float32) and d is ct.foreign_pointer_dtype(ct.float32)
    assert d.name == "foreign_pointer[float32]" and d.bitwidth == 64
    assert foreign_pointer_pointee_dtype(d) is ct.float32
    assert not (d.is_integral or d.is_float or d.is_bool)
    with pytest.raises(TypeError, match="nested foreign pointer dtypes are not supported"):
        foreign_pointer_dtype(d)


@ct.kernel
def _round_trip(x, y):
    view = ct.Array.from_foreign(x.foreign_pointer, (16,), (1,))
    ct.store(y, (0,), ct.load(view, (0,), shape=(16,)))


def test_round_trip_static():
    x = np.arange(16, dtype=np.float32)
    y = np.zeros_like(x)
    ct.launch(None, (1,), _round_trip, (x, y))
    np.testing.assert_array_equal(y, x)


@ct.kernel
def _round_trip_dynamic(x, y):
    half = x.shape[0] // 2
    second = x.slice(axis=0, start=half, stop=x.shape[0])
    view = ct.Array.from_foreign(second.foreign_pointer, (half, 16), second.strides)
    ct.store(y, (0, 0), ct.load(view, (0, 0), shape=(16, 16)))


def test_round_trip_dynamic_slice_and_strides():
    """§7: the pointer of a slice is its first element; runtime shape and strides."""
    x = np.arange(32 * 16, dtype=np.float32).reshape(32, 16)
    y = np.zeros((16, 16), np.float32)
    ct.launch(None, (1,), _round_trip_dynamic, (x, y))
    np.testing.assert_array_equal(y, x[16:])


@ct.kernel
def _where_broadcast(x, y, c: ct.Constant[bool]):
    p = ct.where(ct.astile(c, dtype=ct.bool_), x.foreign_pointer,
                 x.slice(axis=0, start=16, stop=32).foreign_pointer)
    p = ct.reshape(ct.broadcast_to(p, (4,)), (2, 2))
    p = ct.reshape(ct.broadcast_to(ct.reshape(p, (4,))[None, :], (1, 4)), (4,))
    q = ct.reshape(ct.broadcast_to(ct.reshape(p, (2, 2)), (2, 2)), (4,))
    ptr = ct.reshape(ct.broadcast_to(x.foreign_pointer, (1,)), ())
    ptr = ct.where(ct.astile(c, dtype=ct.bool_), ptr, ct.where(True, ptr, ptr))
    view = ct.Array.from_foreign(ct.where(ct.astile(c, dtype=ct.bool_), ptr,
                                          x.slice(axis=0, start=16, stop=32).foreign_pointer),
                                 (16,), (1,))
    ct.store(y, (0,), ct.load(view, (0,), shape=(16,)) + ct.zeros((16,), ct.float32))
    ct.store(y, (1,), ct.zeros((16,), ct.float32) + (q.shape[0] - 4))


@pytest.mark.parametrize("c,lo", [(True, 0), (False, 16)])
def test_where_broadcast_reshape(c, lo):
    """§7: pointers can be selected with where, broadcast and reshaped."""
    x = np.arange(32, dtype=np.float32)
    y = np.zeros(32, np.float32)
    ct.launch(None, (1,), _where_broadcast, (x, y, c))
    np.testing.assert_array_equal(y[:16], x[lo:lo + 16])


@ct.kernel
def _extract(x, y):
    pointers = ct.reshape(ct.broadcast_to(x.foreign_pointer, (4,)), (2, 2))
    xv = ct.Array.from_foreign(ct.extract(pointers, (1, 1), shape=()), (16,), (1,))
    yv = ct.Array.from_foreign(y.foreign_pointer, (16,), (1,))
    ct.store(yv, (0,), ct.load(xv, (0,), shape=(16,)))


def test_extract_a_pointer():
    """§7, R-SHAPE-7: an element extracted from a pointer tile is a scalar pointer (1.7's
    broadcast-reshape-extract case)."""
    x = np.arange(16, dtype=np.float32)
    y = np.zeros_like(x)
    ct.launch(None, (1,), _extract, (x, y))
    np.testing.assert_array_equal(y, x)


@ct.kernel
def _transposed(x, y, out):
    n, m = x.shape[0], x.shape[1]
    xt = ct.Array.from_foreign(x.foreign_pointer, (m, n), (x.strides[1], x.strides[0]))
    ct.store(y, (0, 0), ct.load(xt, (0, 0), shape=(8, 4)))
    shp = ct.full((4,), 0, ct.int64)
    shp = ct.where(ct.arange(4, dtype=ct.int32) == 0, xt.shape[0], shp)
    shp = ct.where(ct.arange(4, dtype=ct.int32) == 1, xt.shape[1], shp)
    shp = ct.where(ct.arange(4, dtype=ct.int32) == 2, xt.strides[0], shp)
    shp = ct.where(ct.arange(4, dtype=ct.int32) == 3, xt.strides[1], shp)
    ct.store(out, (0,), shp)


def test_runtime_strides_transpose_and_queries():
    """§7, R-ARRAY-2: strides are in elements and any order; the array answers shape and
    strides queries with what it was built from."""
    x = np.arange(4 * 8, dtype=np.float32).reshape(4, 8)
    y = np.zeros((8, 4), np.float32)
    out = np.zeros(4, np.int64)
    ct.launch(None, (1,), _transposed, (x, y, out))
    np.testing.assert_array_equal(y, x.T)
    np.testing.assert_array_equal(out, [8, 4, 1, 8])


@ct.kernel
def _store_through(x, y):
    # y is written only through the foreign array (the launch must copy it back)
    v = ct.Array.from_foreign(y.slice(axis=0, start=2, stop=y.shape[0]).foreign_pointer,
                              (y.shape[0] - 2,), (1,))
    ct.store(v, (0,), ct.load(x, (0,), shape=(16,)) * 2)
    ct.scatter(v, ct.arange(4, dtype=ct.int32) + 16, ct.full((4,), -1.0, ct.float32))


def test_store_and_scatter_through_a_foreign_array():
    """§7, R-GS-1, R-GS-3: stores and scatters through an array from a pointer write the
    argument's memory (a slice's pointer is its first element); out-of-bounds scatter lanes
    of its shape are skipped."""
    x = np.arange(16, dtype=np.float32)
    y = np.full(20, 7, np.float32)
    ct.launch(None, (1,), _store_through, (x, y))
    want = np.full(20, 7, np.float32)
    want[2:18] = x * 2
    want[18:20] = -1                        # v[16], v[17]; v[18], v[19] are out of bounds
    np.testing.assert_array_equal(y, want)


@ct.kernel
def _views_and_atomics(x, idx, hist, out):
    xv = ct.Array.from_foreign(x.foreign_pointer, x.shape, x.strides)
    hv = ct.Array.from_foreign(hist.foreign_pointer, (hist.shape[0],), (1,))
    tv = xv.tiled_view((4, 4))
    t = tv.load((ct.bid(0), 1))
    ct.store(out, (ct.bid(0), 0), t + ct.gather(xv, (ct.arange(4, dtype=ct.int32)[:, None],
                                                     ct.full((1, 4), 0, ct.int32))))
    ct.atomic_add(hv, ct.load(idx, (ct.bid(0),), (16,)), 1)
    hv.tiled_view(4).atomic_store_add((1,), ct.full((4,), 10, ct.int32))


def test_tiled_views_gather_and_atomics_on_a_foreign_array():
    """§7, R-VIEW-5, R-VIEW-7, R-ATOM-1: a foreign array is an ordinary array for tiled views,
    gathers and atomics (colliding indices; final values)."""
    x = np.arange(8 * 8, dtype=np.float32).reshape(8, 8)
    idx = np.array([i % 5 for i in range(32)], np.int32)
    hist = np.zeros(8, np.int32)
    out = np.zeros((8, 4), np.float32)
    ct.launch(None, (2,), _views_and_atomics, (x, idx, hist, out))
    want = np.bincount(idx, minlength=8).astype(np.int32)
    want[4:8] += 20
    np.testing.assert_array_equal(hist, want)
    # block b: rows 4b..4b+3, columns 4..7, plus x[i, 0] gathered for row i of the tile
    np.testing.assert_array_equal(out, x[:, 4:8] + np.tile(x[:4, 0], 2)[:, None])


@ct.kernel
def _raw(x, out):
    # a column-major view of x: element (i, j) at offset i + 4 * j
    r = ct.Array.from_foreign(x.foreign_pointer, (4, 4), (1, 4)).get_raw_memory()
    k = ct.arange(16, dtype=ct.int32)
    # each op touches its own elements (the backend does not order one block's global
    # accesses across its threads yet, R-EXEC-5)
    ct.store(out, (0,), r.load_offset(k, mask=k < 8, padding_value=-1))
    r.store_offset(k, r.load_offset(k) * 10, mask=k >= 12)
    r.atomic_add_offset(ct.full((4,), 9, ct.int32), 1)


def test_raw_memory_of_a_foreign_array():
    """§7 (RawArrayMemory): offsets count elements from the foreign array's first element,
    whatever its strides."""
    x = np.arange(16, dtype=np.int32)
    out = np.zeros(16, np.int32)
    ct.launch(None, (1,), _raw, (x, out))
    want = np.arange(16, dtype=np.int32)
    np.testing.assert_array_equal(out, np.where(want < 8, want, -1))
    want[12:] *= 10
    want[9] += 4
    np.testing.assert_array_equal(x, want)


@ct.kernel
def _narrow(x, y):
    v = ct.Array.from_foreign(x.foreign_pointer, (x.shape[0],), (1,))
    ct.store(y, (0,), ct.load(v, (0,), shape=(16,)).astype(ct.float32))


@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, np.float16, np.int8, np.bool_])
def test_element_dtypes(dtype):
    """§7: a pointer to any element dtype (bfloat16 travels as its bits on the backend)."""
    x = (np.arange(16) % 3).astype(dtype)
    y = np.zeros(16, np.float32)
    ct.launch(None, (1,), _narrow, (x, y))
    np.testing.assert_array_equal(y, x.astype(np.float32))


@ct.kernel
def _zero_d(x):
    s = ct.Array.from_foreign(x.slice(axis=0, start=3, stop=4).foreign_pointer, (), ())
    ct.scatter(s, (), ct.gather(s, ()) + ct.gather(x, 0))


def test_zero_d_array():
    """§7: an empty shape gives a 0-D array (gather/scatter with an empty index)."""
    x = np.arange(8, dtype=np.int32) + 5
    ct.launch(None, (1,), _zero_d, (x,))
    np.testing.assert_array_equal(x, [5, 6, 7, 8 + 5, 9, 10, 11, 12])


@ct.kernel
def _strided_args(x, y):
    # y is written only through the foreign array; x's strides are the caller's
    xv = ct.Array.from_foreign(x.foreign_pointer, x.shape, x.strides)
    yv = ct.Array.from_foreign(y.foreign_pointer, (y.shape[0], y.shape[1]),
                               (y.strides[0], y.strides[1]))
    ct.store(yv, (0, 0), ct.load(xv, (0, 0), shape=(8, 8)) + 1)


@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
def test_pointers_of_strided_numpy_arguments(dtype):
    """§7, R-ARRAY-2: a NumPy view keeps its own strides (a column slice, a transpose); the
    Numba backend then copies the view's whole buffer to the device, so the caller's strides
    describe the copy and writes through the pointer land in the caller's view."""
    base = np.arange(16 * 16).reshape(16, 16).astype(dtype)
    out = np.zeros((8, 16), dtype)
    x, y = base[:8, ::2], out.T[::2, :]
    ct.launch(None, (1,), _strided_args, (x, y))
    want = np.zeros((8, 16), dtype)
    want.T[::2, :] = x.astype(np.float32) + 1
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(base, np.arange(16 * 16).reshape(16, 16).astype(dtype))


@ct.kernel
def _past_the_view(x, y):
    v = ct.Array.from_foreign(x.foreign_pointer, (x.shape[0] + 6,), (1,))
    ct.store(y, (0,), ct.load(v, (0,), shape=(16,)))
    ct.scatter(v, ct.arange(2, dtype=ct.int32) + 16, -1)


def test_array_reaching_past_the_view_inside_its_buffer():
    """§7: a foreign array may reach past the argument's own elements while it stays inside
    the buffer the argument views (on the Numba backend the view's whole buffer travels)."""
    base = np.arange(20, dtype=np.int32)
    y = np.zeros(16, np.int32)
    ct.launch(None, (1,), _past_the_view, (base[2:14], y))
    np.testing.assert_array_equal(y, np.arange(2, 18))
    want = np.arange(20, dtype=np.int32)
    want[18:20] = -1
    np.testing.assert_array_equal(base, want)


def test_pointer_of_a_negative_stride_numpy_argument():
    """§7: a NumPy view with negative strides has no non-negative strides for from_foreign;
    the interpreter calls that R-UB-3, the Numba backend refuses the argument at launch."""
    x = np.arange(32 * 16, dtype=np.float32).reshape(32, 16)[::-1]
    y = np.zeros((16, 16), np.float32)
    if test_backend() == "interp":
        with pytest.raises(UndefinedBehaviorError, match="non-negative"):
            ct.launch(None, (1,), _round_trip_dynamic, (x, y))
    else:
        with pytest.raises(TileUnsupportedFeatureError, match="negative strides"):
            ct.launch(None, (1,), _round_trip_dynamic, (x, y))


def _compile(src_fn, arr):
    @ct.kernel
    def k(x):
        src_fn(x)
    ct.launch(None, (1,), k, (arr,))


def _add(x):
    return x.foreign_pointer + 1


def _compare(x):
    return x.foreign_pointer == x.foreign_pointer


def _astype(x):
    return x.foreign_pointer.astype(ct.uint64)


def _sum(x):
    return ct.sum(x.foreign_pointer)


def _full(x):
    return ct.full((4,), 0, x.foreign_pointer.dtype)


def _equal(x):
    return ct.equal(x.foreign_pointer, x.foreign_pointer)


def _constructor(x):
    return ct.uint64(x.foreign_pointer)


def _not(x):
    return not x.foreign_pointer


def _positive(x):
    return +x.foreign_pointer


def _bitcast_from(x):
    return ct.bitcast(x.foreign_pointer, ct.uint64)


def _bitcast_to(x):
    return ct.bitcast(ct.uint64(0), x.foreign_pointer.dtype)


def _rank(x):
    ct.Array.from_foreign(x.foreign_pointer, (16, 1), (1,))


def _negative(x):
    ct.Array.from_foreign(x.foreign_pointer, (-1,), (1,))


def _float(x):
    ct.Array.from_foreign(x.foreign_pointer, (1.0,), (1,))


def _not_pointer(x):
    ct.Array.from_foreign(ct.int64(0), (1,), (1,))


@pytest.mark.parametrize("fn,match", [
    (_add, "non-arithmetic dtype"), (_compare, "non-arithmetic dtype"),
    (_astype, "non-arithmetic dtype"), (_sum, "Non-arithmetic dtype"),
    (_full, "not a numeric dtype"), (_equal, "non-arithmetic dtype"),
    (_constructor, "non-arithmetic dtype"), (_not, "non-arithmetic dtype"),
    (_positive, "non-arithmetic dtype"), (_bitcast_from, "foreign pointer"),
    (_bitcast_to, "foreign pointer"), (_rank, "same rank"), (_negative, "non-negative"),
    (_float, "signed integer"), (_not_pointer, "expects a scalar foreign pointer")])
def test_errors(fn, match):
    """§7: a foreign pointer supports no numeric operation; from_foreign validates its
    shape and strides."""
    with pytest.raises(TileTypeError, match=match):
        _compile(fn, np.zeros(16, np.float32))


@ct.kernel
def _too_long(x, y):
    view = ct.Array.from_foreign(x.foreign_pointer, (32,), (1,))
    ct.store(y, (0,), ct.load(view, (0,), shape=(32,)))


@interp_only_ub
def test_view_outside_the_buffer_is_ub():
    """§7 (cutile): an array from a pointer that reaches past its buffer is R-UB-3."""
    with pytest.raises(UndefinedBehaviorError, match="past the end of the buffer"):
        ct.launch(None, (1,), _too_long, (np.zeros(16, np.float32), np.zeros(32, np.float32)))


@pytest.mark.skipif(not (test_backend() == "numba" and os.environ.get("NUMBA_ENABLE_CUDASIM")
                         == "1"), reason="the simulator's stand-in for Array.from_foreign "
                                         "(numba_backend/pointer_rt.py)")
def test_simulator_refuses_a_view_outside_the_buffer():
    """§7 (cutile): under the simulator ``Array.from_foreign`` maps the address back to a
    launch buffer and refuses a view reaching past it instead of reading foreign memory."""
    with pytest.raises(UndefinedBehaviorError, match="past the end of the buffer"):
        ct.launch(None, (1,), _too_long, (np.zeros(16, np.float32), np.zeros(32, np.float32)))


"""Foreign pointers (§7): ``foreign_pointer_dtype``, ``Array.foreign_pointer`` and
``Array.from_foreign``, on every executor (``CUTILE_TEST_BACKEND=numba``: the Numba backend on
a GPU or under the simulator).  References are NumPy slices of the inputs."""

from __future__ import annotations

import numpy as np
import pytest
from spec_executor import interp_only_ub

import cutile as ct
from cutile import TileTypeError, UndefinedBehaviorError
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
    (_full, "not a numeric dtype"), (_rank, "same rank"), (_negative, "non-negative"),
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

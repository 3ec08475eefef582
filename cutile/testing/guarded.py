"""Guarded, poisoned copies of a launch's arrays: unwritten elements and stray writes show.

Every array argument is copied into the middle of a larger buffer with a guard band of
``GUARD`` elements on every side of every dimension, filled with a sentinel; the kernel gets
the inner view (non-contiguous for 2-D and up, which also exercises stride handling).  After
the launch the guard band must still hold the sentinel: a write outside an array is a bug of
the executor, not of the kernel (R-ST-2 discards out-of-bounds stores).  Arrays the kernel only
writes are poisoned first (NaN / a byte pattern), so an element no block wrote differs.
"""

from __future__ import annotations

import numpy as np

GUARD = 2


def sentinel(dtype) -> np.generic:
    """The value that fills guard bands (distinct from every poison value)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.array(-7.25e3 if dtype.itemsize > 1 else 3.0, dtype=dtype)[()]
    if dtype.kind == "b":
        return np.array(True)[()]
    if dtype.kind in "iu":
        return np.frombuffer(b"\xa7" * dtype.itemsize, dtype=dtype)[0]
    # ml_dtypes (bfloat16, float8: kind 'V'): a finite value every format holds exactly
    return np.array(3.0, dtype=np.float32).astype(dtype)[()]


def poison(shape, dtype) -> np.ndarray:
    """An output array whose every element is "not written yet": NaN for floats, a byte
    pattern for integers, True for bools."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return np.ones(shape, dtype=bool)
    if dtype.kind in "iu":
        return np.full(shape, np.frombuffer(b"\x5c" * dtype.itemsize, dtype=dtype)[0], dtype)
    if dtype.kind == "f":
        return np.full(shape, np.nan, dtype=dtype)
    nan = np.array(np.nan, np.float32).astype(dtype)
    if np.isnan(nan.astype(np.float32)):
        return np.full(shape, nan, dtype=dtype)
    # formats without NaN (float8_e4m3fn has one; e2m1 has none): the largest value
    return np.full(shape, np.array(6.0, np.float32).astype(dtype), dtype=dtype)


def bits(a: np.ndarray) -> np.ndarray:
    """The raw bits of ``a`` as unsigned integers (bools as uint8), for exact comparison."""
    a = np.ascontiguousarray(a)
    if a.dtype == np.bool_:
        return a.view(np.uint8)
    return a.view(f"u{a.dtype.itemsize}")


def embed(a: np.ndarray, guard: int = GUARD) -> tuple[np.ndarray, np.ndarray]:
    """(buffer, view): ``a`` copied into the middle of a guarded buffer."""
    if a.ndim == 0:
        buf = np.full((1 + 2 * guard,), sentinel(a.dtype), dtype=a.dtype)
        buf[guard] = a
        return buf, buf[guard:guard + 1].reshape(())
    shape = tuple(d + 2 * guard for d in a.shape)
    buf = np.full(shape, sentinel(a.dtype), dtype=a.dtype)
    sl = tuple(slice(guard, guard + d) for d in a.shape)
    buf[sl] = a
    return buf, buf[sl]


def inner(buf: np.ndarray, shape: tuple, guard: int = GUARD) -> np.ndarray:
    """The view of ``buf`` that ``embed`` handed to the kernel."""
    if not shape:
        return buf[guard:guard + 1].reshape(())
    return buf[tuple(slice(guard, guard + d) for d in shape)]


def guard_intact(buf: np.ndarray, shape: tuple, guard: int = GUARD) -> bool:
    """Whether every element of ``buf`` outside the inner view still holds the sentinel."""
    mask = np.ones(buf.shape, dtype=bool)
    if not shape:
        mask[guard] = False
    else:
        mask[tuple(slice(guard, d - guard) for d in buf.shape)] = False
    s = np.ascontiguousarray(np.broadcast_to(np.asarray(sentinel(buf.dtype)), buf.shape))
    return bool(np.array_equal(bits(buf)[mask], bits(s)[mask]))

"""Shared by the reduction and shape tests: a one-block kernel harness that checks result dtype and
shape, bitwise comparison, and a re-implementation of the documented reduction order."""

from __future__ import annotations

import ml_dtypes
import numpy as np

import cutile as ct


def make1(fn, s0, oshape):
    """One-block kernel storing ``fn(load(X0))`` into Y; F[0] = 1 iff the result's dtype equals
    Y's dtype and its shape is ``oshape`` (both compile-time constants, R-TILE-4)."""
    z0, zo = (0,) * len(s0), (0,) * max(len(oshape), 1)
    flat = oshape == ()

    @ct.kernel
    def k(X0, Y, F):
        y = fn(ct.load(X0, index=z0, shape=s0))
        ok = y.dtype == Y.dtype and y.shape == oshape
        ct.store(F, index=(0,), tile=ct.full((1,), 1 if ok else 0, dtype=ct.int32))
        if flat:
            y = ct.reshape(y, (1,))
        ct.store(Y, index=zo, tile=y)

    return k


def run(fn, x, out_shape, out_dtype=None):
    """``fn`` applied to tile ``x``; asserts the result's dtype and shape."""
    x = np.ascontiguousarray(x)
    y = np.zeros(out_shape or (1,), out_dtype or x.dtype)
    f = np.zeros(1, np.int32)
    ct.launch(None, (1,), make1(fn, x.shape, tuple(out_shape)), (x, y, f))
    assert f[0] == 1, "result dtype or shape differs from the expected one"
    return y.reshape(out_shape)


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}")


def same(a, b):
    """Bitwise equality (NaN, -0.0 exact)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(bits(a), bits(b))


def tree_ref(x, axes, op):
    """The documented combine order (numerics.reduce), re-implemented: reduced axes in
    descending order; along an axis of length n, ``x[:n/2] op x[n/2:]`` until length 1.
    ``op`` is a NumPy ufunc evaluated in x's dtype (IEEE for float16/float32)."""
    r = np.asarray(x)
    half = r.dtype in (np.float16, ml_dtypes.bfloat16) and op in (np.add, np.multiply)
    if half:     # half-precision sums/products accumulate in float32, rounded once at the end
        r = r.astype(np.float32)
    for ax in sorted({a % r.ndim for a in axes}, reverse=True):
        n = r.shape[ax]
        while n > 1:
            n //= 2
            lo = np.take(r, np.arange(n), axis=ax)
            hi = np.take(r, np.arange(n, 2 * n), axis=ax)
            with np.errstate(all="ignore"):
                r = op(lo, hi).astype(r.dtype)
    return r.astype(x.dtype) if half else r

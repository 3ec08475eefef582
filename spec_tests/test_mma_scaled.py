"""R-MM-6 ``mma_scaled``: block-scaled low-precision matmul.  The interpreter computes it
exactly (so Blackwell-only kernels run on any CPU); the Numba backend refuses it.

Expected values: the scaled operands are exact in float64, so a sequential float64 dot
product plus acc, rounded once to float32, is the definition (R-MM-7 allows a tolerance; the
interpreter meets the definition exactly, checked here with ``math.fsum`` bounds).
"""

from __future__ import annotations

import linecache
import math

import ml_dtypes
import numpy as np
import pytest
from spec_executor import test_backend

import cutile as ct
from cutile import Constant

interp_only = pytest.mark.skipif(
    test_backend() != "interp",
    reason="mma_scaled needs sm_100+ block-scaled MMA: the Numba backend refuses it")

F8E4, F8E5, E8M0 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.float8_e8m0fnu
F4 = ml_dtypes.float4_e2m1fn


@ct.kernel
def k2(X, XS, Y, YS, Z, M: Constant[int], N: Constant[int], K: Constant[int],
       KS: Constant[int]):
    x = ct.load(X, (0, 0), (M, K))
    xs = ct.load(XS, (0, 0), (M, KS))
    y = ct.load(Y, (0, 0), (K, N))
    ys = ct.load(YS, (0, 0), (KS, N))
    acc = ct.load(Z, (0, 0), (M, N))
    ct.store(Z, (0, 0), ct.mma_scaled(x, xs, y, ys, acc))


def reference(x, xs, y, ys, z):
    """Exactly rounded ``z + (x*xs) @ (y*ys)`` in float64 (fsum), as float32."""
    b = x.shape[-1] // xs.shape[-1]
    a = x.astype(np.float64) * np.repeat(xs.astype(np.float64), b, axis=-1)
    c = y.astype(np.float64) * np.repeat(ys.astype(np.float64), b, axis=-2)
    out = np.empty(z.shape, np.float64)
    for i in range(z.shape[0]):
        for j in range(z.shape[1]):
            out[i, j] = math.fsum(list(a[i] * c[:, j]) + [float(z[i, j])])
    return out.astype(np.float32)


@interp_only
def test_example_R_MM_6():
    x = np.ones((2, 64), F8E4)
    y = np.ones((64, 2), F8E4)
    xs = np.full((2, 2), 2.0, E8M0)
    ys = np.full((2, 2), 2.0, E8M0)
    z = np.zeros((2, 2), np.float32)
    ct.launch(None, (1,), k2, (x, xs, y, ys, z, 2, 2, 64, 2))
    np.testing.assert_array_equal(z, np.full((2, 2), 256.0, np.float32))


@interp_only
@pytest.mark.parametrize("dtype,sdtype,block", [
    (F8E4, E8M0, 32), (F8E5, E8M0, 32), (F4, E8M0, 16), (F4, E8M0, 32), (F4, F8E4, 16)])
def test_random_against_exact_reference_R_MM_6_7(dtype, sdtype, block):
    rng = np.random.default_rng(7)
    m, n, k = 8, 8, 64
    ks = k // block
    x = (rng.standard_normal((m, k)) * 2).astype(dtype)
    y = (rng.standard_normal((k, n)) * 2).astype(dtype)
    if sdtype is E8M0:
        xs = (2.0 ** rng.integers(-4, 5, (m, ks))).astype(sdtype)
        ys = (2.0 ** rng.integers(-4, 5, (ks, n))).astype(sdtype)
    else:
        xs = rng.standard_normal((m, ks)).astype(sdtype)
        ys = rng.standard_normal((ks, n)).astype(sdtype)
    z = rng.standard_normal((m, n)).astype(np.float32)
    want = reference(x, xs, y, ys, z)
    ct.launch(None, (1,), k2, (x, xs, y, ys, z, m, n, k, ks))
    # sequential float64 sums of products of <= 8 significant bits are exact here
    np.testing.assert_array_equal(z, want)


@ct.kernel
def k_batch(X, XS, Y, YS, Z):
    x = ct.load(X, (0, 0), (4, 32))
    xs = ct.load(XS, (0, 0), (4, 1))
    y = ct.load(Y, (0, 0, 0), (2, 32, 4))
    ys = ct.load(YS, (0, 0, 0), (2, 1, 4))
    acc = ct.load(Z, (0, 0, 0), (2, 4, 4))
    ct.store(Z, (0, 0, 0), ct.mma_scaled(x, xs, y, ys, acc))


@interp_only
def test_batch_broadcast_R_MM_1_6():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 32)).astype(F8E4)
    xs = np.full((4, 1), 0.5, E8M0)
    y = rng.standard_normal((2, 32, 4)).astype(F8E4)
    ys = np.full((2, 1, 4), 4.0, E8M0)
    z = np.zeros((2, 4, 4), np.float32)
    ct.launch(None, (1,), k_batch, (x, xs, y, ys, z))
    for b in range(2):
        np.testing.assert_array_equal(z[b], reference(x, xs, y[b], ys[b], np.zeros((4, 4),
                                                                                 np.float32)))


@pytest.mark.skipif(test_backend() != "numba",
                    reason="runs with CUTILE_TEST_BACKEND=numba only: it checks the Numba "
                           "backend's refusal")
def test_numba_backend_refuses_with_unsupported_feature():
    with pytest.raises(ct.TileUnsupportedFeatureError, match="mma_scaled.*numba backend"):
        ct.launch(None, (1,), k2, (np.ones((2, 64), F8E4), np.ones((2, 2), E8M0),
                                   np.ones((64, 2), F8E4), np.ones((2, 2), E8M0),
                                   np.zeros((2, 2), np.float32), 2, 2, 64, 2))


def kernel_from(body: str):
    src = ("def k():\n"
           "    x = ct.ones((16, 64), ct.float8_e4m3fn)\n"
           "    xs = ct.ones((16, 2), ct.float8_e8m0fnu)\n"
           "    y = ct.ones((64, 16), ct.float8_e4m3fn)\n"
           "    ys = ct.ones((2, 16), ct.float8_e8m0fnu)\n"
           "    acc = ct.zeros((16, 16), ct.float32)\n"
           f"    {body}\n")
    name = f"<test_mma_scaled_{abs(hash(src))}>"
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    ns = {"ct": ct}
    exec(compile(src, name, "exec"), ns)
    return ct.kernel(ns["k"])


@pytest.mark.parametrize("body,match", [
    ("ct.mma_scaled(x, xs, y.astype(ct.float8_e5m2), ys, acc)", "x and y must have the same"),
    ("ct.mma_scaled(x, xs, y, ys.astype(ct.float32).astype(ct.float8_e4m3fn), acc)",
     "x_scale and y_scale must have the same dtype"),
    ("ct.mma_scaled(x.astype(ct.float16), xs, y.astype(ct.float16), ys, acc)",
     "Unsupported input dtype"),
    ("ct.mma_scaled(x, xs.astype(ct.float32).astype(ct.bfloat16), y, "
     "ys.astype(ct.float32).astype(ct.bfloat16), acc)", "Unsupported scale dtype"),
    ("ct.mma_scaled(x, xs, y, ys, acc.astype(ct.float16))", "Unsupported acc dtype"),
    ("ct.mma_scaled(x, ct.ones((8, 2), ct.float8_e8m0fnu), y, ys, acc)",
     r"x_scale shape .* is not compatible with x shape"),
    ("ct.mma_scaled(x, xs, y, ct.ones((2, 8), ct.float8_e8m0fnu), acc)",
     r"y_scale shape .* is not compatible with y shape"),
    ("ct.mma_scaled(x, ct.ones((16, 8), ct.float8_e8m0fnu), y, ct.ones((8, 16), "
     "ct.float8_e8m0fnu), acc)", r"x\.shape\[1\] must be an exact multiple of x_scale\.shape"
                                 r"\[1\] with scaling block size B = K // K_s in \{32\}"),
    ("ct.mma_scaled(ct.reshape(x, (1024,)), xs, y, ys, acc)", "Expect shape of `x` to be 2D"),
    ("ct.mma_scaled(x, xs, y, ys, ct.zeros((16, 8), ct.float32))", "Expect acc shape"),
])
def test_errors_R_MM_6(body, match):
    with pytest.raises(ct.TileTypeError, match=match):
        ct.launch(None, (1,), kernel_from(body), ())

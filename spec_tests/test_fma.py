"""Fused multiply-add contraction (R-FMA-1/2, R-MATH-9).

The reference for a fused result is the exact value ``x*y + z`` (Python Fractions) rounded once
to the dtype; the unfused reference rounds the product first.  Inputs are chosen so that the two
differ, so the tests observe whether the kernel fused or not.
"""

from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import cutile as ct
from cutile.ir import ops
from cutile.ir.core import walk

BF16 = ml_dtypes.bfloat16
N = 16


def _run(kernel, *args, grid=(1,)):
    ct.launch(None, grid, kernel, args)


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}")


def round_to(q: Fraction, dtype) -> np.ndarray:
    """Correctly rounded (RN) value of the rational q in ``dtype``.

    float(q) is correctly rounded to float64; for narrower formats, round-to-odd at float64
    precision first so that the second rounding is correct.
    """
    d = float(q)
    if np.dtype(dtype) == np.float64 or Fraction(d) == q:
        return np.array(d).astype(dtype)
    # round-to-odd at float64 precision: set the last bit when inexact
    b = np.array(d).view(np.uint64)
    if Fraction(d) > q and d > 0 or Fraction(d) < q and d < 0:
        b = b - np.uint64(1)        # truncate toward zero
    b = b | np.uint64(1)
    return np.array(b, np.uint64).view(np.float64).astype(dtype)


def fused(x, y, z, dtype):
    return np.array([round_to(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c)), dtype)
                     for a, b, c in zip(x, y, z)], dtype)


def unfused(x, y, z, dtype):
    p = np.array([round_to(Fraction(float(a)) * Fraction(float(b)), dtype) for a, b in zip(x, y)],
                 dtype)
    return np.array([round_to(Fraction(float(a)) + Fraction(float(c)), dtype)
                     for a, c in zip(p, z)], dtype)


def inputs(dtype, seed=0):
    """x, y near 1 with a few low bits set; z cancels most of x*y so rounding shows."""
    rng = np.random.default_rng(seed)
    finfo = ml_dtypes.finfo(dtype)
    p = int(finfo.nmant) + 1
    k = rng.integers(1, 2 ** (p // 2), size=(2, N))
    x = (1 + k[0] * 2.0 ** -(p // 2 + 1)).astype(dtype)
    y = (1 + k[1] * 2.0 ** -(p // 2 + 1)).astype(dtype)
    prod = x.astype(np.float64) * y.astype(np.float64)
    z = (-prod).astype(dtype)
    z[::3] = (rng.normal(size=len(z[::3])) * 4).astype(dtype)
    return x, y, z


@ct.kernel
def k_fma(a, b, c, out, CASE: ct.Constant[str]):
    x = ct.load(a, index=(0,), shape=(N,))
    y = ct.load(b, index=(0,), shape=(N,))
    z = ct.load(c, index=(0,), shape=(N,))
    if CASE == "xy+z":
        r = x * y + z
    elif CASE == "z+xy":
        r = z + x * y
    elif CASE == "xy-z":
        r = x * y - z
    elif CASE == "z-xy":
        r = z - x * y
    elif CASE == "local":
        t = x * y
        r = t + z
    elif CASE == "twice":
        t = x * y
        r = t + t
    elif CASE == "reused":
        t = x * y
        r = (t + z) - t
    elif CASE == "rounding":
        r = ct.mul(x, y, rounding_mode=ct.RoundingMode.RZ) + z
    elif CASE == "rounding_rn":
        r = ct.mul(x, y, rounding_mode=ct.RoundingMode.RN) + z
    elif CASE == "fn_add":
        r = ct.add(x * y, z)
    elif CASE == "fn_add_rz":
        r = ct.add(x * y, z, rounding_mode=ct.RoundingMode.RZ)
    elif CASE == "ftz":
        r = ct.add(x * y, z, flush_to_zero=True)
    ct.store(out, index=(0,), tile=r)


def _count(kernel, args):
    ir = kernel.compile(kernel.specialize(args))
    kinds = [type(op).__name__ for op in walk(ir.body)]
    return kinds.count("Fma"), kinds.count("Binary")


FUSED_CASES = ["xy+z", "z+xy", "xy-z", "z-xy", "local", "fn_add", "rounding_rn"]
DTYPES = [np.float32, np.float16, BF16, np.float64]


@pytest.mark.parametrize("case", FUSED_CASES)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_fused_multiply_add_single_rounding(case, dtype):
    # R-FMA-1 / R-FMA-2: x*y + z (and variants) rounds once; an explicit RN equals the default
    x, y, z = inputs(dtype)
    out = np.zeros(N, dtype)
    args = (x, y, z, out, case)
    _run(k_fma, *args)
    xs, ys, zs = {"xy-z": (x, y, -z), "z-xy": (-x, y, z)}.get(case, (x, y, z))
    ref = fused(xs, ys, zs, dtype)
    np.testing.assert_array_equal(bits(out), bits(ref))
    # the inputs really distinguish fused from unfused evaluation
    assert (bits(ref) != bits(unfused(xs, ys, zs, dtype))).any()
    assert _count(k_fma, args) == (1, 0)


def test_fused_example_float32():
    # R-FMA-1: (1 + 2**-12)**2 - (1 + 2**-11) is 2**-24 fused, 0 unfused
    x = np.full(N, 1 + 2 ** -12, np.float32)
    z = np.full(N, -(1 + 2 ** -11), np.float32)
    out = np.zeros(N, np.float32)
    _run(k_fma, x, x, z, out, "xy+z")
    np.testing.assert_array_equal(out, np.full(N, 2.0 ** -24, np.float32))


@pytest.mark.parametrize("case", ["twice", "reused", "rounding", "fn_add_rz", "ftz"])
def test_not_fused(case):
    # R-FMA-1: a product with another use is not fused (t = x*x; t + t); a multiply and an add
    # whose rounding modes or flush-to-zero settings differ are not fused (as upstream)
    x, y, z = inputs(np.float32, seed=1)
    out = np.zeros(N, np.float32)
    args = (x, y, z, out, case)
    _run(k_fma, *args)
    assert _count(k_fma, args)[0] == 0
    if case == "twice":
        p = (x.astype(np.float64) * y).astype(np.float32)
        np.testing.assert_array_equal(out, p + p)
    elif case == "reused":
        p = (x.astype(np.float64) * y).astype(np.float32)
        np.testing.assert_array_equal(out, (p + z) - p)
    elif case == "rounding":
        p = np.trunc((x.astype(np.float64) * y) * 2.0 ** 23) / 2.0 ** 23     # x*y in [1, 2)
        np.testing.assert_array_equal(out, p.astype(np.float32) + z)


def test_integer_multiply_add_not_fused():
    # R-FMA-1 applies to floating point only; integer arithmetic wraps (R-MATH-4)
    a = np.arange(N, dtype=np.int32) * 100000
    out = np.zeros(N, np.int32)
    args = (a, a, a, out, "xy+z")
    _run(k_fma, *args)
    assert _count(k_fma, args) == (0, 2)
    np.testing.assert_array_equal(out, (a.astype(np.int64) * a + a).astype(np.int32))


@ct.kernel
def k_fma_promoted(a, b, c, out):
    x = ct.load(a, index=(0,), shape=(N,))
    y = ct.load(b, index=(0,), shape=(N,))
    z = ct.load(c, index=(0,), shape=(N,))
    ct.store(out, index=(0,), tile=x * y + z)          # f16 product, converted, f32 add


def test_product_converted_before_add_is_not_fused():
    # R-FMA-1 / R-PROMO-3: the f16 product is rounded to f16 and converted to f32 before the
    # f32 addition
    x, y, _ = inputs(np.float16, seed=2)
    z = np.linspace(-1, 1, N).astype(np.float32)
    out = np.zeros(N, np.float32)
    _run(k_fma_promoted, x, y, z, out)
    p = (x.astype(np.float64) * y.astype(np.float64)).astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(out, p + z)


@pytest.mark.parametrize("special", ["inf", "nan", "zero_sign", "overflow"])
def test_fma_special_values(special):
    # R-FMA-2: IEEE semantics of the fused operation (inf, NaN, signed zero, overflow)
    x = np.ones(N, np.float32)
    y = np.ones(N, np.float32)
    z = np.zeros(N, np.float32)
    if special == "inf":
        x[:] = np.inf
        z[:] = 1.0
        ref = np.full(N, np.inf, np.float32)
    elif special == "nan":
        x[:] = np.inf
        z[:] = -np.inf
        ref = None
    elif special == "zero_sign":
        x[:] = -0.0
        z[:] = -0.0
        ref = np.full(N, -0.0, np.float32)           # (-0 * 1) + (-0) = -0
    else:
        x[:] = 3e38
        y[:] = 2.0
        z[:] = -3e38
        ref = np.full(N, np.float32(3e38), np.float32)  # exact 3e38: no intermediate overflow
    out = np.zeros(N, np.float32)
    _run(k_fma, x, y, z, out, "xy+z")
    if ref is None:
        assert np.isnan(out).all()
    else:
        np.testing.assert_array_equal(bits(out), bits(ref))


_ = ops


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_fma_large_broadcast_ties_and_subnormals(dtype):
    """R-FMA-2 on batched-size operands (the interpreter computes those in chunks of the
    leading axis, broadcasting in place): every lane one rounding of the exact value, with
    products and sums on rounding midpoints, results below the normal range and signed zeros,
    through several chunks."""
    from cutile import dtypes as dt
    from cutile.interp import numerics as num
    f = np.finfo(dtype)
    one, eps, tiny = dtype(1), float(f.eps), float(f.tiny)
    nasty = np.array([1 + eps, 1 + 2 ** (f.nmant // 2) * eps, -(1 + eps), 3.0, 0.5 + eps,
                      tiny, 3 * tiny * eps, -0.0, 0.0, 2 ** (f.nmant + 1) + 2, -1.0, 1 - eps / 2],
                     dtype)
    rng = np.random.default_rng(37)
    a = rng.choice(nasty, (70, 3, 700))
    b = rng.choice(nasty, (1, 1, 700))
    c = rng.choice(np.concatenate([nasty, -nasty * one]), (70, 1, 1))
    got = num.fma(a, b, c, dt.float32 if dtype == np.float32 else dt.float16)
    A, B, C = np.broadcast_arrays(a, b, c)
    triples = np.stack([bits(A).ravel(), bits(B).ravel(), bits(C).ravel()], axis=1)
    uniq, inv = np.unique(triples, axis=0, return_inverse=True)
    u = uniq.astype(bits(a).dtype).view(dtype)
    ref = fused(u[:, 0], u[:, 1], u[:, 2], dtype)
    # Fractions have no signed zero: an exact zero takes IEEE's sign (float64 forms the
    # product and the zero sum exactly)
    u64 = u.astype(np.float64)
    zero = ref == 0
    ref[zero] = (u64[zero, 0] * u64[zero, 1] + u64[zero, 2]).astype(dtype)
    exp = ref[inv.reshape(-1)].reshape(got.shape)
    assert got.dtype == dtype and got.shape == (70, 3, 700)
    assert np.array_equal(bits(got), bits(exp))

"""Conversions (R-ASTYPE-1/2), strictly typed constants (R-CONST-4) and fused multiply-adds
(R-FMA-1/2) on extreme values, on both executors, against an exact reference computed here
with Fractions (not with NumPy or ml_dtypes, which round float64 into bfloat16 through
float32, i.e. twice).

Values are generated, not hand-picked: for each source dtype, every special value (±0, ±inf,
NaN, the smallest and largest subnormal, the smallest normal, the largest finite), the
rounding boundaries of the destination format expressed in the source (its largest finite,
the overflow threshold, the subnormal range, ties), and random bit patterns.  The cases
below the generated ones are the defects that random kernels found (issue 27)."""

from __future__ import annotations

import math
import zlib
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import cutile as ct
from cutile import Constant
from cutile import dtypes as dt_

from .harness import assert_same, examples, run_both, sim
from .test_diff_elementwise import ULP_BOUND

BF16 = np.dtype(ml_dtypes.bfloat16)

# (significand bits with the implicit one, smallest normal exponent, largest exponent)
_IEEE = {np.dtype(np.float64): (53, -1022, 1023), np.dtype(np.float32): (24, -126, 127),
         np.dtype(np.float16): (11, -14, 15), BF16: (8, -126, 127)}
FLOATS = list(_IEEE)
INTS = [np.dtype(t) for t in (np.int64, np.uint64, np.int32, np.uint32, np.int16, np.int8,
                              np.uint8)]


def round_exact(q: Fraction, dst: np.dtype, negative_zero: bool = False) -> float:
    """Round-to-nearest-even of the exact rational ``q`` into IEEE-like format ``dst``
    (overflow to ±inf), as a Python float."""
    p, emin, emax = _IEEE[dst]
    if q == 0:
        return -0.0 if negative_zero else 0.0
    neg, a = q < 0, abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1                                     # now 2**e <= a < 2**(e+1)
    quantum = Fraction(2) ** (max(e, emin) - p + 1)
    n, rem = divmod(a, quantum)
    if rem * 2 > quantum or (rem * 2 == quantum and n % 2 == 1):
        n += 1
    v = n * quantum
    out = math.inf if v >= Fraction(2) ** (emax + 1) else float(v)
    return -out if neg else out


def _exact(v) -> Fraction:
    return Fraction(int(v)) if isinstance(v, (int, np.integer)) else Fraction(float(v))


def _bits_view(a: np.ndarray) -> np.ndarray:
    return a.view(f"u{a.dtype.itemsize}")


def _f64(a: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):
        return a.astype(np.float64)


def extremes(src: np.dtype, dst: np.dtype, rng: np.random.Generator, n: int) -> np.ndarray:
    """Extreme values of ``src`` for a conversion into ``dst``: specials, ``dst``'s rounding
    boundaries as far as ``src`` holds them, and ``n`` random bit patterns."""
    if src.kind in "iu":
        info = np.iinfo(src)
        vals = [0, 1, info.min, info.max, info.min + 1, info.max - 1]
        for k in range(4, info.bits):
            for d in (-1, 0, 1):
                vals += [(1 << k) + d, -(1 << k) + d]
        if dst in _IEEE:                            # ties and near-ties of dst's precision
            p = _IEEE[dst][0]
            for k in range(p + 1, info.bits):
                half = 1 << (k - p)
                for d in (-1, 0, 1):
                    vals += [(1 << k) + half + d, (1 << k) + 3 * half + d,
                             -((1 << k) + half + d)]
        vals = [v for v in vals if info.min <= v <= info.max]
        rand = rng.integers(0, 1 << min(info.bits, 63), size=n, dtype=np.uint64)
        arr = np.concatenate([np.array(vals, dtype=src),
                              rand.astype(np.uint64).view(np.int64).astype(src)])
        return arr
    fi = ml_dtypes.finfo(src) if src == BF16 else np.finfo(src)
    sub = float(fi.smallest_subnormal)
    vals = [0.0, -0.0, math.inf, -math.inf, math.nan, sub, -sub, float(fi.smallest_normal),
            float(fi.smallest_normal) - sub, float(fi.max), -float(fi.max), 1.0, -1.0]
    if dst in _IEEE:
        dfi = ml_dtypes.finfo(dst) if dst == BF16 else np.finfo(dst)
        big, ulp = float(dfi.max), float(dfi.max) * 2.0 ** -_IEEE[dst][0]
        dsub = float(dfi.smallest_subnormal)
        for v in (big, big + ulp / 2, big + ulp, dsub, dsub / 2, dsub * 1.5, dsub * 0.75,
                  float(dfi.smallest_normal), 1.0 + 2.0 ** -_IEEE[dst][0]):
            vals += [v, -v]
    vals = np.array(vals, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        arr = vals.astype(src)
    ui = np.dtype(f"u{src.itemsize}")
    rand = rng.integers(0, 1 << (8 * src.itemsize - 1), size=n, dtype=np.uint64) * 2 + \
        rng.integers(0, 2, size=n, dtype=np.uint64)
    around = _bits_view(arr).astype(np.uint64)      # neighbours of every boundary value
    near = np.concatenate([around - 1, around + 1]).astype(ui)
    return np.concatenate([arr, rand.astype(ui).view(src), near.view(src)])


def reference(x: np.ndarray, dst: np.dtype) -> np.ndarray:
    out = []
    for v in x.tolist() if x.dtype.kind in "iu" else _f64(x).tolist():
        if isinstance(v, float) and not math.isfinite(v):
            out.append(v)
        else:
            out.append(round_exact(_exact(v), dst, negative_zero=math.copysign(1, v) < 0
                                   if isinstance(v, float) else False))
    return np.array(out, dtype=np.float64).astype(dst)


def assert_exact(executor: str, have: np.ndarray, want: np.ndarray, what) -> None:
    """``have`` is ``want`` bit for bit (any NaN matches any NaN); ``what(i)`` describes
    element ``i`` for the message."""
    nan = np.isnan(_f64(want))
    same = (_bits_view(have) == _bits_view(want)) | (nan & np.isnan(_f64(have)))
    if not same.all():
        i = int(np.flatnonzero(~same)[0])
        raise AssertionError(f"{executor}: {what(i)}: got {have[i]!r}, exact {want[i]!r} "
                             f"({int((~same).sum())} wrong)")


@ct.kernel
def convert(x, out, T: Constant[int]):
    ct.store(out, (ct.bid(0),), ct.load(x, (ct.bid(0),), (T,)).astype(out.dtype))


def _launch_convert(x: np.ndarray, dst: np.dtype):
    T = 64
    n = -(-len(x) // T) * T
    xs = np.zeros(n, x.dtype)
    xs[:len(x)] = x
    ref, got = run_both(convert, (n // T,), (xs, np.zeros(n, dst), T))
    return xs, ref[1], got[1]


PAIRS = [(s, d) for s in FLOATS + INTS for d in FLOATS if s != d]


@pytest.mark.parametrize("src,dst", PAIRS, ids=[f"{s.name}->{d.name}" for s, d in PAIRS])
def test_conversion_extremes_exact_on_both(src, dst):
    """Every value converts with one correct rounding, bit for bit on both executors."""
    rng = np.random.default_rng(zlib.crc32(f"{src.name}->{dst.name}".encode()))
    x = extremes(src, dst, rng, 32 * examples(4))
    xs, ref, got = _launch_convert(x, dst)
    want = reference(xs, dst)
    for name, have in (("interp", ref), ("numba", got)):
        assert_exact(name, have, want, lambda i: f"{src.name} {xs[i]!r} -> {dst.name}")


# -- fused multiply-add on extremes ---------------------------------------------------------
@ct.kernel
def fused(x, y, z, out, T: Constant[int]):
    b = ct.bid(0)
    a = ct.load(x, (b,), (T,))
    ct.store(out, (b,), a * ct.load(y, (b,), (T,)) + ct.load(z, (b,), (T,)))


def _fma_reference(x, y, z, dt: np.dtype) -> np.ndarray:
    out = []
    for a, b, c in zip(*(_f64(v).tolist() for v in (x, y, z))):
        if not (math.isfinite(a) and math.isfinite(b)):
            out.append(a * b + c)                  # inf/NaN product: IEEE, exact
        elif not math.isfinite(c):
            out.append(c)                          # finite exact product + inf/NaN
        else:
            q = Fraction(a) * Fraction(b) + Fraction(c)
            zero_neg = q == 0 and (math.copysign(1, a) * math.copysign(1, b) < 0) and \
                math.copysign(1, c) < 0
            out.append(round_exact(q, dt, negative_zero=zero_neg))
    return np.array(out, dtype=np.float64).astype(dt)


@pytest.mark.parametrize("dt", FLOATS, ids=[d.name for d in FLOATS])
def test_fma_extremes_exact_on_both(dt):
    """``x*y + z`` contracted into one fma rounds once, on any mix of huge, tiny, zero and
    non-finite operands (a zero factor times a huge one, a product past the overflow
    threshold cancelled or met by an infinity)."""
    rng = np.random.default_rng(7)
    n = 64 * examples(4)
    pool = extremes(dt, dt, rng, n)
    x, y, z = (pool[rng.integers(0, len(pool), size=n)] for _ in range(3))
    T = 64
    n -= n % T
    x, y, z = x[:n], y[:n], z[:n]
    ref, got = run_both(fused, (n // T,), (x, y, z, np.zeros(n, dt), T))
    want = _fma_reference(x, y, z, dt)
    for name, have in (("interp", ref[3]), ("numba", got[3])):
        assert_exact(name, have, want, lambda i: f"fma({x[i]!r}, {y[i]!r}, {z[i]!r}) in {dt.name}")


# -- the defects random kernels found (issue 27), each on both executors ----------------------
def test_fma_zero_times_huge_is_exact():
    x = np.array([1.7e308, 1e301, -1.7e308, 0.0])
    y = np.array([0.0, -0.0, 0.0, 1e308])
    z = np.array([-2.0, 5.0, -0.0, 3.0])
    ref, got = run_both(fused, (1,), (x, y, z, np.zeros(4), 4))
    for have in (ref[3], got[3]):
        np.testing.assert_array_equal(_bits_view(have),
                                      _bits_view(np.array([-2.0, 5.0, -0.0, 3.0])))


def test_fma_huge_product_plus_infinity():
    x, y = np.array([1e308, -1e308]), np.array([10.0, 10.0])
    z = np.array([-np.inf, np.inf])
    ref, got = run_both(fused, (1,), (x, y, z, np.zeros(2), 2))
    for have in (ref[3], got[3]):
        np.testing.assert_array_equal(have, [-np.inf, np.inf])


@pytest.mark.parametrize("src", [np.int64, np.uint64])
def test_64bit_int_to_bfloat16_rounds_once(src):
    v = 2 ** 62 + 2 ** 54 + 1                         # past a tie that float64 would create
    x = np.array([v, v - 2, 2 ** 62 + 2 ** 54], dtype=src)
    xs, ref, got = _launch_convert(x, BF16)
    want = [2 ** 62 + 2 ** 55, 2 ** 62, 2 ** 62]
    for have in (ref, got):
        np.testing.assert_array_equal(have[:3].astype(np.float64), want)


@ct.kernel
def scale_by_constant(x, out, T: Constant[int]):
    ct.store(out, (0,), ct.load(x, (0,), (T,)) * 1.0039062500000002)


def test_float_constant_rounds_once_into_bfloat16():
    # 1 + 2**-8 + 2**-52: just above the bfloat16 tie 1 + 2**-8; through float32 it is a tie
    ref, got = run_both(scale_by_constant, (1,), (np.ones(4, BF16), np.zeros(4, BF16), 4))
    for have in (ref[1], got[1]):
        np.testing.assert_array_equal(have.astype(np.float64), [1.0078125] * 4)


@ct.kernel
def to_bf16_rz(x, out, T: Constant[int]):
    ct.store(out, (0,), ct.load(x, (0,), (T,)).astype(ct.bfloat16,
                                                        rounding_mode=ct.RoundingMode.RZ))


def test_float64_to_bfloat16_rz_on_both():
    x = np.array([1.0039062500000002, -1.99999, 3.4e38, 1e300, -1e-300, np.inf, np.nan, 1e-40])
    ref, got = run_both(to_bf16_rz, (1,), (x, np.zeros(8, BF16), 8))
    want = np.array([1.0, -1.9921875, 3.3895313892515355e+38, 3.3895313892515355e+38, -0.0,
                     np.inf, np.nan, 9.183549615799121e-41]).astype(BF16)
    for have in (ref[1], got[1]):
        np.testing.assert_array_equal(_bits_view(have)[[0, 1, 2, 3, 4, 5, 7]],
                                      _bits_view(want)[[0, 1, 2, 3, 4, 5, 7]])
        assert np.isnan(have[6].astype(np.float32))


def in_range_floats(src: np.dtype, dst: np.dtype, n: int = 40) -> np.ndarray:
    """Values of float dtype ``src`` whose truncation fits integer dtype ``dst``: ±0, halves
    and near-integers, the extremes of ``dst`` (stepped toward zero until representable and in
    range), their neighbours, and random values in between."""
    info = np.iinfo(dst)
    big = float(np.finfo(np.float32 if src == BF16 else src).max)

    def inward(v: float) -> float:
        x = np.array([min(max(v, -big), big)], np.float64).astype(src)
        bits = x.view(f"u{src.itemsize}")
        while not info.min - 1 < float(x[0].astype(np.float64)) < info.max + 1:
            bits -= 1                       # one step toward zero (sign and magnitude)
        return float(x[0].astype(np.float64))
    lo, hi = inward(float(info.min)), inward(float(info.max))
    vals = [0.0, -0.0, 0.5, -0.5, 0.99951171875, -0.99951171875, 1.5, -1.5, 2.5, 100.75,
            -100.75, lo, hi, lo / 2, hi / 2, (hi - 1) if hi > 1 else hi]
    rng = np.random.default_rng(zlib.crc32(f"{src.name}{dst.name}".encode()))
    vals += list(rng.uniform(lo, hi, n))
    out = np.array(vals, np.float64).astype(src)
    keep = [info.min - 1 < float(v) < info.max + 1 for v in out.astype(np.float64)]
    return out[np.array(keep)]


F2I = [(s, d) for s in FLOATS for d in INTS]


@pytest.mark.parametrize("src,dst", F2I, ids=[f"{s.name}->{d.name}" for s, d in F2I])
def test_float_to_int_truncates_on_both(src, dst):
    """R-ASTYPE-1: float -> integer truncates toward zero, for every value in range."""
    x = in_range_floats(src, dst)
    xs, ref, got = _launch_convert(x, dst)
    want = np.array([math.trunc(float(v)) for v in xs.astype(np.float64)], dtype=object)
    for name, have in (("interp", ref), ("numba", got)):
        bad = [i for i in range(len(xs)) if int(have[i]) != want[i]]
        assert not bad, (f"{name}: {src.name} {float(xs[bad[0]])!r} -> {dst.name}: got "
                         f"{int(have[bad[0]])}, want {want[bad[0]]} ({len(bad)} wrong)")


@pytest.mark.parametrize("src", [np.dtype(np.float32), np.dtype(np.float64)])
def test_float_to_int_out_of_range_saturates_on_the_backend(src):
    """R-UB-6 leaves NaN/inf/out-of-range float -> int undefined (the strict interpreter
    raises); the backend converts with ``cvt.rzi`` semantics, the same on the simulator and
    the GPU: saturated to the range, NaN -> 0 (conversions.float_to_int; never LLVM poison, which
    could decide a later bounds check)."""
    from cutile.testing.diff import run_on
    x = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, 3e9, -3e9, 7.9], src)
    x = np.concatenate([x, np.zeros(8, src)])
    for dst, want in ((np.int32, [0, 2**31 - 1, -2**31, 2**31 - 1, -2**31, 2**31 - 1, -2**31, 7]),
                      (np.uint32, [0, 2**32 - 1, 0, 2**32 - 1, 0, 3000000000, 0, 7]),
                      (np.int64, [0, 2**63 - 1, -2**63, 2**63 - 1, -2**63, 3000000000,
                                  -3000000000, 7]),
                      (np.uint64, [0, 2**64 - 1, 0, 2**64 - 1, 0, 3000000000, 0, 7])):
        got = run_on(convert, (1,), (x, np.zeros(16, dst), 16), "numba", poison_outputs=False)
        assert got.arrays["out"][:8].tolist() == want, (dst, got.arrays["out"][:8])


# -- pow's special values ---------------------------------------------------------------------
@ct.kernel
def pow_tiles(x, y, out, half, T: Constant[int]):
    a = ct.load(x, (0,), (T,))
    ct.store(out, (0, 0), ct.reshape(ct.pow(a, ct.load(y, (0,), (T,))), (1, T)))
    ct.store(out, (1, 0), ct.reshape(ct.pow(a, 0.5), (1, T)))
    ct.store(out, (2, 0), ct.reshape(ct.astype(a ** half, out.dtype), (1, T)))


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64], ids=["f16", "f32", "f64"])
def test_pow_special_values_on_both(dt):
    """R-MATH-10 (cutile: pow is C99's, as libdevice's on the GPU): zero, infinite and NaN
    bases and exponents, with a tile exponent, the constant 0.5 and a runtime scalar 0.5:
    every zero, infinite and NaN result bit-identical on both executors (the simulator's
    libdevice pow once took NumPy's scalar-exponent sqrt shortcut: pow(-0, 0.5) = -0,
    pow(-inf, 0.5) = NaN; found by progen seed 77); finite results bit-identical under the
    simulator, within ``ULP_BOUND`` on a GPU (libdevice's float64 pow(2, 0.5) is one ulp
    below the correctly rounded sqrt(2): measured on an H200)."""
    vals = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 2.0, -2.0, 0.5, -3.0, 2.5]
    xs = np.array([a for a in vals for _ in vals], dt)
    ys = np.array([b for _ in vals for b in vals], dt)
    T = 256
    x, y = np.zeros(T, dt), np.ones(T, dt)
    x[:xs.size], y[:ys.size] = xs, ys
    ref, got = run_both(pow_tiles, (1,), (x, y, np.zeros((3, T), dt), 0.5, T))
    a, b = ref[2].view(f"u{np.dtype(dt).itemsize}"), got[2].view(f"u{np.dtype(dt).itemsize}")
    nan = np.isnan(ref[2]) & np.isnan(got[2])
    special = ~np.isfinite(ref[2]) | (ref[2] == 0) | ~np.isfinite(got[2]) | (got[2] == 0)
    bad = np.argwhere((a != b) & ~nan & (special | sim()))
    assert bad.size == 0, [(i, j, x[j], y[j] if i == 0 else 0.5, ref[2][i, j], got[2][i, j])
                           for i, j in bad[:8]]
    assert_same(ref[2], got[2], ulps=0 if sim() else ULP_BOUND[dt_.from_numpy(np.dtype(dt))],
                what=f"pow {np.dtype(dt).name}")
    assert not np.signbit(ref[2][1, 1]) and ref[2][1, 1] == 0       # pow(-0.0, 0.5) = +0
    assert ref[2][1, 3 * len(vals)] == np.inf                        # pow(-inf, 0.5) = +inf

"""Exactness tests for cutile.interp.numerics against integer/Fraction references (spec §12-17)."""

from __future__ import annotations

import math
import time
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cutile import dtypes as dt
from cutile.interp import numerics as N
from cutile.interp.numerics import FloatToIntUB

# -- independent reference rounding (pure Python integers, no NumPy rounding involved) ---------
# (precision p incl. hidden bit, emin, emax, largest finite value, what overflow gives under RN)
_FMT = {
    dt.float16: (11, -14, 15, None, "inf"),
    dt.bfloat16: (8, -126, 127, None, "inf"),
    dt.float32: (24, -126, 127, None, "inf"),
    dt.float64: (53, -1022, 1023, None, "inf"),
    dt.tfloat32: (11, -126, 127, None, "inf"),
    # float8 conversions saturate (.satfinite), as cuda.tile 1.7 does on an H100.
    dt.float8_e4m3fn: (4, -6, 8, 448.0, "sat"),
    dt.float8_e5m2: (3, -14, 15, None, "sat"),
    dt.float4_e2m1fn: (2, 0, 2, None, "sat"),
}
MODES = ("RN", "RZ", "RM", "RP")
ARITH = (dt.float16, dt.bfloat16, dt.float32, dt.float64)


def ref_round(q: Fraction, dtype: dt.DType, mode: str = "RN") -> float:
    """Round the exact rational q into dtype with mode; returns a Python float."""
    p, emin, emax, maxval, over = _FMT[dtype]
    if maxval is None:
        maxval = math.ldexp((1 << p) - 1, emax - p + 1)
    if q == 0:
        return 0.0
    neg = q < 0
    num, den = abs(q.numerator), q.denominator
    e = num.bit_length() - den.bit_length()
    if (num << max(-e, 0)) < (den << max(e, 0)):
        e -= 1
    qe = max(e, emin) - (p - 1)
    n2, d2 = (num, den << qe) if qe >= 0 else (num << -qe, den)
    r, rem = divmod(n2, d2)
    up = False
    if rem:
        if mode == "RN":
            up = 2 * rem > d2 or (2 * rem == d2 and r % 2 == 1)
        elif mode == "RA":
            up = 2 * rem >= d2
        elif mode == "RP":
            up = not neg
        elif mode == "RM":
            up = neg
    r += up
    val = math.ldexp(r, qe) if r * Fraction(2) ** qe <= maxval else None
    if val is None:
        to_inf = (mode in ("RN", "RA")) or (mode == "RP" and not neg) or (mode == "RM" and neg)
        if not to_inf or over == "sat":
            val = maxval
        else:
            val = math.inf if over == "inf" else math.nan
    return -val if neg else val


def ref_sqrt(x: float, dtype: dt.DType, mode: str) -> float:
    """Correctly rounded sqrt(x) for finite x > 0 via integer square roots."""
    p, emin, _, _, _ = _FMT[dtype]
    xq = Fraction(x)
    num, den = xq.numerator, xq.denominator
    lg = num.bit_length() - den.bit_length()
    if (num << max(-lg, 0)) < (den << max(lg, 0)):
        lg -= 1
    qe = max(lg // 2, emin) - (p - 1)
    scaled = xq / Fraction(4) ** qe
    r = math.isqrt(scaled.numerator // scaled.denominator)
    exact = Fraction(r * r) == scaled
    if not exact and (mode == "RP" or (mode == "RN" and scaled > (r + Fraction(1, 2)) ** 2)):
        r += 1
    return ref_round(Fraction(r) * Fraction(2) ** qe, dtype, "RN")


def arr(vals, dtype: dt.DType) -> np.ndarray:
    if not dtype.is_float:
        return np.array(vals, dtype=dtype.np_dtype)
    with np.errstate(over="ignore"):
        return np.array(vals, dtype=np.float64).astype(dtype.np_dtype)


def same(got: np.ndarray, expected) -> bool:
    """Bitwise-ish equality on float64 images: NaN == NaN and the sign of zero matters."""
    g = np.asarray(got).astype(np.float64).reshape(-1)
    e = np.asarray(expected, dtype=np.float64).reshape(-1)
    return bool(np.all((g == e) & (np.signbit(g) == np.signbit(e)) | (np.isnan(g) & np.isnan(e))))


def first_mismatch(got, expected, *ctx):
    g = np.asarray(got).astype(np.float64).reshape(-1)
    e = np.asarray(expected, dtype=np.float64).reshape(-1)
    bad = ~(((g == e) & (np.signbit(g) == np.signbit(e))) | (np.isnan(g) & np.isnan(e)))
    if not bad.any():
        return None
    i = int(np.flatnonzero(bad)[0])
    return (int(bad.sum()), i, g[i], e[i]) + tuple(np.asarray(c).reshape(-1)[i] for c in ctx)


def random_floats(rng, dtype: dt.DType, n: int, finite: bool = True) -> np.ndarray:
    """Uniform random bit patterns of dtype (all binades, subnormals included)."""
    nbytes = dtype.np_dtype.itemsize
    ui = {2: np.uint16, 4: np.uint32, 8: np.uint64}[nbytes]
    bits = rng.integers(0, np.iinfo(ui).max, size=n, dtype=ui, endpoint=True)
    x = bits.view(dtype.np_dtype)
    if finite:
        with np.errstate(invalid="ignore"):
            x = x[np.isfinite(x.astype(np.float64))]
    return x


# -- §17.2 division ------------------------------------------------------------------------------
@pytest.mark.parametrize("d", [dt.int8, dt.int32, dt.int64])
def test_floordiv_mod_python_semantics(d):  # R-DIV-1, R-DIV-3
    x, y = arr([-7, 7, 7, -7, 7], d), arr([2, -2, 2, 3, -3], d)
    assert N.binary("floordiv", x, y, d).tolist() == [-4, -4, 3, -3, -3]
    assert N.binary("mod", x, y, d).tolist() == [1, -1, 1, 2, -2]


def test_float_mod_and_floordiv():  # R-DIV-2, R-DIV-3
    r = N.binary("mod", arr([-7.5], dt.float32), arr([2.0], dt.float32), dt.float32)
    assert r.tolist() == [0.5]
    r = N.binary("floordiv", arr([5.5], dt.float64), arr([2.2], dt.float64), dt.float64)
    assert r.tolist() == [2.0]
    for d in ARITH:
        r = N.binary("mod", arr([-7.0, 7.0, 7.0, -4.0], d), arr([3.0, -3.0, 3.0, 2.0], d), d)
        assert same(r, [2.0, -2.0, 1.0, -0.0]), d  # -0.0: C remainder sign kept when r == 0


def test_cdiv_worked_examples():  # R-DIV-4
    x, y = arr([9, 8, -30, 100, -30, 100], dt.int32), arr([4, 4, 23, -13, -13, 23], dt.int32)
    assert N.binary("cdiv", x, y, dt.int32).tolist() == [3, 2, -1, -7, 3, 5]
    u = N.binary("cdiv", arr([9, 8, 2**64 - 1], dt.uint64), arr([4, 4, 2], dt.uint64), dt.uint64)
    assert u.tolist() == [3, 2, 2**63]


def test_divmod_identity_and_unsigned():  # R-DIV-1, R-DIV-5
    rng = np.random.default_rng(1)
    for d in (dt.int8, dt.int16, dt.int32, dt.int64, dt.uint8, dt.uint32, dt.uint64):
        info = np.iinfo(d.np_dtype)
        x = rng.integers(info.min, info.max, 2000, dtype=d.np_dtype, endpoint=True)
        y = rng.integers(info.min, info.max, 2000, dtype=d.np_dtype, endpoint=True)
        y[y == 0] = 1
        q, r = N.binary("floordiv", x, y, d), N.binary("mod", x, y, d)
        for xi, yi, qi, ri in zip(x.tolist(), y.tolist(), q.tolist(), r.tolist()):
            assert (qi, ri) == (dt.wrap_int(xi // yi, d), xi % yi)


def test_int_division_by_zero_raises():  # R-DIV-6
    for fn in ("floordiv", "mod", "cdiv"):
        with pytest.raises(ZeroDivisionError):
            N.binary(fn, arr([1, 2], dt.int32), arr([1, 0], dt.int32), dt.int32)
    r = N.binary("truediv", arr([1.0, -1.0, 0.0], dt.float32), arr([0.0, 0.0, 0.0], dt.float32),
                 dt.float32)
    assert same(r, [math.inf, -math.inf, math.nan])


# -- §17.1 integer wrap, min/max, comparisons ----------------------------------------------------
def test_integer_wraparound():  # R-MATH-4
    assert N.binary("add", arr([127], dt.int8), arr([1], dt.int8), dt.int8).tolist() == [-128]
    assert N.binary("mul", arr([16], dt.int8), arr([16], dt.int8), dt.int8).tolist() == [0]
    assert N.binary("sub", arr([0], dt.uint8), arr([1], dt.uint8), dt.uint8).tolist() == [255]
    big = arr([2**63 - 1], dt.int64)
    assert N.binary("add", big, arr([1], dt.int64), dt.int64).tolist() == [-(2**63)]
    assert N.binary("mul", big, big, dt.int64).tolist() == [1]  # exact 64-bit, no float detour
    assert N.unary("abs", arr([-128, -5], dt.int8), dt.int8).tolist() == [-128, 5]
    assert N.unary("negative", arr([-128], dt.int8), dt.int8).tolist() == [-128]
    assert N.unary("abs", np.array([True, False]), dt.bool_).tolist() == [True, False]
    assert N.unary("negative", np.array([True]), dt.int32).tolist() == [-1]  # R-MATH-7


def test_minimum_maximum_nan():  # R-MATH-6
    for d in ARITH:
        x, y = arr([np.nan, 1.0, np.nan, 3.0], d), arr([2.0, np.nan, np.nan, -1.0], d)
        assert same(N.binary("minimum", x, y, d), [2.0, 1.0, np.nan, -1.0])
        assert same(N.binary("maximum", x, y, d), [2.0, 1.0, np.nan, 3.0])
        assert same(N.binary("maximum", x, y, d, propagate_nan=True), [np.nan] * 3 + [3.0])
    assert N.binary("minimum", arr([200], dt.uint8), arr([3], dt.uint8), dt.uint8).tolist() == [3]


def test_compare_ieee():  # R-CMP-2, R-CMP-3
    x, y = arr([np.nan, 1.0, 2.0], dt.bfloat16), arr([np.nan, 1.0, 1.0], dt.bfloat16)
    assert N.compare("eq", x, y).tolist() == [False, True, False]
    assert N.compare("ne", x, y).tolist() == [True, False, True]
    assert N.compare("lt", x, y).tolist() == [False, False, False]
    assert N.compare("ge", x, y).tolist() == [False, True, True]
    assert N.compare("lt", np.array([False]), np.array([True])).tolist() == [True]
    assert N.compare("gt", arr([255], dt.uint8), arr([1], dt.uint8)).tolist() == [True]


def test_zero_d_in_zero_d_out():
    r = N.binary("add", np.array(1.5, np.float32), np.array(2.0, np.float32), dt.float32)
    assert isinstance(r, np.ndarray) and r.shape == () and r.dtype == np.float32
    r = N.unary("exp", np.array(0, np.int32), dt.float32)
    assert isinstance(r, np.ndarray) and r.shape == () and float(r) == 1.0
    r = N.convert(np.array(3.7), dt.float64, dt.int8)
    assert isinstance(r, np.ndarray) and r.shape == () and int(r) == 3
    r = N.fma(*(np.array(1.0, ml_dtypes.bfloat16),) * 3, dt.bfloat16)
    assert isinstance(r, np.ndarray) and r.shape == () and float(r) == 2.0
    assert N.compare("lt", np.array(1), np.array(2)).shape == ()


# -- §12.1 astype --------------------------------------------------------------------------------
def test_astype_int_int_and_bool():  # R-ASTYPE-1
    assert N.convert(arr([300, -1], dt.int32), dt.int32, dt.int8).tolist() == [44, -1]
    assert N.convert(arr([-1], dt.int8), dt.int8, dt.uint64).tolist() == [2**64 - 1]
    assert N.convert(arr([255], dt.uint8), dt.uint8, dt.int64).tolist() == [255]
    assert N.convert(arr([2**32 - 1], dt.uint32), dt.uint32, dt.int32).tolist() == [-1]
    f = arr([0.0, -0.0, 0.5, np.nan, -np.inf], dt.float32)
    assert N.convert(f, dt.float32, dt.bool_).tolist() == [False, False, True, True, True]
    assert N.convert(arr([0, 7], dt.int8), dt.int8, dt.bool_).tolist() == [False, True]
    b = np.array([True, False])
    assert N.convert(b, dt.bool_, dt.float16).tolist() == [1.0, 0.0]
    assert N.convert(b, dt.bool_, dt.int64).tolist() == [1, 0]


def test_astype_float_to_int_truncates_and_ub():  # R-ASTYPE-1
    x = arr([2.9, -2.9, -0.5, 127.9, -128.9], dt.float32)
    assert N.convert(x, dt.float32, dt.int8).tolist() == [2, -2, 0, 127, -128]
    assert N.convert(arr([2.0**63 - 1024], dt.float64), dt.float64, dt.int64).tolist() == \
        [2**63 - 1024]
    assert N.convert(arr([2.0**64 - 2048], dt.float64), dt.float64, dt.uint64).tolist() == \
        [2**64 - 2048]
    for bad, d in [(np.nan, dt.int32), (np.inf, dt.int32), (128.0, dt.int8), (-1.0, dt.uint8),
                   (2.0**63, dt.int64), (2.0**64, dt.uint64)]:
        with pytest.raises(FloatToIntUB) as ei:
            N.convert(arr([1.0, bad], dt.float64), dt.float64, d)
        assert ei.value.index == 1 and isinstance(ei.value, ValueError)


def test_astype_int64_to_float32_single_rounding():  # R-ASTYPE-1 (no double rounding)
    v = 2**62 + 2**38 + 1  # just above the f32 midpoint; via float64 it would look like a tie
    r = N.convert(arr([v, -v], dt.int64), dt.int64, dt.float32)
    assert r.tolist() == [2.0**62 + 2.0**39, -(2.0**62 + 2.0**39)]
    r = N.convert(arr([2**63 + 2**39 + 1], dt.uint64), dt.uint64, dt.float32)
    assert r.tolist() == [2.0**63 + 2.0**40]
    rng = np.random.default_rng(2)
    for src in (dt.int64, dt.uint64, dt.int32, dt.uint32):
        info = np.iinfo(src.np_dtype)
        x = rng.integers(info.min, info.max, 3000, dtype=src.np_dtype, endpoint=True)
        x = np.concatenate([x, (x >> 20) << 20, np.array([info.min, info.max], src.np_dtype)])
        for dst in (dt.float16, dt.bfloat16, dt.float32, dt.float64, dt.tfloat32):
            exp = [ref_round(Fraction(v), dst) for v in x.tolist()]
            got = N.convert(x, src, dst)
            assert got.dtype == dst.np_dtype
            assert first_mismatch(got, exp, x) is None, (src, dst)


def test_astype_rounding_modes_60_percent():  # R-ASTYPE-2 worked example
    lo, hi = 1.0, 1.0 + 2.0**-23
    v = arr([lo + 0.6 * 2.0**-23, -(lo + 0.6 * 2.0**-23)], dt.float64)
    want = {"RN": [hi, -hi], "RP": [hi, -lo], "RM": [lo, -hi], "RZ": [lo, -lo], "RA": [hi, -hi]}
    for mode, w in want.items():
        assert N.convert(v, dt.float64, dt.float32, mode).tolist() == w, mode
    from cutile.enums import RoundingMode
    assert N.convert(v, dt.float64, dt.float32, RoundingMode.RZ).tolist() == [lo, -lo]


def test_astype_ra_ties_away():  # R-MATH-8a RA
    x = arr([1.0 + 2.0**-24, 1.0 + 3 * 2.0**-24, -(1.0 + 2.0**-24)], dt.float64)
    assert N.convert(x, dt.float64, dt.float32, "RA").tolist() == \
        [1.0 + 2.0**-23, 1.0 + 2.0**-22, -(1.0 + 2.0**-23)]
    assert N.convert(x, dt.float64, dt.float32, "RN").tolist() == \
        [1.0, 1.0 + 2.0**-22, -1.0]


@pytest.mark.parametrize("dst", [dt.float16, dt.bfloat16, dt.float32, dt.tfloat32])
@pytest.mark.parametrize("mode", MODES + ("RA",))
def test_astype_float_float_modes_exact(dst, mode):  # R-ASTYPE-2
    rng = np.random.default_rng(hash((dst.name, mode)) % 2**32)
    x = random_floats(rng, dt.float64, 4000)
    x = x[np.abs(x) < 2.0**140]
    base = random_floats(rng, dt.float32, 4000)[:len(x)].astype(np.float64)
    near = base * (1 + rng.choice([-1, 1], len(base)) * 2.0 ** -rng.integers(8, 40, len(base)))
    scaled = rng.uniform(-1, 1, 3000) * 2.0 ** rng.integers(-150, 20, 3000)
    x = np.concatenate([x, near, scaled, [0.0, -0.0, np.inf, -np.inf, np.nan, 1e300, -1e300]])
    exp = [ref_round(Fraction(v), dst, mode) if np.isfinite(v) else v for v in x.tolist()]
    exp = [math.copysign(e, v) if e == 0 else e for e, v in zip(exp, x.tolist())]
    got = N.convert(x, dt.float64, dst, mode)
    assert first_mismatch(got, exp, x) is None
    if dst is dt.float32:  # the same from float16/bfloat16 sources is exact
        with np.errstate(over="ignore"):
            h = x.astype(np.float16)
        assert same(N.convert(h, dt.float16, dt.float32, mode), h.astype(np.float32))


@pytest.mark.parametrize("dst", [dt.float8_e4m3fn, dt.float8_e5m2, dt.float4_e2m1fn])
def test_astype_to_float8_float4_rn(dst):  # R-ASTYPE-2 (RN only)
    rng = np.random.default_rng(3)
    fmax = float(ml_dtypes.finfo(dst.np_dtype).max)
    x = np.concatenate([rng.uniform(-1.2, 1.2, 20000) * fmax,
                        rng.uniform(-1, 1, 20000) * 2.0 ** rng.integers(-12, 0, 20000)])
    grid = np.unique(np.arange(256, dtype=np.uint8).view(dst.np_dtype).astype(np.float64)) \
        if dst.bitwidth == 8 else np.array([0, .5, 1, 1.5, 2, 3, 4, 6], np.float64)
    grid = grid[np.isfinite(grid)]
    mids = (grid[1:] + grid[:-1]) / 2
    x = np.concatenate([x, mids, -mids, np.nextafter(mids, 0), np.nextafter(mids, 9e9)])
    for src in (dt.float64, dt.float32):
        xs = x.astype(src.np_dtype)
        exp = [ref_round(Fraction(v), dst) for v in xs.astype(np.float64).tolist()]
        exp = [math.copysign(e, v) if e == 0 else e for e, v in zip(exp, xs.tolist())]
        assert first_mismatch(N.convert(xs, src, dst), exp, xs) is None, src


def test_astype_float64_to_bfloat16_no_double_rounding():  # R-ASTYPE-2, R-DTYPE-5
    v = arr([1.0 + 2.0**-8 + 2.0**-40], dt.float64)  # ml_dtypes' direct cast gives 1.0
    assert N.convert(v, dt.float64, dt.bfloat16).tolist() == [1.0078125]


def test_astype_e8m0():  # R-ASTYPE-2: f8e8m0 accepts RZ and RP only
    x = arr([0.2, 0.25, 3.0, 1e-40, 1.5 * 2.0**127, 0.0, -1.0, np.nan], dt.float32)
    rz = N.convert(x, dt.float32, dt.float8_e8m0fnu, "RZ").astype(np.float64)
    rp = N.convert(x, dt.float32, dt.float8_e8m0fnu, "RP").astype(np.float64)
    assert same(rz, [0.125, 0.25, 2.0, 2.0**-127, 2.0**127, np.nan, np.nan, np.nan])
    assert same(rp, [0.25, 0.25, 4.0, 2.0**-127, np.nan, np.nan, np.nan, np.nan])
    with pytest.raises(ValueError):
        N.convert(x, dt.float32, dt.float8_e8m0fnu)
    e = N.convert(arr([0.5, 4.0], dt.float32), dt.float32, dt.float8_e8m0fnu, "RP")
    assert N.convert(e, dt.float8_e8m0fnu, dt.float32).tolist() == [0.5, 4.0]


# -- §17.3 fused multiply-add --------------------------------------------------------------------
def _near_tie_triples(rng, d: dt.DType, n: int):
    """a, b, c with a*b + c within a hair of a midpoint of d's grid (or exactly on it)."""
    p = _FMT[d][0]

    def spread(lo_exp, hi_exp):
        v = rng.uniform(1, 2, n) * 2.0 ** rng.integers(lo_exp, hi_exp, n)
        return (v * rng.choice([-1, 1], n)).astype(d.np_dtype)

    a, c = spread(-12, 12), spread(-12, 12)
    a64, c64 = a.astype(np.float64), c.astype(np.float64)
    _, ex = np.frexp(c64)
    k = rng.integers(-3, 4, len(c))  # target a midpoint a few ulps of c away
    half = np.ldexp(1.0, ex - p - 1) * (2 * k + 1)
    if d is dt.float64:
        bs = [float(Fraction(hv) / Fraction(av)) for hv, av in zip(half.tolist(), a64.tolist())]
        b = np.array(bs, np.float64)
    else:
        b = (half / a64).astype(d.np_dtype)
    # Second family: a*b is exactly a midpoint (3 * odd p-bit integer has p+1 bits) and c is a
    # nonzero crumb far below it, so only c decides the direction; a wider intermediate that
    # drops c (f32 for bf16, plain float64 for float64) must then break the tie wrongly.
    m = rng.integers(2 ** (p - 1), 2 ** p, n) | 1
    m = m[3 * m < 2 ** (p + 1)]
    k = len(m)
    a2 = np.ldexp(m.astype(np.float64), rng.integers(-10, 10, k) - p)
    b2 = 3.0 * np.ldexp(1.0, rng.integers(-4, 4, k))
    c2 = a2 * b2 * np.ldexp(1.0, -rng.integers(p + 2, 2 * p + 30, k)) * rng.choice([-1, 1], k)
    return tuple(np.concatenate([u, v.astype(d.np_dtype)]) for u, v in
                 ((a, a2), (b, b2), (c, c2)))


@pytest.mark.parametrize("d", ARITH)
def test_fma_single_rounding(d):  # R-FMA-2
    rng = np.random.default_rng(4 + ARITH.index(d))
    n = 100_000
    a, b, c = _near_tie_triples(rng, d, n)
    a2, b2, c2 = (random_floats(rng, d, 20000) for _ in range(3))
    m = min(len(a2), len(b2), len(c2))
    a, b, c = (np.concatenate([u, v[:m]]) for u, v in ((a, a2), (b, b2), (c, c2)))
    got = N.fma(a, b, c, d)
    assert got.dtype == d.np_dtype and len(a) > n
    exp = []
    for x, y, z in zip(*(t.astype(np.float64).tolist() for t in (a, b, c))):
        if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
            exp.append(math.nan)
            continue
        q = Fraction(x) * Fraction(y) + Fraction(z)
        e = ref_round(q, d)
        exp.append(x * y + z if q == 0 else (math.copysign(0.0, q) if e == 0 else e))
    exp = np.array(exp)
    fin = ~np.isnan(exp)
    assert first_mismatch(got[fin], exp[fin], a[fin], b[fin], c[fin]) is None
    # a one-size-wider evaluation double-rounds on these inputs (the test has teeth)
    wide = np.float32 if d in (dt.float16, dt.bfloat16) else np.float64
    with np.errstate(over="ignore", invalid="ignore"):
        naive = (a.astype(wide) * b.astype(wide) + c.astype(wide)).astype(d.np_dtype)
    assert first_mismatch(naive[fin], exp[fin])[0] > 100


def test_fma_special_values():  # R-FMA-2 IEEE cases
    for d in ARITH:
        a = arr([np.inf, np.inf, 1e30 if d is dt.float64 else 2.0, 0.0, -0.0, 2.0, 1.0], d)
        b = arr([0.0, 1.0, 1e300 if d is dt.float64 else 3.0, 5.0, 5.0, 3.0, -1.0], d)
        c = arr([1.0, -np.inf, -np.inf, -0.0, -0.0, -6.0, 1.0], d)
        assert same(N.fma(a, b, c, d), [np.nan, np.nan, -np.inf, 0.0, -0.0, 0.0, 0.0]), d
    big = arr([2.0**1000, 2.0**-600, 2.0**-1074], dt.float64)
    r = N.fma(big, big, arr([-(2.0**1023), 2.0**-1074, 0.0], dt.float64), dt.float64)
    assert same(r, [np.inf, 2.0**-1074, 0.0])


# -- directed rounding of add/sub/mul/div/sqrt -----------------------------------------------------
def _operand_pairs(rng, d: dt.DType, n: int):
    a = random_floats(rng, d, n)
    b = random_floats(rng, d, n)[:len(a)]
    a = a[:len(b)]
    a64 = a.astype(np.float64)
    with np.errstate(over="ignore"):
        close = (a64 * (1 + 2.0 ** -rng.integers(1, 30, len(a)))).astype(d.np_dtype)
        tiny = (a64 * 2.0 ** -rng.integers(5, 60, len(a))).astype(d.np_dtype)
    ints = rng.integers(-64, 64, (2, 500)).astype(np.float64).astype(d.np_dtype)
    x, y = np.concatenate([a, a, a, ints[0]]), np.concatenate([b, close, tiny, ints[1]])
    ok = np.isfinite(x.astype(np.float64)) & np.isfinite(y.astype(np.float64))
    return x[ok], y[ok]


@pytest.mark.parametrize("d", ARITH)
@pytest.mark.parametrize("fn", ["add", "sub", "mul", "truediv"])
def test_directed_basic_ops(d, fn):  # R-MATH-8 rounding modes, exact
    rng = np.random.default_rng(hash((d.name, fn)) % 2**32)
    a, b = _operand_pairs(rng, d, 6000)
    xa, xb = a.astype(np.float64).tolist(), b.astype(np.float64).tolist()
    for mode in MODES:
        got = N.binary(fn, a, b, d, rounding=mode)
        exp = []
        for x, y in zip(xa, xb):
            fx, fy = Fraction(x), Fraction(y)
            if fn == "truediv" and y == 0:  # IEEE: x/±0 = ±inf, 0/0 = NaN
                exp.append(math.copysign(math.inf, x) * math.copysign(1, y) if x else math.nan)
                continue
            q = {"add": fx + fy, "sub": fx - fy, "mul": fx * fy}.get(fn)
            q = fx / fy if q is None else q
            e = ref_round(q, d, mode)
            if e == 0:
                if q != 0:
                    e = math.copysign(0.0, q)
                elif fn == "mul" or fn == "truediv":
                    e = math.copysign(0.0, x) * math.copysign(1.0, y)
                else:
                    y2 = y if fn == "add" else -y
                    both_neg = math.copysign(1, x) < 0 and math.copysign(1, y2) < 0
                    both_pos = math.copysign(1, x) > 0 and math.copysign(1, y2) > 0
                    e = -0.0 if both_neg or (mode == "RM" and not both_pos) else 0.0
            exp.append(e)
        assert first_mismatch(got, exp, a, b) is None, mode


def test_directed_float64_extremes():  # R-MATH-8: exact fallback near the format's limits
    x = arr([2.0**1000, 2.0**-1000, 1e-300, 3.0, 2.0**-1074, 1.7e308], dt.float64)
    y = arr([2.0**30, 2.0**-70, 3e-20, 2.0**-1073, 3.0, 1.7e308], dt.float64)
    for fn in ("mul", "truediv", "add"):
        for mode in MODES:
            got = N.binary(fn, x, y, dt.float64, rounding=mode)
            fx = [Fraction(v) for v in x.tolist()]
            fy = [Fraction(v) for v in y.tolist()]
            exp = [ref_round(u * v if fn == "mul" else (u / v if fn == "truediv" else u + v),
                             dt.float64, mode) for u, v in zip(fx, fy)]
            assert first_mismatch(got, exp, x, y) is None, (fn, mode)


@pytest.mark.parametrize("d", ARITH)
def test_sqrt_rounding_modes(d):  # R-MATH-8 sqrt modes
    rng = np.random.default_rng(7)
    x = np.abs(random_floats(rng, d, 5000))
    x = np.concatenate([x, arr([4.0, 2.0, 0.0, 9.0, 2.25], d)])
    for mode in MODES:
        got = N.unary("sqrt", x, d, rounding=mode)
        exp = [ref_sqrt(v, d, mode) if v > 0 else v for v in x.astype(np.float64).tolist()]
        assert first_mismatch(got, exp, x) is None, mode
    neg = N.unary("sqrt", arr([-1.0, -0.0, np.inf], d), d, rounding="RZ")
    assert same(neg, [np.nan, -0.0, np.inf])


def test_ftz_float32():  # R-MATH-8 flush_to_zero
    sub = np.float32(2.0**-130)
    r = N.binary("add", np.array([sub, -sub], np.float32), np.array([0.0, -0.0], np.float32),
                 dt.float32, ftz=True)
    assert same(r, [0.0, -0.0])
    r = N.binary("mul", np.array([2.0**-63], np.float32), np.array([2.0**-64], np.float32),
                 dt.float32, ftz=True)
    assert same(r, [0.0])
    with pytest.raises(ValueError):
        N.binary("add", arr([1.0], dt.float16), arr([1.0], dt.float16), dt.float16, ftz=True)


# -- unary math -----------------------------------------------------------------------------------
def test_unary_math_dtypes():  # R-MATH-7, R-MATH-10
    x = np.linspace(-3, 3, 101)
    for fn in ("exp", "sin", "tanh", "exp2", "cos"):
        f = getattr(np, {"exp2": "exp2"}.get(fn, fn))
        r32 = N.unary(fn, x.astype(np.float32), dt.float32)
        assert np.array_equal(r32, f(x.astype(np.float32).astype(np.float64)).astype(np.float32))
        r16 = N.unary(fn, x.astype(np.float16), dt.float16)
        want = N.unary(fn, x.astype(np.float16).astype(np.float32), dt.float32).astype(np.float16)
        assert np.array_equal(r16, want)
    assert N.unary("exp", arr([0, 1], dt.int32), dt.float32).dtype == np.float32
    assert N.unary("isnan", arr([np.nan, 1.0], dt.bfloat16), dt.bool_).tolist() == [True, False]
    assert N.unary("floor", arr([-1.5, 2.5], dt.bfloat16), dt.bfloat16).tolist() == [-2.0, 2.0]
    assert N.unary("ceil", arr([-1.5, 2.5], dt.float32), dt.float32).tolist() == [-1.0, 3.0]
    r = N.unary("rsqrt", arr([4.0, 0.0, -1.0], dt.float16), dt.float16)
    assert same(r, [0.5, np.inf, np.nan])
    assert N.unary("log", arr([1.0], dt.bfloat16), dt.bfloat16).dtype == ml_dtypes.bfloat16


def test_pow_atan2_float_only():  # R-MATH-5, R-MATH-10
    r = N.binary("pow", arr([2.0, 9.0], dt.float16), arr([10.0, 0.5], dt.float16), dt.float16)
    assert r.tolist() == [1024.0, 3.0]
    r = N.binary("atan2", arr([1.0], dt.float32), arr([1.0], dt.float32), dt.float32)
    assert r.tolist() == [np.float32(math.pi / 4)]
    with pytest.raises(TypeError):
        N.binary("pow", arr([2], dt.int32), arr([2], dt.int32), dt.int32)


def _c_pow(x: float, y: float) -> float:
    """C99's pow (Annex F.9.4.4) from Python's ``math.pow``, which raises where C returns
    NaN (a negative finite base, a non-integer exponent), +-inf for a zero base and a
    negative exponent (the sign of zero kept for odd integers), or an overflow to +-inf."""
    odd = math.isfinite(y) and y == int(y) and int(y) % 2 == 1
    try:
        return math.pow(x, y)
    except ValueError:
        if x == 0:
            return math.copysign(math.inf, x) if odd else math.inf
        return math.nan
    except OverflowError:
        return -math.inf if x < 0 and odd else math.inf


def test_pow_special_values_follow_c99():  # R-MATH-10 (cutile: pow is C's, as libdevice's)
    """The interpreter's pow (``semantics.power``, also the simulator's libdevice pow) gives
    C99's special values, whether the exponent is a tile or a scalar: NumPy's ``power`` with
    a scalar 0.5 exponent takes sqrt (pow(-0, 0.5) = -0, pow(-inf, 0.5) = NaN).  Zero,
    infinite and NaN results bit for bit; finite ones within an ulp of C's (NumPy's SIMD
    power on some CPUs, AVX-512 among them, rounds pow(2.5, 2.5) one ulp below glibc's)."""
    from cutile.semantics.power import power
    vals = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0,
            -3.0, 2.5, -2.5, 1e300, -1e300, 2.0 ** 60]
    for x in vals:
        for y in vals:
            want = _c_pow(x, y)
            for got in (float(power(x, y)), float(power(np.array([x]), y)[0]),
                        float(power(x, np.array([y, y]))[1])):
                if math.isfinite(want) and want != 0 and math.isfinite(got):
                    assert abs(got - want) <= math.ulp(want), (x, y, got, want)
                else:
                    assert same(np.array([got]), [want]), (x, y, got, want)
    xs = arr([-0.0, -np.inf, 4.0, -1.0], dt.float32)
    for e in (arr([0.5] * 4, dt.float32), np.float32(0.5)):
        r = N.binary("pow", xs, e, dt.float32)
        assert same(r, [0.0, np.inf, 2.0, np.nan]) and not np.signbit(r[0])


# -- §13 reductions -------------------------------------------------------------------------------
def test_reduce_examples_and_axes():  # R-RED-2, R-RED-3
    x = np.arange(8, dtype=np.int32).reshape(2, 4)
    assert N.reduce("sum", x, (0, 1), dt.int32).tolist() == [[28]]
    assert N.reduce("sum", x, (1,), dt.int32).tolist() == [[6], [22]]
    x3 = np.arange(8, dtype=np.int32).reshape(2, 2, 2)
    assert N.reduce("sum", x3, (2, 1), dt.int32).reshape(-1).tolist() == [6, 22]
    w = N.reduce("sum", np.full(64, 4, np.int8), (0,), dt.int8)
    assert w.tolist() == [0] and w.dtype == np.int8  # 256 wraps to 0, no widening
    assert N.reduce("prod", np.full(8, 2, np.int8), (0,), dt.int8).tolist() == [0]


def test_reduce_tree_order():  # documented order: x[:n/2] + x[n/2:], last axis first
    x = np.array([2.0**24, 1.0, -(2.0**24), 1.0], np.float32)
    # pairs (0,2) and (1,3): (2^24 - 2^24) + (1 + 1) = 2; sequential would give 1.0
    assert N.reduce("sum", x, (0,), dt.float32).tolist() == [2.0]
    y = np.array([[1.0, 2.0**24], [1.0, -(2.0**24)]], np.float32)
    # axis 1 first: [1 + 2^24 -> 2^24, 1 - 2^24 -> -2^24 + 1] then 2^24 + (-2^24 + 1) = 1.0
    a = N.reduce("sum", y, (0, 1), dt.float32)
    b = N.reduce("sum", y, (1, 0), dt.float32)
    assert a.tolist() == b.tolist() == [[1.0]]
    h = np.array([2048, 1, 1, 1], np.float16)  # half sums accumulate in float32, round once
    # (as cuda.tile 1.7 on an H100): 2051 -> 2052 in f16; per-step f16 rounding would give 2050
    assert N.reduce("sum", h, (0,), dt.float16).tolist() == [2052.0]


def test_reduce_max_min_nan():  # R-RED-5
    row = [3, np.inf, np.nan, 1.5, 5, -2, 2, 6]
    x = np.array([row, [np.nan] * 8], np.float32)
    assert same(N.reduce("min", x, (1,), dt.float32), [-2.0, np.nan])
    assert same(N.reduce("max", x, (1,), dt.float32), [np.inf, np.nan])
    assert same(N.reduce("min", x, (1,), dt.float32, propagate_nan=True), [np.nan, np.nan])
    assert same(N.reduce("max", x.astype(ml_dtypes.bfloat16), (1,), dt.bfloat16), [np.inf, np.nan])
    assert N.reduce("max", np.array([-5, -9], np.int16), (0,), dt.int16).tolist() == [-5]


def test_argreduce_vectors():  # R-RED-6
    v = np.array([np.nan, np.nan, 7, 1, np.nan, 8, np.nan, 0.5], np.float32)
    assert N.argreduce("argmin", v, 0).tolist() == [7]
    assert N.argreduce("argmax", v, 0).tolist() == [5]
    assert N.argreduce("argmin", v, 0, propagate_nan=True).tolist() == [0]
    assert N.argreduce("argmax", v, 0, propagate_nan=True).tolist() == [0]
    assert N.argreduce("argmax", np.array([0, 0, 0, 0, 1, 1, 1, 1], np.int32), 0).tolist() == [4]
    assert N.argreduce("argmax", np.full(4, np.nan, np.float32), None).tolist() == [0]
    assert N.argreduce("argmax", np.array([np.nan, -np.inf], np.float64), 0).tolist() == [1]
    m = np.array([[1, 9, 9], [7, 2, 7]], np.int8)
    r = N.argreduce("argmax", m, None)
    assert r.shape == (1, 1) and r.tolist() == [[1]] and r.dtype == np.int32
    assert N.argreduce("argmin", m, 1).tolist() == [[0], [1]]


# -- §15 matmul -----------------------------------------------------------------------------------
def test_matmul_int8_wraps_to_int32():  # R-MM-2, R-MM-3
    x = np.full((2, 4), 127, np.int8)
    y = np.full((4, 2), 200, np.uint8)  # int8 x uint8 mixing is allowed
    acc = np.full((2, 2), 2**31 - 1, np.int32)
    r = N.matmul(x, y, acc, dt.int32)
    assert r.dtype == np.int32 and r.tolist() == [[dt.wrap_int(127 * 200 * 4 + 2**31 - 1,
                                                                dt.int32)] * 2] * 2


def test_matmul_float_sequential_single_rounding():  # R-MM-2, R-MM-7
    rng = np.random.default_rng(5)
    for d, acc_d in [(dt.float16, dt.float32), (dt.float16, dt.float16), (dt.bfloat16, dt.float32),
                     (dt.float32, dt.float32), (dt.float64, dt.float64),
                     (dt.float8_e4m3fn, dt.float16)]:
        x = rng.standard_normal((2, 3, 8)).astype(d.np_dtype)
        y = rng.standard_normal((2, 8, 5)).astype(d.np_dtype)
        acc = rng.standard_normal((2, 3, 5)).astype(acc_d.np_dtype)
        got = N.matmul(x, y, acc, acc_d)
        assert got.dtype == acc_d.np_dtype and got.shape == (2, 3, 5)
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        for bi, i, j in np.ndindex(2, 3, 5):
            s = 0.0
            for k in range(8):
                s += float(x64[bi, i, k]) * float(y64[bi, k, j])
            s += float(acc[bi, i, j])
            assert same(got[bi, i, j], ref_round(Fraction(s), acc_d)), (d, acc_d)


def _seq_ref(x, y, acc, acc_d):
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    out = np.empty(acc.shape)
    for i, j in np.ndindex(*acc.shape):
        s = 0.0
        for k in range(x.shape[1]):
            s += float(x64[i, k]) * float(y64[k, j])
        out[i, j] = ref_round(Fraction(s + float(acc[i, j])), acc_d) if np.isfinite(s) else s
    return out


@pytest.mark.parametrize("case", range(6))
def test_matmul_blas_shortcut_matches_sequential(case):  # R-MM-2: documented order holds
    rng = np.random.default_rng(100 + case)
    d = [dt.float16, dt.bfloat16, dt.float32, dt.float64, dt.float16, dt.float32][case]
    scale = [2.0 ** rng.integers(-14, 15, (12, 16)), 1.0, 2.0 ** rng.integers(-3, 3, (12, 16)),
             1.0, 1.0, 1.0][case]
    x = (rng.standard_normal((12, 16)) * scale).astype(d.np_dtype)
    y = rng.integers(-8, 8, (16, 9)).astype(d.np_dtype)  # few-bit values: exact products
    if case == 4:
        x[:] = 0
        x[0, 0] = -0.0
    if case == 5:
        x = np.round(x * 64).astype(np.float32)
    acc_d = dt.float64 if d is dt.float64 else dt.float32
    acc = np.full((12, 9), -0.0, acc_d.np_dtype)
    got = N.matmul(x, y, acc, acc_d)
    assert first_mismatch(got, _seq_ref(x, y, acc, acc_d)) is None


def test_matmul_speed():  # a 64x64x32 tile must cost well under a millisecond
    rng = np.random.default_rng(6)
    acc = np.zeros((64, 64), np.float32)
    for d in (dt.float32, dt.float16):
        x = rng.standard_normal((64, 32)).astype(d.np_dtype)
        y = rng.standard_normal((32, 64)).astype(d.np_dtype)
        N.matmul(x, y, acc, dt.float32)
        times = []
        for _ in range(20):
            t = time.perf_counter()
            N.matmul(x, y, acc, dt.float32)
            times.append(time.perf_counter() - t)
        assert min(times) < 1e-3, d  # min: robust against other load on the machine


# -- Hypothesis properties ------------------------------------------------------------------------
_INTS = [dt.int8, dt.int16, dt.int32, dt.int64, dt.uint8, dt.uint16, dt.uint32, dt.uint64]


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(_INTS), st.data())
def test_prop_int_arith_matches_python(d, data):  # R-MATH-4, R-DIV-1/3/4
    lo, hi = dt.int_range(d)
    xs = data.draw(st.lists(st.integers(lo, hi), min_size=1, max_size=8))
    ys = data.draw(st.lists(st.integers(lo, hi).filter(bool), min_size=len(xs),
                            max_size=len(xs)))
    x, y = np.array(xs, d.np_dtype), np.array(ys, d.np_dtype)
    assert N.binary("add", x, y, d).tolist() == [dt.wrap_int(a + b, d) for a, b in zip(xs, ys)]
    assert N.binary("mul", x, y, d).tolist() == [dt.wrap_int(a * b, d) for a, b in zip(xs, ys)]
    assert N.binary("floordiv", x, y, d).tolist() == [dt.wrap_int(a // b, d)
                                                      for a, b in zip(xs, ys)]
    assert N.binary("mod", x, y, d).tolist() == [a % b for a, b in zip(xs, ys)]
    assert N.binary("cdiv", x, y, d).tolist() == [dt.wrap_int(-(-a // b), d)
                                                  for a, b in zip(xs, ys)]


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(_INTS), st.sampled_from(_INTS + [dt.bool_]), st.data())
def test_prop_int_convert_wraps(src, dst, data):  # R-ASTYPE-1
    lo, hi = dt.int_range(src)
    xs = data.draw(st.lists(st.integers(lo, hi), min_size=1, max_size=8))
    got = N.convert(np.array(xs, src.np_dtype), src, dst).tolist()
    assert got == ([bool(v) for v in xs] if dst.is_bool else [dt.wrap_int(v, dst) for v in xs])


@settings(max_examples=50, deadline=None)
@given(st.sampled_from([dt.float16, dt.bfloat16, dt.float32]),
       st.lists(st.integers(0, 2**32 - 1), min_size=3, max_size=3))
def test_prop_fma_exact(d, bits):  # R-FMA-2
    ui = np.uint16 if d.bitwidth == 16 else np.uint32
    a, b, c = (np.array([v % (1 << d.bitwidth)], ui).view(d.np_dtype) for v in bits)
    x, y, z = (float(t.astype(np.float64)[0]) for t in (a, b, c))
    got = float(N.fma(a, b, c, d).astype(np.float64)[0])
    if not all(map(math.isfinite, (x, y, z))):
        return
    q = Fraction(x) * Fraction(y) + Fraction(z)
    e = ref_round(q, d)
    assert same(got, x * y + z if q == 0 else (math.copysign(0.0, q) if e == 0 else e))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(width=32, allow_nan=True), min_size=1, max_size=16),
       st.booleans(), st.sampled_from(["argmax", "argmin"]))
def test_prop_argreduce(vals, prop, fn):  # R-RED-6
    v = np.array(vals, np.float32)
    got = int(N.argreduce(fn, v, 0, propagate_nan=prop)[0])
    nan = [i for i, t in enumerate(vals) if math.isnan(t)]
    good = [(t, i) for i, t in enumerate(vals) if not math.isnan(t)]
    if prop and nan:
        assert got == nan[0]
    elif not good:
        assert got == 0
    else:
        best = max(t for t, _ in good) if fn == "argmax" else min(t for t, _ in good)
        assert got == min(i for t, i in good if t == best)


@settings(max_examples=50, deadline=None)
@given(st.sampled_from([dt.float16, dt.float32, dt.float64]), st.integers(0, 4), st.data())
def test_prop_reduce_sum_tree(d, log_n, data):  # R-RED-4 order as documented
    n = 1 << log_n
    vals = data.draw(st.lists(st.floats(-1e4, 1e4, width=16), min_size=n, max_size=n))
    x = np.array(vals, d.np_dtype)
    acc_np = np.float32 if d is dt.float16 else d.np_dtype     # f16 sums accumulate in f32
    level = [x[i:i + 1].astype(acc_np) for i in range(n)]
    while len(level) > 1:
        h = len(level) // 2
        level = [(level[i].astype(np.float64) + level[i + h].astype(np.float64)).astype(
            acc_np) for i in range(h)]
    assert same(N.reduce("sum", x, (0,), d), level[0].astype(d.np_dtype))

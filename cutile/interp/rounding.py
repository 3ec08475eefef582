"""Exact rounding machinery: error-free transforms, round-to-odd and directed rounding."""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from .. import dtypes as dt

# Why this module exists: NumPy only rounds to nearest, and casting float64 -> bfloat16 in
# ml_dtypes goes through float32 (double rounding).  Every exact result here is carried as a
# float64 value ``v`` plus the sign ``lo`` of the (tiny) remainder ``exact - v``; rounding that
# pair to a narrower format goes through round-to-odd, which makes the later round-to-nearest
# correct (two guard bits suffice), and directed modes then move one step in the target grid.

F64 = np.float64
MODES = ("RN", "RZ", "RM", "RP", "RA")
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_SPLIT = 134217729.0  # 2**27 + 1, Dekker's splitter for float64
# float64 inputs outside these magnitudes may overflow Dekker splitting or make an error term
# underflow; such elements take the exact (Fraction) route instead.
_BIG = 2.0 ** 990
_TINY = 2.0 ** -960


def mode_name(rounding) -> str:
    """Normalise ``None``/``RoundingMode``/string to one of MODES.

    FULL and APPROX select an implementation on the GPU, not a rounding direction; the
    interpreter evaluates them as correctly rounded round-to-nearest (documented choice).
    """
    if rounding is None:
        return "RN"
    name = getattr(rounding, "name", rounding)
    if name in ("FULL", "APPROX"):
        return "RN"
    if name not in MODES:
        raise ValueError(f"unsupported rounding mode {rounding!r}")
    return name


def sgn(d: np.ndarray) -> np.ndarray:
    """Sign as int8 (-1, 0, 1); NaN counts as 0 so non-finite cases never trigger a step."""
    d = np.asarray(d)
    return ((d > 0).astype(np.int8) - (d < 0).astype(np.int8)).astype(np.int8)


def flush32(x: np.ndarray) -> np.ndarray:
    """Flush float32 subnormals to signed zero (the ``.ftz`` behaviour)."""
    sub = (np.abs(x) < np.float32(2.0 ** -126)) & (x != 0)
    return np.where(sub, np.copysign(np.float32(0), x), x).astype(np.float32)


# -- error-free transforms (float64) ---------------------------------------------------------
def two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Knuth's TwoSum: s = fl(a+b) and e with s + e == a + b exactly (absent overflow)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = _SPLIT * a
    hi = c - (c - a)
    return hi, a - hi


def two_prod(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dekker's TwoProd without FMA: p = fl(a*b), p + e == a*b exactly (within _BIG/_TINY)."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


# -- stepping in a target grid ----------------------------------------------------------------
def step(r: np.ndarray, direction: np.ndarray, tf32: bool = False) -> np.ndarray:
    """Move each element one representable value up (direction > 0) or down (< 0).

    Works on the bit pattern, so it serves float16/bfloat16/float32/float64 alike; for
    tfloat32 (float32 container) the unit in the last place is bit 13.  NaN never moves and
    infinities only move toward zero.
    """
    r = np.asarray(r)
    ui = _UINT[r.dtype.itemsize]
    bits = r.view(ui)
    signbit = ui(1 << (8 * r.dtype.itemsize - 1))
    unit = ui(1 << 13) if tf32 else ui(1)
    neg = (bits & signbit) != 0
    mag = bits & ~signbit
    rf = r.astype(F64)
    away = ((direction > 0) & ~neg) | ((direction < 0) & neg)
    ok = (direction != 0) & ~np.isnan(rf) & ~(np.isinf(rf) & away)
    with np.errstate(over="ignore", under="ignore"):
        moved = np.where(away, bits + unit,
                         np.where(mag == 0, (bits ^ signbit) | unit, bits - unit)).astype(ui)
    return np.where(ok, moved, bits).astype(ui).view(r.dtype)


def apply_mode(r: np.ndarray, s: np.ndarray, mode: str, vo: np.ndarray | None = None,
               tf32: bool = False) -> np.ndarray:
    """Turn a round-to-nearest result ``r`` into ``mode``, given s = sign(exact - r).

    ``vo`` (the exact value, or its round-to-odd image) is needed for RA to detect ties.
    """
    if mode == "RN":
        return r
    rf = r.astype(F64)
    if mode == "RZ":
        d = np.where(((s < 0) & (rf > 0)) | ((s > 0) & (rf < 0)), s, 0)
    elif mode == "RP":
        d = np.where(s > 0, s, 0)
    elif mode == "RM":
        d = np.where(s < 0, s, 0)
    elif mode == "RA":
        other = step(r, s, tf32)
        of = other.astype(F64)
        with np.errstate(invalid="ignore"):
            tie = (s != 0) & ((vo - rf) == (of - vo)) & (np.abs(of) > np.abs(rf))
        return np.where(tie, other, r).astype(r.dtype)
    else:
        raise ValueError(mode)
    return step(r, d.astype(np.int8), tf32)


# -- round-to-odd and rounding float64 (+ remainder sign) to a format ------------------------
def odd64(v: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """Round-to-odd image at float64 precision of ``v + (tiny with sign lo)``."""
    bits = v.view(np.uint64)
    need = (lo != 0) & ((bits & np.uint64(1)) == 0)
    return np.where(need, step(v, lo), v).astype(F64)


def ro32(v: np.ndarray) -> np.ndarray:
    """Round-to-odd from float64 to float32: truncate, then set the last bit if inexact."""
    with np.errstate(over="ignore"):
        r = v.astype(np.float32)
    rf = r.astype(F64)
    fin = np.isfinite(v)
    bits = r.view(np.uint32)
    bits = np.where(fin & (np.abs(rf) > np.abs(v)), bits - np.uint32(1), bits).astype(np.uint32)
    bits = np.where(fin & (rf != v), bits | np.uint32(1), bits).astype(np.uint32)
    return bits.view(np.float32)


def rn_from_f32(x32: np.ndarray, dst: dt.DType) -> np.ndarray:
    """Round-to-nearest-even from float32 into ``dst`` (correct: one rounding)."""
    if dst is dt.float32:
        return x32
    if dst is dt.tfloat32:
        return dt.round_to_tf32(x32, "RN")
    with np.errstate(over="ignore", invalid="ignore"):
        return x32.astype(dst.np_dtype)


def round_from_f64(v: np.ndarray, lo: np.ndarray | None, dst: dt.DType,
                   mode: str = "RN") -> np.ndarray:
    """Round the exact value ``v + (tiny with sign lo)`` into ``dst`` with one rounding.

    ``v`` must be the float64 nearest (or any float64 bracketing neighbour) of the exact value.
    Targets: float64/32/16, bfloat16, tfloat32 (all modes); float8/float4 (RN only).
    """
    v = np.asarray(v, dtype=F64)
    if lo is None:
        lo = np.zeros(v.shape, np.int8)
    if dst is dt.float64:
        return apply_mode(v, lo, mode)
    vo = odd64(v, lo) if lo.any() else v
    if dst is dt.float32:
        with np.errstate(over="ignore"):
            r = vo.astype(np.float32)
    else:
        r = rn_from_f32(ro32(vo), dst)
    if mode == "RN":
        return r
    if dst not in (dt.float32, dt.float16, dt.bfloat16, dt.tfloat32):
        raise ValueError(f"rounding mode {mode} is not implemented for {dst.name}")
    with np.errstate(invalid="ignore"):
        s = sgn(vo - r.astype(F64))
    return apply_mode(r, s, mode, vo, tf32=dst is dt.tfloat32)


def to_e8m0(v: np.ndarray, mode: str) -> np.ndarray:
    """float64 -> float8_e8m0fnu (powers of two 2**-127..2**127, NaN) with RZ or RP.

    (cutile) Zero, negative, infinite and NaN inputs give NaN (no such value exists); positive
    values below 2**-127 give 2**-127; RP above 2**127 gives NaN, RZ saturates at 2**127.
    """
    if mode not in ("RZ", "RP"):
        raise ValueError(f"rounding mode {mode} is not valid for float8_e8m0fnu (RZ or RP only)")
    v = np.asarray(v, dtype=F64)
    ok = np.isfinite(v) & (v > 0)
    m, e = np.frexp(np.where(ok, v, 1.0))
    k = e - 1 if mode == "RZ" else np.where(m == 0.5, e - 1, e)
    ok &= k <= 127
    k = np.clip(k, -127, 127)
    out = np.where(ok, np.ldexp(1.0, k), np.nan)
    return out.astype(dt.float8_e8m0fnu.np_dtype)


# -- exact float64 operations with an exact fallback -------------------------------------------
def _fraction_f64(q: Fraction) -> tuple[float, int]:
    """Correctly rounded float64 nearest of q (CPython int division) and sign(q - result)."""
    try:
        r = float(q)
    except OverflowError:
        r = math.inf if q > 0 else -math.inf
    if math.isinf(r):
        return r, -1 if r > 0 else 1
    d = q - Fraction(r)
    return r, (d > 0) - (d < 0)


def _fallback(v: np.ndarray, lo: np.ndarray, mask: np.ndarray,
              exact: Callable[[int], Fraction]) -> None:
    for i in np.flatnonzero(mask):
        v[i], lo[i] = _fraction_f64(exact(int(i)))


def exact_op(op: str, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``a op b`` on 1-D float64 arrays as (nearest float64, sign of remainder).

    op is add, mul, div or sqrt (``b`` ignored).  Infinities/NaN/overflow behave as IEEE;
    overflow reports the remainder sign pointing back toward the finite range.
    """
    fin = np.isfinite(a) & (np.isfinite(b) if op != "sqrt" else True)
    with np.errstate(all="ignore"):
        if op == "add":
            v, e = two_sum(a, b)
            haz = np.zeros(a.shape, bool)
        elif op == "mul":
            v, e = two_prod(a, b)
            haz = fin & (a != 0) & (b != 0) & (
                (np.abs(a) > _BIG) | (np.abs(b) > _BIG) | (np.abs(v) < _TINY)
                | (np.abs(v) > _BIG))
        elif op == "div":
            v = a / b
            p, pe = two_prod(v, b)
            e = ((a - p) - pe) * np.sign(b)
            big = [np.abs(t) > _BIG for t in (a, b, v)]
            tiny = [np.abs(t) < _TINY for t in (a, b, v)]
            haz = fin & (a != 0) & (b != 0) & np.logical_or.reduce(big + tiny)
        elif op == "sqrt":
            v = np.sqrt(a)
            p, pe = two_prod(v, v)
            e = (a - p) - pe
            haz = fin & (a > 0) & ((a > _BIG) | (a < _TINY))
        else:
            raise ValueError(op)
        lo = np.where(fin & np.isfinite(v), sgn(e), 0).astype(np.int8)
        over = fin & np.isinf(v) & ((b != 0) if op == "div" else True)
        lo = np.where(over, -sgn(v), lo).astype(np.int8)
    if op == "sqrt":
        lo = np.where(fin & (a > 0), lo, 0).astype(np.int8)
    v = np.array(v, dtype=F64)
    if haz.any():
        fa, fb = a.tolist(), b.tolist() if op != "sqrt" else None
        if op == "mul":
            _fallback(v, lo, haz, lambda i: Fraction(fa[i]) * Fraction(fb[i]))
        elif op == "div":
            _fallback(v, lo, haz, lambda i: Fraction(fa[i]) / Fraction(fb[i]))
        else:
            for i in np.flatnonzero(haz):
                d = Fraction(fa[i]) - Fraction(float(v[i])) ** 2
                lo[i] = (d > 0) - (d < 0)
    return v, lo


def fma64(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Correctly rounded float64 ``a*b + c`` (1-D arrays), without a hardware FMA.

    Boldo-Melquiond emulation: (ph, pl) = TwoProd(a, b); (th, tl) = TwoSum(c, ph);
    z = RN(th + RO(tl + pl)).  Either tl == 0 (exact cancellation) or |th| dwarfs tl + pl, so
    the round-to-odd of the tail keeps enough sticky information for one correct rounding.
    Elements near the overflow/underflow limits use Fractions.
    """
    with np.errstate(all="ignore"):
        ph, pl = two_prod(a, b)
        th, tl = two_sum(c, ph)
        s, e = two_sum(tl, pl)
        z = th + odd64(s, sgn(e))
        fab = np.isfinite(a) & np.isfinite(b)
        fin = fab & np.isfinite(c)
        # Exact zeros take IEEE's sign rule, which the plain expression reproduces exactly;
        # so does a zero factor (a*b is then an exact signed zero, whatever the other factor's
        # size: Dekker's split of a huge factor overflows and must not be used).
        z = np.where(fin & ((z == 0) | (a == 0) | (b == 0)), ph + c, z)
        z = np.where(fin, z, np.where(fab, c, a * b + c))
        haz = fin & (
            ((a != 0) & (b != 0) & ((np.abs(ph) < _TINY) | (np.abs(ph) > _BIG)
                                    | (np.abs(a) > _BIG) | (np.abs(b) > _BIG)))
            | (np.abs(c) > _BIG) | ((z != 0) & (np.abs(z) < _TINY)))
    z = np.array(z, dtype=F64)
    for i in np.flatnonzero(haz):
        ai, bi, ci = float(a[i]), float(b[i]), float(c[i])
        q = Fraction(ai) * Fraction(bi) + Fraction(ci)
        if q == 0:
            z[i] = ai * bi + ci if (ai == 0 or bi == 0) else 0.0
        else:
            z[i] = _fraction_f64(q)[0]
    return z

"""Elementwise, reduction and matmul numerics computed exactly in a given dtype, as on the GPU."""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from ..semantics.power import power
from . import rounding as rd
from .matmul_numerics import matmul  # the matmul numerics live there; re-exported
from .rounding import F64, mode_name, round_from_f64, sgn

# Conventions shared by every public function here (why: the interpreter must not inherit
# NumPy's value-based promotion, pairwise summation or scalar decay):
# - inputs already carry the operation's dtype (checked) and broadcast together; work is done
#   on flattened 1-D copies and the result is reshaped, so 0-d inputs give 0-d arrays;
# - results always have exactly ``dtype.np_dtype`` (tfloat32 lives in float32 storage);
# - NumPy warnings are silenced: integer wraparound is the intended semantics (R-MATH-4);
# - float16/bfloat16 add/sub/mul/div/sqrt go through float32, which is correctly rounded
#   (float32 has at least 2p+2 bits); other f16/bf16 math is evaluated as float32 math and
#   rounded once to the dtype (R-MATH-10); float32 math (exp, sin, pow, ...) is evaluated in
#   float64 and rounded once, so it does not depend on NumPy's SIMD float32 kernels.

__all__ = [
    "FloatToIntUB",
    "argreduce",
    "binary",
    "compare",
    "convert",
    "fma",
    "matmul",
    "reduce",
    "unary",
]

_ARITH = dt.ARITH_FLOAT_DTYPES
_NARROW = (dt.float16, dt.bfloat16)


class FloatToIntUB(ValueError):
    """A float -> integer conversion met NaN, infinity or an out-of-range value (UB, R-ASTYPE-1).

    ``value`` is the first offending element (row-major) and ``index`` its flat position.
    """

    def __init__(self, value: float, index: int, dst: dt.DType):
        self.value, self.index, self.dst = value, index, dst
        super().__init__(f"float-to-int conversion of {value!r} (flat element {index}) to "
                         f"{dst.name} is undefined behaviour")


class ShiftCountUB(ValueError):
    """A shift count is negative or not below the bit width (UB, R-BIT-4)."""


# -- plumbing ----------------------------------------------------------------------------------
def _prep(dtype: dt.DType | None, *xs) -> tuple[tuple[int, ...], list[np.ndarray]]:
    arrs = [np.asarray(x) for x in xs]
    if dtype is not None:
        for a in arrs:
            if a.dtype != dtype.np_dtype:
                raise TypeError(f"operand has dtype {a.dtype}, expected {dtype.name}")
    arrs = np.broadcast_arrays(*arrs)
    shape = arrs[0].shape
    return shape, [np.array(a).reshape(-1) for a in arrs]


def _done(r, shape, dtype: dt.DType) -> np.ndarray:
    r = np.asarray(r)
    if r.dtype != dtype.np_dtype:
        raise AssertionError(f"internal: result {r.dtype} is not {dtype.name}")
    return r.reshape(shape)


def _f32(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32)


def _float_of(npdtype) -> bool:
    d = dt.from_numpy(npdtype)
    return d is not None and d.is_float


def _narrow_back(r32: np.ndarray, dtype: dt.DType) -> np.ndarray:
    """Round a float32 result into float16/bfloat16 (identity for float32)."""
    return rd.rn_from_f32(r32, dtype)


def _math(fn, args: list[np.ndarray], dtype: dt.DType) -> np.ndarray:
    """Non-basic float math: float64 in float64; float32 via float64 rounded once; f16/bf16 as
    the float32 result rounded once more (R-MATH-10)."""
    if dtype is dt.float64:
        return np.asarray(fn(*args), dtype=F64)
    r32 = np.asarray(fn(*[a.astype(F64) for a in args])).astype(np.float32)
    return _narrow_back(r32, dtype)


# -- binary ------------------------------------------------------------------------------------
_NP_BASIC = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide}


def binary(fn: str, x, y, dtype: dt.DType, *, rounding=None, ftz: bool = False,
           propagate_nan: bool = False) -> np.ndarray:
    """``x fn y`` in ``dtype`` (operands already of that dtype).

    Integers wrap (R-MATH-4); floordiv/mod use floor semantics (R-DIV-1/3), cdiv rounds up
    (R-DIV-4), and integer division by zero raises ZeroDivisionError (UB, R-DIV-6); lshift /
    rshift are C shifts (arithmetic >> for signed) and raise ShiftCountUB for counts outside
    [0, bitwidth) (R-BIT-3/4).  Floats are
    IEEE; ``rounding`` (None/RN/RZ/RM/RP, FULL/APPROX = RN) applies to add/sub/mul/truediv and is
    exact; ``ftz`` (float32 only) flushes subnormal inputs and results to signed zero.
    minimum/maximum follow R-MATH-6.
    """
    if (fn in _NP_BASIC and rounding is None and not ftz and type(x) is np.ndarray
            and type(y) is np.ndarray and x.shape == y.shape and x.dtype == y.dtype
            == dtype.np_dtype and (dtype in (dt.float32, dt.float64) or (
                dtype.is_integral and fn != "truediv"))):
        # Fast path (the interpreter's common case): NumPy's own op is already exact here;
        # IEEE RN for float32/float64, wrapping for integers.
        with np.errstate(all="ignore"):
            return np.asarray(_NP_BASIC[fn](x, y))
    shape, (a, b) = _prep(dtype, x, y)
    with np.errstate(all="ignore"):
        if dtype.is_integral:
            r = _int_binary(fn, a, b, dtype)
        elif dtype in _ARITH:
            mode = mode_name(rounding)
            if ftz:
                if dtype is not dt.float32:
                    raise ValueError("flush-to-zero is only defined for float32")
                a, b = rd.flush32(a), rd.flush32(b)
            r = _float_binary(fn, a, b, dtype, mode, propagate_nan)
            if ftz:
                r = rd.flush32(r)
        else:
            raise TypeError(f"binary {fn} is not defined on {dtype.name}")
    return _done(r, shape, dtype)


def _int_binary(fn: str, a: np.ndarray, b: np.ndarray, dtype: dt.DType) -> np.ndarray:
    if fn in ("add", "sub", "mul"):
        return _NP_BASIC[fn](a, b)
    if fn in ("minimum", "maximum"):
        return getattr(np, fn)(a, b)
    if fn in ("floordiv", "mod", "cdiv"):
        if np.any(b == 0):
            raise ZeroDivisionError(f"integer {fn} by zero (undefined behaviour)")
        # NumPy's integer floor_divide/remainder are exact Python-floor semantics (also for
        # 64-bit; MIN // -1 wraps to MIN, MIN % -1 == 0).
        if fn == "floordiv":
            return np.floor_divide(a, b)
        if fn == "mod":
            return np.remainder(a, b)
        q = np.floor_divide(a, b)
        return (q + (np.remainder(a, b) != 0).astype(dtype.np_dtype)).astype(dtype.np_dtype)
    if fn in ("lshift", "rshift"):
        bad = (b < 0) | (b >= dtype.bitwidth) if dtype.is_signed else (b >= dtype.bitwidth)
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            raise ShiftCountUB(f"shift count {b[i]} is out of range for {dtype.name} "
                               "(undefined behaviour)")
        # C shifts on the dtype: << wraps, >> is arithmetic for signed, logical for unsigned.
        f = np.left_shift if fn == "lshift" else np.right_shift
        return f(a, b).astype(dtype.np_dtype)
    raise TypeError(f"{fn} is not supported on integer dtype {dtype.name}")


def _float_binary(fn: str, a, b, dtype: dt.DType, mode: str, propagate_nan: bool):
    if fn in _NP_BASIC:
        if mode != "RN":
            return _directed_basic(fn, a, b, dtype, mode)
        return _rn_basic(fn, a, b, dtype)
    if fn == "floordiv":  # R-DIV-2: floor of the rounded quotient
        q = _rn_basic("truediv", a, b, dtype)
        return np.floor(q) if dtype not in _NARROW else _narrow_back(np.floor(_f32(q)), dtype)
    if fn == "mod":
        return _float_mod(a, b, dtype)
    if fn in ("minimum", "maximum"):
        if propagate_nan:
            f = np.minimum if fn == "minimum" else np.maximum
        else:
            f = np.fmin if fn == "minimum" else np.fmax
        if dtype in _NARROW:
            return f(_f32(a), _f32(b)).astype(dtype.np_dtype)  # exact: an operand is chosen
        return f(a, b)
    if fn == "pow":
        return _math(power, [a, b], dtype)
    if fn == "atan2":
        return _math(np.arctan2, [a, b], dtype)
    raise TypeError(f"{fn} is not supported on float dtype {dtype.name}")


def _rn_basic(fn: str, a, b, dtype: dt.DType):
    f = _NP_BASIC[fn]
    if dtype in _NARROW:
        return _narrow_back(f(_f32(a), _f32(b)), dtype)
    return f(a, b)


def _directed_basic(fn: str, a, b, dtype: dt.DType, mode: str):
    """Exact result as (float64, remainder sign), then one directed rounding into dtype."""
    a64, b64 = a.astype(F64), b.astype(F64)
    if fn == "sub":
        b64 = -b64
    op = {"add": "add", "sub": "add", "mul": "mul", "truediv": "div"}[fn]
    v, lo = rd.exact_op(op, a64, b64)
    r = round_from_f64(v, lo, dtype, mode)
    if op == "add" and mode == "RM":
        # IEEE: an exact zero sum is -0 under RM unless both addends are +0.
        both_pos_zero = (a64 == 0) & (b64 == 0) & ~np.signbit(a64) & ~np.signbit(b64)
        neg0 = np.array(-0.0).astype(dtype.np_dtype)
        r = np.where((v == 0) & (lo == 0) & ~both_pos_zero, neg0, r).astype(dtype.np_dtype)
    return r


def _float_mod(a, b, dtype: dt.DType):
    """R-DIV-3: C remainder r, plus the divisor when r != 0 and the signs differ."""
    wide = dtype in _NARROW
    a1, b1 = (_f32(a), _f32(b)) if wide else (a, b)
    r = np.fmod(a1, b1)  # exact
    adj = (r != 0) & ((r < 0) != (b1 < 0))
    r = np.where(adj, r + b1, r)
    return _narrow_back(r.astype(np.float32), dtype) if wide else r.astype(dtype.np_dtype)


# -- fused multiply-add ------------------------------------------------------------------------
def fma(a, b, c, dtype: dt.DType) -> np.ndarray:
    """``a*b + c`` with a single rounding to ``dtype`` (R-FMA-2), IEEE inf/NaN/zero rules.

    f16/bf16/f32: the product is exact in float64, TwoSum gives the exact sum as float64 plus
    remainder sign, and round-to-odd makes the final rounding correct.  float64 uses the
    Boldo-Melquiond emulation in rounding.fma64.
    """
    if dtype in (dt.float32, dt.float16) and all(
            type(v) is np.ndarray and v.dtype == dtype.np_dtype for v in (a, b, c)):
        shape = np.broadcast_shapes(a.shape, b.shape, c.shape)
        if len(shape) > 1 and math.prod(shape[1:]) % 8 == 0:
            return _fma_chunked(a, b, c, dtype, shape)
    shape, (x, y, z) = _prep(dtype, a, b, c)
    if dtype not in _ARITH:
        raise TypeError(f"fma is not defined on {dtype.name}")
    with np.errstate(all="ignore"):
        if dtype is dt.float64:
            r = rd.fma64(x, y, z)
        elif dtype in (dt.float32, dt.float16):
            r = _fma_odd(x, y, z, dtype)
        else:
            s, e = rd.two_sum(x.astype(F64) * y.astype(F64), z.astype(F64))
            r = round_from_f64(s, np.where(np.isfinite(s), sgn(e), 0).astype(np.int8), dtype)
    return _done(r, shape, dtype)


_FMA_GRID = {dt.float32: (29, 2.0 ** -126), dt.float16: (42, 2.0 ** -14)}


def _fma_odd(x, y, z, dtype: dt.DType) -> np.ndarray:
    """float32/float16 fma, fast and still one rounding.  The product is exact in float64 and
    s = fl64(p + c) is the float64 nearest the exact sum.  Rounding s to the dtype is then the
    correct rounding of the exact sum unless s sits exactly on a midpoint of the dtype's grid
    (every midpoint is a float64 value, so float64 rounding cannot cross one): those lanes,
    and results below the dtype's normal range, take the exact path (TwoSum, round-to-odd
    image, then the cast; float64 has more than 2p+1 bits for both dtypes)."""
    drop, tiny = _FMA_GRID[dtype]
    p = x.astype(F64)
    p *= y
    c = z.astype(F64)
    s = p + c
    bits = s.view(np.int64)
    low = bits & ((1 << drop) - 1)
    hard = (low == (1 << (drop - 1))) | (np.abs(s) < tiny)
    if hard.any():
        k = np.flatnonzero(hard)
        sk, e = rd.two_sum(p[k], c[k])
        bk = sk.view(np.int64)
        need = (e != 0) & ((bk & 1) == 0) & np.isfinite(sk)
        # +1 on the bit pattern grows the magnitude, -1 shrinks it (either sign).
        s[k] = (bk + np.where((e > 0) == (sk > 0), 1, -1) * need).view(F64)
    return s.astype(dtype.np_dtype)


_FMA_CHUNK = 1 << 15     # elements per chunk: the float64 temporaries stay in cache


def _fma_chunked(a, b, c, dtype: dt.DType, shape: tuple) -> np.ndarray:
    """``_fma_odd`` without flattened copies of the operands: they broadcast as they are, and
    the result is built in chunks of the leading axis (batched tiles of a few MB would
    otherwise pass through several float64 temporaries of twice their size).  The same
    operations per element, so the same bits; the caller keeps every chunk a multiple of 8
    elements long, so NumPy's vector loops treat each element as in one flat pass (their
    scalar tails choose between two NaN operands differently)."""
    out = np.empty(shape, dtype.np_dtype)
    if out.size == 0:
        return out
    x, y, z = (np.broadcast_to(v, shape) for v in (a, b, c))
    inner = math.prod(shape[1:])
    rows = max(1, _FMA_CHUNK // max(inner, 1))
    drop, tiny = _FMA_GRID[dtype]
    with np.errstate(all="ignore"):
        for i in range(0, shape[0], rows):
            xc, yc, zc = x[i:i + rows], y[i:i + rows], z[i:i + rows]
            # The per-block order of operands (x*y, then + z: which NaN payload survives a
            # NaN op NaN depends on it), on contiguous float64 copies of the chunk.
            s = xc.astype(F64)
            np.multiply(s, yc, out=s)                    # exact
            np.add(s, zc, out=s)                         # fl64(p + c)
            low = np.bitwise_and(s.view(np.int64), (1 << drop) - 1)
            hard = np.equal(low, 1 << (drop - 1))
            hard |= np.abs(s) < tiny
            if hard.any():
                k = np.nonzero(hard)
                pk = xc[k].astype(F64) * yc[k]
                sk, e = rd.two_sum(pk, zc[k].astype(F64))
                bk = sk.view(np.int64)
                need = (e != 0) & ((bk & 1) == 0) & np.isfinite(sk)
                # +1 on the bit pattern grows the magnitude, -1 shrinks it (either sign).
                s[k] = (bk + np.where((e > 0) == (sk > 0), 1, -1) * need).view(F64)
            np.copyto(out[i:i + rows], s, casting="same_kind")
    return out


# -- unary -------------------------------------------------------------------------------------
_MATH1 = {"exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sin": np.sin,
          "cos": np.cos, "tan": np.tan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh}


def unary(fn: str, x, dtype: dt.DType, *, rounding=None, ftz: bool = False) -> np.ndarray:
    """Unary ``fn``; ``dtype`` is the result dtype (bool_ for isnan).

    Inputs of another dtype (bool/int feeding float math or negative, R-MATH-7) are converted
    with ``convert`` first.  Integer negative/abs wrap (abs(MIN) == MIN); bool abs is identity.
    sqrt honours RN/RZ/RM/RP exactly; rsqrt is 1/sqrt in float64 rounded once.  ``ftz``
    (float32) flushes subnormal inputs and results.
    """
    shape, (a,) = _prep(None, x)
    with np.errstate(all="ignore"):
        if fn == "isnan":
            r = np.isnan(a.astype(F64)) if _float_of(a.dtype) else np.zeros(a.shape, bool)
            return _done(r, shape, dt.bool_)
        if a.dtype != dtype.np_dtype or (dtype is dt.tfloat32):
            src = dt.from_numpy(a.dtype)
            if src is None or dtype.is_restricted:
                raise TypeError(f"{fn}: cannot evaluate {a.dtype} as {dtype.name}")
            a = convert(a, src, dtype)
        if ftz:
            if dtype is not dt.float32:
                raise ValueError("flush-to-zero is only defined for float32")
            a = rd.flush32(a)
        r = _unary(fn, a, dtype, mode_name(rounding))
        if ftz:
            r = rd.flush32(r)
    return _done(r, shape, dtype)


def _unary(fn: str, a: np.ndarray, dtype: dt.DType, mode: str) -> np.ndarray:
    if fn == "pos":
        return a
    if fn == "negative":
        return np.negative(a) if not dtype.is_bool else a
    if fn == "abs":
        return a if dtype.is_bool else np.abs(a)
    if not dtype.is_float:
        raise TypeError(f"{fn} is not defined on {dtype.name}")
    if fn in ("floor", "ceil"):
        f = np.floor if fn == "floor" else np.ceil
        return f(_f32(a)).astype(dtype.np_dtype) if dtype in _NARROW else f(a)
    if fn == "sqrt":
        if mode != "RN":
            v, lo = rd.exact_op("sqrt", a.astype(F64), a.astype(F64))
            return round_from_f64(v, lo, dtype, mode)
        return _narrow_back(np.sqrt(_f32(a)), dtype) if dtype in _NARROW else np.sqrt(a)
    if fn == "rsqrt":
        v = 1.0 / np.sqrt(a.astype(F64))
        return v if dtype is dt.float64 else round_from_f64(v, None, dtype)
    if fn in _MATH1:
        return _math(_MATH1[fn], [a], dtype)
    raise ValueError(f"unknown unary function {fn!r}")


# -- comparisons -------------------------------------------------------------------------------
_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
        "gt": np.greater, "ge": np.greater_equal}


def compare(fn: str, x, y) -> np.ndarray:
    """IEEE comparisons (R-CMP-2: NaN compares false except ``ne``); bool_ result."""
    shape, (a, b) = _prep(None, x, y)
    if a.dtype != b.dtype:
        raise TypeError(f"compare operands differ: {a.dtype} vs {b.dtype}")
    if _float_of(a.dtype):
        a, b = a.astype(F64), b.astype(F64)  # exact for every float format
    return _done(_CMP[fn](a, b), shape, dt.bool_)


# -- conversions -------------------------------------------------------------------------------
def convert(x, src: dt.DType, dst: dt.DType, rounding=None) -> np.ndarray:
    """``astype`` (R-ASTYPE-1/2), exact for every pair of supported dtypes.

    int->int wraps by source signedness; numeric->bool is ``x != 0`` (NaN -> True); int->float
    is round-to-nearest-even with one rounding (64-bit ints are split into exact halves, never
    rounded through float64 first); float->int truncates and raises FloatToIntUB on NaN, inf
    or out-of-range; float->float honours RN/RZ/RM/RP/RA exactly.  float8/float4 targets round
    to nearest even with ml_dtypes' overflow behaviour (e4m3fn -> NaN, e5m2 -> inf, e2m1
    saturates); float8_e8m0fnu accepts only RZ/RP (see rounding.to_e8m0).
    """
    shape, (a,) = _prep(src, x)
    mode = mode_name(rounding)
    with np.errstate(all="ignore"):
        r = _convert(a, src, dst, mode)
    return _done(r, shape, dst)


def _convert(a: np.ndarray, src: dt.DType, dst: dt.DType, mode: str) -> np.ndarray:
    if src is dst:
        return a.copy()
    if dst.is_bool:
        return (dt.to_float64(a) != 0) if src.is_float else (a != 0)
    if src.is_bool:
        a, src = a.astype(np.uint8), dt.uint8
    if dst.is_integral:
        if src.is_integral:
            return a.astype(dst.np_dtype)  # C cast: modular, sign-/zero-extends by source
        return _float_to_int(dt.to_float64(a), dst)
    if src.is_integral:
        v, lo = _int_to_f64(a, src)
    else:
        v, lo = dt.to_float64(a), None  # every float format embeds exactly in float64
    if dst is dt.float8_e5m3fnu:
        # RN only (R-ASTYPE-2), saturating like the other float8 conversions; negative
        # values saturate to 0 (cutile: an unsigned format's finite range starts at 0)
        return dt.e5m3_encode(v if lo is None else rd.odd64(v, lo), satfinite=True)
    if dst is dt.float8_e8m0fnu:
        return rd.to_e8m0(v if lo is None else rd.odd64(v, lo), mode)
    if dst is dt.float64 and lo is None:
        return v  # exact under every mode
    if dst in _SATFINITE:
        # The GPU converts to float8 with .satfinite: values beyond the largest finite one,
        # infinities included, saturate to it; NaN stays NaN (checked on an H100 against
        # cuda.tile 1.7, docs/decisions.md).  ml_dtypes would give NaN/inf instead.
        big = _SATFINITE[dst]
        with np.errstate(invalid="ignore"):
            v = np.where(np.abs(v) > big, np.copysign(big, v), v)
    return round_from_f64(v, lo, dst, mode)


_SATFINITE = {dt.float8_e4m3fn: 448.0, dt.float8_e5m2: 57344.0}


def _int_to_f64(a: np.ndarray, src: dt.DType) -> tuple[np.ndarray, np.ndarray | None]:
    """Integer -> (nearest float64, remainder sign) without double rounding."""
    if src.bitwidth <= 32:
        return a.astype(F64), None
    t = a.dtype.type
    hi = (a >> t(32)).astype(F64) * 2.0 ** 32  # both halves are exact in float64
    lo = (a & t(0xFFFFFFFF)).astype(F64)
    v, e = rd.two_sum(hi, lo)
    return v, sgn(e)


def float_to_int_saturating(x, src: dt.DType, dst: dt.DType) -> np.ndarray:
    """float -> int as the GPU's ``cvt.rzi`` gives it: truncate, clamp to the range of
    ``dst``, NaN -> 0.  The interpreter's value for an R-UB-6 conversion with strict checking
    off (CUTILE_STRICT=0)."""
    shape, (a,) = _prep(src, x)
    v = np.trunc(dt.to_float64(a))
    lo, hi = dt.int_range(dst)
    with np.errstate(invalid="ignore"):
        v = np.where(np.isnan(v), 0.0, np.clip(v, float(lo), float(hi)))
    # float(hi) may round up to 2**63 / 2**64: clamp in the integer domain as well
    big = v >= float(hi)
    out = np.where(big, 0, v).astype(dst.np_dtype)
    out[big] = hi
    return _done(out, shape, dst)


def _float_to_int(v: np.ndarray, dst: dt.DType) -> np.ndarray:
    t = np.trunc(v)
    lo, hi = dt.int_range(dst)
    ok = (t >= float(lo)) & (t < float(hi + 1))  # both bounds are exact powers of two
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        raise FloatToIntUB(float(v[i]), i, dst)
    return t.astype(dst.np_dtype)


# -- reductions --------------------------------------------------------------------------------
_RED_OP = {"sum": "add", "prod": "mul", "max": "maximum", "min": "minimum"}


def _identity(fn: str, dtype: dt.DType):
    if fn in ("sum", "prod"):
        return 0 if fn == "sum" else 1
    if dtype.is_float:
        return -np.inf if fn == "max" else np.inf
    lo, hi = dt.int_range(dtype)
    return lo if fn == "max" else hi


def reduce(fn: str, x, axes: tuple[int, ...], dtype: dt.DType, *, propagate_nan: bool = False,
           rounding=None, ftz: bool = False) -> np.ndarray:
    """sum/prod/max/min over ``axes`` with a documented combine order; keepdims shape.

    Order: the reduced axes are processed one at a time in DESCENDING axis number (last axis
    first, whatever order the caller listed them in).  Along one axis of length n (a power of
    two; other lengths are padded at the end with the identity, R-RED-4) the tree halves
    repeatedly: ``x[..., :n/2, ...] op x[..., n/2:, ...]`` elementwise, until length 1.  So
    element i is combined with element i + n/2 first: the classic shared-memory tree with
    stride n/2, n/4, ..., 1.  Each combine is ``binary`` in ``dtype`` (integer sums wrap,
    ``rounding`` applies per step), except that float16/bfloat16 sums and products are
    accumulated in float32 and rounded once to the dtype at the end, as the GPU does.
    ``ftz`` (float32 only) flushes
    subnormal inputs (also of length-1 reductions) and every partial result.  max/min ignore
    NaN unless ``propagate_nan`` (R-RED-5).  A 0-d input is returned unchanged (bar ``ftz``).
    """
    op = _RED_OP[fn]
    r = np.asarray(x)
    if r.dtype != dtype.np_dtype:
        raise TypeError(f"reduce operand has dtype {r.dtype}, expected {dtype.name}")
    if ftz:
        if dtype is not dt.float32:
            raise ValueError("flush-to-zero is only defined for float32")
        r = rd.flush32(r)
    nd = r.ndim
    if nd == 0:
        return r.copy()
    out_dtype = dtype
    if fn in ("sum", "prod") and dtype in (dt.float16, dt.bfloat16):
        # The GPU accumulates half-precision sums in float32 and rounds once at the end
        # (checked against cuda.tile 1.7 on an H100, docs/decisions.md).
        r, dtype = r.astype(np.float32), dt.float32
    for ax in sorted({a % nd for a in axes}, reverse=True):
        n = r.shape[ax]
        p2 = 1 << max(n - 1, 0).bit_length()
        if p2 != n:
            pad_shape = list(r.shape)
            pad_shape[ax] = p2 - n
            pad = np.full(pad_shape, _identity(fn, dtype)).astype(dtype.np_dtype)
            r = np.concatenate([r, pad], axis=ax)
            n = p2
        lead = (slice(None),) * ax
        while n > 1:
            n //= 2
            r = binary(op, r[lead + (slice(0, n),)], r[lead + (slice(n, 2 * n),)], dtype,
                       rounding=rounding, ftz=ftz, propagate_nan=propagate_nan)
    if out_dtype is not dtype:
        final = rounding if rd.mode_name(rounding) in ("RN", "RZ") else None
        r = convert(r, dtype, out_dtype, final)
    return r


def argreduce(fn: str, x, axis: int | None, *, propagate_nan: bool = False) -> np.ndarray:
    """argmax/argmin (R-RED-6) as int32 with keepdims shape (caller squeezes).

    First index of the extreme value (ties -> smallest index; -0.0 and +0.0 tie).  NaN is
    ignored by default (an all-NaN slice gives 0); with ``propagate_nan`` NaN is the best value
    and the first NaN's index is returned.  ``axis=None`` flattens row-major and gives the flat
    index with shape (1,)*ndim.
    """
    a = np.asarray(x)
    shape = a.shape
    if axis is None:
        a = a.reshape(-1)
        ax = 0
    else:
        ax = axis % a.ndim
    if _float_of(a.dtype):
        a = a.astype(F64)
    with np.errstate(all="ignore"):
        if a.dtype.kind == "f":
            red = np.fmax if fn == "argmax" else np.fmin
            ext = red.reduce(a, axis=ax, keepdims=True)
            hit = a == ext
            if propagate_nan:
                nan = np.isnan(a)
                hit = np.where(nan.any(axis=ax, keepdims=True), nan, hit)
        else:
            red = np.max if fn == "argmax" else np.min
            hit = a == red(a, axis=ax, keepdims=True)
    idx = np.argmax(hit, axis=ax, keepdims=True).astype(np.int32)  # first True, 0 if none
    if axis is None:
        idx = idx.reshape((1,) * len(shape))
    return np.asarray(idx, dtype=np.int32)

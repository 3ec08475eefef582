"""Scalar expressions with the interpreter's exact numerics, as Python source for Numba.

Every function returns the source of one expression computing one element in exactly the IR
dtype (``interp/numerics.py`` is the definition):

- integer results are cast back to their dtype after every operation (``i8(x + y)``): Numba
  widens small integers, the cast wraps as the GPU does (R-MATH-4);
- ``//`` and ``%`` on integers are Numba's Python floor semantics (R-DIV-1/3);
- float32/float64 multiplies go through ``libdevice.fmul_rn``/``dmul_rn`` and divides through
  ``fdiv_rn``/``ddiv_rn``: NVVM contracts a plain ``a*b + c`` into an FMA even with fastmath
  off, an intrinsic multiply it cannot fuse, so a ``Binary(mul)`` followed by ``Binary(add)``
  stays two roundings; ``Fma`` is ``libdevice.fmaf``/``fma`` (one rounding, R-FMA-2);
- float16 math is done in float32 and rounded once back to float16 (exact for add, sub, mul,
  div and sqrt, the interpreter's rule for the rest, R-MATH-10);
- transcendentals use libdevice's own function of the dtype (GPU: within its documented few
  ulp, the functions torch and the real cuTile use on the GPU, so a float32 ``sin`` gives
  their bits; the interpreter rounds the float64 function once, so the executors may differ
  in the last bits: the stated bound of docs/testing.md.  The simulator evaluates them like
  the interpreter).

Unsupported combinations (bfloat16/float8/float4 values, directed rounding modes) raise
``TileUnsupportedFeatureError`` naming the op and the backend.  Conversions between dtypes
are in ``conversions.py``.
"""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from ..errors import TileUnsupportedFeatureError
from . import minifloat
from .casts import CASTS

BACKEND = "the numba backend"

_FLT_MIN = "f32(1.1754943508222875e-38)"


def no_let(expr: str) -> str:
    raise AssertionError("internal: this expression needs a temporary (pass let=)")


# Branch-free code: every ``a if c else b`` would be a branch in Numba's IR (and its
# liveness analysis is quadratic in branches), so selections use ``cuda.selp`` (PTX ``selp``),
# which exists for 16/32/64-bit integers and float32/float64; narrower types are widened.
_SELP_WIDEN = {"b1": ("u16", "({} != u16(0))"), "i8": ("i16", "i8({})"),
               "u8": ("u16", "u8({})"), "f16": ("f32", "f16({})")}


def select(c: str, x: str, y: str, dtype: dt.DType) -> str:
    """``x if c else y`` without a branch (``c`` a bool, ``x``/``y`` of ``dtype``)."""
    k = "b1" if dtype.is_bool else cast(dtype)
    if k in _SELP_WIDEN:
        w, back = _SELP_WIDEN[k]
        return back.format(f"cuda.selp({c}, {w}({x}), {w}({y}))")
    return f"cuda.selp({c}, {x}, {y})"


def select_value(c: str, x: str, y: str, dtype: dt.DType) -> str:
    """``where(c, x, y)`` of the language (R-SEL): ``select`` for integers and bools; floats
    through ``selp_f32``/``selp_f64``, a ``selp`` in inline PTX that NVVM cannot rewrite.
    NVVM turns ``x < 0 ? x : 0`` into ``min.f32(x, 0)`` (and ``x > -0.0 ? x : -0.0`` into
    ``max``), whose result for a zero of the other sign is that zero, not the constant: a
    ``where`` of -0.0 gave -0.0 on the GPU, +0.0 in the interpreter (H200, 2026-11-29)."""
    if not dtype.is_float:
        return select(c, x, y, dtype)
    if dtype is dt.float64:
        return f"selp_f64({x}, {y}, {c})"
    if dtype is dt.float16:
        return f"f16(selp_f32(f32({x}), f32({y}), {c}))"
    return f"selp_f32({x}, {y}, {c})"     # float32 and the narrower floats' float32 registers


def ftz32(x: str) -> str:
    """Flush a float32 subnormal to a zero of its sign (``0 * x`` keeps the sign)."""
    return f"cuda.selp(abs({x}) < {_FLT_MIN}, f32(0.0) * {x}, {x})"


def tf32_rn(x: str, let) -> str:
    """Round a float32 to tfloat32 (10 explicit mantissa bits), nearest-even, in the float32
    container; NaN and infinities pass (``dtypes.round_to_tf32``)."""
    b = let(f"u32(libdevice.float_as_int({x}))")
    r = let(f"libdevice.int_as_float(i32(u32(({b} + u32(0xFFF) + (({b} >> u32(13)) & u32(1)))"
            f" & u32(0xFFFFE000))))")
    return f"cuda.selp(({x} != {x}) | (abs({x}) == f32(np.inf)), {x}, {r})"


def quiet_nan_of(b: str) -> str:
    """The quiet float32 NaN with the sign of the float32 bit pattern ``b`` (a u32)."""
    return f"libdevice.int_as_float(i32(({b} & u32(0x80000000)) | u32(0x7FC00000)))"


def bf16_rn(x: str, let) -> str:
    """Round a float32 to bfloat16 (nearest-even; NaN -> the quiet NaN of its sign, as
    ml_dtypes converts), as a float32."""
    x = let(x)
    b = let(f"u32(libdevice.float_as_int({x}))")
    r = (f"libdevice.int_as_float(i32(u32(({b} + u32(0x7FFF) + (({b} >> u32(16)) & u32(1)))"
         f" & u32(0xFFFF0000))))")
    return f"cuda.selp({x} != {x}, {quiet_nan_of(b)}, {r})"


def from_storage(ref: str, dtype: dt.DType) -> str:
    """An array element read as its register value (bfloat16: uint16 bits -> float32;
    float8/float4: byte -> float32 through a table)."""
    if dtype is dt.bfloat16:
        return f"libdevice.int_as_float(i32(u32({ref}) << u32(16)))"
    if minifloat.is_minifloat(dtype):
        return minifloat.load(ref, dtype)
    return ref


def to_storage(val: str, dtype: dt.DType) -> str:
    """A register value as the array element to store (bfloat16: exact, float32 -> bits;
    float8/float4: exact, float32 -> byte)."""
    if dtype is dt.bfloat16:
        return f"u16(u32(libdevice.float_as_int({val})) >> u32(16))"
    if minifloat.is_minifloat(dtype):
        return minifloat.store(val, dtype)
    return val


def narrow_back(x32: str, dtype: dt.DType, let) -> str:
    """A float32 result rounded once into float16/bfloat16 (R-MATH-10)."""
    if dtype is dt.bfloat16:
        return bf16_rn(x32, let)
    return f"f16({x32})"


def round_to_odd32(x64: str, let) -> str:
    """float64 -> float32 rounded to odd: a later round-to-nearest into a narrower format is
    then a single correct rounding of the float64 value."""
    r = let(f"libdevice.double2float_rz({x64})")
    return let(f"cuda.selp(({r} != {r}) | (f64({r}) == {x64}), {r}, "
               f"libdevice.int_as_float(i32(libdevice.float_as_int({r}) | i32(1))))")


def cast(dtype: dt.DType) -> str:
    if dtype.is_foreign_pointer:
        return "i64"                    # a byte address (lower/pointer.py)
    c = CASTS.get(dtype.name)
    if c is None:
        raise TileUnsupportedFeatureError(
            f"dtype {dtype.name} is not supported by {BACKEND} (no Numba representation)")
    return c


def check_dtype(dtype: dt.DType, what: str) -> None:
    if dtype.name not in CASTS and not dtype.is_foreign_pointer:
        raise TileUnsupportedFeatureError(
            f"{what}: dtype {dtype.name} is not supported by {BACKEND}")


def literal(value, dtype: dt.DType) -> str:
    """Source of a constant already exact in ``dtype``."""
    if isinstance(value, np.void) and value.dtype == dt.E5M3_NP:     # an encoded byte
        value = float(dt.e5m3_decode(np.asarray(value)))
    if isinstance(value, np.generic):
        value = value.item()
    c = cast(dtype)
    if dtype.is_bool:
        return "True" if value else "False"
    if dtype.is_integral:
        return f"{c}({int(value)})"
    v = float(value)
    if math.isnan(v):
        return f"{c}(np.nan)"
    if math.isinf(v):
        return f"{c}(np.inf)" if v > 0 else f"{c}(-np.inf)"
    if v == 0:
        return f"{c}(-0.0)" if math.copysign(1.0, v) < 0 else f"{c}(0.0)"
    return f"{c}({v!r})"


_DIRECTED = {"RZ": "rz", "RM": "rd", "RP": "ru"}


def rounding_suffix(rounding) -> str | None:
    """None for round-to-nearest (RN, FULL, APPROX), else the libdevice suffix."""
    name = getattr(rounding, "name", rounding)
    if name in (None, "RN", "FULL", "APPROX"):
        return None
    return _DIRECTED.get(name, name)


def _rn_only(rounding, what: str) -> None:
    name = getattr(rounding, "name", rounding)
    if name not in (None, "RN", "FULL", "APPROX"):
        raise TileUnsupportedFeatureError(
            f"{what} with rounding_mode={name} is not supported by {BACKEND}")


def _directed_ok(rounding, dtype, what: str) -> str | None:
    """Directed rounding: float32/float64 only (libdevice's _rz/_rd/_ru functions)."""
    m = rounding_suffix(rounding)
    if m is None:
        return None
    if m not in ("rz", "rd", "ru") or dtype not in (dt.float32, dt.float64):
        name = getattr(rounding, "name", rounding)
        raise TileUnsupportedFeatureError(
            f"{what} with rounding_mode={name} on {dtype.name} is not supported by {BACKEND}")
    return m


_NARROW = (dt.float16, dt.bfloat16)


def _f16_or(dtype, what):
    if dtype.is_restricted and dtype is not dt.tfloat32:
        raise TileUnsupportedFeatureError(
            f"{what} on {dtype.name} is not supported by {BACKEND}")


# -- binary -------------------------------------------------------------------------------------
_INT_OPS = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "mod": "%", "and": "&",
            "or": "|", "xor": "^", "lshift": "<<", "rshift": ">>"}


def _minmax(fn: str, x: str, y: str, dtype, propagate_nan: bool) -> str:
    """R-MATH-6: the other operand when one is NaN (both NaN: NaN), or NaN with
    ``propagate_nan``; ties (+0/-0) pick ``x``."""
    cmp = "<=" if fn == "minimum" else ">="
    if not dtype.is_float:
        return select(f"{x} {cmp} {y}", x, y, dtype)
    if propagate_nan:   # x if x is NaN or x wins, else y (NaN when y is)
        return select(f"({x} != {x}) | (({x} {cmp} {y}) & ({y} == {y}))", x, y, dtype)
    return select(f"({y} != {y}) | ({x} {cmp} {y})", x, y, dtype)


def binary(fn: str, dtype: dt.DType, x: str, y: str, *, rounding=None, ftz=False,
           propagate_nan=False, let=no_let) -> str:
    what = f"op Binary({fn})"
    if dtype.is_bool:
        if fn in ("and", "or", "xor"):
            return f"({x} {_INT_OPS[fn]} {y})"
        if fn in ("minimum", "maximum"):
            return f"({x} & {y})" if fn == "minimum" else f"({x} | {y})"
        raise TileUnsupportedFeatureError(f"{what} on bool_ is not supported by {BACKEND}")
    c = cast(dtype)
    if dtype.is_integral:
        if fn in _INT_OPS:
            return f"{c}({x} {_INT_OPS[fn]} {y})"
        if fn == "cdiv":
            return f"{c}({x} // {y} + ({x} % {y} != 0))"
        if fn in ("minimum", "maximum"):
            return _minmax(fn, x, y, dtype, False)
        raise TileUnsupportedFeatureError(f"{what} on {dtype.name} is not supported by "
                                          f"{BACKEND}")
    _f16_or(dtype, what)
    mode = _directed_ok(rounding, dtype, what)
    if mode is not None:
        if fn not in ("add", "sub", "mul", "truediv"):
            _rn_only(rounding, what)
        if ftz:
            fx, fy = let(ftz32(x)), let(ftz32(y))
            return ftz32(let(binary(fn, dtype, fx, fy, rounding=rounding, let=let)))
        p = "f" if dtype is dt.float32 else "d"
        name = {"add": "add", "sub": "sub", "mul": "mul", "truediv": "div"}[fn]
        if fn == "sub" and p == "d":          # libdevice has no dsub_*: x + (-y) is exact
            return f"libdevice.dadd_{mode}({x}, -{y})"
        return f"libdevice.{p}{name}_{mode}({x}, {y})"
    if dtype in _NARROW:
        if ftz:
            raise TileUnsupportedFeatureError(f"{what}: flush_to_zero needs float32")
        if fn in ("minimum", "maximum"):       # picks an operand: exact in float32
            r = binary(fn, dt.float32, f"f32({x})", f"f32({y})", propagate_nan=propagate_nan)
            return f"f16({r})" if dtype is dt.float16 else r
        if fn == "floordiv":  # floor of the narrow quotient (R-DIV-2)
            q = binary("truediv", dtype, x, y, let=let)
            return narrow_back(f"libdevice.floorf(f32({q}))", dtype, let)
        inner = binary(fn, dt.float32, f"f32({x})", f"f32({y})", propagate_nan=propagate_nan,
                       let=let)
        return narrow_back(inner, dtype, let)
    if ftz:
        if dtype is not dt.float32:
            raise TileUnsupportedFeatureError(f"{what}: flush_to_zero needs float32")
        fx, fy = let(ftz32(x)), let(ftz32(y))
        return ftz32(let(binary(fn, dtype, fx, fy, propagate_nan=propagate_nan, let=let)))
    s = "f" if dtype is dt.float32 else "d"
    sfx = "f" if dtype is dt.float32 else ""
    if fn == "add":
        return f"{c}({x} + {y})"
    if fn == "sub":
        return f"{c}({x} - {y})"
    if fn == "mul":
        return f"libdevice.{s}mul_rn({x}, {y})"
    if fn == "truediv":
        return f"libdevice.{s}div_rn({x}, {y})"
    if fn == "floordiv":
        return f"libdevice.floor{sfx}(libdevice.{s}div_rn({x}, {y}))"
    if fn == "mod":   # R-DIV-3: C remainder, plus the divisor when the signs differ
        r = let(f"libdevice.fmod{sfx}({x}, {y})")
        z = literal(0.0, dtype)
        return select(f"({r} != {z}) & (({r} < {z}) != ({y} < {z}))", f"{c}({r} + {y})", r,
                      dtype)
    if fn in ("minimum", "maximum"):
        return _minmax(fn, x, y, dtype, propagate_nan)
    if fn == "pow":
        return f"libdevice.pow{sfx}({x}, {y})"
    if fn == "atan2":
        return f"libdevice.atan2{sfx}({x}, {y})"
    raise TileUnsupportedFeatureError(f"{what} on {dtype.name} is not supported by {BACKEND}")


# -- fma / compare / select -------------------------------------------------------------------
def fma(dtype: dt.DType, a: str, b: str, c: str, let=None) -> str:
    if dtype is dt.float32:
        return f"libdevice.fmaf({a}, {b}, {c})"
    if dtype is dt.float64:
        return f"libdevice.fma({a}, {b}, {c})"
    if dtype is dt.float16:
        # float16 product and sum are exact in float64: one rounding at the end.
        return f"f16(f64({a}) * f64({b}) + f64({c}))"
    if dtype is dt.bfloat16 and let is not None:
        # round to odd in float32, then to bfloat16: one correct rounding.  The exact result
        # lies in [RD, RU], exact iff they agree; otherwise round-to-odd is the rounding
        # toward zero (RD for a positive result, RU for a negative one) with its last bit set.
        # (RZ and RU agree for every negative result: they cannot test exactness.)  An exact
        # zero takes RU's sign, which is round-to-nearest's (RD gives x + -x = -0).
        lo = let(f"libdevice.fmaf_rd({a}, {b}, {c})")
        hi = let(f"libdevice.fmaf_ru({a}, {b}, {c})")
        rz = f"cuda.selp({lo} < f32(0.0), {hi}, {lo})"
        odd = let(f"cuda.selp({lo} == {hi}, {hi}, libdevice.int_as_float("
                  f"i32(libdevice.float_as_int({rz}) | i32(1))))")
        return bf16_rn(odd, let)
    raise TileUnsupportedFeatureError(f"op Fma on {dtype.name} is not supported by {BACKEND}")


_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def compare(fn: str, dtype: dt.DType, x: str, y: str) -> str:
    if dtype is dt.float16:
        x, y = f"f32({x})", f"f32({y})"
    elif dtype.is_bool:
        x, y = f"u8({x})", f"u8({y})"
    else:
        _f16_or(dtype, f"op Compare({fn})")
    return f"({x} {_CMP[fn]} {y})"


# -- unary --------------------------------------------------------------------------------------
_MATH = ("exp", "exp2", "log", "log2", "sin", "cos", "tan", "sinh", "cosh", "tanh")


def unary(fn: str, dtype: dt.DType, x: str, *, rounding=None, ftz=False, let=no_let) -> str:
    """``fn(x)``; ``dtype`` is x's dtype (the result's, except isnan -> bool)."""
    what = f"op Unary({fn})"
    if fn == "isnan":
        if not dtype.is_float:
            return "False"
        if dtype is dt.float16:
            return f"(f32({x}) != f32({x}))"
        _f16_or(dtype, what)
        return f"({x} != {x})"
    if dtype.is_bool:
        if fn == "not":
            return f"(not {x})"
        if fn in ("negative", "abs"):
            return x
        raise TileUnsupportedFeatureError(f"{what} on bool_ is not supported by {BACKEND}")
    c = cast(dtype)
    if dtype.is_integral:
        if fn == "not":
            return f"{c}(~{x})"
        if fn == "negative":
            return f"{c}(-{x})"
        if fn == "abs":
            return f"{c}(abs({x}))"
        raise TileUnsupportedFeatureError(f"{what} on {dtype.name} is not supported by "
                                          f"{BACKEND}")
    _f16_or(dtype, what)
    mode = _directed_ok(rounding, dtype, what)
    if mode is not None:
        if fn != "sqrt":
            _rn_only(rounding, what)
        if ftz:
            return ftz32(let(unary(fn, dtype, let(ftz32(x)), rounding=rounding, let=let)))
        return f"libdevice.{'f' if dtype is dt.float32 else 'd'}sqrt_{mode}({x})"
    if dtype in _NARROW:
        if ftz:
            raise TileUnsupportedFeatureError(f"{what}: flush_to_zero needs float32")
        if fn == "rsqrt":      # 1/sqrt in float64, rounded once
            r = f"libdevice.ddiv_rn(f64(1.0), libdevice.dsqrt_rn(f64({x})))"
            return f"f16({r})" if dtype is dt.float16 else bf16_rn(
                round_to_odd32(let(r), let), let)
        if fn in ("negative", "abs") and dtype is dt.bfloat16:
            return unary(fn, dt.float32, x, let=let)
        return narrow_back(unary(fn, dt.float32, f"f32({x})", let=let), dtype, let)
    if ftz:
        if dtype is not dt.float32:
            raise TileUnsupportedFeatureError(f"{what}: flush_to_zero needs float32")
        return ftz32(let(unary(fn, dtype, let(ftz32(x)), let=let)))
    f32 = dtype is dt.float32
    sfx = "f" if f32 else ""
    if fn == "negative":
        return f"{c}(-{x})"
    if fn == "abs":
        return f"{c}(abs({x}))"
    if fn == "sqrt":
        return f"libdevice.{'f' if f32 else 'd'}sqrt_rn({x})"
    if fn == "rsqrt":
        if f32:             # libdevice's rsqrtf (<= 2 ulp), as torch and cuTile on the GPU
            return f"libdevice.rsqrtf({x})"
        return f"libdevice.ddiv_rn(f64(1.0), libdevice.dsqrt_rn({x}))"   # correctly rounded
    if fn in ("floor", "ceil"):
        return f"libdevice.{fn}{sfx}({x})"
    if fn in _MATH:
        return f"libdevice.{fn}{sfx}({x})"
    raise TileUnsupportedFeatureError(f"{what} on {dtype.name} is not supported by {BACKEND}")

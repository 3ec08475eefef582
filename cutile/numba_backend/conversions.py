"""Scalar conversions between dtypes (``Convert``, ``astype``), as Python source for Numba.

Split from ``exprs.py`` (the element-wise operations) because conversions are their own
body of rules: rounding modes (R-ASTYPE-2: RZ/RM/RP/RA through libdevice or bit operations),
float8/float4 targets and sources (``minifloat.py``), round-to-odd for double roundings into
bfloat16/tfloat32, and float -> integer without LLVM poison (R-ASTYPE-1, R-UB-6).  Every
function returns the source of one expression with the interpreter's exact result.
"""

from __future__ import annotations

from .. import dtypes as dt
from ..errors import TileUnsupportedFeatureError
from . import minifloat
from .casts import CASTS
from .exprs import (
    BACKEND,
    bf16_rn,
    cast,
    literal,
    no_let,
    quiet_nan_of,
    round_to_odd32,
    rounding_suffix,
    select,
    tf32_rn,
)


def _narrow_directed(x: str, dst: dt.DType, mode: str, let, what: str) -> str:
    """float32 -> bfloat16/float16/tfloat32 with RZ (and RA for tfloat32), R-ASTYPE-2."""
    x = let(x)
    b = f"u32(libdevice.float_as_int({x}))"
    keep = f"({x} != {x}) | (abs({x}) == f32(np.inf))"
    if dst is dt.bfloat16 and mode == "rz":
        t = f"libdevice.int_as_float(i32({b} & u32(0xFFFF0000)))"
        return f"cuda.selp({x} != {x}, {quiet_nan_of(b)}, {t})"
    if dst is dt.tfloat32:
        if mode == "rz":
            t = f"libdevice.int_as_float(i32({b} & u32(0xFFFFE000)))"
        else:               # RA: add half an ulp to the magnitude, truncate
            t = f"libdevice.int_as_float(i32(u32(({b} + u32(0x1000)) & u32(0xFFFFE000))))"
        return f"cuda.selp({keep}, {x}, {t})"
    if dst is dt.float16 and mode == "rz":
        # normal range: truncate to 11 significant bits; subnormal range: to a multiple of
        # 2**-24; beyond the largest finite half: saturate (RZ never rounds up to inf)
        tn = f"libdevice.int_as_float(i32({b} & u32(0xFFFFE000)))"
        ts = f"libdevice.truncf({x} * f32(16777216.0)) * f32(5.960464477539063e-08)"
        t = let(f"cuda.selp(abs({x}) < f32(6.103515625e-05), {ts}, {tn})")
        big = f"(abs({x}) >= f32(65504.0)) & (abs({x}) != f32(np.inf))"
        t = f"cuda.selp({big}, libdevice.copysignf(f32(65504.0), {x}), {t})"
        return f"f16(cuda.selp({keep}, {x}, {t}))"
    name = {"rz": "RZ"}.get(mode, mode)
    raise TileUnsupportedFeatureError(f"{what} with rounding_mode={name} is not supported by "
                                      f"{BACKEND}")


def _f16_directed(x: str, src: dt.DType, mode: str, let) -> str:
    """Any float or <=32-bit integer -> float16 with RZ/RM/RP/RA (R-ASTYPE-2; RA is to nearest
    with ties away from zero): truncate toward zero (RZ through float32, which is RZ once),
    then step one float16 unit away from zero when the value was inexact and the mode asks."""
    xv = let(f"f64({x})")                                   # exact for these sources
    x32 = let(f"libdevice.double2float_rz({xv})")
    t = let(f"f32({_narrow_directed(x32, dt.float16, 'rz', let, '')})")
    if mode == "rz":
        return f"f16({t})"
    inexact = f"(f64({t}) != {xv}) & ({xv} == {xv})"
    e = let(f"((libdevice.float_as_int({t}) >> i32(23)) & i32(255)) - i32(127)")
    ulp = let(f"cuda.selp(abs({t}) < f32(6.103515625e-05), f32(5.960464477539063e-08), "
              f"libdevice.int_as_float(({e} - i32(10) + i32(127)) << i32(23)))")
    if mode == "RA":            # to nearest, ties away from zero (PTX .rna)
        away = f"{inexact} & (abs({xv}) - abs(f64({t})) >= f64({ulp}) * f64(0.5))"
    elif mode == "ru":
        away = f"{inexact} & ({xv} > f64(0.0))"
    else:
        away = f"{inexact} & ({xv} < f64(0.0))"
    stepped = f"{t} + libdevice.copysignf({ulp}, f32({xv}))"
    return f"f16(cuda.selp({away}, {stepped}, {t}))"


def int_to_f64_odd(x: str, src: dt.DType, let) -> str:
    """An integer as float64, rounded to odd when it has more bits than float64 keeps: a
    64-bit integer rounded to nearest first would lose the sticky bits that decide a later
    rounding into bfloat16/tfloat32 (``2**62 + 2**54 + 1`` would become a tie)."""
    if src.bitwidth < 64:
        return let(f"f64({x})")                 # exact
    fn, back = ("ll2double", "i64") if src.is_signed else ("ull2double", "u64")
    r = let(f"libdevice.{fn}_rz({x})")          # |r| <= |x|: converting back cannot overflow
    return let(f"cuda.selp({back}({r}) == {x}, {r}, libdevice.longlong_as_double("
               f"libdevice.double_as_longlong({r}) | i64(1)))")


def _convert_minifloat(x: str, src: dt.DType, dst: dt.DType, mode, name, let, what) -> str:
    """Conversions from/into float8/float4 (minifloat.py); the source value is exact in
    float64 except for 64-bit integers (see there)."""
    if minifloat.is_minifloat(src):
        # the float32 register holds the exact value (a NaN also its byte, which the
        # conversion drops): convert it as a float32
        x = let(minifloat.drop_nan_byte(x))
        if minifloat.is_minifloat(dst):
            return _convert_minifloat(x, dt.float32, dst, mode, name, let, what)
        return convert(x, dt.float32, dst, None if mode is None else name, let)
    f = minifloat.FORMATS.get(dst.name)
    if f is not None and f.sign and src.is_float:
        # a NaN keeps its sign, as in the interpreter's (ml_dtypes') conversion
        x = let(x)
        isnan = f"(f32({x}) != f32({x}))" if src is dt.float16 else f"({x} != {x})"
        out = let(_convert_minifloat_value(x, src, dst, mode, name, what))
        return select(isnan, nan32(x, src), out, dt.float32)
    return _convert_minifloat_value(x, src, dst, mode, name, what)


def _convert_minifloat_value(x: str, src: dt.DType, dst: dt.DType, mode, name, what) -> str:
    if dst.name == minifloat.E8M0:
        if mode not in ("rz", "ru"):
            raise TileUnsupportedFeatureError(
                f"{what} needs rounding_mode RZ or RP (R-ASTYPE-2)")
        if src.is_integral and src.bitwidth == 64:
            fn = "ll2double" if src.is_signed else "ull2double"
            x64 = f"libdevice.{fn}_{mode}({x})"
        else:
            x64 = f"f64({x})"
        return minifloat.convert_to(x64, dst, mode)
    if mode is not None:
        raise TileUnsupportedFeatureError(f"{what} with rounding_mode={name} is not supported "
                                          f"(float8/float4 targets round to nearest even)")
    return minifloat.convert_to(f"f64({x})", dst, None)


def nan32(x: str, src: dt.DType) -> str:
    """The quiet float32 NaN with the sign of ``x`` (a value of the float dtype ``src``): the
    high 32 bits of its pattern carry the sign."""
    if src is dt.float16:
        sign = f"(u32(f16_as_u16({x})) << u32(16))"
    elif src is dt.float64:
        sign = f"u32(u64(libdevice.double_as_longlong({x})) >> u64(32))"
    else:                                       # float32 registers
        return quiet_nan_of(f"u32(libdevice.float_as_int({x}))")
    return quiet_nan_of(sign)


def convert(x: str, src: dt.DType, dst: dt.DType, rounding=None, let=no_let) -> str:
    what = f"op Convert({src.name} -> {dst.name})"
    for d in (src, dst):
        if d.name not in CASTS:
            raise TileUnsupportedFeatureError(f"{what}: dtype {d.name} is not supported by "
                                              f"{BACKEND}")
    name = getattr(rounding, "name", rounding)
    mode = rounding_suffix(rounding)
    if name == "RA":
        mode = "RA"
    if src is dst:
        return x
    if minifloat.is_minifloat(dst) or minifloat.is_minifloat(src):
        return _convert_minifloat(x, src, dst, mode, name, let, what)
    if dst is dt.float16 and (mode in ("rd", "ru", "RA") or mode == "rz" and src not in (
            dt.float32, dt.tfloat32, dt.bfloat16)) and (
            src.is_float and src is not dt.float16 or src.is_integral and src.bitwidth <= 32):
        return _f16_directed(x, src, mode, let)
    if src is dt.float64 and mode == "rz" and dst in (dt.bfloat16, dt.tfloat32):
        # truncation composes: float64 -> float32 -> dst, each toward zero, is one truncation
        return _narrow_directed(let(f"libdevice.double2float_rz({x})"), dst, mode, let, what)
    if src in (dt.float32, dt.tfloat32, dt.bfloat16) and mode in ("rz", "RA") and dst in (
            dt.bfloat16, dt.float16, dt.tfloat32):
        return _narrow_directed(x, dst, mode, let, what)
    if mode is not None and not (src.is_float and dst.is_integral and name == "RZ"):
        # directed conversions into float32/float64 (libdevice), exact ones are mode-free
        if mode in ("rz", "rd", "ru") and dst in (dt.float32, dt.float64):
            if src is dt.float64 and dst is dt.float32:
                return f"libdevice.double2float_{mode}({x})"
            if src.is_integral and dst is dt.float32:
                fn = {True: "int2float", False: "uint2float"}[src.is_signed] \
                    if src.bitwidth <= 32 else {True: "ll2float", False: "ull2float"}[
                        src.is_signed]
                cast_in = ("i32" if src.is_signed else "u32") if src.bitwidth <= 32 else \
                    ("i64" if src.is_signed else "u64")
                return f"libdevice.{fn}_{mode}({cast_in}({x}))"
            if src.is_integral and dst is dt.float64 and src.bitwidth == 64:
                fn = "ll2double" if src.is_signed else "ull2double"
                return f"libdevice.{fn}_{mode}({x})"
            if (src.is_integral or src.is_bool or src in (dt.float16, dt.float32)) and \
                    dst is dt.float64 or src in (dt.float16,) and dst is dt.float32 or \
                    src.is_bool:
                pass                               # exact: the mode changes nothing
            else:
                raise TileUnsupportedFeatureError(
                    f"{what} with rounding_mode={name} is not supported by {BACKEND}")
        else:
            raise TileUnsupportedFeatureError(f"{what} with rounding_mode={name} is not "
                                              f"supported by {BACKEND}")
    if src is dt.tfloat32:
        src = dt.float32                       # the container: tf32 values are float32 values
    if src is dt.bfloat16:
        if dst is dt.float32:
            return x                           # bfloat16 values are float32 values
        src = dt.float32

    if dst is dt.bfloat16:
        if src in (dt.float32, dt.float16) or src.is_bool:
            return bf16_rn(f"f32({x})", let)
        x64 = int_to_f64_odd(x, src, let) if src.is_integral else let(f"f64({x})")
        return bf16_rn(round_to_odd32(x64, let), let)
    if dst.is_bool:
        if src.is_bool:
            return x
        if src is dt.float16:
            return f"(f32({x}) != f32(0.0))"
        return f"({x} != {literal(0, src)})"
    if dst is dt.tfloat32:
        if src is dt.float32:
            return tf32_rn(x, let)
        if src is dt.float16 or src.is_bool:
            return tf32_rn(let(f"f32({x})"), let)
        x64 = int_to_f64_odd(x, src, let) if src.is_integral else let(f"f64({x})")
        return tf32_rn(round_to_odd32(x64, let), let)
    if src.is_float and dst.is_integral:
        return float_to_int(x, src, dst, let)
    if src is dst:
        return x
    return f"{cast(dst)}({x})"


def float_to_int(x: str, src: dt.DType, dst: dt.DType, let=no_let) -> str:
    """float16/32/64 -> integer, truncated toward zero (R-ASTYPE-1), through libdevice's
    ``*_rz`` conversions (``cvt.rzi``: saturating) rather than Numba's ``fptosi``,
    whose result for NaN, infinities and out-of-range values is LLVM poison.  R-UB-6 leaves
    the value undefined, but poison is worse than a wrong value: NVVM may let it decide a
    later bounds check (an index made from a NaN) and a write could then land outside its
    array.  8- and 16-bit results truncate the 32-bit conversion.  NaN gives 0 for every
    destination, selected here: on an H200 float32 -> int32 gave 0 but float64 -> int32 and
    float -> int64 gave the minimum."""
    wide = dst.bitwidth == 64
    if src is dt.float64:
        fn = {(True, False): "double2int", (False, False): "double2uint",
              (True, True): "double2ll", (False, True): "double2ull"}[dst.is_signed, wide]
    else:
        fn = {(True, False): "float2int", (False, False): "float2uint",
              (True, True): "float2ll", (False, True): "float2ull"}[dst.is_signed, wide]
        if src is dt.float16:
            x = f"f32({x})"
    # numba-cuda declares every one of them signed (float2ull_rz -> int64): cast, or a
    # variable also assigned a uint64 elsewhere unifies to float64 and loses bits
    c = cast(dst)
    w = c if dst.bitwidth >= 32 else ("i32" if dst.is_signed else "u32")   # selp: >= 32 bits
    x = let(x)
    out = f"cuda.selp({x} != {x}, {w}(0), {w}(libdevice.{fn}_rz({x})))"
    return out if w == c else f"{c}({out})"

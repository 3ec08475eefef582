"""Data types: the DType singletons, their NumPy storage, and the one promotion table (spec §3-§4).

Every other module asks this one whether two dtypes promote (R-PROMO-3), whether a value may
be cast implicitly (R-CAST-1/2) and how a constant converts into a dtype (R-CONST-4/7).
"""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np

from .errors import TileValueError

__all__ = [
    "DType", "bool_", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
    "float16", "bfloat16", "float32", "float64", "tfloat32", "float8_e4m3fn", "float8_e5m2",
    "float8_e8m0fnu", "float8_e5m3fnu", "float4_e2m1fn",
]


class DType:
    """A cuTile element type (R-DTYPE-1).  Singletons compared by identity (R-DTYPE-2).

    ``kind`` is one of ``"b"`` (bool), ``"u"``/``"i"`` (unsigned/signed integer), ``"f"``
    (arithmetic float) and ``"r"`` (restricted float: tf32, float8, float4).
    """

    __slots__ = ("name", "bitwidth", "kind", "_np")
    _registry: dict[str, DType] = {}
    _sealed = False

    def __init__(self, *args, **kwargs):
        if DType._sealed:
            raise TypeError("DType cannot be instantiated")
        name, bitwidth, kind, np_type = args
        self.name = name
        self.bitwidth = bitwidth
        self.kind = kind
        self._np = np.dtype(np_type) if np_type is not None else None
        DType._registry[name] = self

    @property
    def __name__(self) -> str:  # noqa: PLW3201 - 1.7's dtypes have it (``f"{dt.__name__}"``)
        return self.name

    def __repr__(self) -> str:
        return f"<DType '{self.name}'>"

    # 1.7: equal to a DType of the same name only (never to a NumPy/torch dtype or a string),
    # hashed by name.  Singletons make this identity, but pickles and copies agree too.
    def __eq__(self, other) -> bool:
        return isinstance(other, DType) and other.name == self.name

    def __ne__(self, other) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(self.name)

    def __copy__(self) -> DType:
        return self

    def __deepcopy__(self, memo) -> DType:
        return self

    def __str__(self) -> str:
        return self.name

    def __reduce__(self):
        return (_dtype_by_name, (self.name,))

    def __call__(self, value: Any = 0):
        # Host-side calls exist only so that `ct.int16(5)` reads naturally in host code too;
        # tile code never reaches here (the frontend folds the call, R-CONST-4).
        v = convert_constant(value, self)
        if self.np_dtype == E5M3_NP:     # a one-element record holding the byte
            return e5m3_encode(np.array(v), satfinite=False)[()]
        return self.np_dtype.type(v)

    # -- classification ---------------------------------------------------------------
    @property
    def np_dtype(self) -> np.dtype:
        if self._np is None:
            raise TypeError(f"dtype {self.name} has no NumPy representation in this build")
        return self._np

    @property
    def has_numpy(self) -> bool:
        return self._np is not None

    @property
    def is_bool(self) -> bool:
        return self.kind == "b"

    @property
    def is_integral(self) -> bool:
        return self.kind in "ui"

    @property
    def is_signed(self) -> bool:
        return self.kind == "i"

    @property
    def is_unsigned(self) -> bool:
        return self.kind == "u"

    @property
    def is_float(self) -> bool:
        """Arithmetic or restricted float."""
        return self.kind in "fr"

    @property
    def is_restricted(self) -> bool:
        return self.kind == "r"

    @property
    def category(self) -> int:
        """0 boolean < 1 integral < 2 float (R-PROMO-1); restricted floats count as float;
        foreign pointers (3) are not numeric and promote with nothing."""
        return {"b": 0, "u": 1, "i": 1, "f": 2, "r": 2, "p": 3}[self.kind]

    @property
    def is_foreign_pointer(self) -> bool:
        return self.kind == "p"


def _dtype_by_name(name: str) -> DType:
    return DType._registry[name]


bool_ = DType("bool_", 8, "b", np.bool_)
uint8 = DType("uint8", 8, "u", np.uint8)
uint16 = DType("uint16", 16, "u", np.uint16)
uint32 = DType("uint32", 32, "u", np.uint32)
uint64 = DType("uint64", 64, "u", np.uint64)
int8 = DType("int8", 8, "i", np.int8)
int16 = DType("int16", 16, "i", np.int16)
int32 = DType("int32", 32, "i", np.int32)
int64 = DType("int64", 64, "i", np.int64)
float16 = DType("float16", 16, "f", np.float16)
bfloat16 = DType("bfloat16", 16, "f", ml_dtypes.bfloat16)
float32 = DType("float32", 32, "f", np.float32)
float64 = DType("float64", 64, "f", np.float64)
# tfloat32 is stored in a float32 container whose low 13 mantissa bits are zero (R-MM-5).
tfloat32 = DType("tfloat32", 32, "r", np.float32)
float8_e4m3fn = DType("float8_e4m3fn", 8, "r", ml_dtypes.float8_e4m3fn)
float8_e5m2 = DType("float8_e5m2", 8, "r", ml_dtypes.float8_e5m2)
float8_e8m0fnu = DType("float8_e8m0fnu", 8, "r", ml_dtypes.float8_e8m0fnu)
# ml_dtypes has no float8_e5m3fnu: its values are kept as their bytes in a one-field
# structured dtype, so NumPy never converts them silently (``astype(float)`` raises); every
# conversion goes through e5m3_decode / e5m3_encode below (R-DTYPE-5).
E5M3_NP = np.dtype([("float8_e5m3fnu", "u1")])
float8_e5m3fnu = DType("float8_e5m3fnu", 8, "r", E5M3_NP)
float4_e2m1fn = DType("float4_e2m1fn", 4, "r", ml_dtypes.float4_e2m1fn)
DType._sealed = True

ALL_DTYPES: tuple[DType, ...] = tuple(DType._registry.values())

# -- foreign pointers (§7: Array.foreign_pointer / Array.from_foreign) ------------------------
_POINTEE: dict[DType, DType] = {}


def foreign_pointer_dtype(pointee: DType) -> DType:
    """The 64-bit, non-numeric dtype of a foreign pointer to ``pointee`` elements (one object
    per pointee, named ``foreign_pointer[float32]``).  Its values are byte addresses."""
    if not isinstance(pointee, DType):
        raise TypeError(f"foreign_pointer_dtype expects a DType, got {pointee!r}")
    if pointee.is_foreign_pointer:
        raise TypeError("nested foreign pointer dtypes are not supported")
    name = f"foreign_pointer[{pointee.name}]"
    d = DType._registry.get(name)
    if d is None:
        DType._sealed = False
        try:
            d = DType(name, 64, "p", np.int64)
        finally:
            DType._sealed = True
        _POINTEE[d] = pointee
    return d


def foreign_pointer_pointee_dtype(d: DType) -> DType:
    """The element dtype a foreign pointer dtype points to."""
    if d not in _POINTEE:
        raise TypeError(f"{d!r} is not a foreign pointer dtype")
    return _POINTEE[d]
INTEGER_DTYPES = tuple(d for d in ALL_DTYPES if d.is_integral)
ARITH_FLOAT_DTYPES = (float16, bfloat16, float32, float64)

# -- promotion (R-PROMO-3) ------------------------------------------------------------------
_ORDER = [bool_, uint8, uint16, uint32, uint64, int8, int16, int32, int64, float16, float32,
          float64, bfloat16]
_TABLE_ROWS = """
b1   u8   u16  u32  u64  i8   i16  i32  i64  f16  f32  f64  bf16
u8   u8   u16  u32  u64  E    E    E    E    f16  f32  f64  bf16
u16  u16  u16  u32  u64  E    E    E    E    f16  f32  f64  bf16
u32  u32  u32  u32  u64  E    E    E    E    f16  f32  f64  bf16
u64  u64  u64  u64  u64  E    E    E    E    f16  f32  f64  bf16
i8   E    E    E    E    i8   i16  i32  i64  f16  f32  f64  bf16
i16  E    E    E    E    i16  i16  i32  i64  f16  f32  f64  bf16
i32  E    E    E    E    i32  i32  i32  i64  f16  f32  f64  bf16
i64  E    E    E    E    i64  i64  i64  i64  f16  f32  f64  bf16
f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f32  f64  E
f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f64  f32
f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64
bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 E    f32  f64  bf16
"""
_ABBREV = {"b1": bool_, "u8": uint8, "u16": uint16, "u32": uint32, "u64": uint64, "i8": int8,
           "i16": int16, "i32": int32, "i64": int64, "f16": float16, "f32": float32,
           "f64": float64, "bf16": bfloat16}
_PROMOTE: dict[tuple[DType, DType], DType | None] = {}
for _row_dtype, _line in zip(_ORDER, _TABLE_ROWS.strip().splitlines()):
    for _col_dtype, _cell in zip(_ORDER, _line.split()):
        _PROMOTE[(_row_dtype, _col_dtype)] = None if _cell == "E" else _ABBREV[_cell]


def promote(a: DType, b: DType) -> DType | None:
    """Common dtype of two non-loose operands (R-PROMO-3), or ``None`` when promotion is an error.

    Restricted floats promote only with themselves.
    """
    if a is b:
        return a
    if a.is_restricted or b.is_restricted or a.is_foreign_pointer or b.is_foreign_pointer:
        return None
    return _PROMOTE[(a, b)]


def can_cast_implicitly(src: DType, dst: DType) -> bool:
    """R-CAST-1: widening only, i.e. ``promote(src, dst) is dst``."""
    return promote(src, dst) is dst


# -- constants (R-CONST-3/4/7) ---------------------------------------------------------------
def int_range(dtype: DType) -> tuple[int, int]:
    if dtype.is_bool:
        return 0, 1
    if dtype.is_unsigned:
        return 0, 2 ** dtype.bitwidth - 1
    return -(2 ** (dtype.bitwidth - 1)), 2 ** (dtype.bitwidth - 1) - 1


def loose_dtype(value: Any) -> DType:
    """The concrete dtype a loosely typed constant materialises as (R-CONST-7)."""

    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, (int, np.integer)):
        v = int(value)
        if -(2 ** 31) <= v < 2 ** 31:
            return int32
        if -(2 ** 63) <= v < 2 ** 63:
            return int64
        if 0 <= v < 2 ** 64:
            return uint64
        raise TileValueError(f"Integer constant {v} is out of range of any supported integer type")
    if isinstance(value, (float, np.floating)):
        return float32
    raise TypeError(f"not a numeric constant: {value!r}")


def wrap_int(v: int, dtype: DType) -> int:
    """Two's-complement wrap of a Python int into an integer dtype (R-CONST-4)."""
    bits = dtype.bitwidth
    v &= (1 << bits) - 1
    if dtype.is_signed and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def _negative_unsigned(value, dtype: DType) -> str:
    """1.7's words for a negative constant of an unsigned float format, then which."""
    return (f"Negative values cannot be represented in an unsigned float format ({value} as "
            f"{dtype.name})")


def convert_constant(value: Any, dtype: DType) -> Any:
    """Convert a constant into ``dtype`` with the strict-constant rules of R-CONST-4.

    Integers wrap, floats round to nearest-even, floats into integers truncate toward zero,
    anything into bool is truthiness.  Returns a Python value (bool, int or float; the float
    is exactly representable in ``dtype``).
    """

    if isinstance(value, np.generic):
        value = value.item()
    if dtype.is_bool:
        return bool(value)
    if dtype.is_integral:
        if isinstance(value, float):
            if math.isnan(value) or math.isinf(value):
                raise TileValueError(f"Cannot convert {value} to {dtype.name}")
            value = int(value)
        return wrap_int(int(value), dtype)
    # float targets
    f = float(value)
    if dtype is float64:
        return f
    if dtype is float8_e5m3fnu:
        if math.copysign(1.0, f) < 0:
            raise TileValueError(_negative_unsigned(value, dtype))
        return float(e5m3_decode(e5m3_encode(np.array(f), satfinite=False)))
    if dtype is float8_e8m0fnu and (f < 0 or f == 0):
        # e8m0 holds only positive powers of two (and NaN).
        if f < 0:
            raise TileValueError(_negative_unsigned(value, dtype))
    if dtype is float4_e2m1fn and math.isnan(f):
        raise TileValueError(f"NaN cannot be represented in {dtype.name}")
    if dtype is tfloat32:
        return float(round_to_tf32(_float32_odd(f)))
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype in (float64, float32, float16) or dtype is float8_e8m0fnu:
            r = np.array(f, dtype=np.float64).astype(dtype.np_dtype)   # one rounding
        else:   # ml_dtypes rounds float64 through float32 first: give it the odd float32
            r = np.array(_float32_odd(f)).astype(dtype.np_dtype)
        return float(r.astype(np.float64))


def _float32_odd(f: float) -> np.float32:
    """``f`` rounded to float32 by round-to-odd (truncate, then set the last bit if inexact):
    a later round-to-nearest into a format of at most 22 significand bits (bfloat16,
    tfloat32, float8, float4) is then one correct rounding of ``f`` (R-CONST-4), where
    rounding ``f`` to nearest float32 first could make a tie that ``f`` is not
    (``1.0039062500000002`` into bfloat16)."""
    with np.errstate(over="ignore", invalid="ignore"):
        r = np.float32(f)
        if not np.isfinite(r) or float(r) == f:
            if np.isinf(r) and math.isfinite(f):       # overflowed: largest finite, odd
                return np.float32(math.copysign(float(np.finfo(np.float32).max), f))
            return r
        if abs(float(r)) > abs(f):                     # rounded away from zero: truncate
            r = np.nextafter(r, np.float32(0))
        bits = np.array(r).view(np.uint32) | np.uint32(1)
        return bits.view(np.float32)[()]


# -- float8_e5m3fnu: unsigned, 5 exponent bits (bias 15), 3 mantissa bits, subnormals, no
# infinities, NaN = 0xFF; largest finite 1.75 * 2**16 (cuda.tile 1.7's float spec: emin -14,
# emax 16, NaN only all ones, no sign) ---------------------------------------------------------
E5M3_MAX = 114688.0


def e5m3_decode(a) -> np.ndarray:
    """float64 values of float8_e5m3fnu data (an ``E5M3_NP`` array or its uint8 bytes)."""
    a = np.asarray(a)
    b = (a.view(np.uint8) if a.dtype == E5M3_NP else a.astype(np.uint8)).astype(np.int64)
    field, mant = b >> 3, b & 7
    v = np.where(field == 0, np.ldexp(mant.astype(np.float64), -17),
                 np.ldexp((8 + mant).astype(np.float64), field - 18))
    return np.where(b == 0xFF, np.nan, v)


def e5m3_encode(v, *, satfinite: bool) -> np.ndarray:
    """float64 -> float8_e5m3fnu (an ``E5M3_NP`` array), round to nearest even.

    NaN -> NaN.  ``satfinite`` (runtime conversions, like the GPU's ``.satfinite`` float8
    conversions): values above the largest finite one saturate to it, negative ones to 0.
    Otherwise (constants, cuda.tile 1.7's host encoder) overflow gives NaN and a negative
    value NaN (-0.0 is +0); constants reject negatives before this (R-CONST-4).
    """
    v = np.asarray(v, dtype=np.float64)
    nan = np.isnan(v)
    neg = ~nan & (v < 0)
    a = np.where(nan | neg, 0.0, np.abs(v))
    if satfinite:
        a = np.minimum(a, E5M3_MAX)
    with np.errstate(all="ignore"):
        _, e = np.frexp(np.where(a > 0, a, 1.0))
        q = np.maximum(e - 1, -14) - 3                  # exponent of the last mantissa bit
        t = np.rint(np.ldexp(np.where(np.isinf(a), 0.0, a), -q))   # ties to even
        _, e2 = np.frexp(np.where(t > 0, t, 1.0))
        up = t >= 16                                    # rounded up into the next binade
        t = np.where(up, t / 2, t)
        q = np.where(up, q + 1, q)
        field = np.where(t >= 8, q + 18, 0)
        mant = np.where(t >= 8, t - 8, t)
    bits = (field.astype(np.int64) << 3) | mant.astype(np.int64)
    bad = nan | (bits > 0xFE) | np.isinf(a) | (neg & (not satfinite))
    bits = np.where(bad, 0xFF, np.where(neg, 0, bits))
    return bits.astype(np.uint8).view(E5M3_NP).reshape(v.shape)


def to_float64(a: np.ndarray) -> np.ndarray:
    """``a.astype(float64)``, decoding float8_e5m3fnu (the one format NumPy cannot convert)."""
    a = np.asarray(a)
    return e5m3_decode(a) if a.dtype == E5M3_NP else a.astype(np.float64)


def round_to_tf32(x: np.ndarray | np.float32, mode: str = "RN") -> np.ndarray:
    """Round float32 values to tfloat32 precision (10 explicit mantissa bits), kept in float32.

    ``mode`` is ``"RN"`` (nearest, ties to even) or ``"RZ"`` (toward zero).  NaN and inf pass
    through unchanged.
    """
    a = np.asarray(x, dtype=np.float32)
    bits = a.view(np.uint32).astype(np.uint64)
    drop = 13
    if mode == "RN":
        lsb = (bits >> drop) & 1
        bits = bits + ((1 << (drop - 1)) - 1) + lsb
    bits = (bits >> drop) << drop
    out = (bits & 0xFFFFFFFF).astype(np.uint32).view(np.float32)
    return np.where(np.isfinite(a), out, a).astype(np.float32)


# -- normalisation of foreign dtype objects (R-DTYPE-4) --------------------------------------
_NP_TO_DTYPE = {d.np_dtype: d for d in ALL_DTYPES if d.has_numpy and d is not tfloat32}


def normalize_dtype(obj: Any) -> DType | None:
    """Map a ct DType, NumPy dtype/scalar type, or torch/cupy dtype to a DType, else ``None``."""
    if isinstance(obj, DType):
        return obj
    if obj is bool:
        return None
    try:
        if isinstance(obj, np.dtype) or (isinstance(obj, type) and issubclass(obj, np.generic)):
            return _NP_TO_DTYPE.get(np.dtype(obj))
    except TypeError:
        return None
    mod = type(obj).__module__
    if mod.startswith("torch"):
        name = str(obj).split(".")[-1]
        name = {"bool": "bool_", "float8_e4m3fn": "float8_e4m3fn"}.get(name, name)
        return DType._registry.get(name)
    return None


def from_numpy(np_dtype: np.dtype) -> DType | None:
    """DType of a NumPy array's element type (float32 arrays are never tfloat32)."""
    return _NP_TO_DTYPE.get(np.dtype(np_dtype))


def dtype_min(dtype: DType):
    if dtype.is_float:
        return -math.inf
    return int_range(dtype)[0]


def dtype_max(dtype: DType):
    if dtype.is_float:
        return math.inf
    return int_range(dtype)[1]

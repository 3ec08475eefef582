"""Typing helpers shared by every API function: constants, promotion, broadcasting, casts.

This is the one place where loose/strict constants materialise (R-CONST-*), binary operands
find their common dtype (R-PROMO-*), shapes broadcast (R-BCAST-*) and values are cast
implicitly (R-CAST-*).  The IR ops below it are strictly typed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .. import dtypes as dt
from ..dtypes import DType
from ..enums import RoundingMode
from ..errors import TileError, TileTypeError, TileValueError
from ..ir import ops
from ..ir.types import TileType, check_tile_size
from .context import current
from .values import ArrayV, Const, FVal, TileV, TupleV, describe


def fval(x: Any) -> FVal:
    """Wrap a Python default argument value as a constant; pass frontend values through."""
    if isinstance(x, FVal):
        return x
    if isinstance(x, tuple):
        return TupleV(tuple(fval(i) for i in x))
    return Const(x)


def operand(v, side: str, *, arithmetic: bool = True, pointer: bool = False) -> FVal:
    """A tile or numeric constant; restricted floats are rejected for arithmetic (R-MATH-2),
    foreign pointers everywhere but ``where`` (§7)."""
    v = fval(v)
    if isinstance(v, TileV) or (isinstance(v, Const) and v.is_number):
        loose = isinstance(v, Const) and v.is_loose
        if arithmetic and not loose and value_dtype(v).is_restricted:
            raise TileTypeError(f"{side} has non-arithmetic dtype {value_dtype(v).name}")
        if not pointer and isinstance(v, TileV) and v.dtype.is_foreign_pointer:
            raise TileTypeError(f"{side} has non-arithmetic dtype {v.dtype.name}: a foreign "
                                f"pointer supports no numeric operation (is_numeric)")
        return v
    raise TileTypeError(f"{side}: expected a tile or a scalar, got {describe(v)}")


def condition(v: FVal) -> FVal:
    """R-CF-2: scalars only, converted with ``bool_(c)``; constants fold."""
    if isinstance(v, Const):
        return Const(bool(v.value))
    if isinstance(v, TileV):
        if v.shape != ():
            raise TileTypeError(f"Expected a scalar value as condition, got {describe(v)}")
        operand(v, "Condition", arithmetic=False)      # no foreign pointer (§7)
        return convert(v, dt.bool_)
    if isinstance(v, TupleV):
        return Const(len(v.items) > 0)
    raise TileTypeError(f"Expected a scalar value as condition, got {describe(v)}")


def is_number_const(v: FVal) -> bool:
    return isinstance(v, Const) and v.is_number


def is_scalar(v: FVal) -> bool:
    return is_number_const(v) or (isinstance(v, TileV) and v.shape == ())


def value_dtype(v: FVal) -> DType:
    """The dtype of a tile or of a constant as it would materialise (R-CONST-7)."""
    if isinstance(v, TileV):
        return v.dtype
    if isinstance(v, Const) and v.is_number:
        return v.dtype if v.dtype is not None else dt.loose_dtype(v.value)
    raise TileTypeError(f"Expected a tile or a scalar, got {describe(v)}")


def value_shape(v: FVal) -> tuple[int, ...]:
    if isinstance(v, TileV):
        return v.shape
    if is_number_const(v):
        return ()
    raise TileTypeError(f"Expected a tile or a scalar, got {describe(v)}")


# -- materialising constants -------------------------------------------------------------------
def constant(value: Any, dtype: DType, shape: tuple = ()) -> TileV:
    """Emit a constant tile; ``value`` is converted with the strict rules of R-CONST-4."""
    return current().emit_value(
        ops.Constant(dt.convert_constant(value, dtype), dtype, tuple(shape)))


def to_tile(v: FVal, dtype: DType | None = None) -> TileV:
    """A runtime tile for ``v``: constants materialise (in ``dtype`` if given, else their own)."""
    if isinstance(v, TileV):
        return convert(v, dtype) if dtype is not None else v
    if is_number_const(v):
        target = dtype or value_dtype(v)
        return constant(v.value, target)
    raise TileTypeError(f"Expected a tile or a scalar, got {describe(v)}")


def convert(v: TileV, dtype: DType, rounding: str | None = None) -> TileV:
    if v.dtype is dtype and rounding is None:
        return v
    return current().emit_value(ops.Convert(v.value, dtype, rounding))


# -- promotion (R-PROMO-2..5) ------------------------------------------------------------------
def _check_const_in_range(c: Const, dtype: DType) -> None:
    if dtype.is_integral and isinstance(c.value, int) and not isinstance(c.value, bool):
        lo, hi = dt.int_range(dtype)
        if not lo <= c.value <= hi:
            raise TileValueError(f"Integer constant {c.value} is out of range of {dtype.name}")


def common_dtype(a: FVal, b: FVal, *, check_range: bool = True) -> DType:
    """Common dtype of two operands of which at most one is loose (R-PROMO-3/4)."""
    la = isinstance(a, Const) and a.is_loose
    lb = isinstance(b, Const) and b.is_loose
    if la and lb:
        raise AssertionError("two loose constants fold in Python (R-PROMO-2)")
    if la or lb:
        loose, other = (a, b) if la else (b, a)
        od = value_dtype(other)
        cd = dt.loose_dtype(loose.value)
        ocat = od.category
        if cd.category == ocat:
            if check_range:
                _check_const_in_range(loose, od)
            return od
        return od if ocat > cd.category else cd
    return promote_dtypes(value_dtype(a), value_dtype(b))


def promote_dtypes(da: DType, db: DType) -> DType:
    """R-PROMO-3 for two concrete dtypes, raising the upstream error when they do not promote."""
    res = dt.promote(da, db)
    if res is None:
        raise TileTypeError(f"Implicit promotion of {da.name} and {db.name} is not supported. "
                            "Please perform an explict cast instead.")   # upstream's wording
    return res


# -- broadcasting (R-BCAST-1/2) ----------------------------------------------------------------
def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(ndim):
        dim = 1
        for s in shapes:
            j = i - (ndim - len(s))
            if j < 0:
                continue
            d = s[j]
            if d == 1:
                continue
            if dim not in (1, d):
                raise TileTypeError(
                    "Shapes " + ", ".join(str(tuple(x)) for x in shapes) + " are not broadcastable"
                )
            dim = d
        out.append(dim)
    return tuple(out)


def broadcast(v: TileV, shape: tuple[int, ...]) -> TileV:
    if v.shape == tuple(shape):
        return v
    return current().emit_value(ops.Broadcast(v.value, tuple(shape)))


def operands(*vals: FVal, dtype: DType) -> list[TileV]:
    """Materialise, convert to ``dtype`` and broadcast to a common shape."""
    shape = broadcast_shapes(*(value_shape(v) for v in vals))
    return [broadcast(to_tile(v, dtype), shape) for v in vals]


# -- implicit casts (R-CAST-1/2) ---------------------------------------------------------------
def implicit_cast(v: FVal, dtype: DType, context: str) -> TileV:
    """Cast ``v`` to ``dtype`` if R-CAST allows it, else raise with ``context`` as prefix."""
    if isinstance(v, Const) and v.is_loose:
        val = v.value
        if dtype.is_bool:
            ok = isinstance(val, bool) or (isinstance(val, int) and val in (0, 1))
        elif dtype.is_integral:
            ok = not isinstance(val, float)
            if ok:
                lo, hi = dt.int_range(dtype)
                if not lo <= int(val) <= hi:
                    raise TileValueError(f"{context}: {val} is out of range of {dtype.name}")
        else:
            ok = True
        if not ok:
            raise TileTypeError(
                f"{context}: cannot implicitly cast constant {val!r} to {dtype.name}")
        return constant(val, dtype)
    src = value_dtype(v)
    if not dt.can_cast_implicitly(src, dtype):
        raise TileTypeError(f"{context}: cannot implicitly cast {src.name} to {dtype.name}")
    return to_tile(v, dtype)


# -- constant arguments ------------------------------------------------------------------------
def const_value(v: FVal, what: str) -> Any:
    if isinstance(v, Const):
        return v.value
    if isinstance(v, TupleV):
        return tuple(const_value(i, what) for i in v.items)
    raise TileTypeError(f"Expected {what} to be a compile-time constant, got {describe(v)}")


def const_int(v: FVal, what: str) -> int:
    if isinstance(v, Const) and isinstance(v.value, int) and not isinstance(v.value, bool):
        return int(v.value)
    kind = (type(v.value).__name__ if v.value is not None else "None") \
        if isinstance(v, Const) else describe(v)
    raise TileTypeError(f"Expected an integer constant, but given value has type {kind} "
                        f"({what} must be a compile-time int)")


def const_bool(v: FVal, what: str) -> bool:
    if isinstance(v, Const) and isinstance(v.value, bool):
        return v.value
    raise TileTypeError(f"Expected a boolean constant for {what}, got {describe(v)}")


def check_power_of_two_shape(shape: tuple, prefix: str = "") -> None:
    for i, d in enumerate(shape):
        if d <= 0:
            raise TileTypeError(f"{prefix}Dimension #{i} of shape {shape} is not positive")
        if d & (d - 1):
            raise TileTypeError(f"{prefix}Dimension #{i} of shape {shape} is not a power of two")
    check_tile_size(shape)


def _about(arg: str, e: TileError) -> TileError:
    """``e`` is about the op's argument ``arg``: the op call names it (``registry``)."""
    e.arg = arg
    return e


def const_shape(v: FVal, ndim: int | None = None, what: str = "shape") -> tuple[int, ...]:
    """A constant tile shape (R-LOAD-3): an int (1-tuple), a tuple of ints, or ``()``."""
    if isinstance(v, Const) and isinstance(v.value, int) and not isinstance(v.value, bool):
        shape: tuple = (int(v.value),)
    elif isinstance(v, TupleV):
        items = []
        for i, it in enumerate(v.items):
            if not isinstance(it, Const):
                raise _about(what, TileTypeError(f"Expected a constant integer tuple for {what}"
                                                 + runtime_shape_hint(it, f"item #{i}")))
            if not isinstance(it.value, int) or isinstance(it.value, bool):
                raise _about(what, TileTypeError(f"Expected a tuple of integers for {what}, "
                                                 f"got {it.value!r}"))
            items.append(int(it.value))
        shape = tuple(items)
    elif isinstance(v, Const) and isinstance(v.value, tuple):
        return const_shape(fval(v.value), ndim, what)
    else:
        raise _about(what, TileTypeError(f"Expected a constant integer tuple for {what}, got "
                                         f"{describe(v)}" + runtime_shape_hint(v, "it")))
    if ndim is not None and shape != () and len(shape) != ndim:
        raise TileTypeError(f"Expected shape length to be {ndim}, got {len(shape)}")
    check_power_of_two_shape(shape)
    return shape


def runtime_shape_hint(v: FVal, which: str) -> str:
    """Why a runtime scalar cannot be a tile shape, and the fix: a kernel parameter becomes a
    compile-time constant when declared ``ct.Constant[int]`` (R-CONST-2)."""
    if not (isinstance(v, TileV) and v.shape == ()):
        return ""
    if v.value in current().params:
        return (f": {which} is the kernel parameter {v.value.hint!r}, a runtime "
                f"{v.dtype.name} value, but a tile shape must be known at compile time; "
                f"declare it `{v.value.hint}: ct.Constant[int]`")
    return (f": {which} is a runtime {v.dtype.name} value, but a tile shape must be known at "
            f"compile time; compute it from literals and `ct.Constant[int]` parameters")


def normalize_axis(axis: int, ndim: int, what: str = "Axis") -> int:
    if not -ndim <= axis < ndim:
        raise TileTypeError(f"{what} {axis} is out of range for rank {ndim}")
    return axis % ndim if ndim else 0


def signed_index(v: FVal, what: str = "index") -> TileV:
    """A signed integer scalar used as an index or bound (R-LOAD-1)."""
    if is_number_const(v):
        if isinstance(v.value, (float, bool)) or (v.dtype is not None
                                                  and not v.dtype.is_signed):
            raise TileTypeError(f"Expected a tuple of signed integers for {what}")
        return to_tile(v)
    if isinstance(v, TileV) and v.shape == () and v.dtype.is_signed:
        return v
    raise TileTypeError(f"Expected a tuple of signed integers for {what}, got {describe(v)}")


def tuple_items(v: FVal, what: str) -> tuple[FVal, ...]:
    if isinstance(v, TupleV):
        return v.items
    if isinstance(v, Const) and isinstance(v.value, tuple):
        return tuple(fval(i) for i in v.value)
    raise TileTypeError(f"Expected a tuple for {what}, got {describe(v)}")


def tile_type_of(v: TileV) -> TileType:
    return v.type


def require_array(v: FVal, what: str = "array") -> ArrayV:
    if not isinstance(v, ArrayV):
        raise TileTypeError(f"Expected an array for {what}, got {describe(v)}")
    return v


def fold_float(x: float) -> float:
    return float(x) if not math.isnan(x) else math.nan


# -- rounding modes and flush-to-zero (R-MATH-8, R-ASTYPE-2) -----------------------------------
_DIRECTED = frozenset({"RN", "RZ", "RM", "RP"})
ROUNDING_MODES = {
    "add": _DIRECTED, "sub": _DIRECTED, "mul": _DIRECTED,
    "truediv": _DIRECTED | {"FULL", "APPROX"}, "sqrt": _DIRECTED | {"APPROX"},
    "tanh": frozenset({"FULL", "APPROX"}), "exp": frozenset({"FULL", "APPROX"}),
    "sum": _DIRECTED, "prod": _DIRECTED, "cumsum": _DIRECTED, "cumprod": _DIRECTED,
}
FTZ_OPS = frozenset({"add", "sub", "mul", "truediv", "minimum", "maximum", "max", "min", "sum",
                     "prod", "cumsum", "cumprod", "exp2", "sqrt", "rsqrt"})


def _mode_const(mode: Any) -> RoundingMode | None:
    m = fval(mode)
    if isinstance(m, Const) and m.value is None:
        return None
    if not isinstance(m, Const) or not isinstance(m.value, RoundingMode):
        raise TileTypeError(f"rounding_mode must be a constant RoundingMode or None, "
                            f"got {describe(m)}")
    return m.value


def rounding_mode(mode: Any, fn: str, dtype: DType) -> str | None:
    """Validate an op's ``rounding_mode`` (R-MATH-8); the mode's name, ``None`` for RN.

    Checks run in upstream order: is the mode supported by ``fn`` at all, then is the operation
    dtype an unrestricted float, then FULL/APPROX need float32.
    """
    m = _mode_const(mode)
    if m is None:
        return None
    if m.name not in ROUNDING_MODES.get(fn, ()):
        raise TileTypeError(f"Rounding mode {m.value} is not supported for {fn}")
    if not dtype.is_float or dtype.is_restricted:
        raise TileTypeError("Rounding mode can only be used for unrestricted float types, "
                            f"but got {dtype.name}")
    if m.name in ("FULL", "APPROX") and dtype is not dt.float32:
        raise TileTypeError(f"Rounding mode {m.value} can only be used for float32 type, "
                            f"but got {dtype.name}")
    return None if m.name == "RN" else m.name


def flush_to_zero(flag: Any, fn: str, dtype: DType) -> bool:
    """Validate ``flush_to_zero`` (R-MATH-8): a constant bool, only for float32 ops that have it."""
    f = const_bool(fval(flag), "flush_to_zero")
    if f:
        if fn not in FTZ_OPS:
            raise TileTypeError(f"Flush to zero is not supported for {fn}")
        if dtype is not dt.float32:
            raise TileTypeError(f"Flush to zero can only be used for float32 type, "
                                f"but got {dtype.name}")
    return f


_ONLY_RN = frozenset({"RN"})
_ASTYPE_MODES = {
    "float64": frozenset({"RN", "RZ", "RM", "RP", "RA"}),
    "float32": frozenset({"RN", "RZ", "RM", "RP", "RA"}),
    "tfloat32": frozenset({"RN", "RZ", "RA"}),
    "bfloat16": frozenset({"RN", "RZ"}),
    "float16": frozenset({"RN", "RZ", "RM", "RP", "RA"}),
    "float8_e4m3fn": _ONLY_RN, "float8_e5m2": _ONLY_RN, "float4_e2m1fn": _ONLY_RN,
    "float8_e5m3fnu": _ONLY_RN, "float8_e8m0fnu": frozenset({"RZ", "RP"}),
}
_F16_DIRECTED_SOURCES = ("bfloat16", "float16", "float8_e4m3fn", "float8_e5m2", "float4_e2m1fn")


def astype_modes(src: DType, dst: DType) -> frozenset:
    """Rounding modes a float -> float conversion accepts (R-ASTYPE-2 table)."""
    ok = set(_ASTYPE_MODES.get(dst.name, ()))
    if dst is dt.float32 and src is dt.float8_e8m0fnu:
        ok -= {"RM", "RP", "RA"}
    if dst in (dt.float32, dt.tfloat32) and src in (dt.float64, dt.float8_e8m0fnu):
        ok -= {"RA"}
    if dst is dt.float16 and src.name not in _F16_DIRECTED_SOURCES:
        ok -= {"RM", "RP", "RA"}
    return frozenset(ok)


def astype_rounding(src: DType, dst: DType, mode: Any) -> str | None:
    """Validate ``astype``'s ``rounding_mode`` (R-ASTYPE-2); the mode's name, ``None`` for RN.

    ``None`` means RN, which float8_e8m0fnu targets reject (they need RZ or RP).
    """
    m = _mode_const(mode)
    if src is dst:
        return None                  # a no-op, whatever the mode (as upstream)
    name = "RN" if m is None else m.name
    if m is not None and not (src.is_float and dst.is_float):
        raise TileTypeError("rounding_mode is only valid for float to float conversions")
    allowed = astype_modes(src, dst) if src.is_float else (
        frozenset() if dst is dt.float8_e8m0fnu else frozenset({"RN"}))
    if dst.is_float and name not in allowed:
        raise TileTypeError(f"rounding_mode=RoundingMode.{name} is not supported for "
                            f"conversion from {src.name} to {dst.name}")
    return None if name == "RN" else name

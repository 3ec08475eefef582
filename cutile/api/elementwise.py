"""Elementwise math, comparisons, bitwise logic, ``where`` and ``astype`` (spec §16-§19, §12.1).

Each function types its operands here (promotion, broadcasting, constant folding) and emits
one strictly typed IR op; the executors implement the op.
"""

from __future__ import annotations

import math
import operator

from .. import dtypes as dt
from ..dtypes import DType
from ..enums import RoundingMode
from ..errors import TileTypeError, TileValueError
from ..frontend import coerce
from ..frontend.context import current
from ..frontend.values import Const, FVal, TileV, describe
from ..ir import ops
from ._registry import tile_op

# -- constant folding (R-CONST-3/6, R-PROMO-2) -------------------------------------------------


def _py_floordiv(a, b):
    return a // b


def _py_truediv(a, b):
    return a / b


def _py_cdiv(a, b):
    return -((-a) // b)


def _py_mod(a, b):
    return a % b


def _py_min(a, b):
    return b if (isinstance(a, float) and math.isnan(a)) else (a if b != b or a <= b else b)


def _py_max(a, b):
    return b if (isinstance(a, float) and math.isnan(a)) else (a if b != b or a >= b else b)


_FOLD = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": _py_truediv,
    "floordiv": _py_floordiv, "cdiv": _py_cdiv, "mod": _py_mod, "pow": operator.pow,
    "minimum": _py_min, "maximum": _py_max, "atan2": math.atan2,
    "and": operator.and_, "or": operator.or_, "xor": operator.xor,
    "lshift": operator.lshift, "rshift": operator.rshift,
}
_CMP_FOLD = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
             "gt": operator.gt, "ge": operator.ge}
_ROUNDING_OK = {
    "add": {"RN", "RZ", "RM", "RP"}, "sub": {"RN", "RZ", "RM", "RP"},
    "mul": {"RN", "RZ", "RM", "RP"}, "truediv": {"RN", "RZ", "RM", "RP", "FULL", "APPROX"},
    "sqrt": {"RN", "RZ", "RM", "RP", "APPROX"}, "tanh": {"FULL", "APPROX"},
    "exp": {"FULL", "APPROX"},
}
_FTZ_OK = {"add", "sub", "mul", "truediv", "minimum", "maximum", "exp2", "sqrt", "rsqrt"}


def _fold(fn: str, a, b):
    try:
        return _FOLD[fn](a, b)
    except ZeroDivisionError:
        raise TileValueError(f"Division by zero in constant expression ({fn})") from None
    except OverflowError:
        raise TileValueError(f"Overflow in constant expression ({fn})") from None


def _rounding(mode, fn: str, dtype: DType) -> str | None:
    """Validate a ``rounding_mode`` argument (R-MATH-8) and return its short name."""
    m = coerce.fval(mode)
    if isinstance(m, Const) and m.value is None:
        return None
    if not isinstance(m, Const) or not isinstance(m.value, RoundingMode):
        raise TileTypeError("rounding_mode must be a constant RoundingMode")
    name = m.value.name
    if not dtype.is_float or dtype.is_restricted:
        raise TileTypeError("Rounding mode can only be used for unrestricted float types")
    if name not in _ROUNDING_OK.get(fn, set()):
        raise TileTypeError(f"Rounding mode {name} is not supported for {fn}")
    if name in ("FULL", "APPROX") and dtype is not dt.float32:
        raise TileTypeError(f"Rounding mode {name} can only be used for float32 type")
    return None if name == "RN" else name


def _ftz(flag, fn: str, dtype: DType) -> bool:
    f = coerce.const_bool(coerce.fval(flag), "flush_to_zero")
    if f:
        if fn not in _FTZ_OK:
            raise TileTypeError(f"Flush to zero is not supported for {fn}")
        if dtype is not dt.float32:
            raise TileTypeError("Flush to zero can only be used for float32 type")
    return f


def _check_arith(v: FVal, side: str) -> None:
    if isinstance(v, (TileV, Const)) and coerce.is_scalar(v) or isinstance(v, TileV):
        d = coerce.value_dtype(v)
        if d.is_restricted:
            raise TileTypeError(f"{side} has non-arithmetic dtype {d.name}")
        return
    raise TileTypeError(f"{side}: expected a tile or a scalar, got {describe(v)}")


# -- binary arithmetic -------------------------------------------------------------------------
def binary(fn: str, x, y, *, rounding_mode=None, flush_to_zero=False, propagate_nan=False,
           fusible: bool = True) -> FVal:
    """Type and emit ``fn(x, y)``: loose constants fold, otherwise promote and broadcast."""
    x, y = coerce.fval(x), coerce.fval(y)
    _check_arith(x, "Left-hand side")
    _check_arith(y, "Right-hand side")
    if isinstance(x, Const) and isinstance(y, Const) and x.is_loose and y.is_loose:
        return Const(_fold(fn, x.value, y.value))
    if fn == "pow":
        return _pow(x, y)
    dtype = coerce.common_dtype(x, y, check_range=fn != "truediv")
    if fn == "truediv" and not dtype.is_float:
        dtype = dt.float32                      # R-PROMO-5
    if dtype.is_bool:
        if fn == "mod":
            raise TileTypeError("Modulo operation does not support bool")
        raise TileTypeError(
            f"Binary arithmetic op `{fn}` does not support bool, please cast bool to int")
    if fn == "cdiv" and dtype.is_float:
        raise TileTypeError("cdiv() is only supported for integers")
    if fn == "atan2" and not dtype.is_float:
        raise TileTypeError("atan2() is only supported for floating-point values")
    rounding = _rounding(rounding_mode, fn, dtype)
    ftz = _ftz(flush_to_zero, fn, dtype)
    nan = coerce.const_bool(coerce.fval(propagate_nan), "propagate_nan")
    if isinstance(x, Const) and isinstance(y, Const):
        a = dt.convert_constant(x.value, dtype)
        b = dt.convert_constant(y.value, dtype)
        if dtype.is_integral and fn in ("floordiv", "mod", "cdiv", "truediv") and b == 0:
            raise TileValueError(f"Division by zero in constant expression ({fn})")
        return Const(dt.convert_constant(_fold(fn, a, b), dtype), dtype)
    tx, ty = coerce.operands(x, y, dtype=dtype)
    return current().emit_value(ops.Binary(
        fn, tx.value, ty.value, rounding, ftz, nan,
        fusible=fusible and rounding is None and not ftz and fn in ("add", "sub", "mul")))


def _pow(x: FVal, y: FVal) -> FVal:
    """R-MATH-5: a float base with an int32-range integer exponent keeps the base dtype."""
    dx, dy = coerce.value_dtype(x), coerce.value_dtype(y)
    if dx.is_float and dy.is_integral and not (isinstance(y, Const) and y.is_loose) and (
            dy in (dt.int8, dt.int16, dt.int32, dt.uint8, dt.uint16)):
        dtype = dx
    else:
        dtype = coerce.common_dtype(x, y)
    if not dtype.is_float:
        raise TileTypeError("pow() is not supported for integer operands; convert to float")
    if isinstance(x, Const) and isinstance(y, Const):
        a, b = dt.convert_constant(x.value, dtype), dt.convert_constant(y.value, dtype)
        return Const(dt.convert_constant(_fold("pow", a, b), dtype), dtype)
    tx, ty = coerce.operands(x, y, dtype=dtype)
    return current().emit_value(ops.Binary("pow", tx.value, ty.value))


@tile_op
def add(x, y, /, *, rounding_mode=None, flush_to_zero=False):
    """Elementwise ``x + y`` with broadcasting and promotion (R-MATH-1)."""
    return binary("add", x, y, rounding_mode=rounding_mode, flush_to_zero=flush_to_zero)


@tile_op
def sub(x, y, /, *, rounding_mode=None, flush_to_zero=False):
    """Elementwise ``x - y``."""
    return binary("sub", x, y, rounding_mode=rounding_mode, flush_to_zero=flush_to_zero)


@tile_op
def mul(x, y, /, *, rounding_mode=None, flush_to_zero=False):
    """Elementwise ``x * y``."""
    return binary("mul", x, y, rounding_mode=rounding_mode, flush_to_zero=flush_to_zero)


@tile_op
def truediv(x, y, /, *, rounding_mode=None, flush_to_zero=False):
    """Elementwise true division; the result is always a float (R-PROMO-5)."""
    return binary("truediv", x, y, rounding_mode=rounding_mode, flush_to_zero=flush_to_zero)


@tile_op
def floordiv(x, y, /):
    """Elementwise ``x // y``, rounding toward -inf (R-DIV-1/2)."""
    return binary("floordiv", x, y)


@tile_op
def mod(x, y, /):
    """Elementwise ``x % y`` with the sign of the divisor (R-DIV-3)."""
    return binary("mod", x, y)


def _host_cdiv(x, y):
    return (x - 1) // y + 1


@tile_op(host=_host_cdiv)
def cdiv(x, y, /):
    """Ceiling division (R-DIV-4).  On the host: ``(x - 1) // y + 1``."""
    return binary("cdiv", x, y)


@tile_op
def pow(x, y, /):
    """Elementwise power (R-MATH-5)."""
    return binary("pow", x, y)


@tile_op
def atan2(x, y, /):
    """Elementwise ``atan2(x, y)`` on floats."""
    return binary("atan2", x, y)


@tile_op
def minimum(x, y, /, *, flush_to_zero=False, propagate_nan=False):
    """Elementwise minimum; NaN is ignored unless ``propagate_nan`` (R-MATH-6)."""
    return binary("minimum", x, y, flush_to_zero=flush_to_zero, propagate_nan=propagate_nan)


@tile_op
def maximum(x, y, /, *, flush_to_zero=False, propagate_nan=False):
    """Elementwise maximum; NaN is ignored unless ``propagate_nan`` (R-MATH-6)."""
    return binary("maximum", x, y, flush_to_zero=flush_to_zero, propagate_nan=propagate_nan)


# -- bitwise (R-BIT-1..5) ----------------------------------------------------------------------
def _bitwise(fn: str, x, y) -> FVal:
    x, y = coerce.fval(x), coerce.fval(y)
    for v in (x, y):
        d = coerce.value_dtype(v)
        if d.is_float:
            raise TileTypeError("Bitwise operations require integers or booleans")
    if isinstance(x, Const) and isinstance(y, Const) and x.is_loose and y.is_loose:
        return Const(_fold(fn, x.value, y.value))
    lx = isinstance(x, Const) and x.is_loose
    ly = isinstance(y, Const) and y.is_loose
    if lx or ly:
        loose, other = (x, y) if lx else (y, x)
        od = coerce.value_dtype(other)
        if od.is_integral and od is not dt.int32 and od.bitwidth == 8 and isinstance(
                loose.value, bool):
            raise TileTypeError(f"Bitwise op does not support bool and {od.name}")
        dtype = coerce.common_dtype(x, y)
    else:
        da, db = coerce.value_dtype(x), coerce.value_dtype(y)
        if da is not db:
            raise TileTypeError(
                f"Bitwise operands must have same data type, got {da.name} and {db.name}")
        dtype = da
    if isinstance(x, Const) and isinstance(y, Const):
        a, b = dt.convert_constant(x.value, dtype), dt.convert_constant(y.value, dtype)
        return Const(dt.convert_constant(_fold(fn, a, b), dtype), dtype)
    tx, ty = coerce.operands(x, y, dtype=dtype)
    return current().emit_value(ops.Binary(fn, tx.value, ty.value))


@tile_op
def bitwise_and(x, y, /):
    """Elementwise ``x & y`` (logical and for bools)."""
    return _bitwise("and", x, y)


@tile_op
def bitwise_or(x, y, /):
    """Elementwise ``x | y`` (logical or for bools)."""
    return _bitwise("or", x, y)


@tile_op
def bitwise_xor(x, y, /):
    """Elementwise ``x ^ y``."""
    return _bitwise("xor", x, y)


def logical_and(a: FVal, b: FVal) -> FVal:
    """``and`` of two conditions already converted to bool (chained comparisons)."""
    return _bitwise("and", a, b)


def logical_not(c: TileV) -> FVal:
    return current().emit_value(ops.Unary("not", c.value))


@tile_op
def bitwise_not(x, /):
    """Elementwise ``~x``: complement for integers, logical not for bools (R-BIT-5)."""
    x = coerce.fval(x)
    d = coerce.value_dtype(x)
    if d.is_float:
        raise TileTypeError("Float inputs are not supported for bitwise_not")
    if isinstance(x, Const):
        if d.is_bool:
            return Const(not x.value, x.dtype)
        return Const(dt.convert_constant(~int(x.value), d), x.dtype)
    return current().emit_value(ops.Unary("not", x.value))


# -- comparisons (R-CMP-1..3) ------------------------------------------------------------------
def compare(fn: str, x, y) -> FVal:
    x, y = coerce.fval(x), coerce.fval(y)
    if isinstance(x, Const) and isinstance(y, Const) and not (x.is_number and y.is_number):
        if fn in ("eq", "ne"):
            return Const(_CMP_FOLD[fn](x.value, y.value))
        raise TileTypeError(f"Comparison {fn} is not supported for {describe(x)}")
    _check_arith(x, "Left-hand side")
    _check_arith(y, "Right-hand side")
    if isinstance(x, Const) and isinstance(y, Const) and x.is_loose and y.is_loose:
        return Const(_CMP_FOLD[fn](x.value, y.value))
    dtype = coerce.common_dtype(x, y, check_range=False)
    if isinstance(x, Const) and isinstance(y, Const):
        a, b = dt.convert_constant(x.value, dtype), dt.convert_constant(y.value, dtype)
        return Const(bool(_CMP_FOLD[fn](a, b)), dt.bool_)
    for c in (x, y):
        if isinstance(c, Const) and c.is_loose and dtype.is_integral and not isinstance(
                c.value, float):
            lo, hi = dt.int_range(dtype)
            if not lo <= c.value <= hi:
                raise TileValueError(f"Integer constant {c.value} is out of range of {dtype.name}")
    tx, ty = coerce.operands(x, y, dtype=dtype)
    return current().emit_value(ops.Compare(fn, tx.value, ty.value))


def _cmp_op(fn, doc):
    def f(x, y, /):
        return compare(fn, x, y)
    f.__name__ = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
                  "gt": "greater", "ge": "greater_equal"}[fn]
    f.__doc__ = doc
    return tile_op(f)


equal = _cmp_op("eq", "Elementwise ``x == y`` as bool (R-CMP-1).")
not_equal = _cmp_op("ne", "Elementwise ``x != y`` as bool.")
less = _cmp_op("lt", "Elementwise ``x < y`` as bool.")
less_equal = _cmp_op("le", "Elementwise ``x <= y`` as bool.")
greater = _cmp_op("gt", "Elementwise ``x > y`` as bool.")
greater_equal = _cmp_op("ge", "Elementwise ``x >= y`` as bool.")


# -- unary math (R-MATH-7) ---------------------------------------------------------------------
_FLOAT_UNARY = ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tan", "sinh",
                "cosh", "tanh")
_PY_UNARY = {
    "exp": math.exp, "exp2": lambda v: 2.0 ** v, "log": math.log, "log2": math.log2,
    "sqrt": math.sqrt, "rsqrt": lambda v: 1 / math.sqrt(v), "sin": math.sin, "cos": math.cos,
    "tan": math.tan, "sinh": math.sinh, "cosh": math.cosh, "tanh": math.tanh,
    "floor": math.floor, "ceil": math.ceil, "abs": abs, "negative": operator.neg,
}


def unary(fn: str, x, *, rounding_mode=None, flush_to_zero=False) -> FVal:
    x = coerce.fval(x)
    _check_arith(x, "Input") if fn != "isnan" else None
    d = coerce.value_dtype(x)
    if fn in _FLOAT_UNARY:
        out = d if d.is_float else dt.float32
    elif fn in ("floor", "ceil"):
        if d.is_bool:
            raise TileTypeError("Boolean inputs are not supported")
        if d.is_integral:
            raise TileTypeError("Integer inputs are not supported")
        out = d
    elif fn == "isnan":
        if not d.is_float or d.is_restricted:
            raise TileTypeError(f"Unexpected input type {d.name} for isnan")
        out = d
    elif fn == "negative":
        out = dt.int32 if d.is_bool else d
    else:  # abs
        out = d
    rounding = _rounding(rounding_mode, fn, out)
    ftz = _ftz(flush_to_zero, fn, out)
    if isinstance(x, Const):
        if fn == "isnan":
            return Const(math.isnan(x.value), None if x.is_loose else dt.bool_)
        try:
            v = _PY_UNARY[fn](x.value if not isinstance(x.value, bool) else int(x.value))
        except (ValueError, ZeroDivisionError, OverflowError):
            v = _unary_special(fn, float(x.value))
        if x.is_loose:
            return Const(v)
        return Const(dt.convert_constant(v, out), out)
    t = coerce.convert(x, out)
    return current().emit_value(ops.Unary(fn, t.value, rounding, ftz))


def _unary_special(fn, v):
    if fn in ("log", "log2"):
        return -math.inf if v == 0 else math.nan
    if fn in ("sqrt", "rsqrt"):
        return math.nan if v < 0 else math.inf
    return math.inf


def _unary_op(fn, extras, doc):
    if extras == "rounding":
        def f(x, /, *, rounding_mode=None):
            return unary(fn, x, rounding_mode=rounding_mode)
    elif extras == "ftz":
        def f(x, /, *, flush_to_zero=False):
            return unary(fn, x, flush_to_zero=flush_to_zero)
    elif extras == "both":
        def f(x, /, *, rounding_mode=None, flush_to_zero=False):
            return unary(fn, x, rounding_mode=rounding_mode, flush_to_zero=flush_to_zero)
    else:
        def f(x, /):
            return unary(fn, x)
    f.__name__ = fn
    f.__doc__ = doc
    return tile_op(f)


exp = _unary_op("exp", "rounding", "Elementwise ``e**x``; integers and bools become float32.")
exp2 = _unary_op("exp2", "ftz", "Elementwise ``2**x``.")
log = _unary_op("log", None, "Elementwise natural logarithm.")
log2 = _unary_op("log2", None, "Elementwise base-2 logarithm.")
sqrt = _unary_op("sqrt", "both", "Elementwise square root.")
rsqrt = _unary_op("rsqrt", "ftz", "Elementwise ``1/sqrt(x)``.")
sin = _unary_op("sin", None, "Elementwise sine.")
cos = _unary_op("cos", None, "Elementwise cosine.")
tan = _unary_op("tan", None, "Elementwise tangent.")
sinh = _unary_op("sinh", None, "Elementwise hyperbolic sine.")
cosh = _unary_op("cosh", None, "Elementwise hyperbolic cosine.")
tanh = _unary_op("tanh", "rounding", "Elementwise hyperbolic tangent.")
floor = _unary_op("floor", None, "Elementwise floor of a float tile.")
ceil = _unary_op("ceil", None, "Elementwise ceiling of a float tile.")
isnan = _unary_op("isnan", None, "Elementwise NaN test of a float tile, as bool.")


@tile_op
def negative(x, /):
    """Elementwise ``-x``; bool becomes int32 (R-MATH-7)."""
    return unary("negative", x)


@tile_op(name="abs")
def abs(x, /):  # noqa: A001 - mirrors cuda.tile.abs
    """Elementwise absolute value, keeping the dtype (integer minimum wraps)."""
    return unary("abs", x)


# -- operators ---------------------------------------------------------------------------------
_OPERATORS = {
    "Add": "add", "Sub": "sub", "Mult": "mul", "Div": "truediv", "FloorDiv": "floordiv",
    "Mod": "mod", "Pow": "pow",
}
_BIT_OPERATORS = {"BitAnd": "and", "BitOr": "or", "BitXor": "xor"}
_CMP_OPERATORS = {"Eq": "eq", "NotEq": "ne", "Lt": "lt", "LtE": "le", "Gt": "gt", "GtE": "ge"}


def apply_operator(name: str, left: FVal, right: FVal) -> FVal:
    """The Python binary operator ``name`` (an ``ast`` operator class name)."""
    if name in _OPERATORS:
        return binary(_OPERATORS[name], left, right)
    if name in _BIT_OPERATORS:
        return _bitwise(_BIT_OPERATORS[name], left, right)
    if name == "MatMult":
        from .matmul import matmul
        return matmul.impl(left, right)
    if name in ("LShift", "RShift"):
        return _shift("lshift" if name == "LShift" else "rshift", left, right)
    raise TileTypeError(f"Operator {name} is not supported")


def _shift(fn, x, y):
    x, y = coerce.fval(x), coerce.fval(y)
    for v in (x, y):
        if not coerce.value_dtype(v).is_integral:
            raise TileTypeError("Bitwise shift requires an integer")
    if isinstance(x, Const) and isinstance(y, Const) and x.is_loose and y.is_loose:
        return Const(_fold(fn, x.value, y.value))
    raise TileTypeError("Bitwise shifts on tiles are not supported by cutile yet")


def apply_unary(name: str, v: FVal) -> FVal:
    if name == "USub":
        return unary("negative", v)
    if name == "UAdd":
        d = coerce.value_dtype(v)
        if isinstance(v, Const):
            return Const(+v.value if not isinstance(v.value, bool) else int(v.value), v.dtype)
        return coerce.convert(v, dt.int32) if d.is_bool else v
    if name == "Invert":
        if isinstance(v, Const) and isinstance(v.value, bool) and v.dtype is None:
            raise TileTypeError("'~' on boolean constant is not supported; use 'not'")
        return bitwise_not.impl(v)
    raise TileTypeError(f"Unary operator {name} is not supported")


def apply_compare(name: str, left: FVal, right: FVal) -> FVal:
    if name in _CMP_OPERATORS:
        from .tuples import compare_tuples, is_tuple
        if is_tuple(left) or is_tuple(right):
            return compare_tuples(_CMP_OPERATORS[name], left, right)
        return compare(_CMP_OPERATORS[name], left, right)
    if name in ("Is", "IsNot"):
        if not ((isinstance(left, Const) and left.value is None)
                or (isinstance(right, Const) and right.value is None)):
            raise TileTypeError("'is' expects one of the operands to be None")
        same = isinstance(left, Const) and isinstance(right, Const) and left.value is right.value
        return Const(same if name == "Is" else not same)
    if name in ("In", "NotIn"):
        from .tuples import contains
        r = contains(left, right)
        return Const(r if name == "In" else not r)
    raise TileTypeError(f"Comparison {name} is not supported")


# -- selection and conversion ------------------------------------------------------------------
@tile_op
def where(cond, x, y, /):
    """``x`` where ``cond`` else ``y``, broadcasting all three (R-SEL-1)."""
    cond, x, y = coerce.fval(cond), coerce.fval(x), coerce.fval(y)
    if isinstance(x, Const) and isinstance(y, Const) and x.is_loose and y.is_loose:
        dtype = dt.promote(dt.loose_dtype(x.value), dt.loose_dtype(y.value))
    else:
        dtype = coerce.common_dtype(x, y)
    c = coerce.to_tile(cond)
    if c.dtype is not dt.bool_:
        c = coerce.convert(c, dt.bool_)
    shape = coerce.broadcast_shapes(c.shape, coerce.value_shape(x), coerce.value_shape(y))
    c = coerce.broadcast(c, shape)
    tx, ty = (coerce.broadcast(coerce.to_tile(v, dtype), shape) for v in (x, y))
    return current().emit_value(ops.Select(c.value, tx.value, ty.value))


_ASTYPE_MODES = {
    "float64": {"RN", "RZ", "RM", "RP", "RA"},
    "float32": {"RN", "RZ", "RM", "RP", "RA"},
    "tfloat32": {"RN", "RZ", "RA"},
    "bfloat16": {"RN", "RZ"},
    "float16": {"RN", "RZ", "RM", "RP", "RA"},
    "float8_e4m3fn": {"RN"}, "float8_e5m2": {"RN"}, "float4_e2m1fn": {"RN"},
    "float8_e5m3fnu": {"RN"}, "float8_e8m0fnu": {"RZ", "RP"},
}


def _astype_rounding(src: DType, dst: DType, mode) -> str | None:
    """R-ASTYPE-2: which rounding modes a float->float conversion accepts."""
    m = coerce.fval(mode)
    name = None if isinstance(m, Const) and m.value is None else None
    if not (isinstance(m, Const) and m.value is None):
        if not isinstance(m, Const) or not isinstance(m.value, RoundingMode):
            raise TileTypeError("rounding_mode must be a constant RoundingMode")
        name = m.value.name
    if name is None:
        if dst is dt.float8_e8m0fnu and src is not dst:
            raise TileTypeError(f"rounding_mode=RN is not supported for conversion from "
                                f"{src.name} to {dst.name}; pass RZ or RP")
        return None
    if not (src.is_float and dst.is_float):
        raise TileTypeError("rounding_mode is only valid for float to float conversions")
    ok = set(_ASTYPE_MODES.get(dst.name, set()))
    if dst is dt.float32 and src is dt.float8_e8m0fnu:
        ok -= {"RM", "RP", "RA"}
    if dst in (dt.float32, dt.tfloat32) and src is dt.float64:
        ok -= {"RA"}
    if dst is dt.tfloat32 and src is dt.float8_e8m0fnu:
        ok -= {"RA"}
    if dst is dt.float16 and src not in (dt.bfloat16, dt.float16, dt.float8_e4m3fn,
                                         dt.float8_e5m2, dt.float4_e2m1fn):
        ok -= {"RM", "RP", "RA"}
    if name not in ok:
        raise TileTypeError(f"rounding_mode={name} is not supported for conversion from "
                            f"{src.name} to {dst.name}")
    return None if name == "RN" else name


def require_dtype(d, what: str = "dtype") -> DType:
    v = coerce.fval(d)
    dtype = dt.normalize_dtype(v.value) if isinstance(v, Const) else None
    if dtype is None:
        raise TileTypeError(f"Expected a dtype constant for {what}, got {describe(v)}")
    return dtype


def astype_value(x: FVal, dtype: DType, rounding_mode=None) -> FVal:
    x = coerce.fval(x)
    src = coerce.value_dtype(x)
    rounding = _astype_rounding(src, dtype, rounding_mode)
    if isinstance(x, Const) and x.is_number and rounding is None:
        return Const(dt.convert_constant(x.value, dtype), dtype)      # R-ASTYPE-3
    t = coerce.to_tile(x)
    if t.dtype is dtype and rounding is None:
        return t
    return current().emit_value(ops.Convert(t.value, dtype, rounding))


@tile_op
def astype(x, dtype, /, *, rounding_mode=None):
    """Convert elementwise to ``dtype`` (R-ASTYPE-1/2)."""
    return astype_value(x, require_dtype(dtype), rounding_mode)

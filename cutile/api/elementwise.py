"""Elementwise math, comparisons, bitwise logic, ``where`` and ``astype`` (spec §12.1, §16-§19).

Each function types its operands here (promotion, broadcasting, constant folding) and emits
one strictly typed IR op; the executors implement the op.  Constants fold at compile time:
two loose operands with Python semantics (R-CONST-3), otherwise in the promoted dtype with the
result wrapped / rounded into it (R-CONST-6).
"""

from __future__ import annotations

import math
import operator

from .. import dtypes as dt
from ..dtypes import DType
from ..enums import RoundingMode
from ..errors import TileTypeError, TileUnsupportedFeatureError, TileValueError
from ..ir import ops
from ..ir.ops import elementwise as ir_elementwise
from ..lang import coerce
from ..lang.context import current
from ..lang.registry import TileOp, tile_op
from ..lang.values import Const, FVal, TileV, TupleV, describe
from .classes import Tile

# -- constant folding (R-CONST-3/6, R-PROMO-2) -------------------------------------------------
_FOLD = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "floordiv": operator.floordiv, "cdiv": lambda a, b: -((-a) // b), "mod": operator.mod,
    "pow": operator.pow, "minimum": min, "maximum": max, "atan2": math.atan2,
    "and": operator.and_, "or": operator.or_, "xor": operator.xor,
    "lshift": operator.lshift, "rshift": operator.rshift,
}
_CMP_FOLD = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
             "gt": operator.gt, "ge": operator.ge}
_DIVISIONS = ("floordiv", "mod", "cdiv", "truediv")


def _fold(fn: str, a, b):
    """Python semantics; errors a Python program would raise become TileValueError."""
    try:
        r = _FOLD[fn](a, b)
    except ZeroDivisionError:
        raise TileValueError(f"Division by zero in constant expression ({fn})") from None
    except (OverflowError, ValueError) as e:
        raise TileValueError(f"Invalid constant expression ({fn}): {e}") from None
    if isinstance(r, complex):
        raise TileValueError(f"Constant expression ({fn}) has a complex result")
    return r


def _fold_strict(fn: str, x: Const, y: Const, dtype: DType, out: DType | None = None) -> Const:
    """Both operands constant, at least one strict: compute exactly in Python on the values
    converted to ``dtype``, then wrap / round into the result dtype (R-CONST-6)."""
    a, b = dt.convert_constant(x.value, dtype), dt.convert_constant(y.value, dtype)
    out = out or dtype
    return Const(dt.convert_constant(_fold(fn, a, b), out), out)


def _is_loose(v: FVal) -> bool:
    return isinstance(v, Const) and v.is_loose


def _is_bool(v: FVal) -> bool:
    """Bool-typed operand (a loose ``True``/``False`` included) without materialising it."""
    if isinstance(v, Const):
        return isinstance(v.value, bool) and v.dtype in (None, dt.bool_)
    return isinstance(v, TileV) and v.dtype is dt.bool_


def _emit(op) -> TileV:
    return current().emit_value(op)


# -- binary arithmetic (R-MATH-1..6, R-DIV-*, R-PROMO-5) ---------------------------------------
def binary(fn: str, x, y, *, rounding_mode=None, flush_to_zero=False, propagate_nan=False,
           fusible: bool = True) -> FVal:
    """Type and emit ``fn(x, y)``: loose constants fold, otherwise promote and broadcast."""
    x, y = coerce.operand(x, "Left-hand side"), coerce.operand(y, "Right-hand side")
    if fn == "mod" and _is_bool(x) and _is_bool(y):
        raise TileTypeError("Modulo operation does not support bool")
    if _is_loose(x) and _is_loose(y):
        return Const(_fold(fn, x.value, y.value))
    if fn == "pow":
        return _pow(x, y)
    dtype = coerce.common_dtype(x, y, check_range=fn != "truediv")
    if fn == "truediv" and not dtype.is_float:
        dtype = dt.float32                      # R-PROMO-5
    if dtype.is_bool:
        raise TileTypeError(
            f"Binary arithmetic op `{fn}` does not support bool, please cast bool to int")
    if fn == "cdiv" and dtype.is_float:
        raise TileTypeError("cdiv() is only supported for integers (cutile, R-DIV-4)")
    if fn == "atan2" and not dtype.is_float:
        raise TileTypeError("atan2() is not supported for integer operands; convert to float")
    rounding = coerce.rounding_mode(rounding_mode, fn, dtype)
    ftz = coerce.flush_to_zero(flush_to_zero, fn, dtype)
    nan = coerce.const_bool(coerce.fval(propagate_nan), "propagate_nan")
    if isinstance(x, Const) and isinstance(y, Const):
        return _fold_strict(fn, x, y, dtype)
    tx, ty = coerce.operands(x, y, dtype=dtype)
    return _emit(ops.Binary(
        fn, tx.value, ty.value, rounding, ftz, nan,
        fusible=fusible and rounding is None and not ftz and fn in ("add", "sub", "mul")))


_POWI_EXPONENTS = (dt.int8, dt.int16, dt.int32, dt.uint8, dt.uint16)


def _pow(x: FVal, y: FVal) -> FVal:
    """R-MATH-5: a float base with an int32-range integer exponent keeps the base dtype."""
    dx, dy = coerce.value_dtype(x), coerce.value_dtype(y)
    powi = dx.is_float and dy in _POWI_EXPONENTS
    dtype = dx if powi else coerce.common_dtype(x, y)
    if dtype.is_bool:
        raise TileTypeError("Binary arithmetic op `pow` does not support bool, "
                            "please cast bool to int")
    if not dtype.is_float:
        raise TileTypeError("pow() is not supported for integer operands (cutile, R-MATH-5); "
                            "convert to float")
    if isinstance(x, Const) and isinstance(y, Const):
        return Const(dt.convert_constant(
            _fold("pow", dt.convert_constant(x.value, dtype),
                  int(y.value) if powi else dt.convert_constant(y.value, dtype)), dtype), dtype)
    if powi and dtype in (dt.float16, dt.bfloat16):
        # The exponent must stay exact (bf16 cannot hold 257): evaluate in float32, whose
        # result the executor rounds once more into the base dtype (R-MATH-10).
        tx, ty = coerce.operands(x, y, dtype=dt.float32)
        return coerce.convert(_emit(ops.Binary("pow", tx.value, ty.value)), dtype)
    tx, ty = coerce.operands(x, y, dtype=dtype)
    return _emit(ops.Binary("pow", tx.value, ty.value))


@tile_op
def add(x: Tile | int | float, y: Tile | int | float, /, *,
        rounding_mode: RoundingMode | None = None, flush_to_zero: bool = False) -> Tile:
    """Elementwise ``x + y`` with broadcasting and promotion (R-MATH-1)."""
    return binary("add", x, y, rounding_mode=rounding_mode, flush_to_zero=flush_to_zero)


@tile_op
def sub(x: Tile | int | float, y: Tile | int | float, /, *,
        rounding_mode: RoundingMode | None = None, flush_to_zero: bool = False) -> Tile:
    """Elementwise ``x - y``."""
    return binary("sub", x, y, rounding_mode=rounding_mode, flush_to_zero=flush_to_zero)


@tile_op
def mul(x: Tile | int | float, y: Tile | int | float, /, *,
        rounding_mode: RoundingMode | None = None, flush_to_zero: bool = False) -> Tile:
    """Elementwise ``x * y``."""
    return binary("mul", x, y, rounding_mode=rounding_mode, flush_to_zero=flush_to_zero)


@tile_op
def truediv(x: Tile | int | float, y: Tile | int | float, /, *,
            rounding_mode: RoundingMode | None = None, flush_to_zero: bool = False) -> Tile:
    """Elementwise true division; the result is always a float (R-PROMO-5)."""
    return binary("truediv", x, y, rounding_mode=rounding_mode, flush_to_zero=flush_to_zero)


@tile_op
def floordiv(x: Tile | int | float, y: Tile | int | float, /) -> Tile:
    """Elementwise ``x // y``, rounding toward -inf (R-DIV-1/2)."""
    return binary("floordiv", x, y)


@tile_op
def mod(x: Tile | int | float, y: Tile | int | float, /) -> Tile:
    """Elementwise ``x % y`` with the sign of the divisor (R-DIV-3)."""
    return binary("mod", x, y)


def _host_cdiv(x, y):
    return (x - 1) // y + 1


@tile_op(host=_host_cdiv)
def cdiv(x: int, y: int, /) -> int:
    """Ceiling division (R-DIV-4).  On the host: ``(x - 1) // y + 1``."""
    return binary("cdiv", x, y)


@tile_op(name="divmod")
def divmod(x: Tile | int | float, y: Tile | int | float, /) -> tuple[Tile, Tile]:
    """``(x // y, x % y)`` on integers (R-DIV-5); also the builtin ``divmod`` in tile code."""
    x, y = coerce.operand(x, "Left-hand side"), coerce.operand(y, "Right-hand side")
    if _is_bool(x) and _is_bool(y):
        raise TileTypeError("divmod() operation does not support bool")
    if not (_is_loose(x) and _is_loose(y)):
        d = coerce.common_dtype(x, y)
        if d.is_float:
            raise TileTypeError("divmod() is not implemented for floating point values")
    return TupleV((binary("floordiv", x, y), binary("mod", x, y)))


@tile_op
def pow(x: Tile | int | float, y: Tile | int | float, /) -> Tile:
    """Elementwise power (R-MATH-5)."""
    return binary("pow", x, y)


@tile_op
def atan2(x: Tile | int | float, y: Tile | int | float, /) -> Tile:
    """Elementwise ``atan2(x, y)`` on floats."""
    return binary("atan2", x, y)


@tile_op
def minimum(x: Tile | int | float, y: Tile | int | float, /, *, flush_to_zero: bool = False,
            propagate_nan: bool = False) -> Tile:
    """Elementwise minimum; NaN is ignored unless ``propagate_nan`` (R-MATH-6)."""
    return binary("minimum", x, y, flush_to_zero=flush_to_zero, propagate_nan=propagate_nan)


@tile_op
def maximum(x: Tile | int | float, y: Tile | int | float, /, *, flush_to_zero: bool = False,
            propagate_nan: bool = False) -> Tile:
    """Elementwise maximum; NaN is ignored unless ``propagate_nan`` (R-MATH-6)."""
    return binary("maximum", x, y, flush_to_zero=flush_to_zero, propagate_nan=propagate_nan)


# -- bitwise (R-BIT-1..5) ----------------------------------------------------------------------
def _bitwise(fn: str, x, y) -> FVal:
    x, y = coerce.operand(x, "Left-hand side", arithmetic=False), \
        coerce.operand(y, "Right-hand side", arithmetic=False)
    da, db = coerce.value_dtype(x), coerce.value_dtype(y)
    if da.is_float or db.is_float:
        raise TileTypeError("Bitwise operations require integers or booleans. Use an explicit "
                            "ct.bitcast() for non-integer operands.")
    lx, ly = _is_loose(x), _is_loose(y)
    if lx and ly:
        return Const(_fold(fn, x.value, y.value))
    if lx == ly and da is not db:
        raise TileTypeError(f"Bitwise operands must have same data type, got: {da.name} and "
                            f"{db.name}")
    if {da, db} == {dt.bool_, dt.int8}:
        raise TileTypeError("Bitwise op does not support bool and int8")
    dtype = coerce.common_dtype(x, y)
    if isinstance(x, Const) and isinstance(y, Const):
        return _fold_strict(fn, x, y, dtype)
    tx, ty = coerce.operands(x, y, dtype=dtype)
    return _emit(ops.Binary(fn, tx.value, ty.value))


@tile_op
def bitwise_and(x: Tile | int | float, y: Tile | int | float, /) -> Tile:
    """Elementwise ``x & y`` (logical and for bools)."""
    return _bitwise("and", x, y)


@tile_op
def bitwise_or(x: Tile | int | float, y: Tile | int | float, /) -> Tile:
    """Elementwise ``x | y`` (logical or for bools)."""
    return _bitwise("or", x, y)


@tile_op
def bitwise_xor(x: Tile | int | float, y: Tile | int | float, /) -> Tile:
    """Elementwise ``x ^ y``."""
    return _bitwise("xor", x, y)


def _shift(fn: str, x, y) -> FVal:
    """R-BIT-3: integer operands promoted by the table; ``>>`` arithmetic for signed dtypes."""
    x, y = coerce.operand(x, "Left-hand side", arithmetic=False), \
        coerce.operand(y, "Right-hand side", arithmetic=False)
    for v, side in ((x, "left-hand side"), (y, "right-hand side")):
        d = coerce.value_dtype(v)
        if not d.is_integral:
            raise TileTypeError(f"Bitwise shift requires an integer for {side}, got: {d.name}")
    if _is_loose(x) and _is_loose(y):
        return Const(_fold(fn, x.value, y.value))
    dtype = coerce.common_dtype(x, y)
    if isinstance(x, Const) and isinstance(y, Const):
        b = dt.convert_constant(y.value, dtype)
        if not 0 <= b < dtype.bitwidth:
            raise TileValueError(f"Shift count {b} is out of range for {dtype.name}")
        return _fold_strict(fn, x, y, dtype)
    if fn not in ir_elementwise.BINARY_FNS:
        raise TileUnsupportedFeatureError("Bitwise shifts of tiles are not supported by cutile "
                                          "yet (the IR has no shift op)")
    tx, ty = coerce.operands(x, y, dtype=dtype)
    return _emit(ops.Binary(fn, tx.value, ty.value))


@tile_op
def bitwise_lshift(x: Tile | int | float, y: Tile | int | float, /) -> Tile:
    """Elementwise ``x << y`` (R-BIT-3/4)."""
    return _shift("lshift", x, y)


@tile_op
def bitwise_rshift(x: Tile | int | float, y: Tile | int | float, /) -> Tile:
    """Elementwise ``x >> y``: arithmetic for signed, logical for unsigned dtypes (R-BIT-3)."""
    return _shift("rshift", x, y)


def logical_and(a: FVal, b: FVal) -> FVal:
    """``and`` of two conditions already converted to bool (chained comparisons)."""
    return _bitwise("and", a, b)


def logical_not(c: TileV) -> FVal:
    return _emit(ops.Unary("not", c.value))


@tile_op
def bitwise_not(x: Tile | int | float, /) -> Tile:
    """Elementwise ``~x``: complement for integers, logical not for bools (R-BIT-5)."""
    x = coerce.operand(x, "Input", arithmetic=False)
    d = coerce.value_dtype(x)
    if d.is_float:
        raise TileTypeError("Float inputs are not supported for bitwise_not")
    if isinstance(x, Const):
        if d.is_bool:
            return Const(not x.value, x.dtype)
        return Const(~int(x.value) if x.is_loose else dt.convert_constant(~int(x.value), d),
                     x.dtype)
    return _emit(ops.Unary("not", x.value))


# -- comparisons (R-CMP-1..3, R-CMP-6) ---------------------------------------------------------
def compare(fn: str, x, y) -> FVal:
    x, y = coerce.fval(x), coerce.fval(y)
    if isinstance(x, Const) and isinstance(y, Const) and not (x.is_number and y.is_number):
        if fn in ("eq", "ne") or (isinstance(x.value, str) and isinstance(y.value, str)):
            return Const(_CMP_FOLD[fn](x.value, y.value))     # strings order as in Python
        raise TileTypeError(f"Comparison {fn} is not supported for {describe(x)} and "
                            f"{describe(y)}")
    x, y = coerce.operand(x, "Left-hand side"), coerce.operand(y, "Right-hand side")
    if _is_loose(x) and _is_loose(y):
        return Const(_CMP_FOLD[fn](x.value, y.value))
    dtype = coerce.common_dtype(x, y)
    if isinstance(x, Const) and isinstance(y, Const):
        a, b = dt.convert_constant(x.value, dtype), dt.convert_constant(y.value, dtype)
        return Const(bool(_CMP_FOLD[fn](a, b)), dt.bool_)
    tx, ty = coerce.operands(x, y, dtype=dtype)
    return _emit(ops.Compare(fn, tx.value, ty.value))


def _cmp_op(fn: str, name: str,
            doc: str) -> TileOp[[Tile | int | float, Tile | int | float], Tile]:
    def f(x: Tile | int | float, y: Tile | int | float, /) -> Tile:
        return compare(fn, x, y)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc
    return tile_op(f)


equal = _cmp_op("eq", "equal", "Elementwise ``x == y`` as bool (R-CMP-1).")
not_equal = _cmp_op("ne", "not_equal", "Elementwise ``x != y`` as bool.")
less = _cmp_op("lt", "less", "Elementwise ``x < y`` as bool.")
less_equal = _cmp_op("le", "less_equal", "Elementwise ``x <= y`` as bool.")
greater = _cmp_op("gt", "greater", "Elementwise ``x > y`` as bool.")
greater_equal = _cmp_op("ge", "greater_equal", "Elementwise ``x >= y`` as bool.")


# -- unary math (R-MATH-7) ---------------------------------------------------------------------
_FLOAT_UNARY = ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tan", "sinh",
                "cosh", "tanh")
_PY_UNARY = {
    "exp": math.exp, "exp2": lambda v: 2 ** v, "log": math.log, "log2": math.log2,
    "sqrt": math.sqrt, "rsqrt": lambda v: v ** -0.5, "sin": math.sin, "cos": math.cos,
    "tan": math.tan, "sinh": math.sinh, "cosh": math.cosh, "tanh": math.tanh,
    "floor": math.floor, "ceil": math.ceil, "abs": abs, "negative": operator.neg,
    "isnan": math.isnan,
}


def _unary_dtype(fn: str, d: DType) -> DType:
    """Result dtype of a unary op on a non-loose operand of dtype ``d`` (R-MATH-7)."""
    if d.is_restricted:
        raise TileTypeError(f"Input has non-arithmetic dtype {d.name}")
    if fn in _FLOAT_UNARY:
        return d if d.is_float else dt.float32
    if fn in ("floor", "ceil"):
        if d.is_bool:
            raise TileTypeError("Boolean inputs are not supported")
        if d.is_integral:
            raise TileTypeError("Integer inputs are not supported")
        return d
    if fn == "isnan":
        if not d.is_float:
            raise TileTypeError(f"Unexpected input type {d.name} for isnan")
        return dt.bool_
    if fn == "negative":
        return dt.int32 if d.is_bool else d
    return d  # abs


def _fold_unary(fn: str, v):
    try:
        r = _PY_UNARY[fn](v)
    except (ValueError, ZeroDivisionError, OverflowError) as e:
        raise TileValueError(f"Invalid constant argument for {fn}: {e}") from None
    if isinstance(r, complex):
        raise TileValueError(f"Constant expression {fn}({v!r}) has a complex result")
    return r


def unary(fn: str, x, *, rounding_mode=None, flush_to_zero=False) -> FVal:
    x = coerce.operand(x, "Input", arithmetic=False)
    if _is_loose(x):
        return Const(_fold_unary(fn, x.value))          # Python's math (R-MATH-7)
    d = coerce.value_dtype(x)
    out = _unary_dtype(fn, d)
    work = d if fn == "isnan" else out                  # the dtype the op computes in
    rounding = coerce.rounding_mode(rounding_mode, fn, work)
    ftz = coerce.flush_to_zero(flush_to_zero, fn, work)
    if isinstance(x, Const):
        v = dt.convert_constant(x.value, work)
        return Const(dt.convert_constant(_fold_unary(fn, v), out), out)
    t = coerce.convert(x, work)
    return _emit(ops.Unary(fn, t.value, rounding, ftz))


def _unary_op(fn: str, extras: str | None, doc: str) -> TileOp[..., Tile]:
    if extras == "rounding":
        def f(x: Tile | int | float, /, *, rounding_mode: RoundingMode | None = None) -> Tile:
            return unary(fn, x, rounding_mode=rounding_mode)
    elif extras == "ftz":
        def f(x: Tile | int | float, /, *, flush_to_zero: bool = False) -> Tile:
            return unary(fn, x, flush_to_zero=flush_to_zero)
    elif extras == "both":
        def f(x: Tile | int | float, /, *, rounding_mode: RoundingMode | None = None,
              flush_to_zero: bool = False) -> Tile:
            return unary(fn, x, rounding_mode=rounding_mode, flush_to_zero=flush_to_zero)
    else:
        def f(x: Tile | int | float, /) -> Tile:
            return unary(fn, x)
    f.__name__ = f.__qualname__ = fn
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
def negative(x: Tile | int | float, /) -> Tile:
    """Elementwise ``-x``; bool becomes int32 (R-MATH-7)."""
    return unary("negative", x)


@tile_op(name="abs")
def abs(x: Tile | int | float, /) -> Tile:
    """Elementwise absolute value, keeping the dtype (integer minimum wraps)."""
    return unary("abs", x)


# -- selection and conversion ------------------------------------------------------------------
@tile_op
def where(cond: Tile | int | float, x: Tile | int | float, y: Tile | int | float, /) -> Tile:
    """``x`` where ``cond`` else ``y``, broadcasting all three (R-SEL-1)."""
    cond = coerce.operand(cond, "Condition", arithmetic=False)
    x = coerce.operand(x, "Left-hand side", arithmetic=False, pointer=True)
    y = coerce.operand(y, "Right-hand side", arithmetic=False, pointer=True)
    if _is_loose(x) and _is_loose(y):
        # Two loose constants promote by their concrete dtypes (R-CONST-7, R-PROMO-3).
        dtype = coerce.promote_dtypes(coerce.value_dtype(x), coerce.value_dtype(y))
    else:
        dtype = coerce.common_dtype(x, y)
    c = astype_value(cond, dt.bool_)
    shape = coerce.broadcast_shapes(coerce.value_shape(c), coerce.value_shape(x),
                                    coerce.value_shape(y))
    tc = coerce.broadcast(coerce.to_tile(c), shape)
    tx, ty = (coerce.broadcast(coerce.to_tile(v, dtype), shape) for v in (x, y))
    return _emit(ops.Select(tc.value, tx.value, ty.value))


def require_dtype(d, what: str = "dtype") -> DType:
    v = coerce.fval(d)
    dtype = dt.normalize_dtype(v.value) if isinstance(v, Const) else None
    if dtype is None:
        raise TileTypeError(f"Expected a dtype constant for {what}, got {describe(v)}")
    if dtype.is_foreign_pointer:
        raise TileTypeError(f"{dtype.name} is not a numeric dtype and cannot be used for {what} "
                            f"(foreign pointers come only from Array.foreign_pointer)")
    return dtype


def astype_value(x: FVal, dtype: DType, rounding_mode=None) -> FVal:
    """``astype`` on a frontend value (also used by dtype calls and factories)."""
    x = coerce.operand(x, "Input", arithmetic=False)
    src = coerce.value_dtype(x)
    rounding = coerce.astype_rounding(src, dtype, rounding_mode)
    if isinstance(x, Const) and rounding is None:
        if src is dtype and not x.is_loose:
            return x
        return Const(dt.convert_constant(x.value, dtype), dtype)      # R-ASTYPE-3
    t = coerce.to_tile(x)
    if t.dtype is dtype:
        return t
    return _emit(ops.Convert(t.value, dtype, rounding))


@tile_op
def astype(x: Tile | int | float, dtype: DType, /, *,
           rounding_mode: RoundingMode | None = None) -> Tile:
    """Convert elementwise to ``dtype`` (R-ASTYPE-1/2)."""
    return astype_value(x, require_dtype(dtype), rounding_mode)

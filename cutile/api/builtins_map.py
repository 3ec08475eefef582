"""Python builtins usable in tile code (R-PY-9): range, len, min, max, abs, int/float/bool, ..."""

from __future__ import annotations

import builtins
import math
import operator

from ..errors import TileTypeError
from ..frontend import coerce
from ..frontend.values import ArrayV, Const, FVal, ListV, RangeV, TileV, TupleV, describe


def _range(comp, args, kwargs, env):
    if kwargs or not 1 <= len(args) <= 3:
        raise TileTypeError("range expected 1 to 3 arguments")
    vals = list(args)
    for v in vals:
        if isinstance(v, TileV) and v.shape != () or isinstance(v, (ArrayV, TupleV)):
            raise TileTypeError(f"Expected a scalar for range bound, got {describe(v)}")
        d = coerce.value_dtype(v)
        if not d.is_signed:
            raise TileTypeError(f"Expected a signed integer for range bound, got {d.name}")
    if len(vals) == 1:
        start, stop, step = Const(0), vals[0], Const(1)
    elif len(vals) == 2:
        start, stop, step = vals[0], vals[1], Const(1)
    else:
        start, stop, step = vals
    if isinstance(step, Const) and step.value <= 0:
        raise TileTypeError(f"Step must be positive, got {step.value}")
    # All three bounds share one integer dtype (R-CF-4: the induction variable is int32
    # unless a bound is wider).
    dtype = coerce.value_dtype(start)
    for v in (stop, step):
        d = coerce.value_dtype(v)
        if d.bitwidth > dtype.bitwidth:
            dtype = d
    from ..dtypes import int32
    if dtype.bitwidth < 32:
        dtype = int32
    return RangeV(*(coerce.to_tile(v, dtype) for v in (start, stop, step)))


def _len(comp, args, kwargs, env):
    if len(args) != 1 or kwargs:
        raise TileTypeError("len() takes exactly one argument")
    v = args[0]
    if isinstance(v, ListV):                     # R-PY-4: an int32, fixed per specialisation
        from ..dtypes import int32
        return Const(len(v.items), int32)
    if isinstance(v, TupleV) or (isinstance(v, Const) and isinstance(v.value, (tuple, str))):
        return Const(len(coerce.tuple_items(v, "len") if not isinstance(v.value if isinstance(
            v, Const) else None, str) else v.value))
    from ..frontend import dataclass_ops
    r = dataclass_ops.length(comp, v)                 # __len__ of a dataclass (1.7)
    if r is not None:
        return r
    raise TileTypeError(f"len() is not supported for {describe(v)}")


def _minmax(name):
    def f(comp, args, kwargs, env):
        if len(args) != 2 or kwargs:
            raise TileTypeError(f"{name}() in tile code takes exactly two arguments")
        from .elementwise import binary
        return binary("minimum" if name == "min" else "maximum", args[0], args[1])
    return f


def _abs(comp, args, kwargs, env):
    from .elementwise import unary
    if len(args) != 1 or kwargs:
        raise TileTypeError("abs() takes exactly one argument")
    return unary("abs", args[0])


def _conv(pytype):
    def f(comp, args, kwargs, env):
        if len(args) != 1 or kwargs:
            raise TileTypeError(f"{pytype.__name__}() takes exactly one argument")
        v = args[0]
        if not (isinstance(v, Const) and (v.is_number or isinstance(v.value, str))):
            raise TileTypeError(f"{pytype.__name__}() expects a constant argument")
        try:
            return Const(pytype(v.value))        # float("inf") is a common idiom
        except ValueError as e:
            from ..errors import TileValueError
            raise TileValueError(f"{pytype.__name__}(): {e}") from None
    return f


def _tuple(comp, args, kwargs, env):
    if len(args) != 1 or kwargs:
        raise TileTypeError("tuple() takes exactly one argument")
    return TupleV(coerce.tuple_items(args[0], "tuple()"))


def _str(comp, args, kwargs, env):
    v = args[0]
    if not isinstance(v, Const):
        raise TileTypeError("str() expects a constant argument")
    return Const(str(v.value))


def _print(comp, args, kwargs, env):
    from .debug import builtin_print
    return builtin_print(comp, args, kwargs, env)


def _operator(fn):
    def f(comp, args, kwargs, env):
        if len(args) != 2 or kwargs:
            raise TileTypeError(f"operator.{fn}() takes two arguments")
        from .elementwise import apply_operator
        return apply_operator(fn, args[0], args[1])
    return f


def _divmod(comp, args, kwargs, env):
    if len(args) != 2 or kwargs:
        raise TileTypeError("divmod() takes exactly two arguments")
    from ..frontend import dataclass_ops
    r = dataclass_ops.binop(comp, "divmod", args[0], args[1])   # __divmod__ (1.7)
    if r is not None:
        return r
    from .elementwise import divmod as ct_divmod
    return ct_divmod.impl(args[0], args[1])


def _unary_operator(name, args, kwargs):
    if len(args) != 1 or kwargs:
        raise TileTypeError("operator takes one argument")
    from .elementwise import apply_unary
    return apply_unary(name, args[0])


def _compare(name):
    def f(comp, args, kwargs, env):
        if len(args) != 2 or kwargs:
            raise TileTypeError("comparison operator takes two arguments")
        from .elementwise import apply_compare
        return apply_compare(name, args[0], args[1])
    return f


def _isnan_math(comp, args, kwargs, env):
    raise TileTypeError("math functions are not supported in tile code; use ct.isnan etc.")


BUILTINS: dict[int, object] = {
    id(builtins.range): _range, id(builtins.len): _len, id(builtins.min): _minmax("min"),
    id(builtins.max): _minmax("max"), id(builtins.abs): _abs, id(builtins.int): _conv(int),
    id(builtins.float): _conv(float), id(builtins.bool): _conv(bool),
    id(builtins.tuple): _tuple, id(builtins.divmod): _divmod, id(builtins.str): _str,
    id(builtins.print): _print,
    id(operator.add): _operator("Add"), id(operator.sub): _operator("Sub"),
    id(operator.mul): _operator("Mult"), id(operator.truediv): _operator("Div"),
    id(operator.floordiv): _operator("FloorDiv"), id(operator.mod): _operator("Mod"),
    id(operator.and_): _operator("BitAnd"), id(operator.or_): _operator("BitOr"),
    id(operator.xor): _operator("BitXor"), id(operator.pow): _operator("Pow"),
}
from ..frontend.debugger import HANDLERS as _DEBUGGER  # noqa: E402

BUILTINS.update(_DEBUGGER)
_ = (math, FVal)

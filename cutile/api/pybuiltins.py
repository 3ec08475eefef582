"""Python builtins usable in tile code (R-PY-9): range, len, min, max, abs, int/float/bool,
tuple, str, repr, divmod and print, registered under the builtin they implement.  What a builtin
does through a dataclass's dunders (``len`` via ``__len__``, ``divmod`` via ``__divmod__``)
needs the walker to inline the method: the walker tries that first (frontend/calls.py)."""

from __future__ import annotations

import builtins

from .. import dtypes as dt
from ..errors import TileTypeError, TileValueError
from ..lang import coerce
from ..lang.registry import register
from ..lang.strings import make_string, str_parts
from ..lang.values import ArrayV, Const, ListV, RangeV, TileV, TupleV, describe
from . import debug, elementwise


def _range(args, kwargs):
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
    if dtype.bitwidth < 32:
        dtype = dt.int32
    return RangeV(*(coerce.to_tile(v, dtype) for v in (start, stop, step)))


def _len(args, kwargs):
    if len(args) != 1 or kwargs:
        raise TileTypeError("len() takes exactly one argument")
    v = args[0]
    if isinstance(v, ListV):                     # R-PY-4: an int32, fixed per specialisation
        return Const(len(v.items), dt.int32)
    if isinstance(v, TupleV) or (isinstance(v, Const) and isinstance(v.value, (tuple, str))):
        return Const(len(coerce.tuple_items(v, "len") if not isinstance(v.value if isinstance(
            v, Const) else None, str) else v.value))
    raise TileTypeError(f"len() is not supported for {describe(v)}")


def _minmax(name):
    def f(args, kwargs):
        if len(args) != 2 or kwargs:
            raise TileTypeError(f"{name}() in tile code takes exactly two arguments")
        return elementwise.binary("minimum" if name == "min" else "maximum", args[0], args[1])
    return f


def _abs(args, kwargs):
    if len(args) != 1 or kwargs:
        raise TileTypeError("abs() takes exactly one argument")
    return elementwise.unary("abs", args[0])


def _conv(pytype):
    def f(args, kwargs):
        if len(args) != 1 or kwargs:
            raise TileTypeError(f"{pytype.__name__}() takes exactly one argument")
        v = args[0]
        if not (isinstance(v, Const) and (v.is_number or isinstance(v.value, str))):
            raise TileTypeError(f"{pytype.__name__}() expects a constant argument")
        try:
            return Const(pytype(v.value))        # float("inf") is a common idiom
        except ValueError as e:
            raise TileValueError(f"{pytype.__name__}(): {e}") from None
    return f


def _tuple(args, kwargs):
    if len(args) != 1 or kwargs:
        raise TileTypeError("tuple() takes exactly one argument")
    return TupleV(coerce.tuple_items(args[0], "tuple()"))


def _str(args, kwargs):
    v = args[0]
    if not isinstance(v, Const):
        raise TileTypeError("str() expects a constant argument")
    return Const(str(v.value))


def _repr(args, kwargs):
    """``repr(v)`` (1.7): Python's for a constant, else the text ``print`` gives ``v`` inside a
    tuple (a formatted string when ``v`` holds tiles)."""
    if len(args) != 1 or kwargs:
        raise TileTypeError("repr() takes exactly one argument")
    v = args[0]
    if isinstance(v, Const):
        return Const(repr(v.value))
    return make_string(str_parts(v, nested=True))


def _divmod(args, kwargs):
    if len(args) != 2 or kwargs:
        raise TileTypeError("divmod() takes exactly two arguments")
    return elementwise.divmod.impl(args[0], args[1])


for _fn, _handler in ((builtins.range, _range), (builtins.len, _len),
                      (builtins.min, _minmax("min")), (builtins.max, _minmax("max")),
                      (builtins.abs, _abs), (builtins.int, _conv(int)),
                      (builtins.float, _conv(float)), (builtins.bool, _conv(bool)),
                      (builtins.tuple, _tuple), (builtins.divmod, _divmod),
                      (builtins.str, _str), (builtins.repr, _repr),
                      (builtins.print, debug.print.invoke)):  # the builtin is ct.print (R-PRINT-3)
    register(_fn, _handler)

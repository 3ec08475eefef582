"""Python's operators on tile-code values (R-PY-3, R-CMP-6): what ``a + b``, ``a < b``,
``-a``, ``not a``, ``a in t`` and ``a[i]`` mean, registered under the ``operator`` function
each one calls (``operator.add``, ``operator.lt``, ...).  The walker looks the operator of a
syntax node up in the registry (``lang.registry.BINARY_OPERATORS``); a call of
``operator.add(a, b)`` in tile code finds the same entry.
"""

from __future__ import annotations

import operator
from collections.abc import Callable

from .. import dtypes as dt
from ..errors import TileTypeError
from ..lang import coerce
from ..lang.registry import register
from ..lang.strings import concat, is_string
from ..lang.values import Const, FVal, TupleV
from . import elementwise as ew
from .matmul import matmul
from .methods import subscript
from .tuples import compare_tuples, contains, is_tuple

# operator function -> (the name its messages use, implementation on two values)
_ARITHMETIC: dict[Callable, tuple[str, Callable[[FVal, FVal], FVal]]] = {
    operator.add: ("Add", lambda a, b: ew.binary("add", a, b)),
    operator.sub: ("Sub", lambda a, b: ew.binary("sub", a, b)),
    operator.mul: ("Mult", lambda a, b: ew.binary("mul", a, b)),
    operator.truediv: ("Div", lambda a, b: ew.binary("truediv", a, b)),
    operator.floordiv: ("FloorDiv", lambda a, b: ew.binary("floordiv", a, b)),
    operator.mod: ("Mod", lambda a, b: ew.binary("mod", a, b)),
    operator.pow: ("Pow", lambda a, b: ew.binary("pow", a, b)),
    operator.and_: ("BitAnd", ew.bitwise_and.impl),
    operator.or_: ("BitOr", ew.bitwise_or.impl),
    operator.xor: ("BitXor", ew.bitwise_xor.impl),
    operator.lshift: ("LShift", ew.bitwise_lshift.impl),
    operator.rshift: ("RShift", ew.bitwise_rshift.impl),
    operator.matmul: ("MatMult", matmul.impl),
}
_COMPARISONS = {operator.eq: "eq", operator.ne: "ne", operator.lt: "lt", operator.le: "le",
                operator.gt: "gt", operator.ge: "ge"}


def _binary(fn: Callable, name: str, impl: Callable[[FVal, FVal], FVal]):
    def handler(args, kwargs) -> FVal:
        if len(args) != 2 or kwargs:
            raise TileTypeError(f"operator.{name}() takes two arguments")
        left, right = args
        if fn is operator.add and is_string(left) and is_string(right):
            return concat(left, right)        # constant or formatted strings
        if isinstance(left, TupleV) or isinstance(right, TupleV):
            if fn is operator.add and isinstance(left, TupleV) and isinstance(right, TupleV):
                return TupleV(left.items + right.items)
            raise TileTypeError("Operator is not supported for tuples")
        return impl(left, right)
    return handler


def _comparison(fn: str):
    def handler(args, kwargs) -> FVal:
        if len(args) != 2 or kwargs:
            raise TileTypeError("comparison operator takes two arguments")
        left, right = args
        if is_tuple(left) or is_tuple(right):
            return compare_tuples(fn, left, right)
        return ew.compare(fn, left, right)
    return handler


def _identity(negate: bool):
    def handler(args, kwargs) -> FVal:
        if len(args) != 2 or kwargs:
            raise TileTypeError("comparison operator takes two arguments")
        left, right = args
        if not ((isinstance(left, Const) and left.value is None)
                or (isinstance(right, Const) and right.value is None)):
            raise TileTypeError("'is' expects one of the operands to be None")
        same = isinstance(left, Const) and isinstance(right, Const) and left.value is right.value
        return Const(same != negate)
    return handler


def _one(args, kwargs) -> FVal:
    if len(args) != 1 or kwargs:
        raise TileTypeError("operator takes one argument")
    return args[0]


def _neg(args, kwargs) -> FVal:
    return ew.unary("negative", _one(args, kwargs))


def _pos(args, kwargs) -> FVal:
    v = coerce.operand(_one(args, kwargs), "Input", arithmetic=False)
    if isinstance(v, Const):
        if v.dtype is dt.bool_:
            return Const(int(v.value), dt.int32)
        return Const(+v.value if not isinstance(v.value, bool) else int(v.value), v.dtype)
    return coerce.convert(v, dt.int32) if v.dtype.is_bool else v


def _invert(args, kwargs) -> FVal:
    v = _one(args, kwargs)
    if isinstance(v, Const) and isinstance(v.value, bool) and v.dtype is None:
        raise TileTypeError("'~' on boolean constant is not supported; use 'not' or "
                            "ct.bitwise_not")
    return ew.bitwise_not.impl(v)


def _not(args, kwargs) -> FVal:
    """``not v``: the condition of ``v`` (R-CF-2) negated; constants fold."""
    c = coerce.condition(_one(args, kwargs))
    return Const(not c.value) if isinstance(c, Const) else ew.logical_not(c)


def _contains(args, kwargs) -> FVal:
    """``operator.contains(container, item)``: ``item in container`` (R-CMP-6)."""
    if len(args) != 2 or kwargs:
        raise TileTypeError("comparison operator takes two arguments")
    return contains(args[1], args[0])


def _getitem(args, kwargs) -> FVal:
    if len(args) != 2 or kwargs:
        raise TileTypeError("operator.getitem() takes two arguments")
    return subscript(args[0], args[1])


for _fn, (_name, _impl) in _ARITHMETIC.items():
    register(_fn, _binary(_fn, _name, _impl))
for _fn, _cmp in _COMPARISONS.items():
    register(_fn, _comparison(_cmp))
register(operator.is_, _identity(negate=False))
register(operator.is_not, _identity(negate=True))
register(operator.contains, _contains)
register(operator.neg, _neg)
register(operator.pos, _pos)
register(operator.invert, _invert)
register(operator.not_, _not)
register(operator.getitem, _getitem)

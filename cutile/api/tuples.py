"""Compile-time tuple comparisons and membership (R-CMP-6)."""

from __future__ import annotations

from ..errors import TileTypeError
from ..lang import coerce
from ..lang.values import Const, FVal, TileV, TupleV, describe
from .elementwise import bitwise_or, compare, logical_and, logical_not


def is_tuple(v: FVal) -> bool:
    return isinstance(v, TupleV) or (isinstance(v, Const) and isinstance(v.value, tuple))


def _items(v: FVal):
    return coerce.tuple_items(v, "tuple")


def compare_tuples(fn: str, a: FVal, b: FVal) -> FVal:
    if fn not in ("eq", "ne"):
        raise TileTypeError(f"Comparison {fn} is not supported for tuples")
    if not (is_tuple(a) and is_tuple(b)):
        return Const(fn == "ne")
    ia, ib = _items(a), _items(b)
    if len(ia) != len(ib):
        return Const(fn == "ne")
    result: FVal = Const(True)
    for x, y in zip(ia, ib):
        for v in (x, y):
            if isinstance(v, TileV) and v.shape != ():
                raise TileTypeError("Tuple comparison is not supported for non-scalar elements")
            if not isinstance(v, (Const, TileV, TupleV)):
                raise TileTypeError(f"Tuple comparison is not supported for elements of type "
                                    f"{describe(v)}")
        r = compare_tuples("eq", x, y) if is_tuple(x) else compare("eq", x, y)
        result = r if (isinstance(result, Const) and result.value is True) else \
            logical_and(result, r)
    if fn == "ne":
        if isinstance(result, Const):
            return Const(not result.value)
        return logical_not(result)
    return result


def contains(item: FVal, container: FVal) -> FVal:
    """``item in container`` (R-CMP-6): ``==`` against each element, or-ed; constants fold.

    Elements and item must be scalars (constants of any kind or 0-D tiles) or tuples of them,
    compared as tuples are (a tuple never equals a scalar); a runtime scalar gives a runtime
    bool.
    """
    if not is_tuple(container):
        raise TileTypeError("'in' requires a tuple on the right-hand side")
    result: FVal = Const(False)
    for c in _items(container):
        if is_tuple(c) or is_tuple(item):
            r = compare_tuples("eq", item, c)
        else:
            for v in (item, c):
                if not isinstance(v, Const) and not (isinstance(v, TileV) and v.shape == ()):
                    raise TileTypeError("'in' requires scalar operands")
            r = compare("eq", item, c)
        if isinstance(r, Const):
            if r.value:
                return Const(True)
            continue
        result = r if isinstance(result, Const) else bitwise_or.impl(result, r)
    return result

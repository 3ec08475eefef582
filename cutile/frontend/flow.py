"""Merging frontend values where control flow joins (R-CF-7, R-PROMO-7).

A value is flattened into a *skeleton* (its compile-time structure: constants, tuple shape,
view parameters) and *leaves* (the runtime IR values).  Two paths merge when their skeletons
agree and their leaves have equal types; differing loose numeric constants become runtime
values; anything else makes the variable invalid ("depends on path taken").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import dtypes as dt
from ..ir.core import Value
from .values import ArrayV, Const, DataclassV, FuncV, FVal, Invalid, TileV, TupleV, ViewV


@dataclass(frozen=True)
class Leaf:
    """Placeholder for a runtime value in a skeleton; holds the value's IR type."""

    type: Any
    static_shape: tuple | None = None     # for arrays


def flatten(v: FVal) -> tuple[Any, list[Value]]:
    """Split ``v`` into (skeleton, runtime leaves)."""
    leaves: list[Value] = []

    def go(x):
        if isinstance(x, TileV):
            leaves.append(x.value)
            return Leaf(x.value.type)
        if isinstance(x, ArrayV):
            leaves.append(x.value)
            return Leaf(x.value.type, x.static_shape)
        if isinstance(x, TupleV):
            return ("tuple", tuple(go(i) for i in x.items))
        if isinstance(x, DataclassV):     # R-PY-10: instances carried through loops/branches
            return ("dataclass", x.cls, tuple(x.fields), tuple(go(i) for i in x.fields.values()))
        if isinstance(x, ViewV):
            return ("view", go(x.array), x.tile_shape, x.padding, x.steps)
        if isinstance(x, Const):
            return ("const", type(x.value), _const_key(x.value), x.dtype)
        if isinstance(x, FuncV):
            return ("func", id(x))
        if isinstance(x, Invalid):
            return ("invalid", x.name)
        return ("other", id(x))

    return go(v), leaves


def _const_key(value):
    if isinstance(value, float) and value != value:
        return "nan"
    try:
        hash(value)
        return value
    except TypeError:
        return id(value)


def unflatten(skel: Any, leaves: list[Value], template: FVal) -> FVal:
    """Rebuild a value with ``skel``'s structure from ``leaves``; ``template`` supplies the
    compile-time parts (constants, functions)."""
    it = iter(leaves)

    def go(s, t):
        if isinstance(s, Leaf):
            v = next(it)
            if isinstance(t, ArrayV):
                return ArrayV(v, t.static_shape)
            return TileV(v)
        kind = s[0]
        if kind == "tuple":
            return type(t)(tuple(go(si, ti) for si, ti in zip(s[1], t.items)))
        if kind == "dataclass":
            return DataclassV(t.cls, {n: go(si, ti) for n, si, ti in
                                      zip(s[2], s[3], t.fields.values())})
        if kind == "view":
            return ViewV(go(s[1], t.array), t.tile_shape, t.padding, t.steps)
        return t

    return go(skel, template)


def materializable(v: FVal) -> bool:
    """A loose or strict numeric constant can become a runtime value where paths join."""
    return isinstance(v, Const) and v.is_number


def materialized_dtype(a: Const, b: Const) -> dt.DType | None:
    """The dtype two differing numeric constants take when they merge, or None if they
    cannot (R-CONST-7: loose values materialise by their own concrete dtype)."""
    da = a.dtype or dt.loose_dtype(a.value)
    db = b.dtype or dt.loose_dtype(b.value)
    return da if da is db else None


def same_skeleton(a: Any, b: Any) -> bool:
    if isinstance(a, Leaf) and isinstance(b, Leaf):
        return a.type == b.type
    return a == b

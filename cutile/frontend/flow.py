"""Merging frontend values where control flow joins (R-CF-7, R-PROMO-7).

A value is flattened into a *skeleton* (its compile-time structure: constants, tuple shape,
view parameters) and *leaves* (the runtime IR values).  Two paths merge when their skeletons
agree and their leaves have equal types; differing loose numeric constants become runtime
values; anything else makes the variable invalid ("depends on path taken").
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from .. import dtypes as dt
from ..ir.core import Value
from ..lang import coerce
from ..lang.values import ArrayV, Const, DataclassV, FuncV, FVal, Invalid, TileV, TupleV, ViewV
from .source import all_args


@dataclass(frozen=True)
class Leaf:
    """Placeholder for a runtime value in a skeleton; holds the value's IR type."""

    type: Any
    static_shape: tuple | None = None     # for arrays
    static_strides: tuple = ()


def flatten(v: FVal) -> tuple[Any, list[Value]]:
    """Split ``v`` into (skeleton, runtime leaves)."""
    leaves: list[Value] = []

    def go(x):
        if isinstance(x, TileV):
            leaves.append(x.value)
            return Leaf(x.value.type)
        if isinstance(x, ArrayV):
            leaves.append(x.value)
            return Leaf(x.value.type, x.static_shape, x.static_strides)
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
                return ArrayV(v, t.static_shape, t.static_strides)
            return TileV(v)
        kind = s[0]
        if kind == "tuple":
            return type(t)(tuple(go(si, ti) for si, ti in zip(s[1], t.items)))
        if kind == "dataclass":
            return DataclassV(t.cls, {n: go(si, ti) for n, si, ti in
                                      zip(s[2], s[3], t.fields.values())})
        if kind == "view":
            return ViewV(go(s[1], t.array), t.tile_shape, t.padding, t.steps)
        if kind == "closure":
            names, dnames = s[2], s[3]
            items = [t.closure[n] for n in names] + [t.defaults[d] for d in dnames]
            return _closure(t, names, dnames, [go(si, ti) for si, ti in zip(s[4], items)])
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


def same_skeleton(a, b) -> bool:
    """Whether two skeletons have the same structure and runtime leaf types (what a loop carry
    or a branch merge needs)."""
    if isinstance(a, Leaf) or isinstance(b, Leaf):
        return isinstance(a, Leaf) and isinstance(b, Leaf) and a.type == b.type
    if isinstance(a, tuple) and isinstance(b, tuple) and a and b and a[0] == b[0]:
        if a[0] == "tuple":
            return len(a[1]) == len(b[1]) and all(same_skeleton(x, y) for x, y in zip(a[1], b[1]))
        if a[0] == "view":
            return same_skeleton(a[1], b[1]) and a[2:] == b[2:]
        if a[0] == "dataclass":
            return a[1:3] == b[1:3] and all(same_skeleton(x, y) for x, y in zip(a[3], b[3]))
        if a[0] == "closure":
            return a[1:4] == b[1:4] and all(same_skeleton(x, y) for x, y in zip(a[4], b[4]))
    return a == b


def leaf_types(skel) -> list:
    """The IR types of a skeleton's runtime leaves, in ``flatten`` order."""
    out = []

    def go(s):
        if isinstance(s, Leaf):
            out.append(s.type)
        elif isinstance(s, tuple) and s and s[0] == "tuple":
            for i in s[1]:
                go(i)
        elif isinstance(s, tuple) and s and s[0] == "view":
            go(s[1])
        elif isinstance(s, tuple) and s and s[0] == "dataclass":
            for i in s[3]:
                go(i)
        elif isinstance(s, tuple) and s and s[0] == "closure":
            for i in s[4]:
                go(i)

    go(skel)
    return out


def plain_data(skel) -> bool:
    """A skeleton of tiles, constants and tuples of them only (what a promoted variable may
    hold: functions and other compile-time objects are not carried through loops)."""
    if isinstance(skel, Leaf):
        return True
    if skel[0] == "tuple":
        return all(plain_data(s) for s in skel[1])
    return skel[0] == "const"


def same_constant(vals: list) -> Const | None:
    """The constant every value of ``vals`` is (same type, value and dtype), else None."""
    if not vals or not all(isinstance(v, Const) for v in vals):
        return None
    keys = {(type(v.value), _const_key(v.value), v.dtype) for v in vals}
    return vals[0] if len(keys) == 1 else None


def has_constants(v: FVal) -> bool:
    """Whether a tuple or dataclass value holds numeric constants (which a loop may turn
    into runtime values, R-PROMO-7 per item)."""
    if isinstance(v, TupleV):
        return any(materializable(i) or has_constants(i) for i in v.items)
    if isinstance(v, DataclassV):
        return any(materializable(i) or has_constants(i) for i in v.fields.values())
    return False


def materialize(v: FVal, deep: bool = False) -> FVal:
    """A loop-carried value on loop entry: a numeric constant becomes a runtime value
    (R-CONST-7); with ``deep``, so do the numeric constants inside tuples and dataclasses."""
    if materializable(v):
        return coerce.to_tile(v)
    if deep and isinstance(v, TupleV):
        return type(v)(tuple(materialize(i, True) for i in v.items))
    if deep and isinstance(v, DataclassV):
        return DataclassV(v.cls, {n: materialize(i, True) for n, i in v.fields.items()})
    return v


def fit(v: FVal, skel: Any) -> FVal:
    """``v`` shaped to a carried skeleton: numeric constants where ``skel`` has a runtime
    leaf are cast to that leaf's dtype and materialised, inside tuples and dataclasses too."""

    if isinstance(skel, Leaf):
        if materializable(v):
            if v.is_loose:
                v = coerce.implicit_cast(v, skel.type.dtype, "loop-carried value")
            if isinstance(v, Const):
                v = coerce.to_tile(v)
        return v
    if isinstance(skel, tuple) and skel and skel[0] == "tuple" and isinstance(v, TupleV) \
            and len(v.items) == len(skel[1]):
        return type(v)(tuple(fit(i, s) for i, s in zip(v.items, skel[1])))
    if isinstance(skel, tuple) and skel and skel[0] == "dataclass" and \
            isinstance(v, DataclassV) and v.cls is skel[1] and tuple(v.fields) == skel[2]:
        return DataclassV(v.cls, {n: fit(i, s) for (n, i), s in zip(v.fields.items(), skel[3])})
    return v


def _closure(t: FuncV, names: tuple, dnames: tuple, items: list) -> FuncV:
    return FuncV(t.node, t.name, dict(zip(names, items[:len(names)])), t.globals, t.source,
                 dict(zip(dnames, items[len(names):])), None)


def frozen_closure(fv: FuncV) -> tuple[tuple, tuple, list]:
    """The names a closure reads from its scope, its default names, and their values now."""
    full = dict(fv.closure)
    if fv.scope is not None:
        full.update((k, v) for k, v in fv.scope.vars.items() if not k.startswith("<"))
    params = {a.arg for a in all_args(fv.node.args)}
    refs = sorted({n.id for n in ast.walk(fv.node) if isinstance(n, ast.Name)} - params)
    names = tuple(n for n in refs if n in full and not isinstance(full[n], Invalid))
    dnames = tuple(fv.defaults)
    return names, dnames, [full[n] for n in names] + [fv.defaults[d] for d in dnames]


def split_aggregate(vals: list[FVal]):
    """Values of one aggregate kind that merge item by item where paths join (R-CF-7,
    R-PROMO-7 per item): (skeleton head, items of each value, rebuild(items)), or None.
    Tuples and dataclasses of one class merge by item; closures of one ``def`` merge by
    captured value and default (1.7: ``c = make(30) if ... else make(40)``), frozen there."""
    first = vals[0]
    if isinstance(first, TupleV) and all(
            type(v) is type(first) and len(v.items) == len(first.items) for v in vals):
        return ("tuple",), [list(v.items) for v in vals], lambda it: type(first)(tuple(it))
    if isinstance(first, DataclassV) and all(
            isinstance(v, DataclassV) and v.cls is first.cls
            and tuple(v.fields) == tuple(first.fields) for v in vals):
        names = tuple(first.fields)
        return (("dataclass", first.cls, names), [list(v.fields.values()) for v in vals],
                lambda it: DataclassV(first.cls, dict(zip(names, it))))
    if isinstance(first, FuncV) and all(
            isinstance(v, FuncV) and v.node is first.node and v.globals is first.globals
            for v in vals):
        parts = [frozen_closure(v) for v in vals]
        names, dnames = parts[0][0], parts[0][1]
        if any(p[:2] != (names, dnames) for p in parts):
            return None
        return (("closure", id(first.node), names, dnames), [p[2] for p in parts],
                lambda it: _closure(first, names, dnames, list(it)))
    return None

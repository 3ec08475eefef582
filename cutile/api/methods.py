"""Attributes, methods and subscripts of tiles, arrays and tiled views in tile code
(R-TILE-4, §7, R-VIEW-3, R-PY-3), registered per value class (``lang.registry``) on import.
A number is a 0-D tile (R-TILE-2): ``(0).dtype`` is int32 in tile code."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import TileTypeError
from ..ir import ops
from ..lang import coerce
from ..lang.context import current
from ..lang.registry import register_attribute, register_method
from ..lang.values import (
    ArrayV,
    BoundMethod,
    Const,
    FVal,
    RawMemV,
    TileV,
    TupleV,
    ViewV,
    describe,
)
from . import atomic, elementwise, memory, shape
from .pointer import foreign_pointer


def _tile_astype(t, /, dtype, *, rounding_mode=None):
    return elementwise.astype.impl(t, dtype, rounding_mode=rounding_mode)


def _tile_reshape(t, /, shape):
    return shape_mod.reshape.impl(t, shape)


def _tile_permute(t, /, axes):
    return shape_mod.permute.impl(t, axes)


def _tile_transpose(t, /, axis0=None, axis1=None):
    return shape_mod.transpose.impl(t, axis0, axis1)


def _tile_item(t, /):
    return shape_mod.item(t)


def _tile_extract(t, /, index, shape):
    return shape_mod.extract.impl(t, index, shape)


def _tile_insert(t, /, index, value):
    return shape_mod.insert.impl(t, index, value)


def _array_slice(a, /, axis, start, stop):
    return memory.array_slice(a, axis, start, stop)


shape_mod = shape
TILE_METHODS = {"astype": _tile_astype, "reshape": _tile_reshape, "permute": _tile_permute,
                "transpose": _tile_transpose, "item": _tile_item, "extract": _tile_extract,
                "insert": _tile_insert}
ARRAY_METHODS = {
    "slice": _array_slice,
    "tiled_view": memory.tiled_view,
    "get_raw_memory": atomic.get_raw_memory,
}
VIEW_METHODS = {"load": memory.view_load, "store": memory.view_store,
                "num_tiles": memory.view_num_tiles, **atomic.VIEW_ATOMICS}


def subscript(obj: FVal, idx: FVal) -> FVal:
    if isinstance(obj, (TupleV,)) or (isinstance(obj, Const) and isinstance(obj.value, tuple)):
        items = coerce.tuple_items(obj, "tuple")
        if isinstance(idx, Const) and isinstance(idx.value, slice):
            return TupleV(tuple(items[idx.value]))
        if isinstance(idx, TileV) and idx.shape == () and idx.dtype.is_integral:
            raise TileTypeError("Tuple indices must be constant integers (a runtime index "
                                "cannot choose between items of different types)")
        if not (isinstance(idx, Const) and isinstance(idx.value, int)):
            raise TileTypeError(f"Tuple indices must be integers or slices, not "
                                f"{describe(idx)}")
        i = idx.value
        if not -len(items) <= i < len(items):
            raise TileTypeError(f"Index {i} is out of range for a tuple of length {len(items)}")
        return items[i]
    if isinstance(obj, ArrayV):
        raise TileTypeError("Arrays are not directly subscriptable; use ct.load or ct.gather")
    if isinstance(obj, TileV):
        return shape.index_newaxis(obj, idx)
    if isinstance(obj, Const) and isinstance(obj.value, dict):
        key = idx.value if isinstance(idx, Const) else None
        if key not in obj.value:
            raise TileTypeError(f"Key {key!r} not found in dictionary")
        return obj.value[key]
    raise TileTypeError(f"{describe(obj)} is not subscriptable")


def _array_strides(a: ArrayV) -> FVal:
    """``a.strides``: constants where the launch specialised them (``static_stride_dims``)."""
    known = a.static_strides or (None,) * a.ndim
    return TupleV(tuple(current().emit_value(ops.ArrayStride(a.value, i)) if s is None
                        else Const(s) for i, s in enumerate(known)))


_ATTRIBUTES: dict[type, dict[str, Callable[..., FVal]]] = {
    TileV: {"shape": lambda t: TupleV(tuple(Const(d) for d in t.shape)),
            "dtype": lambda t: Const(t.dtype), "ndim": lambda t: Const(len(t.shape))},
    ArrayV: {"dtype": lambda a: Const(a.dtype), "ndim": lambda a: Const(a.ndim),
             "shape": lambda a: TupleV(tuple(memory.array_dim(a, i) for i in range(a.ndim))),
             "strides": _array_strides, "foreign_pointer": foreign_pointer},
    ViewV: {"dtype": lambda v: Const(v.array.dtype),
            "tile_shape": lambda v: TupleV(tuple(Const(d) for d in v.tile_shape)),
            "traversal_steps": lambda v: TupleV(tuple(Const(d) for d in v.steps))},
    RawMemV: {"dtype": lambda r: Const(r.array.dtype)},
}
_METHODS = {TileV: TILE_METHODS, ArrayV: ARRAY_METHODS, ViewV: VIEW_METHODS,
            RawMemV: atomic.RAW_METHODS}


def _number_attribute(name: str):
    """``(0).dtype``, ``x.astype(...)`` of a number: the attribute of the number as a tile."""
    def get(c: Const) -> FVal | None:
        if not c.is_number:
            return None                  # other constants: host attributes (the walker's)
        t = coerce.to_tile(c)
        return BoundMethod(t, name) if name in TILE_METHODS else _ATTRIBUTES[TileV][name](t)
    return get


for _cls, _attrs in _ATTRIBUTES.items():
    for _name, _get in _attrs.items():
        register_attribute(_cls, _name, _get)
for _cls, _table in _METHODS.items():
    for _name, _fn in _table.items():
        register_method(_cls, _name, _fn)
for _name in ("dtype", "shape", "ndim", *TILE_METHODS):
    register_attribute(Const, _name, _number_attribute(_name))

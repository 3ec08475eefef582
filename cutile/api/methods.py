"""Attributes, methods and subscripts of tiles, arrays and tiled views in tile code
(R-TILE-4, §7, R-VIEW-3, R-PY-3)."""

from __future__ import annotations

import inspect

from ..errors import TileTypeError
from ..frontend import coerce
from ..frontend.values import (
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


def get_attribute(obj: FVal, name: str) -> FVal:
    if isinstance(obj, Const) and obj.is_number and name in ("dtype", "shape", "ndim") + tuple(
            TILE_METHODS):
        # A number is a 0-D tile (R-TILE-2): `(0).dtype` is int32 in tile code.
        if name in TILE_METHODS:
            return BoundMethod(coerce.to_tile(obj), name)
        return get_attribute(coerce.to_tile(obj), name)
    if isinstance(obj, Const):
        try:
            value = getattr(obj.value, name)
        except AttributeError:
            what = (f"Module '{obj.value.__name__}'" if type(obj.value).__name__ == "module"
                    else describe(obj))
            raise TileTypeError(f"{what} has no attribute '{name}'") from None
        from ..frontend.calls import global_value
        return global_value(value)
    if isinstance(obj, TileV):
        if name == "shape":
            return TupleV(tuple(Const(d) for d in obj.shape))
        if name == "dtype":
            return Const(obj.dtype)
        if name == "ndim":
            return Const(len(obj.shape))
        if name in TILE_METHODS:
            return BoundMethod(obj, name)
    elif isinstance(obj, ArrayV):
        if name == "dtype":
            return Const(obj.dtype)
        if name == "ndim":
            return Const(obj.ndim)
        if name == "shape":
            return TupleV(tuple(memory.array_dim(obj, i) for i in range(obj.ndim)))
        if name == "strides":
            from ..frontend.context import current
            from ..ir import ops
            return TupleV(tuple(current().emit_value(ops.ArrayStride(obj.value, i))
                                for i in range(obj.ndim)))
        if name == "foreign_pointer":
            from .pointer import foreign_pointer
            return foreign_pointer(obj)
        if name in ARRAY_METHODS:
            return BoundMethod(obj, name)
    elif isinstance(obj, ViewV):
        if name == "dtype":
            return Const(obj.array.dtype)
        if name == "tile_shape":
            return TupleV(tuple(Const(d) for d in obj.tile_shape))
        if name == "traversal_steps":
            return TupleV(tuple(Const(d) for d in obj.steps))
        if name in VIEW_METHODS:
            return BoundMethod(obj, name)
    elif isinstance(obj, RawMemV):
        if name == "dtype":
            return Const(obj.array.dtype)
        if name in atomic.RAW_METHODS:
            return BoundMethod(obj, name)
    raise TileTypeError(f"{describe(obj)} has no attribute '{name}'")


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


def call_method(m: BoundMethod, args, kwargs) -> FVal:
    table = (TILE_METHODS if isinstance(m.obj, TileV) else
             ARRAY_METHODS if isinstance(m.obj, ArrayV) else
             atomic.RAW_METHODS if isinstance(m.obj, RawMemV) else VIEW_METHODS)
    fn = table[m.name]
    try:
        bound = inspect.signature(fn).bind(m.obj, *args, **kwargs)
    except TypeError as e:
        raise TileTypeError(f"{m.name}(): {e}") from None
    result = fn(*bound.args, **bound.kwargs)
    return Const(None) if result is None else result


def subscript(obj: FVal, idx: FVal) -> FVal:
    if isinstance(obj, (TupleV,)) or (isinstance(obj, Const) and isinstance(obj.value, tuple)):
        items = coerce.tuple_items(obj, "tuple")
        if isinstance(idx, Const) and isinstance(idx.value, slice):
            return TupleV(tuple(items[idx.value]))
        if not (isinstance(idx, Const) and isinstance(idx.value, int)):
            raise TileTypeError("Tuple indices must be constant integers")
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

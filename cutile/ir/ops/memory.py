"""Global-memory ops: array shape/strides/slices, tile-space load/store, gather/scatter."""

from __future__ import annotations

from ...enums import MemoryOrder, MemoryScope, PaddingMode
from ..core import Op, Value, opdef
from ..types import ArrayType, TileType
from . import _check


@opdef("memory", pure=True)
class ArrayDim(Op):
    array: Value
    axis: int

    def infer(self):
        return [TileType(_check.array(self.array, self, "array").index_dtype)]


@opdef("memory", pure=True)
class ArrayStride(Op):
    array: Value
    axis: int

    def infer(self):
        return [TileType(_check.array(self.array, self, "array").index_dtype)]


@opdef("memory", pure=True)
class ArraySlice(Op):
    """A view of ``array`` restricted to ``[start, stop)`` along ``axis`` (R-ARR-1)."""

    array: Value
    axis: int
    start: Value
    stop: Value

    def infer(self):
        return [_check.array(self.array, self, "array")]


@opdef("memory", pure=True, reads=True)
class Load(Op):
    """Tile-space load (R-LOAD-*, R-VIEW-5).  ``steps`` is None for a plain partition;
    ``memory_order``/``memory_scope`` (R-LOAD-7): RELAXED/ACQUIRE make it an atomic read."""

    array: Value
    index: tuple
    shape: tuple
    order: tuple
    padding: PaddingMode
    check_bounds: bool = True
    steps: tuple | None = None
    memory_order: MemoryOrder = MemoryOrder.WEAK
    memory_scope: MemoryScope = MemoryScope.NONE

    def infer(self):
        a = _check.array(self.array, self, "array")
        _check.expect(len(self.index) == a.ndim == len(self.shape), self, "rank mismatch")
        return [TileType(a.dtype, tuple(self.shape))]


@opdef("memory", writes=True)
class Store(Op):
    """Tile-space store; out-of-bounds lanes are discarded (R-STORE-*, R-VIEW-6);
    ``memory_order``/``memory_scope`` (R-STORE-4): RELAXED/RELEASE make it an atomic write."""

    array: Value
    index: tuple
    tile: Value
    order: tuple
    check_bounds: bool = True
    steps: tuple | None = None
    memory_order: MemoryOrder = MemoryOrder.WEAK
    memory_scope: MemoryScope = MemoryScope.NONE

    def infer(self):
        a = _check.array(self.array, self, "array")
        t = _check.tile(self.tile, self, "tile")
        _check.expect(t.dtype is a.dtype and t.ndim == a.ndim == len(self.index), self,
                      "store tile must have the array's dtype and rank")
        return []


@opdef("memory", pure=True, reads=True)
class Gather(Op):
    """``gather``: ``indices`` (one per dim) and ``padding`` all of the index shape (R-GS-*)."""

    array: Value
    indices: tuple
    padding: Value
    mask: Value | None = None
    check_bounds: bool = True

    def infer(self):
        a = _check.array(self.array, self, "array")
        p = _check.tile(self.padding, self, "padding")
        _check.expect(p.dtype is a.dtype and len(self.indices) == a.ndim, self, "bad gather")
        return [p]


@opdef("memory", writes=True)
class Scatter(Op):
    array: Value
    indices: tuple
    value: Value
    mask: Value | None = None
    check_bounds: bool = True

    def infer(self):
        a = _check.array(self.array, self, "array")
        v = _check.tile(self.value, self, "value")
        _check.expect(v.dtype is a.dtype and len(self.indices) == a.ndim, self, "bad scatter")
        return []


__all__ = ["ArrayDim", "ArrayStride", "ArraySlice", "Load", "Store", "Gather", "Scatter",
           "ArrayType"]

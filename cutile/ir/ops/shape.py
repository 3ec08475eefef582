"""Shape ops: broadcast, reshape, permute, cat/extract/insert (R-SHAPE-*) and bit
reinterpretation: bitcast, pack_to_bytes / unpack_from_bytes (R-BITCAST-*)."""

from __future__ import annotations

from ...dtypes import uint8
from ..core import Op, Value, opdef
from ..types import TileType
from . import _check


@opdef("shape", pure=True, rearranges=True)
class Broadcast(Op):
    x: Value
    shape: tuple

    def infer(self):
        t = _check.tile(self.x, self, "x")
        _check.expect(len(self.shape) >= t.ndim, self, "broadcast cannot reduce rank")
        for src, dst in zip(reversed(t.shape), reversed(self.shape)):
            _check.expect(src in (1, dst), self, f"cannot broadcast {t.shape} to {self.shape}")
        return [TileType(t.dtype, tuple(self.shape))]


@opdef("shape", pure=True, rearranges=True)
class Reshape(Op):
    x: Value
    shape: tuple

    def infer(self):
        t = _check.tile(self.x, self, "x")
        _check.expect(TileType(t.dtype, tuple(self.shape)).size == t.size, self, "size mismatch")
        return [TileType(t.dtype, tuple(self.shape))]


@opdef("shape", pure=True, rearranges=True)
class Permute(Op):
    x: Value
    axes: tuple

    def infer(self):
        t = _check.tile(self.x, self, "x")
        _check.expect(sorted(self.axes) == list(range(t.ndim)), self, "axes not a permutation")
        return [TileType(t.dtype, tuple(t.shape[a] for a in self.axes))]


@opdef("shape", pure=True)
class Cat(Op):
    """Two tiles of one dtype joined along ``axis`` (R-SHAPE-6)."""

    a: Value
    b: Value
    axis: int

    def infer(self):
        ta, tb = _check.tile(self.a, self, "a"), _check.tile(self.b, self, "b")
        _check.expect(ta.dtype is tb.dtype and ta.ndim == tb.ndim, self, "operands differ")
        shape = list(ta.shape)
        shape[self.axis] += tb.shape[self.axis]
        return [TileType(ta.dtype, tuple(shape))]


@opdef("shape", pure=True)
class Extract(Op):
    """Grid cell ``index`` (int32 scalars, one per axis) of cell ``shape`` (R-SHAPE-7)."""

    x: Value
    index: tuple
    shape: tuple

    def infer(self):
        t = _check.tile(self.x, self, "x")
        _check.expect(len(self.index) == t.ndim == len(self.shape), self, "rank mismatch")
        for i, v in enumerate(self.index):
            _check.scalar(v, self, f"index[{i}]")
        return [TileType(t.dtype, tuple(self.shape))]


@opdef("shape", pure=True)
class Insert(Op):
    """``x`` with grid cell ``index`` (cell shape = ``value``'s) replaced (R-SHAPE-8)."""

    x: Value
    value: Value
    index: tuple

    def infer(self):
        t = _check.tile(self.x, self, "x")
        v = _check.tile(self.value, self, "value")
        _check.expect(v.dtype is t.dtype and v.ndim == t.ndim == len(self.index), self,
                      "value must match x's dtype and rank")
        return [t]


@opdef("shape", pure=True)
class Bitcast(Op):
    """Reinterpret the bits of every element as ``dtype`` of equal width (R-BITCAST-1)."""

    x: Value
    dtype: object

    def infer(self):
        t = _check.tile(self.x, self, "x")
        _check.expect(t.dtype.bitwidth == self.dtype.bitwidth, self, "bit widths differ")
        return [TileType(self.dtype, t.shape)]


@opdef("shape", pure=True)
class PackBytes(Op):
    """Row-major flattening of ``x`` into its little-endian bytes (R-BITCAST-2)."""

    x: Value

    def infer(self):
        t = _check.tile(self.x, self, "x")
        _check.expect(t.size * t.dtype.bitwidth % 8 == 0, self, "whole bytes")
        return [TileType(uint8, (t.size * t.dtype.bitwidth // 8,))]


@opdef("shape", pure=True)
class UnpackBytes(Op):
    """Inverse of ``PackBytes``: a 1-D uint8 tile read as elements of ``dtype`` (R-BITCAST-3)."""

    x: Value
    dtype: object

    def infer(self):
        t = _check.tile(self.x, self, "x")
        _check.expect(t.dtype is uint8 and t.ndim == 1, self, "1-D uint8 input")
        n, r = divmod(t.size * 8, self.dtype.bitwidth)
        _check.expect(r == 0, self, "whole elements")
        return [TileType(self.dtype, (n,))]

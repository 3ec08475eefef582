"""Shape ops: broadcast, row-major reshape and axis permutation (R-SHAPE-*)."""

from __future__ import annotations

from ..core import Op, Value, opdef
from ..types import TileType
from . import _check


@opdef("shape")
class Broadcast(Op):
    x: Value
    shape: tuple

    def infer(self):
        t = _check.tile(self.x, self, "x")
        _check.expect(len(self.shape) >= t.ndim, self, "broadcast cannot reduce rank")
        for src, dst in zip(reversed(t.shape), reversed(self.shape)):
            _check.expect(src in (1, dst), self, f"cannot broadcast {t.shape} to {self.shape}")
        return [TileType(t.dtype, tuple(self.shape))]


@opdef("shape")
class Reshape(Op):
    x: Value
    shape: tuple

    def infer(self):
        t = _check.tile(self.x, self, "x")
        _check.expect(TileType(t.dtype, tuple(self.shape)).size == t.size, self, "size mismatch")
        return [TileType(t.dtype, tuple(self.shape))]


@opdef("shape")
class Permute(Op):
    x: Value
    axes: tuple

    def infer(self):
        t = _check.tile(self.x, self, "x")
        _check.expect(sorted(self.axes) == list(range(t.ndim)), self, "axes not a permutation")
        return [TileType(t.dtype, tuple(t.shape[a] for a in self.axes))]

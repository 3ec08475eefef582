"""Execution-space queries: block id and grid extent (R-EXEC-2)."""

from __future__ import annotations

from ...dtypes import int32
from ..core import Op, opdef
from ..types import TileType


@opdef("index", pure=True)
class BlockId(Op):
    axis: int

    def infer(self):
        return [TileType(int32)]


@opdef("index", pure=True)
class NumBlocks(Op):
    axis: int

    def infer(self):
        return [TileType(int32)]

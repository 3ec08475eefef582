"""Tile factories: a constant tile and an integer iota (R-FACT-*)."""

from __future__ import annotations

from ...dtypes import DType
from ..core import Op, opdef
from ..types import TileType
from . import _check


@opdef("creation", pure=True)
class Constant(Op):
    """A tile of ``shape`` filled with ``value``, which is already exact in ``dtype``."""

    value: object
    dtype: DType
    shape: tuple

    def infer(self):
        return [TileType(self.dtype, tuple(self.shape))]


@opdef("creation", pure=True)
class Iota(Op):
    """``[0, 1, ..., size-1]`` in an integer dtype (wrapping), the basis of ``arange``."""

    size: int
    dtype: DType

    def infer(self):
        _check.expect(self.dtype.is_integral, self, "iota dtype must be integral")
        return [TileType(self.dtype, (self.size,))]

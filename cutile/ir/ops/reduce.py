"""Reductions: sum/prod/max/min over axes, argmax/argmin and user combiners (R-RED-*)."""

from __future__ import annotations

from ...dtypes import int32
from ..core import Op, Region, Value, opdef
from ..types import TileType
from . import _check
from .scan import check_body


def _reduced_shape(shape, axes, keepdims):
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


@opdef("reduce", pure=True)
class Reduce(Op):
    fn: str
    x: Value
    axes: tuple
    keepdims: bool
    propagate_nan: bool = False
    rounding: str | None = None
    ftz: bool = False

    def infer(self):
        t = _check.tile(self.x, self, "x")
        _check.expect(self.fn in ("sum", "prod", "max", "min"), self, "unknown reduction")
        return [TileType(t.dtype, _reduced_shape(t.shape, self.axes, self.keepdims))]


@opdef("reduce", pure=True)
class ArgReduce(Op):
    """argmax/argmin along ``axis`` (None: flattened row-major)."""

    fn: str
    x: Value
    axis: int | None
    keepdims: bool
    propagate_nan: bool = False

    def infer(self):
        t = _check.tile(self.x, self, "x")
        if self.axis is None:
            shape = (1,) * t.ndim if self.keepdims else ()
        else:
            shape = _reduced_shape(t.shape, (self.axis,), self.keepdims)
        return [TileType(int32, shape)]


@opdef("reduce", pure=True)
class ReduceFn(Op):
    """``reduce`` with a user combiner (R-RED-8): N tiles of one shape along one ``axis``;
    ``body`` as ``ScanFn``'s (2N 0-d arguments, yields N)."""

    xs: tuple
    axis: int
    identities: tuple
    keepdims: bool
    body: Region

    def infer(self):
        types = [_check.tile(x, self, "x") for x in self.xs]
        shape = types[0].shape
        _check.expect(all(t.shape == shape for t in types), self, "operands share one shape")
        check_body(self, self.body, types)
        out = _reduced_shape(shape, (self.axis,), self.keepdims)
        return [TileType(t.dtype, out) for t in types]

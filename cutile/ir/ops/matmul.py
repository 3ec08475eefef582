"""Matrix multiply-accumulate (R-MM-1..5): ``x @ y + acc`` with batch dims already broadcast."""

from __future__ import annotations

from ..core import Op, Value, opdef
from . import _check


@opdef("matmul", pure=True)
class Mma(Op):
    x: Value
    y: Value
    acc: Value

    def infer(self):
        tx = _check.tile(self.x, self, "x")
        ty = _check.tile(self.y, self, "y")
        ta = _check.tile(self.acc, self, "acc")
        _check.expect(tx.ndim == ty.ndim == ta.ndim and tx.ndim in (2, 3), self, "rank")
        _check.expect(tx.shape[-1] == ty.shape[-2], self, "contraction mismatch")
        _check.expect(ta.shape == tx.shape[:-1] + ty.shape[-1:], self, "acc shape")
        return [ta]


@opdef("matmul", pure=True)
class MmaScaled(Op):
    """Block-scaled ``x @ y + acc`` (R-MM-6): ``x_scale[..., m, k // B]`` scales ``x`` and
    ``y_scale[..., k // B, n]`` scales ``y``; batch dims already broadcast."""

    x: Value
    x_scale: Value
    y: Value
    y_scale: Value
    acc: Value

    def infer(self):
        tx, ty = _check.tile(self.x, self, "x"), _check.tile(self.y, self, "y")
        sx, sy = _check.tile(self.x_scale, self, "x_scale"), _check.tile(self.y_scale, self,
                                                                         "y_scale")
        ta = _check.tile(self.acc, self, "acc")
        _check.expect(len({tx.ndim, ty.ndim, sx.ndim, sy.ndim, ta.ndim}) == 1
                      and tx.ndim in (2, 3), self, "rank")
        _check.expect(tx.shape[-1] == ty.shape[-2], self, "contraction mismatch")
        _check.expect(sx.shape[-1] == sy.shape[-2] and tx.shape[-1] % sx.shape[-1] == 0, self,
                      "scale blocks")
        _check.expect(sx.shape[:-1] == tx.shape[:-1] and sy.shape[:-2] + sy.shape[-1:]
                      == ty.shape[:-2] + ty.shape[-1:], self, "scale shapes")
        _check.expect(ta.shape == tx.shape[:-1] + ty.shape[-1:], self, "acc shape")
        return [ta]

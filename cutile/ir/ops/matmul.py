"""Matrix multiply-accumulate (R-MM-1..5): ``x @ y + acc`` with batch dims already broadcast."""

from __future__ import annotations

from ..core import Op, Value, opdef
from . import _check


@opdef("matmul")
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

"""Elementwise ops on operands of one dtype and one shape (the frontend inserted every
promotion and broadcast already): unary and binary math, comparisons, select, convert, fma."""

from __future__ import annotations

from ...dtypes import DType, bool_
from ..core import Op, Value, opdef
from ..types import TileType
from . import _check

UNARY_FNS = frozenset({
    "negative", "abs", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "tan",
    "sinh", "cosh", "tanh", "floor", "ceil", "isnan", "not",
})
BINARY_FNS = frozenset({
    "add", "sub", "mul", "truediv", "floordiv", "cdiv", "mod", "pow", "minimum", "maximum",
    "atan2", "and", "or", "xor", "lshift", "rshift",
})
COMPARE_FNS = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})


def _same(op, x: Value, y: Value) -> TileType:
    tx, ty = _check.tile(x, op, "x"), _check.tile(y, op, "y")
    _check.expect(tx == ty, op, f"operand types differ: {tx} vs {ty}")
    return tx


@opdef("elementwise", pure=True)
class Unary(Op):
    fn: str
    x: Value
    rounding: str | None = None
    ftz: bool = False

    def infer(self):
        _check.expect(self.fn in UNARY_FNS, self, f"unknown unary fn {self.fn}")
        t = _check.tile(self.x, self, "x")
        if self.fn == "isnan":
            return [TileType(bool_, t.shape)]
        return [t]


@opdef("elementwise", pure=True)
class Binary(Op):
    fn: str
    x: Value
    y: Value
    rounding: str | None = None
    ftz: bool = False
    propagate_nan: bool = False
    # Set on multiplies/adds written by the user, the only ones the FMA rule may fuse (R-FMA-1).
    fusible: bool = False

    def infer(self):
        _check.expect(self.fn in BINARY_FNS, self, f"unknown binary fn {self.fn}")
        return [_same(self, self.x, self.y)]


@opdef("elementwise", pure=True)
class Compare(Op):
    fn: str
    x: Value
    y: Value

    def infer(self):
        _check.expect(self.fn in COMPARE_FNS, self, f"unknown comparison {self.fn}")
        t = _same(self, self.x, self.y)
        return [TileType(bool_, t.shape)]


@opdef("elementwise", pure=True)
class Select(Op):
    """``where(cond, x, y)`` with all three of one shape."""

    cond: Value
    x: Value
    y: Value

    def infer(self):
        t = _same(self, self.x, self.y)
        c = _check.tile(self.cond, self, "cond")
        _check.expect(c.dtype is bool_ and c.shape == t.shape, self,
                      "cond must be bool of x's shape")
        return [t]


@opdef("elementwise", pure=True)
class Convert(Op):
    """``astype``: elementwise conversion (R-ASTYPE-1/2)."""

    x: Value
    dtype: DType
    rounding: str | None = None

    def infer(self):
        t = _check.tile(self.x, self, "x")
        return [TileType(self.dtype, t.shape)]


@opdef("elementwise", pure=True)
class Fma(Op):
    """``a*b + c`` with a single rounding, where the frontend fused it (R-FMA-1/2)."""

    a: Value
    b: Value
    c: Value

    def infer(self):
        t = _same(self, self.a, self.b)
        _same(self, self.a, self.c)
        _check.expect(t.dtype.is_float and not t.dtype.is_restricted, self, "fma needs floats")
        return [t]

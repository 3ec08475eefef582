"""Scans: cumsum/cumprod and ``scan`` with a user combiner compiled to a region (R-SCAN-*).

Both are inclusive prefix scans along one axis, in the documented sequential order
(``cutile.interp.rules.scan``).  ``ScanFn``'s ``body`` takes 2N 0-d arguments (the running value's N
components, then the next element's) and yields N 0-d values of the operands' dtypes.
"""

from __future__ import annotations

from ..core import Op, Region, Value, opdef
from ..types import TileType
from . import _check


@opdef("scan", pure=True)
class CumScan(Op):
    fn: str                       # "sum" | "prod"
    x: Value
    axis: int
    reverse: bool = False
    rounding: str | None = None
    ftz: bool = False

    def infer(self):
        t = _check.tile(self.x, self, "x")
        _check.expect(self.fn in ("sum", "prod"), self, "unknown scan")
        _check.expect(0 <= self.axis < t.ndim, self, "axis out of range")
        return [t]


@opdef("scan", pure=True)
class ScanFn(Op):
    xs: tuple
    axis: int
    identities: tuple
    reverse: bool
    body: Region

    def infer(self):
        types = [_check.tile(x, self, "x") for x in self.xs]
        shape = types[0].shape
        _check.expect(all(t.shape == shape for t in types), self, "operands share one shape")
        _check.expect(0 <= self.axis < len(shape), self, "axis out of range")
        check_body(self, self.body, types)
        return list(types)


def check_body(op, body: Region, types) -> None:
    """The combiner region: 2N 0-d arguments, N 0-d results of the operands' dtypes."""
    n = len(types)
    _check.expect(len(body.args) == 2 * n, op, "combiner takes 2N arguments")
    for a, t in zip(body.args, types + types):
        _check.expect(a.type == TileType(t.dtype, ()), op, "combiner argument types")
    term = body.terminator
    _check.expect(term is not None and len(term.values) == n, op, "combiner yields N values")
    for v, t in zip(term.values, types):
        _check.expect(v.type == TileType(t.dtype, ()), op, "combiner result types")

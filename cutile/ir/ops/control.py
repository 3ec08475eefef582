"""Structured control flow: counted loops, infinite loops with breaks, if/else, early exits.

Scalars drive control flow, so every exit is block-uniform (R-EXEC-3).  Loop-carried values
are region arguments; ``Yield``/``Continue`` pass the next iteration's values, ``Break`` the
loop's results, ``Return`` ends the block (kernel level only).
"""

from __future__ import annotations

from ...dtypes import bool_
from ..core import Op, Region, Value, opdef
from . import _check


@opdef("control", pure=True)
class For(Op):
    """``for iv in range(start, stop, step)`` with loop-carried ``inits``.

    Body arguments: ``(iv, *carried)``."""

    start: Value
    stop: Value
    step: Value
    inits: tuple
    body: Region

    def infer(self):
        for name in ("start", "stop", "step"):
            _check.scalar(getattr(self, name), self, name)
        return [v.type for v in self.inits]


@opdef("control", pure=True)
class Loop(Op):
    """``while True`` with loop-carried ``inits``; leaves only through ``Break`` or ``Return``."""

    inits: tuple
    body: Region

    def infer(self):
        return [v.type for v in self.inits]


@opdef("control", pure=True)
class If(Op):
    """Two-way branch on a bool scalar; both regions yield ``result_types``."""

    cond: Value
    then: Region
    orelse: Region
    result_types: tuple

    def infer(self):
        t = _check.scalar(self.cond, self, "cond")
        _check.expect(t.dtype is bool_, self, "cond must be bool_")
        return list(self.result_types)


@opdef("control", terminator="yield", pure=True)
class Yield(Op):
    values: tuple


@opdef("control", terminator="continue", pure=True)
class Continue(Op):
    values: tuple


@opdef("control", terminator="break", pure=True)
class Break(Op):
    values: tuple


@opdef("control", terminator="return", pure=True)
class Return(Op):
    pass

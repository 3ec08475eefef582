"""Debugging ops: formatted printing and runtime assertions (spec §21.1-21.2)."""

from __future__ import annotations

from ...dtypes import bool_
from ..core import Op, Value, opdef
from . import _check


@opdef("debug")
class Print(Op):
    """One line of output per block: ``fmt`` is a validated C format string with exactly one
    conversion per operand in ``args`` (tiles print as nested lists, R-PRINT-2)."""

    fmt: str
    args: tuple

    def infer(self):
        for i, a in enumerate(self.args):
            _check.tile(a, self, f"argument #{i}")
        return []


@opdef("debug")
class Assert(Op):
    """``assert_``: the block fails with ``message`` if any element of ``cond`` is False."""

    cond: Value
    message: str | None = None

    def infer(self):
        t = _check.tile(self.cond, self, "cond")
        _check.expect(t.dtype is bool_, self, "assert condition must be bool")
        return []

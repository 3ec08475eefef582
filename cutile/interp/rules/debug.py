"""Interpreter rules for ``printf``/``print`` and ``assert_`` (spec §21.1-21.2).

A ``Print`` writes its line to ``sys.stdout`` (looked up at call time, so pytest's ``capsys``
sees it) when the block executes it: lines appear in block execution order, those of one block
in program order (R-PRINT-5).  Like cuda.tile 1.7, no block prefix is added.  A failed
``Assert`` raises ``TileAssertionError`` (an ``AssertionError``) naming block, line and message.
"""

from __future__ import annotations

import sys

from ... import dtypes as dt
from ... import printf_fmt as pf
from ...errors import TileAssertionError
from ...ir import ops
from ..core import rule
from ..undetermined import check_not_poisoned


@rule(ops.Print)
def print_(frame, op):
    tiles = [frame[a] for a in op.args]
    for i, t in enumerate(tiles):
        check_not_poisoned(frame, op, t, f"printed argument #{i}")
    text = pf.render(pf.parse(op.fmt), [dt.to_float64(t.data) if a.type.dtype is
                                        dt.float8_e5m3fnu else t.data
                                        for t, a in zip(tiles, op.args)],
                     [a.type.dtype for a in op.args])
    sys.stdout.write(text)


@rule(ops.Assert)
def assert_(frame, op):
    t = frame[op.cond]
    check_not_poisoned(frame, op, t, "assert_ condition")
    if not t.data.all():
        raise TileAssertionError(op.message, op.loc, frame.bid).printed()

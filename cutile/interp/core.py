"""The interpreter's vocabulary: what a rule computes with and what it may raise.

A tile is a ``PTile``: an ndarray of the exact IR dtype plus an optional poison mask marking
elements that derive from UNDETERMINED padding (R-PAD-3).  A ``Frame`` is one block's state;
its ``run_region`` runs a region op by op through the rule table ``RULES`` (filled by
``@rule`` in the per-section modules of ``rules/``), checks the dtype and shape of every
result against the IR, and turns detected undefined behaviour into
``UndefinedBehaviorError`` with the block id and the user's source line.  ``Fallback`` is what
a rule raises on a batched frame (``batch/``) when the batch cannot go on exactly.

This module is the floor of ``cutile/interp/``: the rules (``rules/``), the batched path
(``batch/``) and the launch driver (``machine.py``) import it; it imports none of them.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from ..errors import TileInternalError, TileUnsupportedFeatureError, UndefinedBehaviorError
from ..ir.core import KernelIR, Op, Region, Value
from ..ir.types import TileType
from ..semantics.ub import UB
from .memory_model import OutOfBounds


class PTile:
    """A tile value: exact-dtype data and an optional poison mask (``None``: nothing poisoned)."""

    __slots__ = ("data", "poison")

    def __init__(self, data: np.ndarray, poison: np.ndarray | None = None):
        self.data = data
        if poison is not None and not poison.any():
            poison = None
        self.poison = poison

    def __repr__(self) -> str:
        return f"PTile({self.data!r}{', poisoned' if self.poison is not None else ''})"


class Signal:
    """A region left by ``Yield``/``Continue``/``Break``/``Return``."""

    __slots__ = ("kind", "values")

    def __init__(self, kind: str, values: list):
        self.kind = kind
        self.values = values


RULES: dict[type, Callable] = {}


def rule(*op_classes):
    """Register the interpreter rule for IR op classes: ``fn(frame, op) -> result(s)``."""

    def wrap(fn):
        for cls in op_classes:
            RULES[cls] = fn
        return fn

    return wrap


class Fallback(Exception):
    """The batched path cannot run this batch exactly: undo it and run its blocks one by one
    (``batch/``).  Raised by batched rules, and by ``undetermined.relied_on`` on a batched
    frame."""


class Watchdog:
    """The wall-clock limit of one launch: loops and the block loop poll it (R-EXEC-7)."""

    __slots__ = ("limit", "deadline")

    def __init__(self, limit: float | None):
        self.limit = limit
        self.deadline = None if limit is None else time.monotonic() + limit

    def check(self) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise UB("R-EXEC-7", f"the launch ran longer than its {self.limit:g} s wall-clock "
                                 "limit (CUTILE_INTERP_TIMEOUT) and was stopped here; a loop "
                                 "that waits for another block never ends on a sequential "
                                 "executor")


class Frame:
    """One block's execution state: runtime values keyed by IR value."""

    __slots__ = ("values", "bid", "grid", "strict", "races", "block", "watchdog")

    def __init__(self, bid: tuple, grid: tuple, strict: bool, races=None, block: int = 0,
                 watchdog: Watchdog | None = None):
        self.values: dict[Value, object] = {}
        self.bid = bid
        self.grid = grid
        self.strict = strict
        self.races = races          # the launch's RaceTracker (R-EXEC-4), None when off
        self.block = block          # linear block number, for the tracker
        self.watchdog = watchdog or Watchdog(None)

    def __getitem__(self, v: Value):
        return self.values[v]

    def run_region(self, region: Region, args: list) -> Signal | None:
        vals = self.values
        for a, x in zip(region.args, args):
            vals[a] = x
        for op in region.ops:
            if op.is_terminator:
                return Signal(op.exit_kind, [vals[v] for v in getattr(op, "values", ())])
            fn = RULES.get(type(op))
            if fn is None:
                raise TileUnsupportedFeatureError(
                    f"the interpreter has no rule for op {type(op).__name__}", op.loc)
            try:
                out = fn(self, op)
            except UB as e:
                raise UndefinedBehaviorError(e.message, op.loc, self.bid, e.rule) from None
            except OutOfBounds as e:
                raise UndefinedBehaviorError(e.message, op.loc, self.bid, e.rule) from None
            except KeyboardInterrupt as e:
                _note_interrupt(e, op, self.bid)
                raise
            if isinstance(out, Signal):
                return out
            results = op.results
            if not results:
                continue
            if isinstance(out, list):          # several results: one value per result
                for r, x in zip(results, out):
                    _check_result(op, r, x)
                    vals[r] = x
            else:
                _check_result(op, results[0], out)
                vals[results[0]] = out
        return None


def _note_interrupt(e: KeyboardInterrupt, op: Op, bid: tuple) -> None:
    """Ctrl-C during a launch: say which block and which user line (innermost op) it hit."""
    if getattr(e, "_cutile_noted", False):
        return
    e._cutile_noted = True
    where = f"{op.loc}\n{op.loc.traceback()}" if op.loc is not None else type(op).__name__
    note = f"cutile interpreter: interrupted in block {bid} at {where}"
    if hasattr(e, "add_note"):                     # Python >= 3.11
        e.add_note(note)
    else:                                          # Python 3.10: the same text, by hand
        e.__notes__ = [*getattr(e, "__notes__", []), note]


def _check_result(op: Op, v: Value, out) -> None:
    """Every intermediate has exactly the IR's dtype and shape (the oracle's promise)."""
    t = v.type
    if isinstance(t, TileType):
        d = out.data
        if d.shape != t.shape or d.dtype != t.dtype.np_dtype:
            raise TileInternalError(
                f"interpreter rule for {type(op).__name__} produced {d.dtype}{list(d.shape)}, "
                f"IR says {t}", op.loc)


def watchdog_before_block(watchdog: Watchdog, ir: KernelIR, bid: tuple) -> None:
    """The launch's wall-clock limit, checked before each block (and each batch)."""
    if watchdog.deadline is not None and time.monotonic() > watchdog.deadline:
        raise UndefinedBehaviorError(f"the launch ran longer than its {watchdog.limit:g} s "
                                     "wall-clock limit (CUTILE_INTERP_TIMEOUT)", ir.loc,
                                     bid, "R-EXEC-7")

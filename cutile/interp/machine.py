"""The interpreter's machine: runs the typed IR once per block, op by op, exactly.

A tile is a ``PTile``: an ndarray of the exact IR dtype plus an optional poison mask marking
elements that derive from UNDETERMINED padding (R-PAD-3).  Rules (one module per IR section)
compute each op; this module owns the block loop, region execution, the dtype/shape check of
every result against the IR, and turning detected undefined behaviour into
``UndefinedBehaviorError`` with the block id and the user's source line.
"""

from __future__ import annotations

import contextvars
import itertools
import random
import time
from collections.abc import Callable

import numpy as np

from .. import config
from ..errors import TileInternalError, TileUnsupportedFeatureError, UndefinedBehaviorError
from ..ir.core import KernelIR, Op, Region, Value
from ..ir.types import TileType
from ..progress import advance
from ..semantics.ub import UB
from .memory_model import OutOfBounds
from .races import check_overlapping_args, tracker_for


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


def check_not_poisoned(frame: Frame, op: Op | None, t: PTile, what: str, *,
                       always: bool = False) -> None:
    """R-UB-2: an UNDETERMINED-padded value observed (branch condition, loop bound, print).

    With strict checking off the value (zero padding, ``undetermined``) is used with a
    warning, except for loop bounds (``always``): a loop running on padding is an error
    whatever the flag says.
    """
    if t.poison is None:
        return
    from .undetermined import padding_origin, relied_on
    if always:
        raise UB("R-UB-2", f"{what} depends on UNDETERMINED padding{padding_origin(frame)}")
    relied_on(frame, op, what)


# A per-launch wall-clock limit set by a caller (``ct.tune``'s single_run_timeout_sec); the
# CUTILE_INTERP_TIMEOUT watchdog applies when none is set.
launch_time_limit: contextvars.ContextVar = contextvars.ContextVar("cutile_interp_limit",
                                                                   default=None)


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


def block_order(grid: tuple, seed: int | None):
    """Row-major with bid(0) fastest (R-EXEC-7), or shuffled with ``seed``."""
    order = [(x, y, z) for z, y, x in itertools.product(range(grid[2]), range(grid[1]),
                                                        range(grid[0]))]
    if seed is not None:
        random.Random(seed).shuffle(order)
    return order


def block_ids(grid: tuple, seed: int | None) -> np.ndarray:
    """``block_order`` as an (n, 3) int64 array, built without a Python tuple per block
    (``random.shuffle`` permutes by position only, so shuffling the linear numbers gives
    the same order)."""
    lin = np.arange(grid[0] * grid[1] * grid[2], dtype=np.int64)
    if seed is not None:
        perm = lin.tolist()
        random.Random(seed).shuffle(perm)
        lin = np.array(perm, dtype=np.int64)
    g0, g1 = grid[0], grid[1]
    return np.stack([lin % g0, lin // g0 % g1, lin // (g0 * g1)], axis=1)


def run_kernel(ir: KernelIR, grid: tuple, args: list, *, strict: bool | None = None,
               shuffle_blocks: int | None = None, blocks: list | None = None,
               recorder=None):
    """Execute ``ir`` for every block of ``grid`` on host arrays/scalars ``args``.

    Returns the launch's ``RaceTracker`` (who wrote which element; ``cutile.testing`` names
    the writing block of a disagreeing element with it), or None when none was kept.
    ``blocks`` runs only those block ids, in that order (``cutile.debug``); ``recorder`` (an
    ``AccessRecorder``) replaces the race tracker to draw access maps."""
    from . import load_rules
    load_rules()
    strict = config.strict() if strict is None else strict
    seed = config.shuffle_blocks() if shuffle_blocks is None else shuffle_blocks
    params = []
    for p, a in zip(ir.params, args):
        params.append(PTile(a) if isinstance(p.type, TileType) else a)
    # Inter-block races (R-EXEC-4) are undefined behaviour: checked when strict and there is
    # more than one block (races.py)
    if strict:
        check_overlapping_args(ir, args)
    races = recorder if recorder is not None else tracker_for(ir, grid, args) if strict else None
    limit = launch_time_limit.get()
    watchdog = Watchdog(limit if limit is not None else config.interp_timeout())

    def run_block(bid):
        block = bid[0] + grid[0] * (bid[1] + grid[1] * bid[2])
        watchdog_before_block(watchdog, ir, bid)
        frame = Frame(bid, grid, strict, races, block, watchdog)
        for p, a in zip(ir.params, params):
            frame.values[p] = a
        frame.run_region(ir.body, [])
        advance()

    from . import batch
    from .undetermined import launch_scope
    with launch_scope():             # CUTILE_STRICT=0 warnings: once per line in the launch
        if (blocks is None and recorder is None and grid[0] * grid[1] * grid[2]
                >= batch.MIN_BATCH_BLOCKS and config.batch() and batch.batchable(ir)):
            # Batches of blocks, exactly as one by one (interp/batch.py, docs/interpreter.md).
            batch.run_batched(ir, grid, args, params, strict, block_ids(grid, seed), races,
                              run_block, watchdog)
            return races
        order = block_order(grid, seed) if blocks is None else blocks
        batch.LAST = {"mode": "per-block"}
        for bid in order:
            run_block(bid)
    return races


def watchdog_before_block(watchdog: Watchdog, ir: KernelIR, bid: tuple) -> None:
    """The launch's wall-clock limit, checked before each block (and each batch)."""
    if watchdog.deadline is not None and time.monotonic() > watchdog.deadline:
        raise UndefinedBehaviorError(f"the launch ran longer than its {watchdog.limit:g} s "
                                     "wall-clock limit (CUTILE_INTERP_TIMEOUT)", ir.loc,
                                     bid, "R-EXEC-7")

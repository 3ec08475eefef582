"""The interpreter's launch driver: runs the typed IR once per block of the grid, exactly.

``run_kernel`` is the one entry point (``ct.launch`` on the interpreter, ``cutile.debug``,
``cutile.testing``): it sets up the launch (race tracker, wall-clock watchdog, block order,
UNDETERMINED-padding warning scope) and runs the blocks, in batches where the kernel allows
(``batch/``) and one by one otherwise, each in a ``Frame`` (``core.py``) whose ops the rules
of ``rules/`` compute.  It sits on top of ``cutile/interp/``: nothing in the package imports
it; importing it fills the rule tables (``rules/`` and ``batch/`` register on import).
"""

from __future__ import annotations

import contextvars
import itertools
import random

import numpy as np

from .. import config
from ..ir.core import KernelIR
from ..ir.types import TileType
from ..progress import advance
from . import batch, rules  # noqa: F401  (rules: importing it fills the rule table)
from .core import Frame, PTile, Watchdog, watchdog_before_block
from .races import check_overlapping_args, tracker_for
from .undetermined import launch_scope

# A per-launch wall-clock limit set by a caller (``ct.tune``'s single_run_timeout_sec); the
# CUTILE_INTERP_TIMEOUT watchdog applies when none is set.
launch_time_limit: contextvars.ContextVar = contextvars.ContextVar("cutile_interp_limit",
                                                                   default=None)


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

    with launch_scope():             # CUTILE_STRICT=0 warnings: once per line in the launch
        if (blocks is None and recorder is None and grid[0] * grid[1] * grid[2]
                >= batch.MIN_BATCH_BLOCKS and config.batch() and batch.batchable(ir)):
            # Batches of blocks, exactly as one by one (interp/batch/, docs/interpreter.md).
            batch.run_batched(ir, grid, args, params, strict, block_ids(grid, seed), races,
                              run_block, watchdog)
            return races
        order = block_order(grid, seed) if blocks is None else blocks
        batch.LAST = {"mode": "per-block"}
        for bid in order:
            run_block(bid)
    return races

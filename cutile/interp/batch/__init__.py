"""Batched execution (issue 14): many blocks of a launch at once, the block as a leading axis.

Every value of a batch is the per-block value with one leading axis of length ``n`` (the
batch) or 1 (the same for every block: constants, grid extents, anything computed only from
them).  A batched rule (``@batched_rule(ops.X)``, table ``BATCHED``) computes an op for the
whole batch with the same NumPy operations as the per-block rule, so every block gets the same
bits (elementwise rules are the per-block ones: ``numerics`` broadcasts).  Control flow keeps
the batch together while the blocks agree and splits it by predicate where they do not
(``control``).  Memory accesses are one gather/scatter per batch (``memory``), logged in the
batch's journal (``log``); the other ops' batched rules are in ``value_rules``; the batch
frame and the values it holds are in ``frame``.

Exactness does not rely on the batch being well behaved: a batch runs as a transaction.  Its
stores keep undo records and its accesses are logged; anything the batched path does not
model exactly (undefined behaviour, a race, blocks of the batch touching one element, an op
without a batched rule reached, a divergence it cannot split) raises ``Fallback`` or the
rule's own error, the batch's stores are undone and its blocks run again one by one on the
per-block machine, which produces the exact result or the exact error report.

This package's own module is the batch driver: which kernels run batched (``batchable``),
how many blocks per batch, and ``run_batched``, which the launch driver (``machine.py``) calls.
Importing it fills ``BATCHED`` (its rule modules register on import).
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from ... import config
from ...enums import MemoryOrder
from ...ir.core import KernelIR, walk
from ...ir.types import TileType
from ...progress import advance
from ...semantics.buffers import root_of
from ..core import PTile, watchdog_before_block
from ..races import written_params
from . import control, memory, value_rules  # noqa: F401  (each registers its batched rules)
from .frame import BATCHED, BatchFrame
from .log import BatchLog

# -- which kernels run batched ------------------------------------------------------------------
# Ops without a batched rule, and why: a kernel using one runs per block entirely.
FALLBACK: dict[str, str] = {
    "AtomicRMW": "atomics apply in a defined per-block order (R-ATOM); blocks of a batch would "
                 "interleave them",
    "AtomicCAS": "atomics apply in a defined per-block order (R-ATOM)",
    "RawLoad": "raw-memory accesses sit beside atomics (spin-wait flags); per-block order",
    "RawStore": "raw-memory accesses sit beside atomics (spin-wait flags); per-block order",
    "Print": "output appears in block order, one block's lines together",
    "Assert": "the first failing block in block order is reported, after the prints before it",
    "Breakpoint": "the debugger stops in one block at a time (pdb shows one block's values)",
    "Watch": "trace records are kept per block in execution order",
    # (and a Load/Store with a non-WEAK memory_order: an atomic access, per-block order, as
    # AtomicRMW; batchable() checks the field)
    "ForeignPointer": "addresses of per-block array views; rare, kept per block",
    "FromForeign": "builds a per-block array view from an address; rare, kept per block",
    "AdvancedGather": "advanced indexing of a per-block view; no batched rule yet (per block)",
    "AdvancedScatter": "advanced indexing of a per-block view; no batched rule yet (per block)",
    "ReduceFn": "user combine functions run a region per tree step; no batched rule yet",
    "ScanFn": "user combine functions run a region per scan step; no batched rule yet",
    "MmaScaled": "block-scaled mma, rare; no batched rule yet (per block)",
    "PackBytes": "flattens the whole tile into bytes; no batched rule yet (per block)",
    "UnpackBytes": "flattens the whole tile into bytes; no batched rule yet (per block)",
}

_batchable: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def batchable(ir: KernelIR) -> bool:
    """Whether every op of the kernel has a batched rule (cached per kernel IR); terminators
    (``@opdef(terminator=...)``) are run by the region runner, not a rule."""
    ok = _batchable.get(ir)
    if ok is None:
        ok = _batchable[ir] = all(
            (type(op) in BATCHED or op.is_terminator)
            and getattr(op, "memory_order", MemoryOrder.WEAK) is MemoryOrder.WEAK
            for op in walk(ir.body))
    return ok


def batch_size(ir: KernelIR, nblocks: int) -> int:
    """Blocks per batch: the memory budget (``CUTILE_BATCH_BYTES``) over a block's footprint,
    taken as the bytes of every tile value the kernel defines (an upper bound of what one block
    holds at once, poison masks included)."""
    cached = _footprint.get(ir)
    if cached is None:
        per_block = 64
        for op in walk(ir.body):
            for r in op.results:
                t = r.type
                if isinstance(t, TileType):
                    size = math.prod(t.shape)
                    per_block += size * (t.dtype.np_dtype.itemsize + 1)
        cached = _footprint[ir] = per_block
    return max(1, min(nblocks, config.batch_bytes() // cached))


_footprint: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

# Fewer blocks than this run one by one: a batch has a fixed cost of a few hundred
# microseconds (the race log, strided views), more than a block or two of small tiles.
MIN_BATCH_BLOCKS = 4


# -- the driver ------------------------------------------------------------------------------
# What the last launch did (tests check that batching ran): mode, batches, fallback batches.
# Each launch builds its own dict and publishes it here (concurrent launches never share one).
LAST: dict = {}


def _log_roots(ir: KernelIR, args: list, races) -> set | None:
    """Buffers whose accesses are logged: those the kernel may write (None: all)."""
    if races is not None:
        return races.roots
    written = written_params(ir)
    if written is None:
        return None
    return {id(root_of(a)) for i, a in enumerate(args)
            if i in written and isinstance(a, np.ndarray)}


def run_batched(ir: KernelIR, grid: tuple, args: list, params: list, strict: bool,
                bids_all: np.ndarray, races, run_block, watchdog) -> None:
    """Run the blocks ``bids_all`` ((n, 3), in launch order) in batches (see the module doc);
    ``run_block(bid)`` runs one block on the per-block machine, for batches that fall back."""
    order = _Order(bids_all)
    size = batch_size(ir, len(order))
    roots = _log_roots(ir, args, races)
    scratch: dict = {}
    bparams = [PTile(np.asarray(a.data)[None]) if isinstance(a, PTile) else a for a in params]
    stats = {"mode": "batched", "batch": size, "batches": 0, "fallbacks": 0, "why": []}
    global LAST
    LAST = stats
    for s in range(0, len(order), size):
        watchdog_before_block(watchdog, ir, order[s])
        log = BatchLog(races, roots, scratch)
        frame = BatchFrame(bids_all[s:s + size], grid, strict, log, watchdog)
        for p, a in zip(ir.params, bparams):
            frame.values[p] = a
        stats["batches"] += 1
        try:
            frame.run_region(ir.body, [], top=True)
            log.commit()
            advance(frame.n)                    # blocks done (progress.py)
        except Exception as e:      # anything: the per-block machine decides, exactly
            log.rollback()
            stats["fallbacks"] += 1
            log.forget_fresh()
            if len(stats["why"]) < 8:
                stats["why"].append(f"{type(e).__name__}: {e}")
            for bid in order[s:s + size]:
                run_block(bid)


class _Order:
    """Block ids ``(x, y, z)`` of the rows of an (n, 3) array, as the per-block machine takes
    them (built only for the blocks that need one)."""

    __slots__ = ("bids",)

    def __init__(self, bids: np.ndarray):
        self.bids = bids

    def __len__(self) -> int:
        return len(self.bids)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [tuple(int(v) for v in row) for row in self.bids[i].tolist()]
        return tuple(int(v) for v in self.bids[i].tolist())

"""Batched execution (issue 14): many blocks of a launch at once, the block as a leading axis.

Every value of a batch is the per-block value with one leading axis of length ``n`` (the
batch) or 1 (the same for every block: constants, grid extents, anything computed only from
them).  A batched rule (``@batched_rule(ops.X)``, table ``BATCHED``) computes an op for the
whole batch with the same NumPy operations as the per-block rule, so every block gets the same
bits (elementwise rules are the per-block ones: ``numerics`` broadcasts).  Control flow keeps
the batch together while the blocks agree and splits it by predicate where they do not
(``batch_control``).  Memory accesses are one gather/scatter per batch (``batch_memory``).

Exactness does not rely on the batch being well behaved: a batch runs as a transaction.  Its
stores keep undo records and its accesses are logged; anything the batched path does not
model exactly (undefined behaviour, a race, blocks of the batch touching one element, an op
without a batched rule reached, a divergence it cannot split) raises ``Fallback`` or the
rule's own error, the batch's stores are undone and its blocks run again one by one on the
per-block machine, which produces the exact result or the exact error report.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable

import numpy as np

from .. import config
from ..enums import MemoryOrder
from ..errors import TileInternalError
from ..ir.core import KernelIR, Op, Region, Value, walk
from ..ir.types import TileType
from ..progress import advance
from .machine import PTile, Signal

BATCHED: dict[type, Callable] = {}


class Fallback(Exception):
    """The batched path cannot run this batch exactly: undo it and run its blocks one by one."""


class DifferentArrays(Fallback):
    """Values to merge are different arrays in different blocks (a ``Split`` may follow)."""


def batched_rule(*op_classes):
    """Register the batched rule of IR op classes: ``fn(bframe, op) -> result(s)``."""

    def wrap(fn):
        for cls in op_classes:
            BATCHED[cls] = fn
        return fn

    return wrap


class Gathered(PTile):
    """A batched tile whose block j holds ``tiles[index[j]]``: a load's windows picked from a
    few distinct tiles (a matmul grid's A tile depends only on the block's row).  ``data``
    is gathered on first use; ``mma`` uses the distinct tiles directly
    (``matmul_numerics.matmul_factored``: one GEMM over them).  Never poisoned."""

    __slots__ = ("tiles", "index", "_data")

    def __init__(self, tiles: np.ndarray, index: np.ndarray):
        self.tiles, self.index, self._data, self.poison = tiles, index, None, None

    @property
    def data(self) -> np.ndarray:
        if self._data is None:
            self._data = self.tiles[self.index]
        return self._data


def lead(t) -> int:
    """Length of the leading (batch) axis of a batched value: 1 (uniform) or the batch."""
    return len(t.index) if type(t) is Gathered else t.data.shape[0]


def subset(x, sel: np.ndarray):
    """Value ``x`` restricted to the blocks ``sel`` of its batch (uniform values unchanged)."""
    if not isinstance(x, PTile) or lead(x) == 1:
        return x
    if type(x) is Gathered:
        return Gathered(x.tiles, x.index[sel])
    return PTile(x.data[sel], None if x.poison is None else x.poison[sel])


def expand(x, n: int):
    """``x`` with a leading axis of exactly ``n`` (a broadcast view where it was uniform)."""
    if not isinstance(x, PTile) or lead(x) == n:
        return x
    shape = (n,) + x.data.shape[1:]
    return PTile(np.broadcast_to(x.data, shape),
                 None if x.poison is None else np.broadcast_to(x.poison, shape))


def merge(n: int, parts: list) -> PTile:
    """One value for a batch of ``n`` from ``(sel, value)`` parts covering it."""
    t0 = parts[0][1]
    if not isinstance(t0, PTile):       # arrays (and lists of them): one for the whole batch
        if any(t is not t0 for _, t in parts):
            raise DifferentArrays("blocks hold different arrays")
        return t0
    out = np.empty((n,) + t0.data.shape[1:], t0.data.dtype)
    poison = None
    for sel, t in parts:
        out[sel] = t.data
        if t.poison is not None:
            if poison is None:
                poison = np.zeros(out.shape, bool)
            poison[sel] = t.poison
    return PTile(out, poison)


class BatchFrame:
    """The state of a batch of blocks: batched values keyed by IR value.

    ``bids`` is an (n, 3) int64 array of the blocks' ids; a sub-frame (``sub``) runs part of
    the batch (a split by predicate) and takes the values it has not computed itself from its
    parent, restricted to its blocks.  ``top`` marks the frames running the kernel body's own
    region, where blocks may leave by ``return`` while the others go on."""

    __slots__ = ("values", "bids", "n", "grid", "strict", "log", "watchdog", "parent", "sel")
    batched = True                  # undetermined.relied_on: fall back, the per-block run warns

    def __init__(self, bids: np.ndarray, grid: tuple, strict: bool, log, watchdog,
                 parent=None, sel=None):
        self.values: dict[Value, object] = {}
        self.bids = bids
        self.n = len(bids)
        self.grid = grid
        self.strict = strict
        self.log = log
        self.watchdog = watchdog        # the launch's wall-clock limit (loops poll it)
        self.parent = parent
        self.sel = sel

    def __getitem__(self, v: Value):
        vals = self.values
        x = vals.get(v, _MISSING)
        if x is _MISSING:
            if self.parent is None:
                raise KeyError(v)
            x = vals[v] = subset(self.parent[v], self.sel)
        return x

    def sub(self, sel: np.ndarray) -> BatchFrame:
        return BatchFrame(self.bids[sel], self.grid, self.strict, self.log, self.watchdog,
                          self, sel)

    def blocks(self) -> np.ndarray:
        """Linear block numbers of the batch (bid(0) fastest), as the race tracker counts."""
        g = self.grid
        b = self.bids
        return (b[:, 0] + g[0] * (b[:, 1] + g[1] * b[:, 2])).astype(np.int32)

    def run_region(self, region: Region, args: list, top: bool = False):
        """Run ``region`` for the batch.  Returns a Signal or None when every block left the
        region the same way, else a ``Multi`` (which blocks left how).  An op may leave only
        some blocks going on (``Narrow``: the others took a break/continue/return); the rest
        of the region then runs for those.  An op whose blocks hold different arrays
        (``Split``) has the rest of the region run once per group of blocks.  At the kernel's
        top level (``top``) blocks that return are simply done."""
        vals = self.values
        for a, x in zip(region.args, args):
            vals[a] = x
        return self._run(region.ops, 0, top)

    def _run(self, ops: list, start: int, top: bool):
        f = self
        vals = f.values
        pos = None              # positions of f's blocks in this frame's batch (None: all)
        exits: list = []
        for i in range(start, len(ops)):
            op = ops[i]
            if op.is_terminator:
                sig = Signal(op.exit_kind, [f[v] for v in getattr(op, "values", ())])
                return _finish(sig, exits, pos, self.n)
            out = BATCHED[type(op)](f, op)
            if isinstance(out, Signal):
                return _finish(out, exits, pos, self.n)
            if isinstance(out, Narrow):
                for kind, sel, xs in out.exits:
                    if not (top and kind == "return"):
                        exits.append((kind, sel if pos is None else pos[sel], xs))
                if len(out.sel) == 0:
                    return _finish(Signal("return", []) if top else None, exits, pos,
                                   self.n, empty=True)
                pos = out.sel if pos is None else pos[out.sel]
                f = f.sub(out.sel)
                vals = f.values
                out = out.values
            if isinstance(out, Split):
                parts = []
                for sel, xs in out.groups:
                    g = f.sub(sel)
                    for r, x in zip(op.results, xs):
                        g.values[r] = x
                    sig = g._run(ops, i + 1, top)
                    if not top:
                        parts += parts_of(sig, sel if pos is None else pos[sel])
                if top:
                    return None
                return Multi(exits + parts)
            results = op.results
            if not results:
                continue
            if isinstance(out, list):
                for r, x in zip(results, out):
                    vals[r] = x
            else:
                _check_result(op, results[0], out, f.n)
                vals[results[0]] = out
        return _finish(None, exits, pos, self.n)


class Split:
    """An op's results when its blocks hold different arrays: ``(sel, values)`` per group of
    blocks holding the same ones (the rest of the region runs once per group)."""

    __slots__ = ("groups",)

    def __init__(self, groups: list):
        self.groups = groups


_MISSING = object()


class Narrow:
    """An op's result after which only the blocks ``sel`` (of the frame that ran it) go on,
    with ``values`` for those; ``exits`` lists the others: ``(kind, sel, values)``."""

    __slots__ = ("sel", "values", "exits")

    def __init__(self, sel: np.ndarray, values: list, exits: list):
        self.sel = sel
        self.values = values
        self.exits = exits


class Multi:
    """How the blocks of a frame left a region when they did not all leave it the same way:
    ``parts`` of ``(kind, sel, values)`` (kind None: fell through), covering the batch."""

    __slots__ = ("parts",)

    def __init__(self, parts: list):
        self.parts = parts


def _finish(sig, exits: list, pos, n: int, empty: bool = False):
    if not exits:
        return sig
    parts = list(exits)
    if not empty:
        parts.append((None if sig is None else sig.kind,
                      np.arange(n) if pos is None else pos, [] if sig is None else sig.values))
    return Multi(parts)


def parts_of(sig, sel: np.ndarray) -> list:
    """``(kind, sel, values)`` parts of a region's outcome for the blocks ``sel`` (kind None:
    fell through)."""
    if isinstance(sig, Multi):
        return [(k, sel[s], xs) for k, s, xs in sig.parts]
    if sig is None:
        return [(None, sel, [])]
    return [(sig.kind, sel, sig.values)]


def merge_parts(n: int, parts: list, count: int) -> list:
    """``count`` values for a batch of ``n`` from ``(sel, values)`` parts covering it."""
    if len(parts) == 1 and len(parts[0][0]) == n and (parts[0][0] == np.arange(n)).all():
        return list(parts[0][1])
    return [merge(n, [(sel, xs[k]) for sel, xs in parts]) for k in range(count)]


def narrow(n: int, stay: list, exits: list, count: int):
    """The result of an op whose blocks ``stay`` parts go on and ``exits`` parts left."""
    if not exits:
        return merge_parts(n, stay, count)
    if not stay:
        return Narrow(np.zeros(0, np.int64), [], exits)
    sel = np.sort(np.concatenate([s for s, _ in stay]))
    local = [(np.searchsorted(sel, s), xs) for s, xs in stay]
    return Narrow(sel, merge_parts(len(sel), local, count), exits)


def _check_result(op: Op, v: Value, out, n: int) -> None:
    """The batched twin of machine._check_result: per-block dtype and shape exactly."""
    t = v.type
    if isinstance(t, TileType):
        d = out.tiles if type(out) is Gathered else out.data     # (not gathered for this)
        if d.shape[1:] != t.shape or d.dtype != t.dtype.np_dtype or lead(out) not in (1, n):
            raise TileInternalError(
                f"batched rule for {type(op).__name__} produced {d.dtype}{list(d.shape)}, "
                f"IR says {t} for a batch of {n}", op.loc)


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
    from ..semantics.buffers import root_of
    from .races import written_params
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
    from .batch_log import BatchLog
    from .machine import watchdog_before_block
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

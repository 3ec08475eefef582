"""The batched path's vocabulary: the batch frame, batched values and the batched-rule table.

Every value of a batch is the per-block value with one leading axis of length ``n`` (the
batch) or 1 (the same for every block).  ``BatchFrame`` holds a batch's values and runs a
region op by op through ``BATCHED`` (filled by ``@batched_rule`` in ``control``, ``memory``
and ``value_rules``); ``Narrow``, ``Split`` and ``Multi`` say how the blocks of a batch
left an op or a region when they did not all go the same way.  It imports only the
interpreter's vocabulary (``core``): the batched rules and the batch driver
(``batch/__init__.py``) stand on it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...errors import TileInternalError
from ...ir.core import Op, Region, Value
from ...ir.types import TileType
from ..core import Fallback, PTile, Signal

BATCHED: dict[type, Callable] = {}


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
                check_result(op, results[0], out, f.n)
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


def check_result(op: Op, v: Value, out, n: int) -> None:
    """The batched twin of ``core.Frame``'s check of each result: per-block dtype and shape
    exactly."""
    t = v.type
    if isinstance(t, TileType):
        d = out.tiles if type(out) is Gathered else out.data     # (not gathered for this)
        if d.shape[1:] != t.shape or d.dtype != t.dtype.np_dtype or lead(out) not in (1, n):
            raise TileInternalError(
                f"batched rule for {type(op).__name__} produced {d.dtype}{list(d.shape)}, "
                f"IR says {t} for a batch of {n}", op.loc)

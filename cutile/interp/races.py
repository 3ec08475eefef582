"""Data races between blocks (R-EXEC-4), detected by the interpreter.

Blocks run concurrently on a GPU, in an unspecified order; a non-atomic access to an element
that another block of the same launch writes is a data race with an undefined result.  The
interpreter runs the blocks one after another, so without a check it would quietly produce one
of the possible answers.  ``RaceTracker`` records, per element of every buffer behind an array
argument, the block that wrote it and the block(s) that read it during the launch, and reports
the first access that conflicts with another block's (read after another block's write, or a
write after another block's read or write).  A store of the value an element already holds is
not a write here: every block setting the same flag is harmless in any order.

Elements are identified by address (a slice, a transposed view and the original array share
one buffer), so accesses through different views of one argument are compared.  Atomics are
the sanctioned way for blocks to communicate: atomic accesses of different blocks never race
each other, but a plain access to an element that another block accessed atomically (a plain
read of an atomically modified element, a plain write of an atomically accessed one) is a race,
and so is an atomic access to an element another block plainly wrote (or plainly read, when the
atomic changes it).  Out-of-bounds lanes are not accesses.  One launch's tracker costs two int32
per element of the buffers it touches, two more once an atomic touches the buffer.
"""

from __future__ import annotations

import weakref

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .memory_model import OutOfBounds

_NONE, _MANY = -1, -2


def window_addresses(sub: np.ndarray) -> np.ndarray:
    """Byte addresses of every element of a (strided) NumPy view, in C order."""
    addr = np.asarray(sub.__array_interface__["data"][0], dtype=np.int64)
    for k, (n, st) in enumerate(zip(sub.shape, sub.strides)):
        shape = [1] * sub.ndim
        shape[k] = n
        addr = addr + (np.arange(n, dtype=np.int64) * st).reshape(shape)
    return np.broadcast_to(addr, sub.shape).ravel()


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.itemsize in (1, 2, 4, 8) else a


def _byte_bounds(a: np.ndarray) -> tuple[int, int]:
    try:
        from numpy.lib.array_utils import byte_bounds  # NumPy >= 2.0
    except ImportError:                                       # pragma: no cover - NumPy 1.x
        byte_bounds = np.byte_bounds
    return byte_bounds(a)


def _root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


_written: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def written_params(ir) -> set[int] | None:
    """Indices of the array parameters the kernel may write (Store/Scatter, through
    ``Array.slice`` views); None when a written array cannot be traced to a parameter.
    Cached per kernel IR."""
    if ir not in _written:
        _written[ir] = _trace_written(ir)
    return _written[ir]


def _trace_written(ir) -> set[int] | None:
    from ..ir import ops
    from ..ir.core import walk
    producer = {}
    for op in walk(ir.body):
        for r in op.results:
            producer[r] = op
    index = {p: i for i, p in enumerate(ir.params)}
    out = set()
    for op in walk(ir.body):
        if isinstance(op, (ops.Store, ops.Scatter, ops.AtomicRMW, ops.AtomicCAS,
                           ops.RawStore)):
            v = op.array
            while v in producer and isinstance(producer[v], ops.ArraySlice):
                v = producer[v].array
            if v not in index:
                return None
            out.add(index[v])
    return out


def check_overlapping_args(ir, args: list) -> None:
    """R-UB-5: a kernel that writes through an array argument whose memory overlaps another
    array argument (the same array passed twice, a view of it) has an undefined result: its
    blocks may see the other argument's elements before or after a write.  Raised before any
    block runs, naming both parameters."""
    arrays = [(i, a) for i, a in enumerate(args) if isinstance(a, np.ndarray) and a.size]
    if len(arrays) < 2:
        return
    written = written_params(ir)
    for k, (i, a) in enumerate(arrays):
        for j, b in arrays[k + 1:]:
            if written is not None and i not in written and j not in written:
                continue
            if not np.may_share_memory(a, b) or not np.shares_memory(a, b, max_work=10 ** 6):
                continue
            names = [ir.params[x].hint or f"argument #{x}" for x in (i, j)]
            w, other = (names if written is None or i in written else names[::-1])
            from ..errors import UndefinedBehaviorError
            raise UndefinedBehaviorError(
                f"array arguments {names[0]!r} and {names[1]!r} overlap in memory and the "
                f"kernel writes through {w!r}: its blocks may read {other!r} before or after "
                f"another block's write, so the result is undefined; pass separate arrays "
                f"(e.g. a copy)", ir.loc, None, "R-UB-5")


def tracker_for(ir, grid: tuple, args: list) -> RaceTracker | None:
    """The launch's tracker, or None when no race is possible: one block, or no array
    written.  Only buffers behind written parameters are tracked (a race needs a write; two
    parameters sharing memory are undefined already, R-UB-5)."""
    if grid[0] * grid[1] * grid[2] <= 1:
        return None
    written = written_params(ir)
    arrays = [a for i, a in enumerate(args)
              if isinstance(a, np.ndarray) and (written is None or i in written)]
    if not arrays:
        return None
    return RaceTracker(grid, {id(_root(a)) for a in arrays})


class RaceTracker:
    """Per-launch record of which block wrote / read each element (see the module doc)."""

    def __init__(self, grid: tuple = (1, 1, 1), roots: set | None = None):
        self.grid = grid
        self.roots = roots                # ids of the tracked buffers (None: all)
        self._bufs: dict = {}             # (id(root), itemsize) -> (root, low, writer, reader)
        self._atomics: dict = {}          # same key -> (atomic accessor, atomic modifier)
        self._pending: list = []          # deferred state updates (batches), applied in order

    def tracks(self, array: np.ndarray) -> bool:
        return self.roots is None or id(_root(array)) in self.roots

    @property
    def _buffers(self) -> dict:
        """The per-buffer states, deferred updates applied."""
        self.flush()
        return self._bufs

    def defer(self, update) -> None:
        """Run ``update(self)`` (a batch's change of the state, batch_log) before the state is
        next looked at: a launch's last batch never pays for a state nobody reads."""
        self._pending.append(update)

    def flush(self) -> None:
        """Apply the deferred updates, oldest first."""
        while self._pending:
            self._pending.pop(0)(self)

    def _state(self, array: np.ndarray):
        """(low address, writer, reader) of the buffer behind ``array`` (created on first use:
        one int32 per element of the buffer, for this element size)."""
        if self._pending:
            self.flush()
        return self.state_of(_root(array), array.itemsize)

    def state_of(self, root: np.ndarray, item: int):
        """``_state`` of a buffer by root and element size, without applying deferred updates
        (the deferred updates themselves use it)."""
        key = (id(root), item)
        entry = self._bufs.get(key)
        if entry is None:
            low, high = _byte_bounds(root)
            n = max((high - low) // item, 1)
            entry = (root, low, np.full(n, _NONE, np.int32), np.full(n, _NONE, np.int32))
            self._bufs[key] = entry
        return entry[1], entry[2], entry[3]

    def _atomic_state(self, array: np.ndarray, create: bool):
        """(accessor, modifier): the block that accessed / changed each element atomically
        (None until an atomic touches the buffer, unless ``create``)."""
        key = (id(_root(array)), array.itemsize)
        st = self._atomics.get(key)
        if st is None and create:
            n = self._state(array)[1].size
            st = self._atomics[key] = (np.full(n, _NONE, np.int32), np.full(n, _NONE, np.int32))
        return st

    def _atomic_views(self, array: np.ndarray, access: tuple):
        """The atomic state laid out like a plain access (gathered copies), or None."""
        st = self._atomic_state(array, False)
        if st is None:
            return None
        kind, what = access[0], access[1]
        low = self._state(array)[0]
        addrs = window_addresses(what) if kind == "win" else what
        slots = (addrs - low) // array.itemsize
        return st[0][slots].reshape(np.shape(what) if kind == "win" else slots.shape), \
            st[1][slots].reshape(np.shape(what) if kind == "win" else slots.shape)

    def atomic(self, array: np.ndarray, addrs: np.ndarray, changed: np.ndarray, block: int,
               bid: tuple) -> None:
        """Atomic accesses at byte ``addrs`` (distinct); ``changed`` marks those that modified
        the element.  Races only with plain accesses of other blocks."""
        if addrs.size == 0:
            return
        low, writer, reader = self._state(array)
        acc, mod = self._atomic_state(array, True)
        slots = (addrs - low) // array.itemsize
        wv, rv = writer[slots], reader[slots]
        bad = (wv != _NONE) & (wv != block)
        if bad.any():
            self._race("accesses atomically", bad, wv, bid, "wrote")
        bad = changed & (rv != _NONE) & (rv != block)
        if bad.any():
            self._race("modifies atomically", bad, rv, bid, "read")
        for st, sel in ((acc, slice(None)), (mod, changed)):
            cur = st[slots[sel]]
            st[slots[sel]] = np.where(cur == _NONE, block, np.where(cur == block, cur, _MANY))

    def writer_of(self, array: np.ndarray, index: tuple) -> tuple | None:
        """The block ``(x, y, z)`` that wrote ``array[index]`` in this launch (None: no block
        changed it)."""
        if not self.tracks(array):
            return None
        low, writer, _ = self._state(array)
        addr = array.__array_interface__["data"][0] + sum(
            i * st for i, st in zip(index, array.strides))
        who = int(writer[(addr - low) // array.itemsize])
        if who < 0:
            return None
        g0, g1 = self.grid[0], self.grid[1]
        return (who % g0, who // g0 % g1, who // (g0 * g1))

    def _views(self, array: np.ndarray, access: tuple):
        """(writer, reader, slot numbers) for an access: for a window ("win", view) strided
        views of the state arrays laid out like the view (no index arrays: the common case is
        cheap); for points ("pts", addresses) gathered copies and the slots to write back."""
        kind, what = access[0], access[1]
        low, writer, reader = self._state(array)
        item = array.itemsize
        if kind == "win" and what.flags.c_contiguous:
            start = (what.__array_interface__["data"][0] - low) // item
            wv = writer[start:start + what.size].reshape(what.shape)
            rv = reader[start:start + what.size].reshape(what.shape)
            slots = None
        elif kind == "win" and all(st % item == 0 for st in what.strides):
            start = (what.__array_interface__["data"][0] - low) // item
            st = tuple(x // item * 4 for x in what.strides)
            wv = as_strided(writer[start:], shape=what.shape, strides=st)
            rv = as_strided(reader[start:], shape=what.shape, strides=st)
            slots = None
        else:
            addrs = window_addresses(what) if kind == "win" else what
            slots = (addrs - low) // item
            wv, rv = writer[slots], reader[slots]
        return wv, rv, slots, writer, reader

    def read(self, array: np.ndarray, access: tuple, block: int, bid: tuple) -> None:
        wv, rv, slots, writer, reader = self._views(array, access)
        if wv.size == 0:
            return
        bad = (wv != _NONE) & (wv != block)
        if bad.any():
            self._race("reads", bad, wv, bid, "wrote")
        at = self._atomic_views(array, access)
        if at is not None:
            bad = (at[1] != _NONE) & (at[1] != block)
            if bad.any():
                self._race("reads", bad, at[1], bid, "modified atomically")
        new_r = np.where(rv == _NONE, block, np.where(rv == block, rv, _MANY))
        if slots is None:
            rv[...] = new_r
        else:
            reader[slots] = new_r

    def write(self, array: np.ndarray, access: tuple, block: int, bid: tuple) -> None:
        """A write of ``access[3]`` over ``access[2]`` (laid out like the access).  Writing the
        value an element already holds changes nothing any order could observe: such lanes
        are not writes here (every block storing the same flag value is fine)."""
        old, new = access[2], access[3]
        changed = np.asarray(_bits(old) != _bits(new)).reshape(np.shape(old))
        if not changed.any():
            return
        wv, rv, slots, writer, reader = self._views(array, access)
        changed = changed.reshape(wv.shape)
        bad = changed & (wv != _NONE) & (wv != block)
        if bad.any():
            self._race("writes", bad, wv, bid, "wrote")
        bad = changed & (rv != _NONE) & (rv != block)
        if bad.any():
            self._race("writes", bad, rv, bid, "read")
        at = self._atomic_views(array, access)
        if at is not None:
            acc = at[0].reshape(wv.shape)
            bad = changed & (acc != _NONE) & (acc != block)
            if bad.any():
                self._race("writes", bad, acc, bid, "accessed atomically")
        if slots is None:
            wv[changed] = block
        else:
            writer[slots[changed.ravel()]] = block

    def _race(self, verb: str, bad: np.ndarray, state: np.ndarray, bid: tuple,
              what: str) -> None:
        k = tuple(int(i) for i in np.argwhere(bad)[0])
        other = int(state[k])
        g0, g1 = self.grid[0], self.grid[1]
        by = "another block" if other == _MANY else \
            f"block {(other % g0, other // g0 % g1, other // (g0 * g1))}"
        where = f"tile element {k}" if bad.ndim > 1 or len(k) > 1 else f"accessed element {k[0]}"
        raise OutOfBounds(
            "R-EXEC-4", f"data race: block {bid} {verb} an element ({where}) of an array that "
                        f"{by} {what} in the same launch; blocks run concurrently in an "
                        f"unspecified order, so the result is undefined (communicate through "
                        f"atomics, or give each block its own elements)")

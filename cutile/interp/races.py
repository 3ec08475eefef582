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

Acquire/release synchronisation (R-ATOM-8, the memory model of cuTile 1.7): an atomic with a
RELEASE (or ACQ_REL) order publishes its block's earlier accesses; an atomic with an ACQUIRE (or
ACQ_REL) order that reads an element last released by another block makes those accesses happen
before the acquiring block's later ones.  So a conflict between plain accesses ordered by such
a chain (a spin lock taken with ``atomic_cas(..., ACQUIRE)`` and released with
``atomic_xchg(..., RELEASE)``, a flag set with RELEASE and waited on with ACQUIRE) is not a
race.  ``Sync`` keeps the chain: a global clock that every acquire and release advances, the
clock value of every plain access (``wtime``/``rtime``, from the first synchronising atomic of the
launch on), per element the release "object" it last received (a set of (block, clock) points;
an RMW without release order continues the element's release sequence, one with release order
adds its own point), and per block the objects each of its acquires read.  A conflict with an
earlier access of block ``r`` at clock ``t`` is then ordered when a release of ``r`` after ``t``
is reachable backwards from the current block through those acquires (``Sync.ordered``, a
search run only for conflicting lanes).  BLOCK-scope atomics synchronise nothing between blocks.
Kept conservative: an element read by several unordered blocks, or accessed atomically by
several blocks, stays "many" (a later conflicting access is reported).
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..errors import UndefinedBehaviorError
from ..ir.effects import FOREIGN, written_roots
from ..semantics.buffers import bits, byte_bounds, root_of
from .memory_model import OutOfBounds

NO_BLOCK, MANY_BLOCKS = -1, -2    # element states: no block yet, several blocks


def window_addresses(sub: np.ndarray) -> np.ndarray:
    """Byte addresses of every element of a (strided) NumPy view, in C order."""
    addr = np.asarray(sub.__array_interface__["data"][0], dtype=np.int64)
    for k, (n, st) in enumerate(zip(sub.shape, sub.strides)):
        shape = [1] * sub.ndim
        shape[k] = n
        addr = addr + (np.arange(n, dtype=np.int64) * st).reshape(shape)
    return np.broadcast_to(addr, sub.shape).ravel()


def written_params(ir) -> set[int] | None:
    """Indices of the array parameters the kernel may write (``ir.effects``); None when a
    write goes through foreign memory, which may be any of them."""
    roots = written_roots(ir)
    return None if FOREIGN in roots else set(roots)


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
            raise UndefinedBehaviorError(
                f"array arguments {names[0]!r} and {names[1]!r} overlap in memory and the "
                f"kernel writes through {w!r}: its blocks may read {other!r} before or after "
                f"another block's write, so the result is undefined; pass separate arrays "
                f"(e.g. a copy)", ir.loc, None, "R-UB-5")


class Sync:
    """Happens-before through acquire/release atomics (see the module doc)."""

    def __init__(self):
        self.clock = 0
        self.objects: list = []          # object id -> tuple of (block, release clock) points
        self.acquires: dict = {}         # block -> [(clock, object ids)], in clock order
        self._known: dict = {}           # (block, other) -> latest access clock known ordered

    def acquire(self, block: int, ids: np.ndarray) -> None:
        self.clock += 1
        ids = np.unique(ids[ids >= 0])
        if ids.size:
            self.acquires.setdefault(block, []).append((self.clock, ids))

    def release(self, block: int, old: np.ndarray, continues: bool) -> np.ndarray:
        """New object ids for elements whose current ids are ``old``: a point (block, clock),
        joined with the element's earlier release sequence when this RMW did not acquire it
        (``continues``)."""
        self.clock += 1
        point = (block, self.clock)
        if not continues:
            self.objects.append((point,))
            return np.full(old.shape, len(self.objects) - 1, np.int32)
        out = np.empty(old.shape, np.int32)
        for o in np.unique(old):
            pts = (point,) if o < 0 else self.objects[o] + (point,)
            self.objects.append(pts)
            out[old == o] = len(self.objects) - 1
        return out

    def ordered(self, others: np.ndarray, times: np.ndarray, block: int) -> np.ndarray:
        """Per lane: whether block ``others`` access at clock ``times`` happens before the
        current point of ``block`` (program order, or a release of that block after the access
        reachable through ``block``'s acquires)."""
        out = others == block
        if block not in self.acquires:
            return out
        pairs = np.stack([others, times], axis=1)
        uniq, inv = np.unique(pairs, axis=0, return_inverse=True)
        ok = np.array([int(r) != block and self._hb(int(r), int(t), block) for r, t in uniq],
                      dtype=bool)
        return out | ok[np.reshape(inv, -1)].reshape(out.shape)

    def _hb(self, r: int, t: int, block: int) -> bool:
        if r < 0:
            return False                 # MANY_BLOCKS: several blocks, kept conservative
        if self._known.get((block, r), -1) >= t:
            return True
        seen: dict = {}
        stack = [(block, self.clock + 1)]
        while stack:
            b, before = stack.pop()
            for at, ids in reversed(self.acquires.get(b, ())):
                if at >= before:
                    continue
                for o in ids:
                    for pb, pt in self.objects[o]:
                        if pb == r and pt > t:
                            self._known[(block, r)] = max(self._known.get((block, r), -1), t)
                            return True
                        if pt > seen.get(pb, -1):
                            seen[pb] = pt
                            stack.append((pb, pt))
        return False


_ACQ = ("ACQUIRE", "ACQ_REL")
_REL = ("RELEASE", "ACQ_REL")


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
    names: dict = {}                      # buffer -> parameter names, for the report
    for p, a in zip(ir.params, args):
        if isinstance(a, np.ndarray) and p.hint:
            names.setdefault(id(root_of(a)), []).append(p.hint)
    return RaceTracker(grid, {id(root_of(a)) for a in arrays}, names)


class RaceTracker:
    """Per-launch record of which block wrote / read each element (see the module doc)."""

    def __init__(self, grid: tuple = (1, 1, 1), roots: set | None = None,
                 names: dict | None = None):
        self.grid = grid
        self.roots = roots                # ids of the tracked buffers (None: all)
        self.names = names or {}          # id of a buffer -> the parameters naming it
        self._bufs: dict = {}             # (id(root), itemsize) -> (root, low, writer, reader)
        self._atomics: dict = {}          # same key -> (atomic accessor, atomic modifier)
        self._pending: list = []          # deferred state updates (batches), applied in order
        self.sync: Sync | None = None     # from the launch's first acquire or release on
        self._times: dict = {}            # same key -> (wtime, rtime): clock of each access
        self._sync_ids: dict = {}         # same key -> release object of each element

    def tracks(self, array: np.ndarray) -> bool:
        return self.roots is None or id(root_of(array)) in self.roots

    @property
    def _buffers(self) -> dict:
        """The per-buffer states, deferred updates applied."""
        self.flush()
        return self._bufs

    def defer(self, update) -> None:
        """Run ``update(self)`` (a batch's change of the state, batch/log.py) before the state is
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
        return self.state_of(root_of(array), array.itemsize)

    def state_of(self, root: np.ndarray, item: int):
        """``_state`` of a buffer by root and element size, without applying deferred updates
        (the deferred updates themselves use it)."""
        key = (id(root), item)
        entry = self._bufs.get(key)
        if entry is None:
            low, high = byte_bounds(root)
            n = max((high - low) // item, 1)
            entry = (root, low, np.full(n, NO_BLOCK, np.int32), np.full(n, NO_BLOCK, np.int32))
            self._bufs[key] = entry
            if self.sync is not None:
                self._times[key] = (np.zeros(n, np.int32), np.zeros(n, np.int32))
        return entry[1], entry[2], entry[3]

    def _start_sync(self) -> Sync:
        """The first acquire or release of the launch: every access so far is at clock 0."""
        if self.sync is None:
            self.flush()
            self.sync = Sync()
            for key, entry in self._bufs.items():
                n = entry[2].size
                self._times[key] = (np.zeros(n, np.int32), np.zeros(n, np.int32))
        return self.sync

    def _unordered(self, bad: np.ndarray, who: np.ndarray, when, block: int) -> np.ndarray:
        """``bad`` (conflicting lanes) less those ordered before ``block`` by acquire/release
        (``when``: the clocks of the earlier accesses, laid out like ``who``)."""
        if self.sync is None or when is None or block not in self.sync.acquires:
            return bad
        sel = np.flatnonzero(bad.ravel())
        ok = self.sync.ordered(who.ravel()[sel], np.asarray(when).ravel()[sel], block)
        out = bad.copy()
        out.reshape(-1)[sel[ok]] = False
        return out

    def _atomic_state(self, array: np.ndarray, create: bool):
        """(accessor, modifier): the block that accessed / changed each element atomically
        (None until an atomic touches the buffer, unless ``create``)."""
        key = (id(root_of(array)), array.itemsize)
        st = self._atomics.get(key)
        if st is None and create:
            n = self._state(array)[1].size
            st = self._atomics[key] = (np.full(n, NO_BLOCK, np.int32),
                                       np.full(n, NO_BLOCK, np.int32))
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
               bid: tuple, order: str = "RELAXED", scope: str = "DEVICE",
               wrote: np.ndarray | None = None) -> None:
        """Atomic accesses at byte ``addrs`` (distinct); ``changed`` marks those that modified
        the element, ``wrote`` those the atomic wrote (all but failed compare-and-swaps).
        Races only with plain accesses of other blocks; ``order``/``scope`` (names of
        MemoryOrder/MemoryScope members) say what it synchronises (module doc)."""
        if addrs.size == 0:
            return
        low, writer, reader = self._state(array)
        acc, mod = self._atomic_state(array, True)
        slots = (addrs - low) // array.itemsize
        key = (id(root_of(array)), array.itemsize)
        syncs = scope != "BLOCK" and order in _ACQ + _REL
        if syncs:
            self._start_sync()
            ids = self._sync_ids.get(key)
            if ids is None:
                ids = self._sync_ids[key] = np.full(writer.size, -1, np.int32)
            if order in _ACQ:
                self.sync.acquire(block, ids[slots])
        times = self._times.get(key)
        wv, rv = writer[slots], reader[slots]
        bad = (wv != NO_BLOCK) & (wv != block)
        if bad.any():
            bad = self._unordered(bad, wv, None if times is None else times[0][slots], block)
            if bad.any():
                self._race(array, "accesses atomically", bad, wv, bid, "wrote")
        bad = changed & (rv != NO_BLOCK) & (rv != block)
        if bad.any():
            bad = self._unordered(bad, rv, None if times is None else times[1][slots], block)
            if bad.any():
                self._race(array, "modifies atomically", bad, rv, bid, "read")
        for st, sel in ((acc, slice(None)), (mod, changed)):
            cur = st[slots[sel]]
            st[slots[sel]] = np.where(cur == NO_BLOCK, block,
                                      np.where(cur == block, cur, MANY_BLOCKS))
        if syncs and order in _REL:
            w = slots if wrote is None else slots[wrote]
            ids[w] = self.sync.release(block, ids[w], order not in _ACQ)

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
        """(writer, reader, slot numbers, writer, reader, (wtime, rtime) or None) for an
        access: for a window ("win", view) strided views of the state arrays laid out like the
        view (no index arrays: the common case is cheap); for points ("pts", addresses)
        gathered copies and the slots to write back."""
        kind, what = access[0], access[1]
        low, writer, reader = self._state(array)
        times = self._times.get((id(root_of(array)), array.itemsize))
        arrays = (writer, reader) + (() if times is None else times)
        item = array.itemsize
        if kind == "win" and what.flags.c_contiguous:
            start = (what.__array_interface__["data"][0] - low) // item
            vs = [x[start:start + what.size].reshape(what.shape) for x in arrays]
            slots = None
        elif kind == "win" and all(st % item == 0 for st in what.strides):
            start = (what.__array_interface__["data"][0] - low) // item
            st = tuple(x // item * 4 for x in what.strides)
            vs = [as_strided(x[start:], shape=what.shape, strides=st) for x in arrays]
            slots = None
        else:
            addrs = window_addresses(what) if kind == "win" else what
            slots = (addrs - low) // item
            vs = [x[slots] for x in arrays]
        return vs[0], vs[1], slots, writer, reader, (None if times is None else
                                                     (vs[2], vs[3], times))

    def read(self, array: np.ndarray, access: tuple, block: int, bid: tuple) -> None:
        wv, rv, slots, writer, reader, tv = self._views(array, access)
        if wv.size == 0:
            return
        bad = (wv != NO_BLOCK) & (wv != block)
        if bad.any():
            bad = self._unordered(bad, wv, None if tv is None else tv[0], block)
            if bad.any():
                self._race(array, "reads", bad, wv, bid, "wrote")
        at = self._atomic_views(array, access)
        if at is not None:
            bad = (at[1] != NO_BLOCK) & (at[1] != block)
            if bad.any():
                self._race(array, "reads", bad, at[1], bid, "modified atomically")
        other = (rv != NO_BLOCK) & (rv != block)
        if tv is not None and other.any():
            # a read ordered after the previous reader's replaces it (one reader, not many)
            other = self._unordered(other, rv, tv[1], block)
        new_r = np.where(other, MANY_BLOCKS, block).astype(np.int32)
        if slots is None:
            rv[...] = new_r
            if tv is not None:
                tv[1][...] = self.sync.clock
        else:
            reader[slots] = new_r
            if tv is not None:
                tv[2][1][slots] = self.sync.clock

    def write(self, array: np.ndarray, access: tuple, block: int, bid: tuple) -> None:
        """A write of ``access[3]`` over ``access[2]`` (laid out like the access).  Writing the
        value an element already holds changes nothing any order could observe: such lanes
        are not writes here (every block storing the same flag value is fine)."""
        old, new = access[2], access[3]
        changed = np.asarray(bits(old) != bits(new)).reshape(np.shape(old))
        if not changed.any():
            return
        wv, rv, slots, writer, reader, tv = self._views(array, access)
        changed = changed.reshape(wv.shape)
        bad = changed & (wv != NO_BLOCK) & (wv != block)
        if bad.any():
            bad = self._unordered(bad, wv, None if tv is None else tv[0], block)
            if bad.any():
                self._race(array, "writes", bad, wv, bid, "wrote")
        bad = changed & (rv != NO_BLOCK) & (rv != block)
        if bad.any():
            bad = self._unordered(bad, rv, None if tv is None else tv[1], block)
            if bad.any():
                self._race(array, "writes", bad, rv, bid, "read")
        at = self._atomic_views(array, access)
        if at is not None:
            acc = at[0].reshape(wv.shape)
            bad = changed & (acc != NO_BLOCK) & (acc != block)
            if bad.any():
                self._race(array, "writes", bad, acc, bid, "accessed atomically")
        if slots is None:
            wv[changed] = block
            if tv is not None:
                tv[0][changed] = self.sync.clock
        else:
            writer[slots[changed.ravel()]] = block
            if tv is not None:
                tv[2][0][slots[changed.ravel()]] = self.sync.clock

    def _race(self, array: np.ndarray, verb: str, bad: np.ndarray, state: np.ndarray,
              bid: tuple, what: str) -> None:
        k = tuple(int(i) for i in np.argwhere(bad)[0])
        other = int(state[k])
        g0, g1 = self.grid[0], self.grid[1]
        by = "another block" if other == MANY_BLOCKS else \
            f"block {(other % g0, other // g0 % g1, other // (g0 * g1))}"
        where = f"tile element {k}" if bad.ndim > 1 or len(k) > 1 else f"accessed element {k[0]}"
        names = self.names.get(id(root_of(array)))
        of = "an array" if not names else "array " + " / ".join(repr(n) for n in names)
        raise OutOfBounds(
            "R-EXEC-4", f"data race: block {bid} {verb} an element ({where}) of {of} that "
                        f"{by} {what} in the same launch; blocks run concurrently in an "
                        f"unspecified order, so the result is undefined (communicate through "
                        f"atomics, or give each block its own elements)")

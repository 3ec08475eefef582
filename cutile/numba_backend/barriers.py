"""Barrier placement: a ``cuda.syncthreads()`` only where a shared-memory hazard exists.

The only intra-block communication is the backend's own shared-memory exchanges, all of the
form *write fragment -> barrier -> read*.  The write is always followed by a barrier (the
read-after-write hazard is certain: threads read what others wrote).  Before a write, a barrier
is needed only if some thread may still be reading the same buffer from an earlier exchange
(write-after-read): the tracker keeps the set of buffers read since the last barrier.

Control flow is block-uniform (scalars are replicated in every thread), so a barrier inside an
``if`` or a loop is legal.  The state where paths join is the union of the incoming states; a
loop head joins the state before the loop with the state at the end of the body (and at every
``continue``), computed by emitting the body twice when the first pass shows reads reaching the
back edge (see ``Gen.emit_loop``).

Global memory (R-EXEC-5, ``global_order``): the state also keeps the arrays read, written and
updated by commutative atomics since the last barrier; an op whose footprint conflicts with them
(read-after-write, write-after-read, write-after-write) gets a barrier before it.
"""

from __future__ import annotations

from .global_order import Access, overlaps


class BarrierState:
    """Buffers with reads, and global arrays with accesses, that no barrier has ordered yet
    (per thread block).  ``gatomic``: ``(root, kind)`` of commutative atomics."""

    __slots__ = ("pending", "greads", "gwrites", "gatomic")

    def __init__(self, pending=(), greads=(), gwrites=(), gatomic=()):
        self.pending: frozenset = frozenset(pending)
        self.greads: frozenset = frozenset(greads)
        self.gwrites: frozenset = frozenset(gwrites)
        self.gatomic: frozenset = frozenset(gatomic)

    def copy(self) -> BarrierState:
        return BarrierState(self.pending, self.greads, self.gwrites, self.gatomic)

    def join(self, other: BarrierState | None) -> BarrierState:
        if other is None:
            return self.copy()
        return BarrierState(self.pending | other.pending, self.greads | other.greads,
                            self.gwrites | other.gwrites, self.gatomic | other.gatomic)

    def needs_barrier_for_global(self, acc: Access) -> bool:
        """Whether ``acc`` conflicts with a global access no barrier has ordered yet."""
        atomic_roots = {r for r, _ in self.gatomic}
        for r in acc.reads:
            if overlaps(r, self.gwrites) or overlaps(r, atomic_roots):
                return True
        for w in acc.writes:
            if overlaps(w, self.greads | self.gwrites) or overlaps(w, atomic_roots):
                return True
        if acc.atomic is not None:
            r, kind = acc.atomic
            if overlaps(r, self.greads | self.gwrites):
                return True
            if any(overlaps(r, {a}) and k != kind for a, k in self.gatomic):
                return True
        return False

    def global_access(self, acc: Access) -> None:
        self.greads = self.greads | acc.reads
        self.gwrites = self.gwrites | acc.writes
        if acc.atomic is not None:
            self.gatomic = self.gatomic | {acc.atomic}

    def needs_barrier_before_write(self, bufs) -> bool:
        return any(b in self.pending for b in bufs)

    def barrier(self) -> None:
        self.pending = self.greads = self.gwrites = self.gatomic = frozenset()

    def read(self, buf: str) -> None:
        self.pending = self.pending | {buf}

    def __le__(self, other: BarrierState) -> bool:
        return (self.pending <= other.pending and self.greads <= other.greads
                and self.gwrites <= other.gwrites and self.gatomic <= other.gatomic)

    def __repr__(self) -> str:
        return (f"BarrierState({sorted(self.pending)}, reads={sorted(map(str, self.greads))}, "
                f"writes={sorted(map(str, self.gwrites))}, "
                f"atomics={sorted(self.gatomic, key=str)})")

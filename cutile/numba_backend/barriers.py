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
"""

from __future__ import annotations


class BarrierState:
    """Buffers with reads that no barrier has ordered yet (per thread block)."""

    __slots__ = ("pending",)

    def __init__(self, pending=()):
        self.pending: frozenset = frozenset(pending)

    def copy(self) -> BarrierState:
        return BarrierState(self.pending)

    def join(self, other: BarrierState | None) -> BarrierState:
        if other is None:
            return self.copy()
        return BarrierState(self.pending | other.pending)

    def needs_barrier_before_write(self, bufs) -> bool:
        return any(b in self.pending for b in bufs)

    def barrier(self) -> None:
        self.pending = frozenset()

    def read(self, buf: str) -> None:
        self.pending = self.pending | {buf}

    def __le__(self, other: BarrierState) -> bool:
        return self.pending <= other.pending

    def __repr__(self) -> str:
        return f"BarrierState({sorted(self.pending)})"

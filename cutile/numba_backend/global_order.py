"""Which global arrays an op reads and writes, for R-EXEC-5 barriers.

R-EXEC-5: within one block, memory operations on the same array take effect in program order.
A tile op is carried out by many threads, and the thread that touches an element in one op is
in general not the one that touches it in the next (collaborative loads, other layouts, gather
indices, atomics), so a write followed by a read or write of the same array — or a read
followed by a write — needs a ``cuda.syncthreads()`` between them, which also orders global
memory within the block.  ``barriers.BarrierState`` keeps what is pending; this module says
what each op touches.

Arrays are named by their root: a kernel parameter, through any ``ArraySlice`` (R-ARR-1 views
share memory).  Distinct parameters do not overlap (R-UB-5).  An array whose root is not
known (``Array.from_foreign``, an array chosen by control flow or from a list) is ``ANY``: it
may alias every array.

Atomic read-modify-writes of one commutative kind (add, max, min, and, or, xor) whose returned
old values are unused leave the same memory whatever their order, so a run of them on one array
needs no barrier between them (a histogram's loop of ``atomic_add``); any other atomic is a read
and a write.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..ir import ops
from ..ir.core import KernelIR, walk
from ..ir.effects import reads_array, writes_array

ANY = "*"
COMMUTATIVE = frozenset({"add", "max", "min", "and", "or", "xor"})


@dataclass(frozen=True)
class Access:
    """An op's global-memory footprint: roots read, roots written, and for a commutative atomic
    with unused result its ``(root, kind)``."""

    reads: frozenset = frozenset()
    writes: frozenset = frozenset()
    atomic: tuple | None = None


class GlobalAccesses:
    """Per kernel: the array roots and result uses needed to classify its ops."""

    def __init__(self, ir: KernelIR):
        self._ir = ir
        self._sync_orders: bool | None = None
        self.roots: dict[int, object] = {id(p): i for i, p in enumerate(ir.params)}
        self.uses: Counter = Counter()
        for op in walk(ir.body):
            for v in op.operands():
                self.uses[id(v)] += 1
            if isinstance(op, ops.ArraySlice):
                self.roots[id(op.results[0])] = self.root(op.array)

    def root(self, v) -> object:
        return self.roots.get(id(v), ANY)

    def sync_orders_data(self) -> bool:
        """Whether an acquire/release can order anything besides atomics: some plain (WEAK)
        access touches an array the kernel writes.  Without one (a histogram: plain reads of
        a read-only input, atomics on the bins) the barriers around a release or acquire
        atomic order nothing another block could observe, and are left out."""
        if self._sync_orders is None:
            written, plain = set(), set()
            for op in walk(self._ir.body):
                acc = self.of(op)
                if acc is None:
                    continue
                written |= acc.writes | ({acc.atomic[0]} if acc.atomic else set())
                ordered = getattr(op, "memory_order", None)
                if (reads_array(op) and writes_array(op)) or (      # an atomic
                        ordered is not None and ordered.name != "WEAK"):
                    continue
                plain |= acc.reads | acc.writes
            self._sync_orders = any(overlaps(r, written) for r in plain)
        return self._sync_orders

    def of(self, op) -> Access | None:
        """The footprint of ``op``; None if it touches no global memory (``ir.effects``: the
        op's declared ``reads``/``writes`` through its ``array`` operand)."""
        reads, writes = reads_array(op), writes_array(op)
        if not (reads or writes):
            return None
        r = self.root(op.array)
        if not writes:
            return Access(reads=frozenset({r}))
        if not reads:
            return Access(writes=frozenset({r}))
        if (isinstance(op, ops.AtomicRMW) and op.kind in COMMUTATIVE      # an atomic
                and not any(self.uses[id(v)] for v in op.results)):
            return Access(atomic=(r, op.kind))
        return Access(reads=frozenset({r}), writes=frozenset({r}))


def overlaps(root, roots) -> bool:
    """Whether ``root`` may share memory with one of ``roots``."""
    if not roots:
        return False
    return root == ANY or ANY in roots or root in roots

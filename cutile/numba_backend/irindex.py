"""Where each value of one kernel's IR is defined and used, and where each op stands.

Layout assignment (``assign.py``) and matmul planning (``mma_plan.py``) ask the same questions
of the IR: the op defining a value (or the region it is an argument of), how many ops use it,
the region and position of an op, the op owning a region.  ``IRIndex`` answers them from one
walk of the kernel; ``Assignment`` is one, and hands itself to its ``MmaPlanner``.
"""

from __future__ import annotations

from ..ir import ops
from ..ir.core import Region, Value
from ..ir.types import TileType


class IRIndex:
    def __init__(self, ir):
        self.defs: dict[int, tuple] = {}        # id(value) -> ("op", op) | ("arg", op, idx)
        self.uses: dict[int, int] = {}          # id(value) -> number of operand uses
        self.users: dict[int, list] = {}        # id(value) -> the ops using it
        self.place: dict[int, tuple] = {}       # id(op) -> (region, position)
        self.owner: dict[int, object] = {}      # id(region) -> the op owning it
        self._index(ir.body, None)
        self._rows: bool | None = None

    def _index(self, region: Region, owner) -> None:
        self.owner[id(region)] = owner
        for i, a in enumerate(region.args):
            self.defs[id(a)] = ("arg", owner, i, region)
        for pos, op in enumerate(region.ops):
            self.place[id(op)] = (region, pos)
            for v in op.operands():
                self.uses[id(v)] = self.uses.get(id(v), 0) + 1
                self.users.setdefault(id(v), []).append(op)
            for r in op.results:
                self.defs[id(r)] = ("op", op)
            for sub in op.regions():
                self._index(sub, op)

    def rows_in_warps(self) -> bool:
        """Whether the kernel reduces the result of an ``Mma`` along its last axis (through
        elementwise ops: ``max(qk * scale, axis=1)``): its tensor-core plans then put whole
        rows in one warp (``tensorcore.plan``), every mma alike, so row statistics broadcast
        back over any of their accumulators for free."""
        if self._rows is None:
            self._rows = any(self._reduces_mma_rows(op) for op in self._all_ops())
        return self._rows

    def _all_ops(self):
        return [region.ops[pos] for region, pos in self.place.values()]

    def _reduces_mma_rows(self, op) -> bool:
        if not isinstance(op, (ops.Reduce, ops.ReduceFn, ops.ArgReduce)):
            return False
        x = op.xs[0] if isinstance(op, ops.ReduceFn) else op.x
        nd = len(x.type.shape)
        if nd != 2 or (nd - 1) not in reduction_axes(op):
            return False
        seen, todo = set(), [x]
        while todo:
            v = todo.pop()
            if id(v) in seen:
                continue
            seen.add(id(v))
            d = self.defs.get(id(v))
            if d is None or d[0] != "op":
                continue
            if isinstance(d[1], ops.Mma):
                return True
            if isinstance(d[1], (ops.Unary, ops.Binary, ops.Compare, ops.Select, ops.Convert,
                                 ops.Fma, ops.Broadcast)):
                todo.extend(o for o in d[1].operands()
                            if isinstance(o.type, TileType) and o.type.shape == x.type.shape)
        return False

    def invariant_index(self, v: Value):
        """The ``BlockId`` or scalar integer ``Constant`` op defining ``v`` (loop-invariant
        wherever it stands), else None."""
        d = self.defs.get(id(v))
        if d is None or d[0] != "op":
            return None
        op = d[1]
        if isinstance(op, ops.BlockId) or (isinstance(op, ops.Constant) and op.shape == ()
                                          and isinstance(op.value, int)):
            return op
        return None

    def subtree(self, region: Region) -> list:
        out = []
        for o in region.ops:
            out.append(o)
            for sub in o.regions():
                out += self.subtree(sub)
        return out


def reduction_axes(op) -> list:
    """The axes a reduction consumes, in the order it consumes them (descending, as the
    interpreter reduces; all of them for an ``ArgReduce`` over the flattened tile)."""
    x = op.xs[0] if isinstance(op, ops.ReduceFn) else op.x
    nd = len(x.type.shape)
    if isinstance(op, ops.Reduce):
        axes = op.axes
    else:
        axes = range(nd) if op.axis is None else (op.axis,)
    return sorted({a % nd for a in axes}, reverse=True)

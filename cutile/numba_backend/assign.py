"""Layout assignment: the layout each IR value is produced in (``None``: materialised on use).

The rules (see docs/backend.md):

- scalars are replicated in every thread (control flow stays block-uniform);
- constants, iotas, and broadcasts/permutes/reshapes of them are *flexible*: they cost nothing
  to produce in whatever layout a consumer wants, so they have none of their own;
- loads, gathers, shape ops: the flat layout of their shape (coalesced);
- reductions: their source's layout without the reduced bits (``Layout.reduced``: where the
  tree leaves the result, lower/reduce.py);
- broadcasts whose uses all stand in their region: views (``broadcast_view``), materialised in
  each consumer's layout, so elementwise ops take their layout from the other operands;
- ``Mma``: a blocked layout (each thread a register sub-tile of the accumulator), or the
  layout of its plan (``mma_plan.py``: the tensor cores' fragments, ``tensorcore.py``, or the
  FFMA schedule's, ``ffma.py``) when one applies;
- elementwise ops: the layout of their first operand that is neither flexible nor a view nor a
  loop-carried value whose layout is being decided (the others are converted);
- loop-carried values: the layout of their initial value, or, when that is flexible (the
  usual ``acc = zeros(...)``), the layout of the value yielded back; ``If`` results likewise.

Matmul planning (which path each ``Mma`` takes, which loads it stages) is ``mma_plan.py``;
``Assignment`` indexes the IR (``irindex.IRIndex``) for both.
"""

from __future__ import annotations

from ..ir import ops
from ..ir.core import Region, Value
from ..ir.types import TileType
from . import layout as L
from .irindex import IRIndex, reduction_axes
from .mma_plan import MmaPlanner

FLEXIBLE_OPS = (ops.Constant, ops.Iota)


class Assignment(IRIndex):
    def __init__(self, ir, T: int, tensor_cores: bool = False, cp_async: bool = False,
                 ffma: bool = False, wgmma: bool = False, reg_cap: int = 255):
        super().__init__(ir)
        self.T = T
        self.layouts: dict[int, L.Layout | None] = {}
        self._busy: set[int] = set()
        # the path and operand staging of each Mma, whose result's layout follows its plan
        self.mma = MmaPlanner(self, T, tensor_cores=tensor_cores, cp_async=cp_async, ffma=ffma,
                              wgmma=wgmma, reg_cap=reg_cap)

    def broadcast_view(self, op) -> bool:
        """Whether a ``Broadcast`` of a tile with a layout is left as a *view*, materialised
        by each consumer in the layout it computes in (a register rename when the consumer's
        threads already hold the source elements: a reduced row broadcast back over the
        tile it came from) instead of in the flat layout first.  Only where every use stands
        in the broadcast's own region, so a non-free materialisation never moves into a loop
        the broadcast is outside of."""
        if not isinstance(op, ops.Broadcast) or self.layout(op.x) is None:
            return False
        if op.result.type.shape == ():
            return False
        region = self.place[id(op)][0]
        return all(self.place[id(u)][0] is region for u in self.users.get(id(op.result), ()))

    def _is_view(self, v: Value) -> bool:
        d = self.defs.get(id(v))
        return d is not None and d[0] == "op" and self.broadcast_view(d[1])

    def flexible(self, v: Value) -> bool:
        return self.layout(v) is None and isinstance(v.type, TileType) and v.type.shape != ()

    def layout(self, v: Value) -> L.Layout | None:
        key = id(v)
        if key in self.layouts:
            return self.layouts[key]
        if key in self._busy:                    # a cycle through loop-carried values
            return L.flat(v.type.shape, self.T)
        self._busy.add(key)
        try:
            lay = self._compute(v)
        finally:
            self._busy.discard(key)
        self.layouts[key] = lay
        return lay

    def _compute(self, v: Value) -> L.Layout | None:
        t = v.type
        if not isinstance(t, TileType):
            return None
        if t.shape == ():
            return L.flat((), self.T)
        d = self.defs.get(id(v))
        if d is None:
            return L.flat(t.shape, self.T)
        if d[0] == "arg":
            _, owner, idx, region = d
            return self._carried(owner, idx, region, t)
        op = d[1]
        if isinstance(op, FLEXIBLE_OPS):
            return None
        if op.rearranges:                  # the operand's elements, moved
            return None if self.layout(op.x) is None else L.flat(t.shape, self.T)
        if isinstance(op, ops.Mma):
            plan = self.mma.staging_plan(op)
            return plan.layout() if plan is not None else L.choose_blocked(t.shape, self.T)
        if isinstance(op, (ops.Unary, ops.Binary, ops.Compare, ops.Select, ops.Convert,
                           ops.Fma)):
            # broadcast views take the result's layout; a loop-carried value whose layout is
            # being decided (this op computes what is yielded back) follows the others
            for o in op.operands():
                if self._is_view(o) or id(o) in self._busy:
                    continue
                lay = self.layout(o)
                if lay is not None and lay.shape == t.shape:
                    return lay
            return L.flat(t.shape, self.T)
        if isinstance(op, (ops.Reduce, ops.ArgReduce, ops.ReduceFn)):
            x = op.xs[0] if isinstance(op, ops.ReduceFn) else op.x
            src = self.layout(x) or L.flat(x.type.shape, self.T)
            lay = src.reduced(reduction_axes(op))
            return lay.relabel(t.shape)
        if isinstance(op, (ops.For, ops.Loop)):
            i = op.results.index(v)
            off = 1 if isinstance(op, ops.For) else 0
            return self.layout(op.body.args[i + off])
        if isinstance(op, ops.If):
            i = op.results.index(v)
            for r in (op.then, op.orelse):
                term = r.terminator
                if isinstance(term, ops.Yield):
                    lay = self.layout(term.values[i])
                    if lay is not None:
                        return lay
            return L.flat(t.shape, self.T)
        return L.flat(t.shape, self.T)

    def _carried(self, owner, idx: int, region: Region, t: TileType) -> L.Layout:
        if isinstance(owner, ops.For):
            if idx == 0:
                return L.flat((), self.T)
            idx -= 1
        init = owner.inits[idx]
        lay = self.layout(init)
        if lay is not None:
            return lay
        for term in _loop_exits(region):
            vals = getattr(term, "values", ())
            if idx < len(vals):
                lay = self.layout(vals[idx])
                if lay is not None:
                    return lay
        return L.flat(t.shape, self.T)


def _loop_exits(region: Region):
    """Yield/Continue/Break terminators that belong to this loop body (not nested loops)."""
    for op in region.ops:
        if isinstance(op, (ops.Yield, ops.Continue, ops.Break)):
            yield op
        elif isinstance(op, ops.If):
            for r in (op.then, op.orelse):
                yield from _loop_exits_if(r)


def _loop_exits_if(region: Region):
    for op in region.ops:
        if isinstance(op, (ops.Continue, ops.Break)):
            yield op
        elif isinstance(op, ops.If):
            for r in (op.then, op.orelse):
                yield from _loop_exits_if(r)

"""Layout assignment: the layout each IR value is produced in (``None``: materialised on use).

The rules (see docs/backend.md):

- scalars are replicated in every thread (control flow stays block-uniform);
- constants, iotas, and broadcasts/permutes/reshapes of them are *flexible*: they cost nothing
  to produce in whatever layout a consumer wants, so they have none of their own;
- loads, gathers, reductions, shape ops: the flat layout of their shape (coalesced);
- ``Mma``: a blocked layout (each thread a register sub-tile of the accumulator), or the mma
  fragment layout of the tensor-core plan (``tensorcore.py``) when it applies;
- elementwise ops: the layout of their first non-flexible operand (the others are converted);
- loop-carried values: the layout of their initial value, or, when that is flexible (the
  usual ``acc = zeros(...)``), the layout of the value yielded back; ``If`` results likewise.
"""

from __future__ import annotations

from ..ir import ops
from ..ir.core import Region, Value
from ..ir.types import TileType
from . import layout as L
from . import tensorcore

FLEXIBLE_OPS = (ops.Constant, ops.Iota)
FLEX_SHAPE_OPS = (ops.Broadcast, ops.Permute, ops.Reshape)


class Assignment:
    def __init__(self, ir, T: int, tensor_cores: bool = False):
        self.T = T
        self.tensor_cores = tensor_cores
        self.defs: dict[int, tuple] = {}        # id(value) -> ("op", op) | ("arg", op, idx)
        self.layouts: dict[int, L.Layout | None] = {}
        self._busy: set[int] = set()
        self._index(ir.body, None)

    def _index(self, region: Region, owner) -> None:
        for i, a in enumerate(region.args):
            self.defs[id(a)] = ("arg", owner, i, region)
        for op in region.ops:
            for r in op.results:
                self.defs[id(r)] = ("op", op)
            for sub in op.regions():
                self._index(sub, op)

    # -- queries -----------------------------------------------------------------------------
    def tc_plan(self, op):
        """The tensor-core plan of an ``Mma`` (None: the FFMA path)."""
        return tensorcore.plan(op, self.T) if self.tensor_cores else None

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
        if isinstance(op, FLEX_SHAPE_OPS):
            return None if self.layout(op.x) is None else L.flat(t.shape, self.T)
        if isinstance(op, ops.Mma):
            plan = self.tc_plan(op)
            return plan.layout() if plan is not None else L.choose_blocked(t.shape, self.T)
        if isinstance(op, (ops.Unary, ops.Binary, ops.Compare, ops.Select, ops.Convert,
                           ops.Fma)):
            for o in op.operands():
                lay = self.layout(o)
                if lay is not None and lay.shape == t.shape:
                    return lay
            return L.flat(t.shape, self.T)
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

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
- ``Mma``: a blocked layout (each thread a register sub-tile of the accumulator), or the mma
  fragment layout of the tensor-core plan (``tensorcore.py``) when it applies;
- elementwise ops: the layout of their first operand that is neither flexible nor a view nor a
  loop-carried value whose layout is being decided (the others are converted);
- loop-carried values: the layout of their initial value, or, when that is flexible (the
  usual ``acc = zeros(...)``), the layout of the value yielded back; ``If`` results likewise.
"""

from __future__ import annotations

import dataclasses

from ..enums import MemoryOrder, PaddingMode
from ..ir import ops
from ..ir.core import Region, Value
from ..ir.effects import writes_memory
from ..ir.types import TileType
from . import ffma, tensorcore
from . import layout as L

FLEXIBLE_OPS = (ops.Constant, ops.Iota)
# shared memory the stages of a pipelined tensor-core mma may take: tiles whose two stages do
# not fit keep one (an H100 block may have 227 KiB; two stages of 128x256x128 would be 192 KiB)
PIPELINE_SMEM = 96 * 1024
# deepest pipeline: the copies of MAX_STAGES - 1 K tiles in flight while one computes
MAX_STAGES = 4


class Assignment:
    def __init__(self, ir, T: int, tensor_cores: bool = False, cp_async: bool = False,
                 ffma: bool = False):
        self.T = T
        self.tensor_cores = tensor_cores
        self.ffma = ffma                        # float32 mma: ffma.py's plan where it applies
        self.cp_async = cp_async
        self.defs: dict[int, tuple] = {}        # id(value) -> ("op", op) | ("arg", op, idx)
        self.layouts: dict[int, L.Layout | None] = {}
        self._busy: set[int] = set()
        self.uses: dict[int, int] = {}          # id(value) -> number of operand uses
        self.users: dict[int, list] = {}        # id(value) -> the ops using it
        self.place: dict[int, tuple] = {}       # id(op) -> (region, position)
        self.owner: dict[int, object] = {}      # id(region) -> the op owning it
        self._index(ir.body, None)
        self._direct: dict[int, tuple] | None = None
        self._rows: bool | None = None
        self._ytrans: set = set()

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

    # -- queries -----------------------------------------------------------------------------
    def _plan(self, op):
        """An ``Mma``'s plan before the transposed-B decision: the tensor cores' where they
        apply, else ``ffma.py``'s (None: the seeds' schedule).  ``_direct_map`` needs it
        without ``bt``, which it decides."""
        plan = tensorcore.plan(op, self.T, self.rows_in_warps()) if self.tensor_cores else None
        if plan is None and self.ffma:
            plan = ffma.plan(op, self.T)
        return plan

    def tc_plan(self, op):
        """The tensor-core plan of an ``Mma`` (None: another path); ``bt`` when its B operand
        is staged transposed (``transpose`` of a plain load, copied as it lies)."""
        plan = self._plan(op)
        if not isinstance(plan, tensorcore.TCPlan):
            return None
        if id(op) in self._direct_map_t():
            plan = dataclasses.replace(plan, bt=True)
        return plan

    def ffma_plan(self, op):
        """The vectorised FFMA plan of an ``Mma`` (``ffma.py``; None: another path)."""
        plan = self._plan(op)
        return plan if isinstance(plan, ffma.FFMAPlan) else None

    def staging_plan(self, op):
        """The plan whose swizzled staging (cp.async, pipelined K loop) an ``Mma`` uses: its
        tensor-core plan or its FFMA plan (None: the seeds' schedule)."""
        return self.tc_plan(op) or self.ffma_plan(op)

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

    def direct_operands(self, op) -> tuple:
        """(x load, y load) of a tensor-core ``Mma``: the ``Load`` ops whose tile the mma
        stages straight from global memory (``cp.async``, lower/matmul_tc.py) instead of
        through registers; None where the operand is not such a load."""
        return self._direct_map().get(id(op), (None, None))

    def staged_loads(self) -> list:
        """Every ``Load`` some tensor-core mma stages by cp.async."""
        return [ld for v in self._direct_map().values() if len(v) == 2 for ld in v
                if ld is not None]

    def direct_load(self, op) -> bool:
        """Whether a ``Load`` (or the ``Reshape`` dropping its unit dims) is staged by its
        tensor-core mma: nothing to emit where it stands."""
        return id(op) in self._direct_map()

    def _direct_map_t(self) -> set:
        """ids of the mmas whose B operand is staged transposed."""
        self._direct_map()
        return self._ytrans

    def _direct_map(self) -> dict:
        if self._direct is None:
            self._direct, self._ytrans = {}, set()
            for key in (self.place if self.cp_async else ()):
                region, pos = self.place[key]
                op = region.ops[pos]
                plan = self._plan(op) if isinstance(op, ops.Mma) else None
                if plan is not None and plan.kind in ("f16", "bf16", "f32"):  # 16-byte chunks
                    found = [self._stageable(v, region, pos, plan.epc) for v in (op.x, op.y)]
                    if found[1] is None and plan.kind != "f32":
                        found[1] = self._stageable_transposed(op.y, region, pos)
                        if found[1] is not None:
                            self._ytrans.add(key)
                    if found != [None, None]:
                        self._direct[key] = tuple(f and f[0] for f in found)
                        for f in found:
                            for skipped in f or ():
                                self._direct[id(skipped)] = ()
        return self._direct

    def pipelined(self, op):
        """The ``For`` whose K loop a tensor-core ``Mma`` software-pipelines (``stages``
        stages: the next iterations' operand tiles are copied while this one computes), or
        None.  Both operands must be staged by cp.async, two stages fit ``PIPELINE_SMEM``, the
        mma must stand directly in the loop's
        body with no ``break``/``continue``/``return`` anywhere in it, and the loads' arrays
        and indices must be the induction variable or values from outside the loop (so the
        next iteration's copy can be issued from this one)."""
        xl, yl = self.direct_operands(op)
        if xl is None or yl is None:
            return None
        plan = self.staging_plan(op)
        if 2 * plan.esize * (plan.M * plan.K + plan.K * plan.N) > PIPELINE_SMEM:
            return None
        found = self._every_iteration(op)
        if found is None:
            return None
        loop, inside = found
        iv = loop.body.args[0]
        inner = {id(o) for o in inside}
        for ld in (xl, yl):
            for v in (ld.array, *ld.index):
                if v is iv or self.invariant_index(v):
                    continue
                d = self.defs.get(id(v))                 # None: a kernel parameter
                if d is not None and (d[1] is loop or id(d[1]) in inner):  # carried / inside
                    return None
        return loop

    def invariant_operand_loop(self, op):
        """The ``For`` whose every iteration a tensor-core ``Mma`` stands in while its A
        operand comes from outside it (attention's query tile): that operand is staged once,
        in the first iteration, into a buffer of its own.  The mma must stand directly in the
        loop's body with no ``break``/``continue``/``return`` in it (every iteration that
        starts reaches the mma), and A must not be a load the mma stages itself."""
        if self.tc_plan(op) is None or self.direct_operands(op)[0] is not None:
            return None
        found = self._every_iteration(op)
        d = self.defs.get(id(op.x))
        if found is None or d is None:
            return None
        loop, inside = found
        src = d[1]          # the op defining A, or the op owning the region A is an argument of
        if src is loop or any(src is o for o in inside):
            return None
        return loop

    def _every_iteration(self, op):
        """(the ``For``, the ops inside its body) when ``op`` stands directly in a ``For``'s
        body with no ``break``/``continue``/``return`` anywhere in it, so every iteration
        that starts reaches ``op``; else None."""
        region, _ = self.place[id(op)]
        loop = self.owner.get(id(region))
        if not isinstance(loop, ops.For) or loop.body is not region:
            return None
        inside = self._subtree(region)
        if any(isinstance(o, (ops.Break, ops.Continue, ops.Return)) for o in inside):
            return None
        return loop, inside

    def stages(self, op) -> int:
        """Pipeline depth of a pipelined ``Mma``: as many stages of its two operand tiles as
        fit ``PIPELINE_SMEM``, at most ``MAX_STAGES`` (stages beyond the copies' latency buy
        nothing and cost occupancy); 2 when its loop pipelines other mmas too (their copies
        are waited for together)."""
        plan = self.staging_plan(op)
        stage = plan.esize * (plan.M * plan.K + plan.K * plan.N)
        if len(self.pipelined_in(self.pipelined(op))) > 1:
            return 2
        return max(2, min(MAX_STAGES, PIPELINE_SMEM // stage))

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

    def pipelined_in(self, loop) -> list:
        """The mmas that pipeline the ``For`` ``loop`` (its prologue issues their first
        copies)."""
        return [o for o in loop.body.ops if isinstance(o, ops.Mma)
                and self.staging_plan(o) is not None and self.pipelined(o) is loop]

    def _subtree(self, region: Region) -> list:
        out = []
        for o in region.ops:
            out.append(o)
            for sub in o.regions():
                out += self._subtree(sub)
        return out

    def _stageable(self, v: Value, region: Region, mma_pos: int, epc: int = 8):
        """(load, reshape or nothing) producing ``v`` if the load's tile can be copied to
        shared memory as 16-byte chunks (``epc`` elements) at the mma: a plain partition load
        (order identity, zero or undetermined padding, leading tile dims of 1, possibly
        reshaped away) used only by this mma, earlier in the same region with no memory write
        in between."""
        d = self.defs.get(id(v))
        if d is None or d[0] != "op" or self.uses.get(id(v)) != 1:
            return None
        chain = ()
        if isinstance(d[1], ops.Reshape):             # (1, R, C) tile -> (R, C)
            chain = (d[1],)
            v = d[1].x
            d = self.defs.get(id(v))
            if d is None or d[0] != "op" or self.uses.get(id(v)) != 1:
                return None
        if not isinstance(d[1], ops.Load):
            return None
        ld = d[1]
        r, pos = self.place[id(ld)]
        if (r is not region or len(ld.shape) < 2 or any(s != 1 for s in ld.shape[:-2])
                or tuple(ld.order) != tuple(range(len(ld.shape))) or ld.steps is not None
                or ld.padding not in (PaddingMode.ZERO, PaddingMode.UNDETERMINED)
                or ld.memory_order is not MemoryOrder.WEAK       # an atomic read: as written
                or ld.shape[-1] % epc):
            return None
        if chain and self.place[id(chain[0])][0] is not region:
            return None
        for other in region.ops[pos + 1:mma_pos]:
            if writes_memory(other):
                return None
        return (ld,) + chain

    def _stageable_transposed(self, v: Value, region: Region, mma_pos: int):
        """(load, ..., permute) when ``v`` is the transpose of a stageable 2-D tile used only
        here: its tile is copied as it lies, which is B transposed (``N x K``)."""
        d = self.defs.get(id(v))
        if d is None or d[0] != "op" or self.uses.get(id(v)) != 1:
            return None
        p = d[1]
        if (not isinstance(p, ops.Permute) or tuple(p.axes) != (1, 0)
                or self.place[id(p)][0] is not region):
            return None
        inner = self._stageable(p.x, region, mma_pos)       # 16-bit tensor-core operands
        return None if inner is None else inner + (p,)

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
            plan = self.staging_plan(op)
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

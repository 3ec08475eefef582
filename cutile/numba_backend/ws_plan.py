"""Where a K loop takes Hopper's warp-specialised TMA form (``lower/matmul_ws.py`` emits it).

The cp.async K loop (``mma_plan.MmaPlanner.pipelined``) has every thread copy its share of the
next operand tiles and meet at a block barrier each step.  In the warp-specialised form the
block gets one more warpgroup, the *producer*: one of its threads issues each stage's tiles as
TMA loads (``cp.async.bulk.tensor``: the copy engine moves the box, zero-filled outside the
array, into the swizzled layout the wgmma descriptors read) once the consumers released the
slot, and an ``mbarrier`` per slot counts the bytes landing; the ``T`` consumer threads (the
kernel's own) wait for a slot's barrier, run the wgmmas and release the slot, with no block
barrier in the loop.  ``tools/gpu/probe_gemm_ws.py`` measured 604-626 TFLOP/s for it against
the cp.async loop's 439-465 at 128 x 256 tiles on an H200 (timed with the host's launch cost
in; kernel time below).

``find`` decides, once per generated kernel, from facts the planner and the launch give:

- the kernel has one ``Mma``, a float16/bfloat16 wgmma (not float8's promoted sums) whose K
  loop pipelines with both operands staged as they lie (no byte transpose);
- the loop stands in the kernel's top-level region and its bounds and the loads' indices
  other than the induction variable are computed from constants, block ids, grid sizes,
  array extents and scalar parameters (``slice_ops``: pure scalar ops the producer evaluates
  too, before the warpgroups part);
- each operand array is a kernel parameter the launch found TMA-ready (``tma.facts``: 16-byte
  aligned base and strides, unit element stride, rank <= 5);
- no ``assert_`` (its ``syncthreads_and`` is a whole-block barrier the producer never meets)
  and no ``return`` before the kernel's end (the producer would wait for releases forever);
- tiles of at most ``TMA_MAX_BOX`` rows (one box per 128-byte column panel);
- ``CUTILE_NUMBA_TMA`` (``config.numba_tma``): by default only blocks already alone on their
  SM (``MmaPlanner.alone_on_sm``) with at least ``MIN_SLOTS`` ring slots.  H200, 4096^3
  float16, kernel time (``tools/gpu/stage_sweep.py``): 128x256x64 767 against the cp.async
  loop's 487 TFLOP/s (631 with the fragment stored as the threads hold it, not by TMA),
  256x128x64 745 against 482; at 128 x 128 the producer warpgroup's registers leave one
  block per SM (518 against 528 at 128x128x32), so those keep cp.async.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .. import config
from ..enums import MemoryOrder
from ..ir import ops
from ..ir.core import walk
from ..ir.effects import reads_array, writes_array
from ..ir.types import ArrayType
from . import rt
from .device_limits import smem_budget
from .mma_plan import SMEM_HEADROOM, WHOLE_SM_PIPELINE_SMEM
from .wgmma import EXTRA_REGS, WGPlan, register_cap

TMA_MAX_BOX = 256           # elements along one dimension of a TMA box
# the default takes the ring only where it holds this many tiles: with 2 slots of 96 KiB
# (128x256x128) the producer can refill a slot only after the next step's wgmmas issued, 473
# against the cp.async loop's 492 TFLOP/s (H200, 4096^3 float16, tools/gpu/stage_sweep.py)
MIN_SLOTS = 3
MAX_BLOCK_THREADS = 1024
# deepest ring: tiles in flight beyond the copy engine's latency buy nothing
MAX_RING = 8
PRODUCER_THREADS = 128      # one warpgroup: a whole one keeps the consumers' warpgroups aligned


@dataclass(frozen=True)
class WSPlan:
    op: ops.Mma                 # the wgmma the ring feeds
    loop: ops.For               # its K loop (top level)
    loads: tuple                # (A load, B load): staged by TMA, emitting nothing themselves
    params: tuple               # kernel parameter index of each load's array
    slice_ops: tuple            # top-level scalar ops the producer needs, in program order
    stages: int                 # ring slots
    T: int                      # consumer threads (the kernel's own)
    store: ops.Store | None = None      # the epilogue's store, by TMA through shared memory
    store_param: int | None = None      # its array's kernel parameter

    @property
    def block_threads(self) -> int:
        return self.T + PRODUCER_THREADS


def mode() -> str:
    """``config.numba_tma`` as it applies here: ``"0"``, ``"1"`` (alone-on-SM blocks) or
    ``"all"``; under the simulator ``"all"`` when asked for (``sim``/``all``), else ``"0"``."""
    m = config.numba_tma()
    if rt.simulator():
        return "all" if m in ("sim", "all") else "0"
    return m if m in ("0", "1", "all") else "1"


def find(planner, ir, tma_params: frozenset) -> WSPlan | None:
    """The warp-specialised plan of kernel ``ir`` (None: the cp.async forms stay)."""
    m = mode()
    if m == "0" or not planner.wgmma:
        return None
    mmas = [o for o in walk(ir.body) if isinstance(o, ops.Mma)]
    if len(mmas) != 1 or any(isinstance(o, ops.Assert) for o in walk(ir.body)):
        return None
    # a return before the loop would leave the producer waiting for releases forever
    if any(isinstance(o, ops.Return) for o in walk(ir.body) if o is not ir.body.ops[-1]):
        return None
    op = mmas[0]
    plan = planner.tc_plan(op)
    if not isinstance(plan, WGPlan) or plan.promotes or planner.copies_transposed(op):
        return None
    if m == "1" and (not planner.alone_on_sm(plan)
                     or ring_slots(planner, plan, op) < MIN_SLOTS):
        return None
    # the producer's threads share the block's registers: the wgmmas must still fit
    block = planner.T + PRODUCER_THREADS
    if block > MAX_BLOCK_THREADS or \
            plan.regs_needed + EXTRA_REGS > register_cap(block, 1):
        return None
    loop = planner.pipelined(op)
    if loop is None or planner.ix.place[id(loop)][0] is not ir.body:
        return None
    xl, yl = planner.direct_operands(op)
    pidx = {id(p): i for i, p in enumerate(ir.params)}
    params = tuple(pidx.get(id(ld.array)) for ld in (xl, yl))
    if any(i is None or i not in tma_params for i in params) or \
            any(ld.shape[-2] > TMA_MAX_BOX for ld in (xl, yl)):
        return None
    iv = loop.body.args[0]
    # block ids and constants among the indices are spelled out where used (index_subst)
    needed = [loop.start, loop.stop, loop.step] + [
        v for ld in (xl, yl) for v in ld.index
        if v is not iv and planner.ix.invariant_index(v) is None]
    sl = _slice(planner.ix, ir, needed)
    if sl is None:
        return None
    plan_ = WSPlan(op, loop, (xl, yl), params, sl, ring_slots(planner, plan, op), planner.T)
    st = _epilogue_store(planner, ir, plan_, pidx, tma_params)
    if st is not None:
        plan_ = replace(plan_, store=st, store_param=pidx[id(st.array)])
    return plan_


def walk_regions(op) -> list:
    """Every op nested in ``op``'s regions (``ir.core.walk`` walks one region)."""
    return [x for r in op.regions() for x in walk(r)]


def ring_slots(planner, plan, op) -> int:
    """Slots of the ring: the producer warpgroup leaves the block alone on its SM (its
    registers), so the ring may take the SM's shared memory (``mma_plan``'s whole-SM budget),
    up to ``MAX_RING`` tiles ahead; never fewer than the cp.async loop's stages."""
    stage = plan.esize * (plan.M * plan.K + plan.K * plan.N)
    budget = min(WHOLE_SM_PIPELINE_SMEM, smem_budget() - SMEM_HEADROOM)
    return max(planner.stages(op), min(MAX_RING, budget // stage))


def _epilogue_store(planner, ir, ws: WSPlan, pidx: dict, tma_params: frozenset):
    """The top-level ``Store`` after the K loop that a TMA store can do, with no memory
    access after it: a plain 2-D tile store (identity order, no steps, weak ordering) of 2-
    or 4-byte elements, at most ``TMA_MAX_BOX`` rows of at least 16 bytes, into a TMA-ready
    parameter, the tile no larger than the ring's larger buffer (the epilogue's shared tile
    lies there, the ring being dead by then); None with ``CUTILE_NUMBA_TMA_STORE=0``."""
    if not config.numba_tma_store():
        return None
    plan = planner.tc_plan(ws.op)
    ring = plan.esize * ws.stages * max(plan.M * plan.K, plan.K * plan.N)
    after = ir.body.ops[planner.ix.place[id(ws.loop)][1] + 1:]
    for i, o in enumerate(after):
        if not isinstance(o, ops.Store):
            continue
        # the TMA store's writes land after the block moved on: nothing later may touch memory
        # (R-EXEC-5: program order on an array; other arrays may alias it)
        if any(reads_array(x) or writes_array(x) for later in after[i + 1:]
               for x in (later, *walk_regions(later))):
            return None
        shape = o.tile.type.shape
        es = o.tile.type.dtype.bitwidth // 8
        if (len(shape) == 2 and pidx.get(id(o.array)) in tma_params and es in (2, 4)
                and tuple(o.order) == (0, 1) and o.steps is None
                and o.memory_order is MemoryOrder.WEAK and shape[0] <= TMA_MAX_BOX
                and shape[1] * es >= 16 and shape[0] * shape[1] * es <= ring):
            return o
    return None


def _scalar_pure(op) -> bool:
    """Whether the producer may evaluate ``op`` before the warpgroups part: declared pure,
    reading no memory, no regions, scalar results (its lowering is a scalar expression)."""
    return (type(op).pure and not type(op).reads and not any(True for _ in op.regions())
            and all(getattr(r.type, "shape", None) == () for r in op.results))


def _slice(ix, ir, values) -> tuple | None:
    """The top-level ops (program order) computing ``values`` from scalar parameters, or None
    where one of them is not such a scalar computation (``_scalar_pure``)."""
    seen: dict[int, object] = {}
    todo = list(values)
    while todo:
        v = todo.pop()
        d = ix.defs.get(id(v))
        if d is None:
            continue                            # a kernel parameter
        if d[0] != "op":
            return None                         # a region argument (loop-carried, ...)
        o = d[1]
        if id(o) in seen:
            continue
        if not _scalar_pure(o) or ix.place[id(o)][0] is not ir.body:
            return None
        if any(isinstance(x.type, ArrayType) and ix.defs.get(id(x)) is not None
               for x in o.operands()):
            return None                         # the extent of a derived array view
        seen[id(o)] = o
        todo.extend(x for x in o.operands() if not isinstance(x.type, ArrayType))
    return tuple(sorted(seen.values(), key=lambda o: ix.place[id(o)][1]))

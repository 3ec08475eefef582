"""Matmul planning: the path each ``Mma`` takes and how its operand tiles reach shared memory.

An ``Mma`` runs on the tensor cores (``tensorcore.py``'s plan: inline-PTX ``mma``, a real GPU,
float32 accumulation mode), on ``ffma.py``'s vectorised FFMA schedule, or on the seeds' scalar
schedule (``lower/matmul.py``).  Where a plan applies, an operand that is a plain tile load
used only by the mma is *staged*: copied from global memory to swizzled shared memory by
``cp.async`` at the mma instead of through registers (``direct_operands``; the load itself
emits nothing, ``direct_load``), and a K loop whose mmas have both operands staged is
software-pipelined (``pipelined``, ``stages``: the next iterations' tiles are copied while
this one computes).  ``lower/matmul_tc.py`` emits what is planned here; the layout of an mma's
result follows its plan (``assign.py``), and the host asks which loads are staged
(``fulltile.py``).
"""

from __future__ import annotations

import dataclasses

from .. import config
from ..enums import MemoryOrder, PaddingMode
from ..ir import ops
from ..ir.core import Region, Value
from ..ir.effects import writes_memory
from . import ffma, rt, tensorcore, wgmma
from .device_limits import smem_budget
from .irindex import IRIndex

# shared memory the stages of a pipelined tensor-core mma may take: tiles whose two stages do
# not fit keep one (an H100 block may have 227 KiB; two stages of 128x256x128 would be 192 KiB)
PIPELINE_SMEM = 96 * 1024
# deepest pipeline: the copies of MAX_STAGES - 1 K tiles in flight while one computes
MAX_STAGES = 4
# the stages' shared memory for a wgmma block that registers already keep alone on its SM
# (``MmaPlanner.alone_on_sm``): more stages cost no occupancy there (sm_90 gives a block 227
# KiB; the rest is left for the kernel's other buffers).  H200, 4096^3 float16 (tools/gpu/
# stage_sweep.py): 128x256x64 438 -> 465 TFLOP/s (2 -> 4 stages), 256x128x64 442 -> 462
# (403 -> 421, 408 -> 412 on a noisier card); 128x256x128 / 256x128x128 pipeline at all
# (2 stages of 96 KiB): 344 -> 459, 337 -> 466
WHOLE_SM_PIPELINE_SMEM = 192 * 1024
SMEM_HEADROOM = 32 * 1024
# shared memory of a pipelined wgmma with its wait deferred (one more slot): two blocks per SM
DEFERRED_SMEM = 112 * 1024
# operand kinds whose loads may be copied to shared memory as they lie (16-byte cp.async)
STAGED_KINDS = ("f16", "bf16", "f32", "e4m3", "e5m2")


def tensor_cores_usable(mma_acc: str) -> bool:
    """Whether mma may use the tensor cores: the default float32 accumulation mode (``exact``
    is bit-exact FMA-free), not disabled by ``CUTILE_NUMBA_TENSOR_CORES=0``, and not the
    simulator (it runs no inline PTX) unless ``CUTILE_NUMBA_TENSOR_CORES=sim`` asks for
    ``ptx_sim.py``'s models (tests)."""
    if rt.simulator():
        return mma_acc == "f32" and config.numba_tensor_cores_sim()
    return mma_acc == "f32" and config.numba_tensor_cores()


def wgmma_usable(mma_acc: str, cc) -> bool:
    """Whether float16/bfloat16/float8 mma may take Hopper's wgmma (``wgmma.py``): the tensor cores
    are usable on a real GPU, the device is sm_90 (the instructions exist on sm_90a only:
    not on later architectures' targets), and ``CUTILE_NUMBA_WGMMA=0`` does not turn it off.
    Under the simulator only with ``CUTILE_NUMBA_WGMMA=sim`` (``ptx_sim.py``'s models)."""
    if rt.simulator():
        return tensor_cores_usable(mma_acc) and config.numba_wgmma_sim()
    return (tensor_cores_usable(mma_acc) and config.numba_wgmma()
            and cc is not None and tuple(cc)[:2] == (9, 0))


def ffma_usable(mma_acc: str) -> bool:
    """Whether float32 mma may take ``ffma.py``'s schedule (vector shared loads, cp.async):
    the default float32 accumulation mode (``exact`` keeps the seeds' float64 sum), not
    disabled by ``CUTILE_NUMBA_FFMA=0``, and not the simulator unless
    ``CUTILE_NUMBA_FFMA=sim`` asks for ``ptx_sim.py``'s models (tests)."""
    if rt.simulator():
        return mma_acc == "f32" and config.numba_ffma_sim()
    return mma_acc == "f32" and config.numba_ffma()


class MmaPlanner:
    def __init__(self, index: IRIndex, T: int, tensor_cores: bool = False,
                 cp_async: bool = False, ffma: bool = False, wgmma: bool = False,
                 reg_cap: int = 255):
        self.ix = index
        self.T = T
        self.tensor_cores = tensor_cores
        self.wgmma = wgmma and tensor_cores     # Hopper: wgmma plans first (wgmma.py)
        self.reg_cap = reg_cap                  # registers per thread the launch bound allows
        self.ffma = ffma                        # float32 mma: ffma.py's plan where it applies
        self.cp_async = cp_async
        # the warp-specialised TMA K loop of this kernel (ws_plan.py; set by the generator,
        # which knows the launch's facts): its mma's deferred wait and slots differ
        self.ws = None
        self._direct: dict[int, tuple] | None = None
        self._ytrans: set = set()
        self._ybytes: set = set()

    def _plan(self, op):
        """An ``Mma``'s plan before the transposed-B decision: the tensor cores' where they
        apply, else ``ffma.py``'s (None: the seeds' schedule).  ``_direct_map`` needs it
        without ``bt``, which it decides."""
        plan = None
        if self.wgmma:
            plan = wgmma.plan(op, self.T, self.reg_cap)
        if plan is None and self.tensor_cores:
            plan = tensorcore.plan(op, self.T, self.ix.rows_in_warps())
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

    def copies_transposed(self, op) -> bool:
        """Whether the float8 B operand of ``op`` is a plain K x N load whose bytes go into
        shared memory transposed: byte by byte from global memory
        (``lower/staging.copy_transposed_bytes``), or, in a pipelined K loop, by ``cp.async`` as
        they lie and then transposed in shared memory (``staging.transpose_staged_bytes``)."""
        self._direct_map()
        return id(op) in self._ybytes

    def _direct_map_t(self) -> set:
        """ids of the mmas whose B operand is staged transposed."""
        self._direct_map()
        return self._ytrans

    def _direct_map(self) -> dict:
        if self._direct is None:
            self._direct, self._ytrans, self._ybytes = {}, set(), set()
            for key in (self.ix.place if self.cp_async else ()):
                region, pos = self.ix.place[key]
                op = region.ops[pos]
                plan = self._plan(op) if isinstance(op, ops.Mma) else None
                if plan is not None and plan.kind in STAGED_KINDS:     # 16-byte chunks
                    # a float8 B is read K-major: only its transpose is copied as it lies
                    k_major_b = plan.kind in wgmma.K_MAJOR_KINDS
                    found = [self._stageable(v, region, pos, plan.epc) for v in
                             ((op.x,) if k_major_b else (op.x, op.y))] + [None] * k_major_b
                    if found[1] is None and plan.kind != "f32":
                        found[1] = self._stageable_transposed(op.y, region, pos, plan.epc)
                        if found[1] is not None:
                            self._ytrans.add(key)
                    if found[1] is None and k_major_b:
                        # a float8 B as loaded (K x N): its bytes copied transposed
                        found[1] = self._stageable(op.y, region, pos, plan.epc)
                        if found[1] is not None:
                            self._ybytes.add(key)
                    if found != [None, None]:
                        self._direct[key] = tuple(f and f[0] for f in found)
                        for f in found:
                            for skipped in f or ():
                                self._direct[id(skipped)] = ()
        return self._direct

    def pipelined(self, op):
        """The ``For`` whose K loop a tensor-core ``Mma`` software-pipelines (``stages``
        stages: the next iterations' operand tiles are copied while this one computes), or
        None.  Both operands must be staged by cp.async, two stages fit ``pipeline_smem``, the
        mma must stand directly in the loop's
        body with no ``break``/``continue``/``return`` anywhere in it, and the loads' arrays
        and indices must be the induction variable or values from outside the loop (so the
        next iteration's copy can be issued from this one)."""
        xl, yl = self.direct_operands(op)
        if xl is None or yl is None:
            return None
        plan = self.staging_plan(op)
        if 2 * plan.esize * (plan.M * plan.K + plan.K * plan.N) > self.pipeline_smem(plan):
            return None
        found = self._every_iteration(op)
        if found is None:
            return None
        loop, inside = found
        iv = loop.body.args[0]
        inner = {id(o) for o in inside}
        for ld in (xl, yl):
            for v in (ld.array, *ld.index):
                if v is iv or self.ix.invariant_index(v):
                    continue
                d = self.ix.defs.get(id(v))                 # None: a kernel parameter
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
        d = self.ix.defs.get(id(op.x))
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
        region, _ = self.ix.place[id(op)]
        loop = self.ix.owner.get(id(region))
        if not isinstance(loop, ops.For) or loop.body is not region:
            return None
        inside = self.ix.subtree(region)
        if any(isinstance(o, (ops.Break, ops.Continue, ops.Return)) for o in inside):
            return None
        return loop, inside

    def stages(self, op) -> int:
        """Pipeline depth of a pipelined ``Mma``: as many stages of its two operand tiles as
        fit ``pipeline_smem``, at most ``MAX_STAGES`` (stages beyond the copies' latency buy
        nothing and cost occupancy); 2 when its loop pipelines other mmas too (their copies
        are waited for together)."""
        plan = self.staging_plan(op)
        stage = plan.esize * (plan.M * plan.K + plan.K * plan.N)
        if len(self.pipelined_in(self.pipelined(op))) > 1:
            return 2
        return max(2, min(MAX_STAGES, self.pipeline_smem(plan) // stage))

    def pipeline_smem(self, plan) -> int:
        """Shared memory the stages of a pipelined mma with ``plan`` may take:
        ``PIPELINE_SMEM``, or up to ``WHOLE_SM_PIPELINE_SMEM`` (within the block's limit, less
        ``SMEM_HEADROOM`` for its other buffers) when registers keep its block alone on its
        SM anyway (``alone_on_sm``)."""
        if self.alone_on_sm(plan):
            return max(PIPELINE_SMEM, min(WHOLE_SM_PIPELINE_SMEM, smem_budget() - SMEM_HEADROOM))
        return PIPELINE_SMEM

    def alone_on_sm(self, plan) -> bool:
        """Whether a float16/bfloat16 wgmma block's registers (its accumulators and
        ``wgmma.EXTRA_REGS`` per thread) leave no room for a second block on an SM: then its
        pipeline may take the SM's shared memory (``WHOLE_SM_PIPELINE_SMEM``).  (A 128x128
        tile at 128 threads stays at ``PIPELINE_SMEM``: three blocks share an SM; one block
        of four stages at 128x128x64 measured 413 against 508 TFLOP/s.  float8 plans are
        left as measured.)"""
        return (isinstance(plan, wgmma.WGPlan) and not plan.promotes
                and self.T * (plan.regs_needed + wgmma.EXTRA_REGS) > 65536 // 2)

    def deferred_wait(self, op) -> int | None:
        """For a pipelined wgmma ``Mma`` whose result only becomes the next iteration's
        accumulator (``acc = mma(x, y, acc)``, nothing else reads it in the loop): the index
        of that result among the loop's carried values, else None.  Its wgmmas then stay in
        flight across the loop's back edge (``wgmma.wait_group 1``: the previous iteration's
        are done), on one more stage of operand buffers (``slots``), and the loop waits for
        the last after it (``lower/control.py``).  Only where that extra stage still lets two
        blocks share an SM (``2 * DEFERRED_SMEM`` of shared memory)."""
        plan = self.tc_plan(op)
        loop = self.pipelined(op)
        if not isinstance(plan, wgmma.WGPlan) or loop is None or plan.promotes:
            return None
        # the TMA ring releases a slot when its wgmmas retire: deferring costs no slot there
        if not self.tma_ring(op) and (
                not config.numba_wgmma_deferred()
                or (self.stages(op) + 1) * plan.esize * (plan.M * plan.K + plan.K * plan.N)
                > DEFERRED_SMEM):
            return None
        y = loop.body.ops[-1] if loop.body.ops else None
        if not isinstance(y, ops.Yield) or self.ix.uses.get(id(op.result)) != 1:
            return None
        for j, v in enumerate(y.values):
            if v is op.result:
                arg = loop.body.args[1 + j]
                if arg is op.acc and self.ix.uses.get(id(arg)) == 1:
                    return j
        return None

    def slots(self, op) -> int:
        """Operand buffer slots of a pipelined ``Mma``: its stages, one more with a deferred
        wgmma wait (the slot its in-flight wgmmas still read)."""
        if self.tma_ring(op):
            return self.ws.stages                   # the ring's own depth (ws_plan.ring_slots)
        return self.stages(op) + (self.deferred_wait(op) is not None)

    def tma_ring(self, op) -> bool:
        """Whether ``op``'s K loop is the warp-specialised TMA form (``ws_plan.py``)."""
        return self.ws is not None and self.ws.op is op

    def pipelined_in(self, loop) -> list:
        """The mmas that pipeline the ``For`` ``loop`` (its prologue issues their first
        copies)."""
        return [o for o in loop.body.ops if isinstance(o, ops.Mma)
                and self.staging_plan(o) is not None and self.pipelined(o) is loop]

    def _stageable(self, v: Value, region: Region, mma_pos: int, epc: int = 8):
        """(load, reshape or nothing) producing ``v`` if the load's tile can be copied to
        shared memory as 16-byte chunks (``epc`` elements) at the mma: a plain partition load
        (order identity, zero or undetermined padding, leading tile dims of 1, possibly
        reshaped away) used only by this mma, earlier in the same region with no memory write
        in between."""
        d = self.ix.defs.get(id(v))
        if d is None or d[0] != "op" or self.ix.uses.get(id(v)) != 1:
            return None
        chain = ()
        if isinstance(d[1], ops.Reshape):             # (1, R, C) tile -> (R, C)
            chain = (d[1],)
            v = d[1].x
            d = self.ix.defs.get(id(v))
            if d is None or d[0] != "op" or self.ix.uses.get(id(v)) != 1:
                return None
        if not isinstance(d[1], ops.Load):
            return None
        ld = d[1]
        r, pos = self.ix.place[id(ld)]
        if (r is not region or len(ld.shape) < 2 or any(s != 1 for s in ld.shape[:-2])
                or tuple(ld.order) != tuple(range(len(ld.shape))) or ld.steps is not None
                or ld.padding not in (PaddingMode.ZERO, PaddingMode.UNDETERMINED)
                or ld.memory_order is not MemoryOrder.WEAK       # an atomic read: as written
                or ld.shape[-1] % epc):
            return None
        if chain and self.ix.place[id(chain[0])][0] is not region:
            return None
        for other in region.ops[pos + 1:mma_pos]:
            if writes_memory(other):
                return None
        return (ld,) + chain

    def _stageable_transposed(self, v: Value, region: Region, mma_pos: int, epc: int = 8):
        """(load, ..., permute) when ``v`` is the transpose of a stageable 2-D tile used only
        here: its tile is copied as it lies, which is B transposed (``N x K``)."""
        d = self.ix.defs.get(id(v))
        if d is None or d[0] != "op" or self.ix.uses.get(id(v)) != 1:
            return None
        p = d[1]
        if (not isinstance(p, ops.Permute) or tuple(p.axes) != (1, 0)
                or self.ix.place[id(p)][0] is not region):
            return None
        inner = self._stageable(p.x, region, mma_pos, epc)
        return None if inner is None else inner + (p,)

"""Tensor-core lowering of ``Mma`` (float16/bfloat16 operands, float32 accumulator, real GPU;
float8 on Hopper's wgmma, int8 into int32, tfloat32).

Called by ``matmul.mma`` when the generator's tensor-core switch is on and
``tensorcore.plan`` accepts the op.  One call of the IR's K loop: stage A and B (their
registers, from the coalesced loads) in swizzled shared memory as 16-bit values, one barrier,
then for every 16-deep k step ``ldmatrix`` the A and B fragments of this warp and issue one
``mma.sync`` per 16x8 accumulator tile.  The accumulator stays in the mma fragment layout
(``TCPlan.layout``) across the loop, so nothing moves between calls; the barrier tracker places
the write-after-read barrier before the next staging, as for the FFMA path.

With ``Gen.cp_async`` (the default; ``CUTILE_NUMBA_CP_ASYNC=0`` turns it off) an operand
that is a plain zero-padded load used only here is not
loaded into registers at all: ``staging.stage_direct`` copies its tile global -> shared with 16-byte
``cp.async`` at the mma (``MmaPlanner.direct_operands`` picks them), and ``ldmatrix`` takes
32-bit shared addresses (``ldsm32_*``).
"""

from __future__ import annotations

from ... import dtypes as dt
from ..ffma import FFMAPlan
from ..tensorcore import INT_KINDS, TCPlan
from ..wgmma import WGPlan
from . import matmul_ws
from .index import index_subst
from .matmul_ffma import compute as compute_ffma
from .staging import copy_transposed_bytes, stage, stage_direct, transpose_staged_bytes

# shared-memory element type of the staged operands: 16-bit patterns, float32 for tfloat32
_SMEM_DTYPE = {"f16": dt.float16, "bf16": dt.uint16, "tf32": dt.float32, "s8": dt.int8,
               "u8": dt.uint8, "f32": dt.float32, "e4m3": dt.uint8, "e5m2": dt.uint8}


def mma_tc(g, op, plan: TCPlan) -> None:
    x, y, acc = op.x, op.y, op.acc
    xl, yl = g.mma.direct_operands(op)
    pipe = pipelined(g, op)
    if pipe is not None and g.mma.tma_ring(op):
        out, acc_regs = plan.layout(), g.get(op.acc, plan.layout())
        bufa, bufb = pipelined_buffers(g, op, plan)
        return matmul_ws.consume(g, op, plan, pipe, lambda ab, bb, note, wait: _compute(
            g, op, plan, bufa, bufb, acc_regs, out, ab, bb, note, wait))
    if pipe is not None:
        return _mma_pipelined(g, op, plan, xl, yl, pipe)
    M, N, K = plan.M, plan.N, plan.K
    out = plan.layout()
    acc_regs = g.get(acc, out)
    sdt = _SMEM_DTYPE[plan.kind]
    site = ("mma_tc", id(op))
    wg = isinstance(plan, WGPlan)           # wgmma: descriptor layouts, 1024-byte aligned
    inv = g.mma.invariant_operand_loop(op)
    if inv is not None:
        # A is loop-invariant: its own buffer (a slot no other site shares), written in the
        # loop's first iteration only
        slot = 1000 + 2 * g.pipe_slots.setdefault(id(op), len(g.pipe_slots))
        bufa = g.buffer(("mma_tc_inv", id(op)), slot, sdt, M * K, align16=True,
                        align1024=wg)
        iv = g.scalar(inv.body.args[0])
        g.line(f"if {iv} == {g.scalar(inv.start)}:")
        g.e.level += 1
        g.smem_before_write(bufa)
        stage(g, x, bufa, K, plan.epc, panels=wg)
        g.e.level -= 1
    else:
        bufa = g.buffer(site, 0, sdt, M * K, align16=True, align1024=wg)
    bufb = g.buffer(site, 1, sdt, K * N, align16=True, align1024=wg)
    if inv is not None:
        g.smem_before_write(bufb)               # A was staged above
    else:
        g.smem_before_write(bufa, bufb)
        if xl is not None:
            stage_direct(g, xl, bufa, plan.T, panels=wg)
        else:
            stage(g, x, bufa, K, plan.epc, panels=wg)
    if yl is not None and g.mma.copies_transposed(op):
        copy_transposed_bytes(g, yl, bufb, plan.T)
    elif yl is not None:
        stage_direct(g, yl, bufb, plan.T, panels=wg)
    elif plan.kind in INT_KINDS or wg and plan.b_transposed:
        # int8 (mma.sync) and float8 (wgmma) read B K-major: its transpose, N x K
        stage(g, y, bufb, K, plan.epc, transpose=True, panels=wg)
    else:
        stage(g, y, bufb, N, plan.epc, panels=wg)
    if xl is not None or yl is not None and not g.mma.copies_transposed(op):
        g.line("cp_async_wait_all()")
    if wg:
        g.line("fence_proxy_async()")       # this thread's writes -> the wgmma's reads
    g.smem_sync()
    _compute(g, op, plan, bufa, bufb, acc_regs, out,
             note=", operands by cp.async" if xl is not None or yl is not None else "")


def _compute(g, op, plan, bufa: str, bufb: str, acc_regs, out, abase: str = "",
             bbase: str = "", note: str = "", wait: int = 0) -> None:
    """The products over the staged tiles (at element offsets ``abase``/``bbase``): the
    tensor cores', or the FFMA plan's (``matmul_ffma.compute``)."""
    if isinstance(plan, FFMAPlan):
        compute_ffma(g, op, plan, bufa, bufb, acc_regs, out, abase, bbase, note)
        return
    if isinstance(plan, WGPlan):
        _compute_wg(g, op, plan, bufa, bufb, acc_regs, out, abase, bbase, note, wait)
        return
    _compute_tc(g, op, plan, bufa, bufb, acc_regs, out, abase, bbase, note)


def _compute_wg(g, op, plan: WGPlan, bufa: str, bufb: str, acc_regs, out, abase: str = "",
                bbase: str = "", note: str = "", wait: int = 0) -> None:
    """wgmma over the staged tiles (at element offsets ``abase``/``bbase``): each warpgroup's
    ``MI`` m64nNk16 (float8: k32) per k step from descriptors, fenced, committed and waited
    for until at most ``wait`` groups fly (``wgmma.py``: the tied fence/wait keep the
    accumulators out of the asynchronous window; 1: ``_mma_pipelined``'s deferred wait, the
    loop waits for the last group after it, ``wait_after_loop``)."""
    g.plans.append(plan.describe() + note)
    p = plan.prefix()
    n2 = plan.N // 2
    cnt = plan.acc_regs
    if plan.GM > 1:
        grp = g.hoist(("wg", p, "a0"), f"{p}a0", f"((tid >> 7) * {plan.a_group_offset()})")
        a_at = f"{abase}{grp}"
    else:
        a_at = f"{abase}0"
    da, db = g.tmp("da"), g.tmp("db")
    g.line(f"{da} = (u64(smem_addr32({bufa}, {a_at})) >> u64(4)) | u64({plan.a_hi()})")
    g.line(f"{db} = (u64(smem_addr32({bufb}, {bbase}0)) >> u64(4)) | u64({plan.b_hi()})")
    if plan.promotes:
        assert wait == 0, "a promoted wgmma's sums are read at once"
        _promoted_wg(g, op, plan, da, db, acc_regs, out)
        g.smem_did_read(bufa)
        g.smem_did_read(bufb)
        return
    cur = [g.tmp("acc") for _ in range(cnt)]
    g.line(f"{', '.join(cur)} = wgmma_fence{cnt}({', '.join(acc_regs)})")
    fn = plan.intrinsic()
    for kk in range(plan.K // plan.mk):
        for mi in range(plan.MI):
            oa, ob = plan.a_step(mi, kk) >> 4, plan.b_step(kk) >> 4
            dak = f"{da} + u64({oa})" if oa else da
            dbk = f"{db} + u64({ob})" if ob else db
            regs = cur[mi * n2:(mi + 1) * n2]
            new = [g.tmp("acc") for _ in range(n2)]
            g.line(f"{', '.join(new)} = {fn}({dak}, {dbk}, i32(1), {', '.join(regs)})")
            cur[mi * n2:(mi + 1) * n2] = new
    g.line("wgmma_commit()")
    done = [g.tmp("acc") for _ in range(cnt)]
    g.line(f"{', '.join(done)} = wgmma_wait{'' if wait == 0 else f'{wait}_'}{cnt}"
           f"({', '.join(cur)})")
    g.define(op.result, out, done)
    g.smem_did_read(bufa)
    g.smem_did_read(bufb)


def _promoted_wg(g, op, plan: WGPlan, da: str, db: str, acc_regs, out) -> None:
    """``WGPlan.promotes``: per 64-row block and group of ``promote_n`` columns, the wgmmas
    of every k step into fresh registers (the first with scale-d 0: D = A B), committed and
    waited for, then added to the accumulator with float32 adds."""
    n2, pn = plan.N // 2, plan.promote_n
    h2 = pn // 2                                  # fresh registers of one group
    acc = list(acc_regs)
    fn = plan.intrinsic(pn)
    for mi in range(plan.MI):
        for h in range(plan.N // pn):
            cur = [g.tmp("pr") for _ in range(h2)]
            g.line(f"{', '.join(cur)} = wgmma_fence{h2}({', '.join(['f32(0.0)'] * h2)})")
            for kk in range(plan.K // plan.mk):
                oa = plan.a_step(mi, kk) >> 4
                ob = (plan.b_step(kk) + plan.b_half_offset(h)) >> 4
                dak = f"{da} + u64({oa})" if oa else da
                dbk = f"{db} + u64({ob})" if ob else db
                new = [g.tmp("pr") for _ in range(h2)]
                g.line(f"{', '.join(new)} = {fn}({dak}, {dbk}, i32({int(kk > 0)}), "
                       f"{', '.join(cur)})")
                cur = new
            g.line("wgmma_commit()")
            done = [g.tmp("pr") for _ in range(h2)]
            g.line(f"{', '.join(done)} = wgmma_wait{h2}({', '.join(cur)})")
            for j, r in enumerate(done):       # register j of the group: mi * n2 + h * h2 + j
                at = mi * n2 + h * h2 + j
                s = g.tmp("acc")
                g.line(f"{s} = f32({acc[at]} + {r})")
                acc[at] = s
    g.define(op.result, out, acc)


def _compute_tc(g, op, plan: TCPlan, bufa: str, bufb: str, acc_regs, out, abase: str = "",
                bbase: str = "", note: str = "") -> None:
    """ldmatrix + mma.sync over the staged tiles (at element offsets ``abase``/``bbase``)."""
    K = plan.K
    p = plan.prefix()                        # per-thread values depend only on the plan
    for name, expr in plan.hoisted(p).items():
        g.hoist(("tc", name), name, expr)
    g.plans.append(plan.describe() + note)
    mma = f"mma_{plan.kind}"
    ld = "ldsm32" if g.cp_async else "ldsm"
    cur = list(acc_regs)
    for kk in range(K // plan.mk):
        afr = []
        for mi in range(plan.MI):
            names = [g.tmp("fa") for _ in range(4)]
            g.line(f"{', '.join(names)} = {ld}_x4({bufa}, {abase}{plan.a_index(p, mi, kk)})")
            afr.append(names)
        bfr = []
        if plan.b_transposed:
            for ni in range(0, plan.NI, 2):
                n = 4 if ni + 1 < plan.NI else 2
                names = [g.tmp("fb") for _ in range(n)]
                g.line(f"{', '.join(names)} = {ld}_x{n}({bufb}, "
                       f"{bbase}{plan.bt_index(p, ni, kk)})")
                bfr += [names[:2], names[2:]] if n == 4 else [names]
        elif plan.kind == "tf32":
            for ni in range(plan.NI):
                names = [g.tmp("fb") for _ in range(2)]
                for hh, nm in enumerate(names):
                    g.line(f"{nm} = {bufb}[{bbase}{plan.b_scalar_index(p, ni, kk, hh)}]")
                bfr.append(names)
        elif plan.NI == 1:
            names = [g.tmp("fb") for _ in range(2)]
            g.line(f"{', '.join(names)} = {ld}_x2_t({bufb}, {bbase}{plan.b_index(p, 0, kk)})")
            bfr.append(names)
        else:
            for ni in range(0, plan.NI, 2):
                names = [g.tmp("fb") for _ in range(4)]
                g.line(f"{', '.join(names)} = {ld}_x4_t({bufb}, {bbase}{plan.b_index(p, ni, kk)})")
                bfr += [names[:2], names[2:]]
        for mi in range(plan.MI):
            for ni in range(plan.NI):
                regs = [plan.reg(mi, ni, c) for c in range(4)]
                new = [g.tmp("acc") for _ in range(4)]
                args = afr[mi] + bfr[ni] + [cur[r] for r in regs]
                g.line(f"{', '.join(new)} = {mma}({', '.join(args)})")
                for r, n_ in zip(regs, new):
                    cur[r] = n_
    g.define(op.result, out, cur)
    g.smem_did_read(bufa)
    g.smem_did_read(bufb)


def pipelined(g, op):
    """The ``For`` whose K loop this mma pipelines (None: not pipelined)."""
    return g.mma.pipelined(op)


def pipelined_buffers(g, op, plan: TCPlan) -> tuple[str, str]:
    """The staging of a pipelined mma: ``stages`` slots per operand.  Their buffer slots are
    this mma's own, so even the regenerated shared-buffer form (``smem.py``: buffers shared per
    dtype and slot) never lets another site write a slot while copies into it fly."""
    sdt = _SMEM_DTYPE[plan.kind]
    site = ("mma_tc_pipe", id(op))
    slot = 1000 + 2 * g.pipe_slots.setdefault(id(op), len(g.pipe_slots))
    S = g.mma.slots(op)
    wg = isinstance(plan, WGPlan)
    return (g.buffer(site, slot, sdt, S * plan.M * plan.K, align16=True, align1024=wg),
            g.buffer(site, slot + 1, sdt, S * plan.K * plan.N, align16=True, align1024=wg))


def transposed_buffer(g, op, plan: TCPlan) -> str:
    """The pipelined float8 ``a @ b``'s B transposed (N x K), rewritten from the landed slot
    in every iteration (``transpose_staged_bytes``); a slot of its own (buffers of one
    dtype and slot are one buffer: A's staging is uint8 too)."""
    slot = 1000 + 2 * g.pipe_slots.setdefault(("bt", id(op)), len(g.pipe_slots))
    return g.buffer(("mma_tc_bt", id(op)), slot, _SMEM_DTYPE[plan.kind], plan.K * plan.N,
                    align16=True, align1024=True)


def wait_after_loop(g, op, names: list) -> list:
    """After the K loop of a deferred-wait wgmma ``Mma``: wait for its last wgmmas, the
    accumulators (the loop's result ``names``) passing through the tied wait."""
    done = [g.tmp("acc") for _ in names]
    g.line(f"{', '.join(done)} = wgmma_wait{len(names)}({', '.join(names)})")
    return done


def prologue(g, op, plan: TCPlan, for_op) -> None:
    """Before the K loop: issue the copies of iterations ``0 .. stages-2`` into slots
    ``0 .. stages-2``, one commit group each.  Iterations past the loop's end copy tiles
    that are never used (out of the array: zero-filled, nothing read)."""
    xl, yl = g.mma.direct_operands(op)
    bufa, bufb = pipelined_buffers(g, op, plan)
    # a buffer retired by an earlier K loop (SmemPlan.retire) may still be read by other
    # warps: a barrier first where the tracker sees such reads (none for a fresh buffer)
    g.smem_before_write(bufa, bufb)
    start, step = g.scalar(for_op.start), g.scalar(for_op.step)
    for s in range(g.mma.stages(op) - 1):
        it = f"(i64({start}) + {s} * i64({step}))" if s else f"{start}"
        sub = index_subst(g, (xl, yl), for_op.body.args[0], it)
        wg = isinstance(plan, WGPlan)
        raw_b = g.mma.copies_transposed(op)     # B lands as it lies (K x N), transposed later
        stage_direct(g, xl, bufa, plan.T, f"{s * plan.M * plan.K} + " if s else "", sub, wg)
        stage_direct(g, yl, bufb, plan.T, f"{s * plan.K * plan.N} + " if s else "", sub,
                      wg and not raw_b)
        g.line("cp_async_commit()")


def _mma_pipelined(g, op, plan: TCPlan, xl, yl, for_op) -> None:
    """A K loop of ``S`` stages: wait until this iteration's copies have landed (issued
    ``S - 1`` iterations earlier, or by the loop's prologue: at most the ``S - 2`` newer commit
    groups may still fly), one barrier (they are visible; every thread is done reading the
    slot the previous iteration computed from), issue the copies of iteration ``+ S - 1`` into
    that slot, then compute from this iteration's slot while those copies fly.

    With a deferred wgmma wait (``MmaPlanner.deferred_wait``) there are ``P = S + 1`` slots:
    this iteration's wgmmas are left in flight (``wait_group 1`` only retires the previous
    iteration's), so the copies go to the slot read two iterations back, ``(i + S - 1) % P``,
    whose wgmmas every thread retired before this iteration's barrier."""
    M, N, K = plan.M, plan.N, plan.K
    S = g.mma.stages(op)
    P = g.mma.slots(op)
    out = plan.layout()
    acc_regs = g.get(op.acc, out)
    bufa, bufb = pipelined_buffers(g, op, plan)
    iv = for_op.body.args[0]
    ivs, start, step = g.scalar(iv), g.scalar(for_op.start), g.scalar(for_op.step)
    ph, nx = g.tmp("ph"), g.tmp("nx")
    it = f"((i64({ivs}) - i64({start})) // i64({step}))"
    g.line(f"{ph} = {it} & {P - 1}" if P & (P - 1) == 0 else f"{ph} = {it} % {P}")
    g.line(f"{nx} = ({ph} + {S - 1}) & {P - 1}" if P & (P - 1) == 0
           else f"{nx} = ({ph} + {S - 1}) % {P}")
    g.line(f"cp_async_wait_group{S - 2}()")
    wg = isinstance(plan, WGPlan)
    if wg:
        g.line("fence_proxy_async()")       # the landed copies -> the wgmma's reads
    g.barrier()
    nxt = index_subst(g, (xl, yl), iv, f"(i64({ivs}) + {S - 1} * i64({step}))")
    raw_b = g.mma.copies_transposed(op)
    stage_direct(g, xl, bufa, plan.T, f"({nx} * {M * K}) + ", nxt, wg)
    stage_direct(g, yl, bufb, plan.T, f"({nx} * {K * N}) + ", nxt, wg and not raw_b)
    g.line("cp_async_commit()")
    deferred = P > S
    bsrc, bbase, note = bufb, f"({ph} * {K * N}) + ", ""
    if raw_b:
        # float8 B landed as it lies: transposed into the K-major buffer the wgmma reads
        bsrc, bbase, note = transposed_buffer(g, op, plan), "", ", B transposed in shared memory"
        g.smem_before_write(bsrc)
        transpose_staged_bytes(g, bufb, f"({ph} * {K * N}) + ", bsrc, K, N, plan.T)
        g.smem_did_read(bufb)
        g.line("fence_proxy_async()")
        g.smem_sync()
    _compute(g, op, plan, bufa, bsrc, acc_regs, out, f"({ph} * {M * K}) + ",
             bbase, f", operands by cp.async, {S}-stage pipelined K loop" + note
             + (", wgmma wait deferred one iteration" if deferred else ""),
             wait=1 if deferred else 0)

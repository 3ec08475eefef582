"""Tensor-core lowering of ``Mma`` (float16/bfloat16 operands, float32 accumulator, real GPU).

Called by ``matmul.mma`` when the generator's tensor-core switch is on and
``tensorcore.plan`` accepts the op.  One call of the IR's K loop: stage A and B (their
registers, from the coalesced loads) in swizzled shared memory as 16-bit values, one barrier,
then for every 16-deep k step ``ldmatrix`` the A and B fragments of this warp and issue one
``mma.sync`` per 16x8 accumulator tile.  The accumulator stays in the mma fragment layout
(``TCPlan.layout``) across the loop, so nothing moves between calls; the barrier tracker places
the write-after-read barrier before the next staging, as for the FFMA path.
"""

from __future__ import annotations

from ... import dtypes as dt
from ..exprs import to_storage
from ..tensorcore import MMA_K, TCPlan, swizzle, swizzle_expr


def _stage(g, v, buf: str, ncols: int) -> None:
    """Write the tile ``v`` (rows x ``ncols``) into ``buf`` at swizzled row-major positions."""
    tv = g.tv(v)
    lay = tv.layout if tv.layout is not None else g.natural(v)
    regs = g.get(v, lay)
    rt_, ct_ = g.coord_var(lay, 0), g.coord_var(lay, 1)
    i = g.lid(lay)
    base = g.hoist(("tcsw", i, ncols), f"L{i}_sw{ncols}", swizzle_expr(rt_, ct_, ncols)) \
        if (rt_, ct_) != ("0", "0") else None
    w = g.writer(lay)
    if w is not None:
        g.line(f"if {w}:")
        g.e.level += 1
    bf16 = v.type.dtype is dt.bfloat16
    for k, r in enumerate(regs):
        ro, co = lay.reg_offsets(k)
        c = int(swizzle(ro, co, ncols))      # linear over GF(2): thread part ^ register part
        idx = str(c) if base is None else (base if c == 0 else f"{base} ^ {c}")
        g.line(f"{buf}[{idx}] = {to_storage(r, dt.bfloat16) if bf16 else r}")
    if w is not None:
        g.e.level -= 1


def mma_tc(g, op, plan: TCPlan) -> None:
    x, y, acc = op.x, op.y, op.acc
    M, N, K = plan.M, plan.N, plan.K
    out = plan.layout()
    acc_regs = g.get(acc, out)
    sdt = dt.float16 if plan.kind == "f16" else dt.uint16     # 16-bit patterns in smem
    site = ("mma_tc", id(op))
    bufa = g.buffer(site, 0, sdt, M * K, align16=True)
    bufb = g.buffer(site, 1, sdt, K * N, align16=True)
    g.smem_before_write(bufa, bufb)
    _stage(g, x, bufa, K)
    _stage(g, y, bufb, N)
    g.smem_sync()
    p = f"_tc{M}x{N}x{K}_"                   # per-thread values depend only on the plan
    for name, expr in plan.hoisted(p).items():
        g.hoist(("tc", name), name, expr)
    g.plans.append(plan.describe())
    mma = f"mma_{plan.kind}"
    cur = list(acc_regs)
    for kk in range(K // MMA_K):
        afr = []
        for mi in range(plan.MI):
            names = [g.tmp("fa") for _ in range(4)]
            g.line(f"{', '.join(names)} = ldsm_x4({bufa}, {plan.a_index(p, mi, kk)})")
            afr.append(names)
        bfr = []
        if plan.NI == 1:
            names = [g.tmp("fb") for _ in range(2)]
            g.line(f"{', '.join(names)} = ldsm_x2_t({bufb}, {plan.b_index(p, 0, kk)})")
            bfr.append(names)
        else:
            for ni in range(0, plan.NI, 2):
                names = [g.tmp("fb") for _ in range(4)]
                g.line(f"{', '.join(names)} = ldsm_x4_t({bufb}, {plan.b_index(p, ni, kk)})")
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

"""The products of the vectorised FFMA schedule (``ffma.py``) over staged float32 tiles.

``matmul.mma`` sends a float32 ``Mma`` with an ``FFMAPlan`` through ``matmul_tc.mma_tc``: the
same staging (swizzled, by ``cp.async`` where the operands are plain loads, a pipelined K loop
where the loop allows, else from registers), the same barriers; only the products differ, and
they are here.  Per ``KV`` k steps each thread reads its ``RM`` rows' A values with one vector
load each, then per k its ``RN / 4`` groups of B columns with one ``lds_v4`` each, and
updates its ``RM x RN`` accumulator with ``fmaf`` in k order (bit-identical to the seeds'
schedule).  The k loop is unrolled as far as ``UNROLL_BUDGET`` allows (Numba's compile time).
"""

from __future__ import annotations

from ..ffma import UNROLL_BUDGET, FFMAPlan, join


def compute(g, op, plan: FFMAPlan, bufa: str, bufb: str, acc_regs, out, abase: str = "",
            bbase: str = "", note: str = "") -> None:
    """``acc += A @ B`` over the staged tiles at element offsets ``abase``/``bbase`` (``"x + "``
    prefixes: the pipelined loop's slot)."""
    p = plan.prefix()
    for name, expr in plan.hoisted(p).items():
        g.hoist(("ffma", name), name, expr)
    g.plans.append(plan.describe() + note)
    pa, pb = f"{p}a", f"{p}b"
    RM, RN, K, KV, N = plan.RM, plan.RN, plan.K, plan.KV, plan.N
    groups = RN // 4
    sh, sm = plan.b_swz()
    swbits = sm << 2                       # the bits B's swizzle may flip in a row
    acc = [g.tmp("acc") for _ in range(RM * RN)]
    for n_, a in zip(acc, acc_regs):
        g.line(f"{n_} = {a}")
    carried = list(acc)

    def quad(k0, kq: str | None, last: bool) -> None:
        """k steps ``k0 .. k0 + KV - 1`` (``kq``: the runtime k of the quad, ``k0`` then
        counts from it); ``last``: the loop body's last quad writes the carried names."""
        if kq is None:
            aidx = [join(pa, plan.a_mask(), plan.a_const(i, k0)) for i in range(RM)]
        else:
            ak = g.tmp("ak")
            g.line(f"{ak} = {pa} ^ ({kq} + {k0})" if k0 else f"{ak} = {pa} ^ {kq}")
            aidx = [join(ak, plan.a_mask() | (K - 1), plan.a_const(i, 0)) for i in range(RM)]
        av = []
        for i in range(RM):
            names = [g.tmp("xa") for _ in range(KV)]
            g.line(f"{', '.join(names)} = lds_v{KV}({bufa}, {abase}{aidx[i]})")
            av.append(names)
        for kk in range(KV):
            if kq is None:
                bidx = [join(pb, plan.b_mask(), plan.b_const(k0 + kk, c)) for c in range(groups)]
            else:
                k = f"({kq} + {k0 + kk})" if k0 + kk else kq
                bk = g.tmp("bk")
                g.line(f"{bk} = {pb} ^ ((({k} >> {sh}) & {sm}) << 2)" if sm else f"{bk} = {pb}")
                bidx = [f"{join(bk, plan.b_mask() | swbits, plan.b_const(0, c))} + {k} * {N}"
                        for c in range(groups)]
            bv = []
            for c in range(groups):
                names = [g.tmp("xb") for _ in range(4)]
                g.line(f"{', '.join(names)} = lds_v4({bufb}, {bbase}{bidx[c]})")
                bv += names
            final = last and kk == KV - 1
            for i in range(RM):
                for j in range(RN):
                    r = i * RN + j
                    t = carried[r] if final else g.tmp("acc")
                    g.line(f"{t} = libdevice.fmaf({av[i][kk]}, {bv[j]}, {acc[r]})")
                    acc[r] = t

    per_k = RM * RN + groups + RM
    if per_k * K <= UNROLL_BUDGET:
        for k0 in range(0, K, KV):
            quad(k0, None, False)
    else:
        # a k loop unrolled u steps (a multiple of KV dividing K)
        u = max(KV, min(K, UNROLL_BUDGET // per_k) // KV * KV)
        while K % u:
            u -= KV
        kv = g.tmp("k")
        g.line(f"for {kv} in range(0, {K}, {u}):")
        with g.e.indent():
            for k0 in range(0, u, KV):
                quad(k0, kv, k0 + KV == u)
    g.define(op.result, out, acc)
    g.smem_did_read(bufa)
    g.smem_did_read(bufb)

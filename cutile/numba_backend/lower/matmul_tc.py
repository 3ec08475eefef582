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
loaded into registers at all: ``_stage_direct`` copies its tile global -> shared with 16-byte
``cp.async`` at the mma (``MmaPlanner.direct_operands`` picks them), and ``ldmatrix`` takes
32-bit shared addresses (``ldsm32_*``).
"""

from __future__ import annotations

from ... import dtypes as dt
from ...ir import ops
from .. import layout as L
from ..exprs import to_storage
from ..ffma import FFMAPlan, join
from ..tensorcore import INT_KINDS, TCPlan, swizzle, swizzle_expr
from ..wgmma import WGPlan
from .index import bid_exprs
from .matmul_ffma import compute as compute_ffma


def _stage(g, v, buf: str, ncols: int, epc: int = 8, transpose: bool = False,
           panels: bool = False) -> None:
    """Write the tile ``v`` (rows x ``ncols``) into ``buf`` at swizzled row-major positions
    (``epc`` elements to a 16-byte chunk); ``transpose``: its transpose (``ncols`` = rows of
    ``v``), column-major; ``panels``: in 128-byte column panels (wgmma, ``swizzle``'s
    ``rows``)."""
    tv = g.tv(v)
    shape = v.type.shape
    rows = (shape[-1] if transpose else shape[-2]) if panels else None
    lay = tv.layout if tv.layout is not None else g.natural(v)
    regs = g.get(v, lay)
    rt_, ct_ = g.coord_var(lay, 0), g.coord_var(lay, 1)
    if transpose:
        rt_, ct_ = ct_, rt_
    i = g.lid(lay)
    base = g.hoist(("tcsw", i, ncols, epc, transpose, rows),
                   f"L{i}_sw{ncols}_{epc}{'t' * transpose}{'p' if rows else ''}",
                   swizzle_expr(rt_, ct_, ncols, epc, rows)) if (rt_, ct_) != ("0", "0") else None
    w = g.writer(lay)
    if w is not None:
        g.line(f"if {w}:")
        g.e.level += 1
    d = v.type.dtype
    for k, r in enumerate(regs):
        ro, co = lay.reg_offsets(k)
        if transpose:
            ro, co = co, ro
        c = int(swizzle(ro, co, ncols, epc, rows))  # linear over GF(2): thread ^ register part
        idx = str(c) if base is None else (base if c == 0 else f"{base} ^ {c}")
        g.line(f"{buf}[{idx}] = {to_storage(r, d)}")     # bfloat16/float8: their bits
    if w is not None:
        g.e.level -= 1


def _stage_direct(g, ld, buf: str, T: int, base: str = "", sub: dict | None = None,
                  panels: bool = False) -> None:
    """Copy the tile of the 2-D ``Load`` ``ld`` from global memory into ``buf`` (swizzled, as
    ``_stage``), not through registers.  Where the array's rows are 16-byte aligned (element
    stride 1, row stride a multiple of 16 bytes, aligned data address: a block-uniform test)
    each thread issues ``cp.async`` of whole 16-byte chunks (8 elements), zero-filled past the
    array's edge, consecutive threads taking consecutive chunks of a row (coalesced);
    otherwise it copies element by element.  Out-of-bounds elements read as zero (the load's
    padding is ZERO or UNDETERMINED, ``mma_plan.MmaPlanner._stageable``).  When the host found
    the launch's array made of full tiles with aligned rows (``fulltile.py``), one in-or-out test
    per tile replaces the per-chunk bounds and the fallback.  ``base``: an element offset
    into ``buf`` (``"0 + "`` style prefix, the pipelined loop's half); ``sub``: expressions
    replacing index values (``id(value) -> expr``: the next iteration's induction variable);
    ``panels``: the wgmma layout (``swizzle``'s ``rows``)."""
    cp = _DirectCopy(g, ld, buf, T, base, sub, panels)
    if _full(g, ld):
        _copy_full_tiles(cp)
    else:
        _copy_checked(cp)


class _DirectCopy:
    """One direct copy of a load's tile into shared memory: the array, the tile's shape in
    16-byte chunks, and the names of the tile's bounds (emitted here, before either copy)."""

    def __init__(self, g, ld, buf: str, T: int, base: str, sub: dict | None,
                 panels: bool = False):
        self.g, self.ld, self.buf, self.T, self.base = g, ld, buf, T, base
        self.sub = sub or {}
        a = self.a = g.arrays[id(ld.array)]
        nd = self.nd = len(ld.shape)
        self.R, self.C = ld.shape[-2:]
        self.rows = self.R if panels else None      # swizzle's panel layout (wgmma)
        es = self.es = a.dtype.bitwidth // 8    # bytes per element: 16-bit or float32 operands
        self.epc = 16 // es                     # elements per 16-byte chunk
        self.cpr = self.C // self.epc
        idx0, idx1 = self.scalar(ld.index[-2]), self.scalar(ld.index[-1])
        n0, n1, r0, c0, ok = (g.tmp(s) for s in ("n", "n", "r", "c", "cpok"))
        self.n0, self.n1, self.r0, self.c0, self.ok = n0, n1, r0, c0, ok
        g.line(f"{n0} = i64({a.name}.shape[{nd - 2}])")
        g.line(f"{n1} = i64({a.name}.shape[{nd - 1}])")
        g.line(f"{r0} = i64({idx0}) * {self.R}")
        g.line(f"{c0} = i64({idx1}) * {self.C}")
        # leading dims (tile extent 1): the tile is in bounds there or wholly out (zeros)
        self.lead, self.lead_off = "True", "i64(0)"
        if nd > 2:
            lead_ok, lead_at = g.tmp("lead"), g.tmp("lead")
            ps = [f"i64({self.scalar(ld.index[j])})" for j in range(nd - 2)]
            g.line(f"{lead_ok} = " + " & ".join(f"({p} >= 0) & ({p} < {a.name}.shape[{j}])"
                                                for j, p in enumerate(ps)))
            g.line(f"{lead_at} = " + " + ".join(f"{p} * i64({a.name}.strides[{j}] // {es})"
                                               for j, p in enumerate(ps)))
            self.lead, self.lead_off = lead_ok, lead_at
        self.st0 = g.tmp("st")

    def scalar(self, v):
        return self.sub.get(id(v)) or self.g.scalar(v)

    def dst(self, rr: str, cc: str) -> str:
        """The shared index of chunk/element (``rr``, ``cc``) of the tile."""
        return swizzle_expr(rr, cc, self.C, self.epc, self.rows)

    def units(self, total: int):
        """(unit index expression, guard or None) of each of this thread's copy units."""
        T = self.T
        for i in range(-(-total // T)):
            q = f"(tid + {i * T})" if i else "tid"
            yield q, (f"tid < {total - i * T}" if total - i * T < T else None)

    def emit(self, lines, guard):
        g = self.g
        if guard:
            g.line(f"if {guard}:")
            g.e.level += 1
        for ln in lines:
            g.line(ln)
        if guard:
            g.e.level -= 1


def _copy_full_tiles(cp: _DirectCopy) -> None:
    """Every tile wholly inside the array or wholly outside, rows 16-byte aligned (the host
    checked the launch's arrays): one test per tile, no per-chunk bounds."""
    g, a, nd, es, T = cp.g, cp.a, cp.nd, cp.es, cp.T
    R, C, epc, cpr, st0, buf, base = cp.R, cp.C, cp.epc, cp.cpr, cp.st0, cp.buf, cp.base
    tin, nbt, at = g.tmp("tin"), g.tmp("nb"), g.tmp("at")
    g.line(f"{tin} = {cp.lead} & ({cp.r0} >= 0) & ({cp.r0} < {cp.n0}) & ({cp.c0} >= 0) & "
           f"({cp.c0} < {cp.n1})")
    g.line(f"{nbt} = i32(cuda.selp({tin}, i32(16), i32(0)))")
    g.line(f"{st0} = i64({a.name}.strides[{nd - 2}] // {es})")
    g.line(f"{at} = cuda.selp({tin}, {cp.lead_off} + {cp.r0} * {st0} + {cp.c0}, i64(0))")
    if T % cpr == 0 and (R * cpr) % T == 0:
        # unit i is the thread's first one T / cpr rows further down: one per-thread
        # address and shared index, the units at constant row offsets (fewer registers
        # live across the K loop than an address per unit)
        rr, cc = f"(tid >> {L.log2(cpr)})", f"((tid & {cpr - 1}) << {L.log2(epc)})"
        o, d = g.tmp("o"), g.tmp("d")
        g.line(f"{o} = {at} + i64({rr}) * {st0} + i64({cc})")
        g.line(f"{d} = {cp.dst(rr, cc)}")
        var_mask = C * (T // cpr) - 1 if cp.rows is None else _index_bits(cp, T // cpr)
        for i in range(R * cpr // T):
            dr = i * (T // cpr)                          # row offset of unit i
            dst = join(d, var_mask, int(swizzle(dr, 0, C, epc, cp.rows))) if dr else d
            src = f"{o} + {dr} * {st0}" if dr else o
            g.line(f"cp_async16({buf}, {base}{dst}, {a.name}, "
                   f"cuda.selp({tin}, {src}, i64(0)), {nbt})")
        return
    for q, guard in cp.units(R * cpr):
        rr, cc = f"({q} >> {L.log2(cpr)})", f"(({q} & {cpr - 1}) << {L.log2(epc)})"
        cp.emit([f"cp_async16({buf}, {base}{cp.dst(rr, cc)}, {a.name}, "
                 f"cuda.selp({tin}, {at} + i64({rr}) * {st0} + i64({cc}), i64(0)), {nbt})"],
                guard)


def _copy_transposed_bytes(g, ld, buf: str, T: int) -> None:
    """Copy the K x N tile of the 2-D float8 ``Load`` ``ld`` into ``buf`` transposed (N x K,
    K-major, in 128-byte k panels: the layout 8-bit wgmma reads B in), byte by byte as the
    array holds it: no float32 decode and re-encode through registers.  Thread ``tid`` takes
    column ``n`` and row ``k`` of its bits (``tid = k * N + n`` over the tile; consecutive
    threads read consecutive bytes of a row), each further unit ``T`` elements on; the
    shared index of a unit is the thread's XOR a constant (``swizzle`` is GF(2)-linear and
    the thread and unit bits are disjoint).  Out-of-bounds elements are zero."""
    cp = _DirectCopy(g, ld, buf, T, "", None)
    R, C, nd, a = cp.R, cp.C, cp.nd, cp.a
    lc, units = L.log2(C), R * C // T
    nt = g.tmp("bn")
    kt = g.tmp("bk")
    g.line(f"{nt} = i64(tid & {C - 1})")
    g.line(f"{kt} = i64(tid >> {lc})")
    gc, cok, d = g.tmp("gc"), g.tmp("cok"), g.tmp("d")
    g.line(f"{gc} = {cp.c0} + {nt}")
    g.line(f"{cok} = {cp.lead} & ({gc} >= 0) & ({gc} < {cp.n1})")
    g.line(f"{d} = {swizzle_expr(nt, kt, R, 16, C)}")
    lead = [f"u64(cuda.selp({cok}, i64({cp.scalar(ld.index[j])}), i64(0))), "
            for j in range(nd - 2)]
    for i in range(max(units, 1)):
        q = i * T
        nc, kc = q & (C - 1), q >> lc
        gr, inb = g.tmp("gr"), g.tmp("inb")
        guard = f"tid < {R * C}" if units == 0 else None
        lines = [f"{gr} = {cp.r0} + {kt}{f' + {kc}' if kc else ''}",
                 f"{inb} = {cok} & ({gr} >= 0) & ({gr} < {cp.n0})"]
        col = f"{gc} + {nc}" if nc else gc
        if nc:              # this unit's column: another bound
            lines[1] = (f"{inb} = {cp.lead} & ({gr} >= 0) & ({gr} < {cp.n0}) & ({col} >= 0) "
                        f"& ({col} < {cp.n1})")
        c = int(swizzle(nc, kc, R, 16, C))
        dst = f"{d} ^ {c}" if c else d
        lines.append(f"{buf}[{dst}] = u8(cuda.selp({inb}, u16({a.name}[{''.join(lead)}"
                     f"u64(cuda.selp({inb}, {gr}, i64(0))), "
                     f"u64(cuda.selp({inb}, {col}, i64(0)))]), u16(0)))")
        cp.emit(lines, guard)


def _transpose_staged_bytes(g, src: str, sbase: str, dst: str, K: int, N: int, T: int) -> None:
    """The pipelined float8 ``a @ b``: the K x N byte tile that ``cp.async`` landed in ``src``
    (at ``sbase``; plain swizzled rows, 16 bytes to a chunk) rewritten transposed into ``dst``
    (N x K, K-major panels: what 8-bit wgmma reads B as), one byte per unit, thread and unit
    parts of both indices joined by XOR (``swizzle`` is GF(2)-linear)."""
    ln = L.log2(N)
    nt, kt = g.tmp("tn"), g.tmp("tk")
    g.line(f"{nt} = tid & {N - 1}")
    g.line(f"{kt} = tid >> {ln}")
    si, di = g.tmp("si"), g.tmp("di")
    g.line(f"{si} = {sbase}{swizzle_expr(kt, nt, N, 16)}")
    g.line(f"{di} = {swizzle_expr(nt, kt, K, 16, N)}")
    units = K * N // T
    for i in range(max(units, 1)):
        q = i * T
        nc, kc = q & (N - 1), q >> ln
        cs, cd = int(swizzle(kc, nc, N, 16)), int(swizzle(nc, kc, K, 16, N))
        line = (f"{dst}[{f'{di} ^ {cd}' if cd else di}] = "
                f"{src}[{f'{si} ^ {cs}' if cs else si}]")
        if units == 0:
            line = f"if tid < {K * N}: {line}"
        g.line(line)


def _index_bits(cp: _DirectCopy, nrows: int) -> int:
    """The bits the shared index of a chunk in the first ``nrows`` rows of the tile may have
    (the thread part of ``_copy_full_tiles``' indices: constant row offsets beyond are
    joined to it by ``join``)."""
    bits = 0
    for r in range(nrows):
        for c in range(0, cp.C, cp.epc):
            bits |= int(swizzle(r, c, cp.C, cp.epc, cp.rows))
    return bits


def _copy_checked(cp: _DirectCopy) -> None:
    """Rows 16-byte aligned (tested at run time): cp.async chunks with per-chunk bounds;
    otherwise an element-by-element copy."""
    g, a, nd, es, T = cp.g, cp.a, cp.nd, cp.es, cp.T
    R, C, epc, cpr, st0, buf, base = cp.R, cp.C, cp.epc, cp.cpr, cp.st0, cp.buf, cp.base
    r0, c0, n0, n1, lead, lead_off = cp.r0, cp.c0, cp.n0, cp.n1, cp.lead, cp.lead_off
    g.line(f"{cp.ok} = ({a.name}.strides[{nd - 1}] == {es}) and "
           + "".join(f"({a.name}.strides[{j}] % 16 == 0) and " for j in range(nd - 1))
           + f"(addr_of({a.name}) % u64(16) == u64(0))")
    zero = {dt.bfloat16: "u16(0)", dt.float16: "f16(0.0)", dt.float32: "f32(0.0)",
            dt.float8_e4m3fn: "u8(0)", dt.float8_e5m2: "u8(0)"}[a.dtype]
    g.line(f"if {cp.ok}:")
    g.e.level += 1
    g.line(f"{st0} = i64({a.name}.strides[{nd - 2}] // {es})")
    for q, guard in cp.units(R * cpr):
        rr, cc = f"({q} >> {L.log2(cpr)})", f"(({q} & {cpr - 1}) << {L.log2(epc)})"
        gr, gc, nb = g.tmp("gr"), g.tmp("gc"), g.tmp("nb")
        cp.emit([f"{gr} = {r0} + {rr}", f"{gc} = {c0} + {cc}",
                 f"{nb} = i32(cuda.selp({lead} & ({gr} >= 0) & ({gr} < {n0}) & ({gc} >= 0), "
                 f"max(min({n1} - {gc}, i64({epc})), i64(0)) * {es}, i64(0)))",
                 f"cp_async16({buf}, {base}{cp.dst(rr, cc)}, {a.name}, "
                 f"cuda.selp({nb} > 0, {lead_off} + {gr} * {st0} + {gc}, i64(0)), {nb})"],
                guard)
    g.e.level -= 1
    g.line("else:")
    g.e.level += 1
    # a runtime loop, not unrolled: its addresses are not hoisted out of the K loop and kept
    # live in registers for a path aligned arrays never take
    q, gr, gc, inb = g.tmp("e"), g.tmp("gr"), g.tmp("gc"), g.tmp("inb")
    rr, cc = f"({q} >> {L.log2(C)})", f"({q} & {C - 1})"
    lead_idx = "".join(f"u64(cuda.selp({inb}, i64({cp.scalar(cp.ld.index[j])}), i64(0))), "
                       for j in range(nd - 2))
    g.line(f"for {q} in range(tid, {R * C}, {T}):")
    for ln in (f"{gr} = {r0} + {rr}", f"{gc} = {c0} + {cc}",
               f"{inb} = {lead} & ({gr} >= 0) & ({gr} < {n0}) & ({gc} >= 0) & ({gc} < {n1})",
               f"{buf}[{base}{cp.dst(rr, cc)}] = {a.name}[{lead_idx}"
               f"u64(cuda.selp({inb}, {gr}, i64(0))), u64(cuda.selp({inb}, {gc}, i64(0)))] "
               f"if {inb} else {zero}"):
        g.line("    " + ln)
    g.e.level -= 1


# shared-memory element type of the staged operands: 16-bit patterns, float32 for tfloat32
_SMEM_DTYPE = {"f16": dt.float16, "bf16": dt.uint16, "tf32": dt.float32, "s8": dt.int8,
               "u8": dt.uint8, "f32": dt.float32, "e4m3": dt.uint8, "e5m2": dt.uint8}


def _full(g, ld) -> bool:
    """Whether the launch's array of ``ld`` has only full, 16-byte-row-aligned tiles of its
    shape (``fulltile.py``: the host's facts, part of the kernel's key)."""
    for i, p in enumerate(g.ir.params):
        if p is ld.array:
            return (i, *ld.shape[-2:]) in g.full
    return False


def mma_tc(g, op, plan: TCPlan) -> None:
    x, y, acc = op.x, op.y, op.acc
    xl, yl = g.mma.direct_operands(op)
    pipe = pipelined(g, op)
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
        _stage(g, x, bufa, K, plan.epc, panels=wg)
        g.e.level -= 1
    else:
        bufa = g.buffer(site, 0, sdt, M * K, align16=True, align1024=wg)
    bufb = g.buffer(site, 1, sdt, K * N, align16=True, align1024=wg)
    if inv is not None:
        g.smem_before_write(bufb)               # A was staged above
    else:
        g.smem_before_write(bufa, bufb)
        if xl is not None:
            _stage_direct(g, xl, bufa, plan.T, panels=wg)
        else:
            _stage(g, x, bufa, K, plan.epc, panels=wg)
    if yl is not None and g.mma.copies_transposed(op):
        _copy_transposed_bytes(g, yl, bufb, plan.T)
    elif yl is not None:
        _stage_direct(g, yl, bufb, plan.T, panels=wg)
    elif plan.kind in INT_KINDS or wg and plan.b_transposed:
        # int8 (mma.sync) and float8 (wgmma) read B K-major: its transpose, N x K
        _stage(g, y, bufb, K, plan.epc, transpose=True, panels=wg)
    else:
        _stage(g, y, bufb, N, plan.epc, panels=wg)
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
    """``WGPlan.promotes``: per 64-row block, the wgmmas of every k step into fresh
    registers (the first with scale-d 0: D = A B), committed and waited for, then added to
    the accumulator with float32 adds."""
    n2 = plan.N // 2
    acc = list(acc_regs)
    fn = plan.intrinsic()
    for mi in range(plan.MI):
        cur = [g.tmp("pr") for _ in range(n2)]
        g.line(f"{', '.join(cur)} = wgmma_fence{n2}({', '.join(['f32(0.0)'] * n2)})")
        for kk in range(plan.K // plan.mk):
            oa, ob = plan.a_step(mi, kk) >> 4, plan.b_step(kk) >> 4
            dak = f"{da} + u64({oa})" if oa else da
            dbk = f"{db} + u64({ob})" if ob else db
            new = [g.tmp("pr") for _ in range(n2)]
            g.line(f"{', '.join(new)} = {fn}({dak}, {dbk}, i32({int(kk > 0)}), "
                   f"{', '.join(cur)})")
            cur = new
        g.line("wgmma_commit()")
        done = [g.tmp("pr") for _ in range(n2)]
        g.line(f"{', '.join(done)} = wgmma_wait{n2}({', '.join(cur)})")
        for j, r in enumerate(done):
            s = g.tmp("acc")
            g.line(f"{s} = f32({acc[mi * n2 + j]} + {r})")
            acc[mi * n2 + j] = s
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
    in every iteration (``_transpose_staged_bytes``); a slot of its own (buffers of one
    dtype and slot are one buffer: A's staging is uint8 too)."""
    slot = 1000 + 2 * g.pipe_slots.setdefault(("bt", id(op)), len(g.pipe_slots))
    return g.buffer(("mma_tc_bt", id(op)), slot, _SMEM_DTYPE[plan.kind], plan.K * plan.N,
                    align16=True, align1024=True)


def _subst(g, lds, iv, iv_expr: str) -> dict:
    """Index expressions of the loads with the induction variable at ``iv_expr`` (block ids
    and constants spelled out: the prologue runs before the loop body defines them)."""
    sub = {id(iv): iv_expr}
    for ld in lds:
        for v in ld.index:
            op = g.assign.invariant_index(v)
            if isinstance(op, ops.BlockId):
                sub[id(v)] = f"i32({bid_exprs(g)[op.axis]})"
            elif op is not None:
                sub[id(v)] = str(int(op.value))
    return sub


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
        sub = _subst(g, (xl, yl), for_op.body.args[0], it)
        wg = isinstance(plan, WGPlan)
        raw_b = g.mma.copies_transposed(op)     # B lands as it lies (K x N), transposed later
        _stage_direct(g, xl, bufa, plan.T, f"{s * plan.M * plan.K} + " if s else "", sub, wg)
        _stage_direct(g, yl, bufb, plan.T, f"{s * plan.K * plan.N} + " if s else "", sub,
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
    nxt = _subst(g, (xl, yl), iv, f"(i64({ivs}) + {S - 1} * i64({step}))")
    raw_b = g.mma.copies_transposed(op)
    _stage_direct(g, xl, bufa, plan.T, f"({nx} * {M * K}) + ", nxt, wg)
    _stage_direct(g, yl, bufb, plan.T, f"({nx} * {K * N}) + ", nxt, wg and not raw_b)
    g.line("cp_async_commit()")
    deferred = P > S
    bsrc, bbase, note = bufb, f"({ph} * {K * N}) + ", ""
    if raw_b:
        # float8 B landed as it lies: transposed into the K-major buffer the wgmma reads
        bsrc, bbase, note = transposed_buffer(g, op, plan), "", ", B transposed in shared memory"
        g.smem_before_write(bsrc)
        _transpose_staged_bytes(g, bufb, f"({ph} * {K * N}) + ", bsrc, K, N, plan.T)
        g.smem_did_read(bufb)
        g.line("fence_proxy_async()")
        g.smem_sync()
    _compute(g, op, plan, bufa, bsrc, acc_regs, out, f"({ph} * {M * K}) + ",
             bbase, f", operands by cp.async, {S}-stage pipelined K loop" + note
             + (", wgmma wait deferred one iteration" if deferred else ""),
             wait=1 if deferred else 0)

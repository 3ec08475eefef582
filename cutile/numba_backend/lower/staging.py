"""Operand tiles of a tensor-core or FFMA ``Mma`` into swizzled shared memory.

``matmul_tc.py`` stages each operand one of these ways: from its registers (``stage``), by
16-byte ``cp.async`` copies straight from global memory (``stage_direct``: whole chunks with
per-chunk bounds, one test per full tile, or element by element where rows are not 16-byte
aligned), or, for a float8 B that 8-bit wgmma reads K-major, transposed byte by byte from
global memory (``copy_transposed_bytes``) or from a slot that landed as it lies
(``transpose_staged_bytes``).  The layouts are ``tensorcore.swizzle``'s (with ``rows``: the
wgmma column panels).
"""

from __future__ import annotations

from ... import dtypes as dt
from .. import layout as L
from ..exprs import to_storage
from ..ffma import join
from ..tensorcore import swizzle, swizzle_expr


def stage(g, v, buf: str, ncols: int, epc: int = 8, transpose: bool = False,
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


def stage_direct(g, ld, buf: str, T: int, base: str = "", sub: dict | None = None,
                  panels: bool = False) -> None:
    """Copy the tile of the 2-D ``Load`` ``ld`` from global memory into ``buf`` (swizzled, as
    ``stage``), not through registers.  Where the array's rows are 16-byte aligned (element
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


def copy_transposed_bytes(g, ld, buf: str, T: int) -> None:
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


def transpose_staged_bytes(g, src: str, sbase: str, dst: str, K: int, N: int, T: int) -> None:
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


def _full(g, ld) -> bool:
    """Whether the launch's array of ``ld`` has only full, 16-byte-row-aligned tiles of its
    shape (``fulltile.py``: the host's facts, part of the kernel's key)."""
    for i, p in enumerate(g.ir.params):
        if p is ld.array:
            return (i, *ld.shape[-2:]) in g.full
    return False

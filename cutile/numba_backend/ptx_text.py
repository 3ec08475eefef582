"""The inline PTX of the tensor-core intrinsics, as text and constraints (no numba import).

One place for the assembly that both compile paths emit: ``ptx.py`` wraps it in Numba
intrinsics, ``nvvm/calls.py`` emits it into NVVM IR directly.  ``ASM[name]`` is (text,
constraints, operand kinds, result codes): an operand kind is a scalar code the argument is
converted to (``I`` uint32, ``f`` float32, ``i`` int32), ``F`` a float32 passed as its bits,
``A`` an array, ``s`` the 32-bit shared-window address of its element at this index, ``g``
the 64-bit address of its element at this index, ``n`` a byte count as int32.
"""

from __future__ import annotations


def mma_text(kind: str) -> str:
    """m16n8k16 float16/bfloat16 mma, float32 accumulators."""
    return (f"mma.sync.aligned.m16n8k16.row.col.f32.{kind}.{kind}.f32 "
            "{$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, {$10,$11,$12,$13};")


def mma_int_text(kind: str) -> str:
    """m16n8k32 int8/uint8 mma, int32 accumulators."""
    return (f"mma.sync.aligned.m16n8k32.row.col.s32.{kind}.{kind}.s32 "
            "{$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, {$10,$11,$12,$13};")


MMA_TF32_TEXT = ("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, {$10,$11,$12,$13};")
MMA_F_CONSTRAINTS = "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f"
MMA_I_CONSTRAINTS = "=r,=r,=r,=r,r,r,r,r,r,r,r,r,r,r"


def ldsm_text(n: int, trans: bool, shared32: bool) -> tuple[str, str]:
    """ldmatrix of ``n`` 8x8 matrices: (text, constraints); ``shared32``: the address is a
    32-bit shared-window address, else a generic 64-bit one."""
    outs = ",".join(f"${i}" for i in range(n))
    op = f"ldmatrix.sync.aligned.m8n8.x{n}{'.trans' if trans else ''}.shared.b16"
    if shared32:
        text = op + " {" + outs + "}, [$" + str(n) + "];"
    else:
        text = ("{ .reg .u64 p; cvta.to.shared.u64 p, $" + str(n) + "; " + op + " {" + outs
                + "}, [p]; }")
    return text, ",".join(["=r"] * n + ["r" if shared32 else "l", "~{memory}"])


CP_ASYNC16_TEXT = ("{ .reg .u64 g; cvta.to.global.u64 g, $1; "
                   "cp.async.cg.shared.global [$0], [g], 16, $2; }")
CP_ASYNC16_CONSTRAINTS = "r,l,r,~{memory}"


# -- Hopper (sm_90a): wgmma from shared-memory descriptors (wgmma.py plans, probe-checked) --

WGMMA_NS = (8, 16, 32, 64, 128, 256)          # N of wgmma.m64nNk16 the plans use
WGMMA_COUNTS = (4, 8, 16, 32, 64, 128, 256)   # accumulator registers one fence/wait ties
WGMMA_8BIT = ("e4m3", "e5m2")                 # float8 kinds: m64nNk32, B K-major only


def wgmma_text(kind: str, n: int, trans_b: bool) -> tuple[str, str]:
    """``wgmma.mma_async`` m64nNk16 (float8: k32), float32 D += A * B with A and B from shared
    memory by descriptor (B MN-major when ``trans_b``): (text, constraints).  Operands: the N/2
    accumulators out ($0..), the two descriptors, a scale-d flag (1: D = A B + D), the
    accumulators in, tied to the outputs (the instruction reads and writes the same
    registers)."""
    k = n // 2
    outs = ",".join(f"${i}" for i in range(k))
    # float8 (k32): both operands K-major, no transpose immediates
    kdepth, trans = (32, "") if kind in WGMMA_8BIT else (16, f", 0, {int(trans_b)}")
    assert not (trans_b and kind in WGMMA_8BIT), "8-bit wgmma reads B K-major"
    text = ("{ .reg .pred p; setp.ne.b32 p, $" + str(k + 2) + ", 0; "
            f"wgmma.mma_async.sync.aligned.m64n{n}k{kdepth}.f32.{kind}.{kind} "
            "{" + outs + "}, $" + str(k) + ", $" + str(k + 1)
            + f", p, 1, 1{trans}; }}")
    cons = ",".join(["=f"] * k + ["l", "l", "r"] + [str(i) for i in range(k)])
    return text, cons


def tied_constraints(count: int) -> str:
    """Constraints of an instruction that passes ``count`` float32 registers through
    unchanged (tied): ``wgmma.fence`` before the wgmmas that read them and
    ``wgmma.wait_group`` after, so no other instruction on those registers is scheduled
    between (LLVM sees the wgmma's results as ready when its asm returns)."""
    return ",".join(["=f"] * count + [str(i) for i in range(count)] + ["~{memory}"])


def _asm() -> dict:
    out = {f"mma_{k}": (mma_text(k), MMA_F_CONSTRAINTS, "IIIIIIffff", "ffff")
           for k in ("f16", "bf16")}
    out.update({f"mma_{k}": (mma_int_text(k), MMA_I_CONSTRAINTS, "IIIIIIiiii", "iiii")
                for k in ("s8", "u8")})
    out["mma_tf32"] = (MMA_TF32_TEXT, MMA_F_CONSTRAINTS, "IIIIFFffff", "ffff")
    for n in (2, 4):
        for trans in (False, True):
            for s32 in (False, True):
                text, cons = ldsm_text(n, trans, s32)
                name = f"ldsm{'32' if s32 else ''}_x{n}{'_t' if trans else ''}"
                out[name] = (text, cons, "A" + ("s" if s32 else "g"), "I" * n)
    out["cp_async16"] = (CP_ASYNC16_TEXT, CP_ASYNC16_CONSTRAINTS, "AsAgn", "")
    out["cp_async_wait_all"] = ("cp.async.wait_all;", "~{memory}", "", "")
    out["cp_async_commit"] = ("cp.async.commit_group;", "~{memory}", "", "")
    for n in range(3):
        out[f"cp_async_wait_group{n}"] = (f"cp.async.wait_group {n};", "~{memory}", "", "")
    for kind in ("f16", "bf16") + WGMMA_8BIT:
        for n in WGMMA_NS:
            for t in (False, True) if kind not in WGMMA_8BIT else (False,):
                text, cons = wgmma_text(kind, n, t)
                out[f"wgmma_{kind}_n{n}{'_t' if t else ''}"] = (
                    text, cons, "lli" + "f" * (n // 2), "f" * (n // 2))
    for c in WGMMA_COUNTS:
        out[f"wgmma_fence{c}"] = ("wgmma.fence.sync.aligned;", tied_constraints(c), "f" * c,
                                  "f" * c)
        out[f"wgmma_wait{c}"] = ("wgmma.wait_group.sync.aligned 0;", tied_constraints(c),
                                 "f" * c, "f" * c)
        out[f"wgmma_wait1_{c}"] = ("wgmma.wait_group.sync.aligned 1;", tied_constraints(c),
                                   "f" * c, "f" * c)
    out["wgmma_commit"] = ("wgmma.commit_group.sync.aligned;", "~{memory}", "", "")
    # shared-memory writes (st.shared, cp.async: the generic proxy) before the wgmmas that
    # read them through the async proxy
    out["fence_proxy_async"] = ("fence.proxy.async.shared::cta;", "~{memory}", "", "")
    out.update(_tma_asm())
    # the 32-bit shared-window address of buf[i] (for descriptors and alignment)
    out["smem_addr32"] = ("mov.u32 $0, $1;", "=r,r", "As", "I")
    # a float select the optimiser cannot see through: NVVM rewrites ``x < 0 ? x : 0`` into
    # ``min.f32(x, 0)``, which gives -0 for x = -0 where the select gives +0 (exprs.py)
    # (the condition travels as a u32: NVVM's verifier refuses i1 inline-asm operands)
    for w, c in (("32", "f"), ("64", "d")):
        out[f"selp_f{w}"] = ("{.reg .pred p; setp.ne.b32 p, $3, 0; selp.f" + w
                             + " $0, $1, $2, p;}", f"={c},{c},{c},r", f"{c}{c}I", c)
    return out


# -- Hopper (sm_90): mbarriers, TMA tile loads and named barriers (lower/matmul_ws.py) -----

TMA_MAX_RANK = 5


def _tma_asm() -> dict:
    """The warp-specialised K loop's instructions (``tools/gpu/probe_gemm_ws.py`` measured them
    first).  Barrier addresses are 32-bit shared-window addresses; a tensor map is named by the
    64-bit global address of its 128 bytes (a kernel parameter: ``tma.py``)."""
    out = {
        "mbar_init": ("mbarrier.init.shared::cta.b64 [$0], $1;", "r,r,~{memory}", "II", ""),
        # the initialised barriers made visible to the async proxy (TMA's complete_tx)
        "fence_mbar_init": ("fence.mbarrier_init.release.cluster;", "~{memory}", "", ""),
        # the host wrote the tensor map (generic proxy) before the launch; the copy engine
        # reads it through the tensormap proxy
        "fence_tensormap": ("fence.proxy.tensormap::generic.acquire.gpu [$0], 128;",
                            "l,~{memory}", "l", ""),
        "mbar_expect_tx": ("mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;",
                           "r,r,~{memory}", "II", ""),
        # an arrival only where $1 is non-zero, without a branch (a branch between two wgmma
        # groups in flight makes ptxas serialise them, C7515)
        "mbar_arrive_if": ("{ .reg .pred p; setp.ne.u32 p, $1, 0; "
                           "@p mbarrier.arrive.shared::cta.b64 _, [$0]; }", "r,r,~{memory}",
                           "II", ""),
        # until the phase of parity $1 of the barrier at $0 has completed (labels inside a
        # braced block are local to it, so the text may be inlined any number of times)
        "mbar_wait": ("{ .reg .pred p; LAB_WAIT: "
                      "mbarrier.try_wait.parity.shared::cta.b64 p, [$0], $1; "
                      "@!p bra LAB_WAIT; }", "r,r,~{memory}", "II", ""),
        # a barrier over the first $1 threads of the block only (the consumers; the producer
        # warpgroup never reaches it)
        "bar_sync_named": ("bar.sync $0, $1;", "r,r,~{memory}", "ii", ""),
    }
    # the TMA store epilogue: shared memory (the writing threads' fence.proxy.async first)
    # -> global by the copy engine; the group's shared reads awaited before the block exits
    out["bulk_commit"] = ("cp.async.bulk.commit_group;", "~{memory}", "", "")
    out["bulk_wait_read0"] = ("cp.async.bulk.wait_group.read 0;", "~{memory}", "", "")
    for n in range(1, TMA_MAX_RANK + 1):
        coords = ", ".join(f"${1 + i}" for i in range(n))
        out[f"tma_store_{n}d"] = (
            f"cp.async.bulk.tensor.{n}d.global.shared::cta.bulk_group [$0, {{{coords}}}], "
            f"[${1 + n}];", ",".join(["l"] + ["r"] * n + ["r", "~{memory}"]),
            "l" + "i" * n + "I", "")
    for n in range(1, TMA_MAX_RANK + 1):
        coords = ", ".join(f"${2 + i}" for i in range(n))
        out[f"tma_load_{n}d"] = (
            f"cp.async.bulk.tensor.{n}d.shared::cluster.global.mbarrier::complete_tx::bytes "
            f"[$0], [$1, {{{coords}}}], [${2 + n}];",
            ",".join(["r", "l"] + ["r"] * n + ["r", "~{memory}"]), "Il" + "i" * n + "I", "")
    return out


ASM = _asm()
# the intrinsics ptx.py marks as having side effects (kept in order around barriers)
SIDE_EFFECT = {k: True for k in ASM if k.startswith(("ldsm", "cp_async", "wgmma", "fence", "mbar",
                                                     "tma_", "bar_sync", "bulk_"))}

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
    return out


ASM = _asm()
# the intrinsics ptx.py marks as having side effects (kept in order around barriers)
SIDE_EFFECT = {k: True for k in ASM if k.startswith(("ldsm", "cp_async"))}

"""Inline-PTX intrinsics for the tensor-core matmul (real GPU only: the simulator runs no PTX).

Numba exposes no ``mma``/``ldmatrix`` instruction, so they are emitted as llvmlite
``InlineAsm`` calls from ``numba.cuda.extending.intrinsic``s (the way numba-cuda's own
``cache_hints`` are; measured in ``shared/probes/tc_probe.py``):

- ``mma_f16`` / ``mma_bf16``: ``mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.f32``, one
  warp, A as 4 and B as 2 ``uint32`` registers holding two halves each, C/D as 4 float32;
- ``ldsm_x4(buf, i)``, ``ldsm_x4_t(buf, i)``, ``ldsm_x2_t(buf, i)``: ``ldmatrix.sync.aligned``
  of four (two) 8x8 matrices of 16-bit elements from shared memory, plain or transposed, each
  lane giving the address ``&buf[i]`` of one matrix row (16 bytes).  They are marked as having
  side effects and clobbering memory so that LLVM keeps them after the barrier that publishes
  the staged tile.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types

try:
    from numba.cuda.extending import intrinsic
except ImportError:  # pragma: no cover - older numba-cuda
    from numba.core.extending import intrinsic


def _mma(kind: str):
    asm_text = (f"mma.sync.aligned.m16n8k16.row.col.f32.{kind}.{kind}.f32 "
                "{$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, {$10,$11,$12,$13};")

    def impl(typingctx, a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
        sig = types.UniTuple(types.float32, 4)(*([types.uint32] * 6 + [types.float32] * 4))

        def codegen(context, builder, signature, args):
            f32, i32 = ir.FloatType(), ir.IntType(32)
            fnty = ir.FunctionType(ir.LiteralStructType([f32] * 4), [i32] * 6 + [f32] * 4)
            asm = ir.InlineAsm(fnty, asm_text, "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f")
            res = builder.call(asm, args)
            vals = [builder.extract_value(res, i) for i in range(4)]
            return context.make_tuple(builder, signature.return_type, vals)

        return sig, codegen

    impl.__name__ = f"mma_{kind}"
    return intrinsic(impl)


mma_f16 = _mma("f16")
mma_bf16 = _mma("bf16")


def _ldsm(n: int, trans: bool):
    outs = ",".join(f"${i}" for i in range(n))
    text = ("{ .reg .u64 p; cvta.to.shared.u64 p, $" + str(n) + "; "
            f"ldmatrix.sync.aligned.m8n8.x{n}{'.trans' if trans else ''}.shared.b16 "
            "{" + outs + "}, [p]; }")
    constraint = ",".join(["=r"] * n + ["l", "~{memory}"])

    def impl(typingctx, buf, idx):
        if not isinstance(buf, types.Array) or not isinstance(idx, types.Integer):
            return None
        sig = types.UniTuple(types.uint32, n)(buf, idx)

        def codegen(context, builder, signature, args):
            arrty, _ = signature.args
            ary = context.make_array(arrty)(context, builder, args[0])
            i64 = ir.IntType(64)
            ix = args[1]
            if ix.type.width < 64:
                ix = builder.sext(ix, i64)
            ptr = builder.gep(ary.data, [ix])
            addr = builder.ptrtoint(ptr, i64)
            fnty = ir.FunctionType(ir.LiteralStructType([ir.IntType(32)] * n), [i64])
            asm = ir.InlineAsm(fnty, text, constraint, side_effect=True)
            res = builder.call(asm, [addr])
            vals = [builder.extract_value(res, i) for i in range(n)]
            return context.make_tuple(builder, signature.return_type, vals)

        return sig, codegen

    impl.__name__ = f"ldsm_x{n}{'_t' if trans else ''}"
    return intrinsic(impl)


ldsm_x4 = _ldsm(4, False)
ldsm_x4_t = _ldsm(4, True)
ldsm_x2_t = _ldsm(2, True)

INTRINSICS = {"mma_f16": mma_f16, "mma_bf16": mma_bf16, "ldsm_x4": ldsm_x4,
              "ldsm_x4_t": ldsm_x4_t, "ldsm_x2_t": ldsm_x2_t}

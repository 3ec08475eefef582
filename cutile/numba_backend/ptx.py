"""Inline-PTX intrinsics for the tensor-core matmul (real GPU only: the simulator runs no PTX).

Numba exposes no ``mma``/``ldmatrix`` instruction, so they are emitted as llvmlite
``InlineAsm`` calls from ``numba.cuda.extending.intrinsic``s (the way numba-cuda's own
``cache_hints`` are; measured in ``shared/probes/tc_probe.py``):

- ``mma_f16`` / ``mma_bf16``: ``mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.f32``, one
  warp, A as 4 and B as 2 ``uint32`` registers holding two halves each, C/D as 4 float32;
  ``mma_tf32``: ``m16n8k8`` on tfloat32 (A 4 ``uint32``, B 2 float32); ``mma_s8`` /
  ``mma_u8``: ``m16n8k32`` on int8 / uint8 (4 bytes per register), int32 C/D;
- ``ldsm_x4(buf, i)``, ``ldsm_x4_t(buf, i)``, ``ldsm_x2_t(buf, i)`` (``ldsm32_*``: the same
  with a 32-bit shared-window address, so shared addresses stay in 32-bit registers; the
  default, ``CUTILE_NUMBA_CP_ASYNC=0`` turns it off): ``ldmatrix.sync.aligned``
  of four (two) 8x8 matrices of 16-bit elements from shared memory, plain or transposed, each
  lane giving the address ``&buf[i]`` of one matrix row (16 bytes).  They are marked as having
  side effects and clobbering memory so that LLVM keeps them after the barrier that publishes
  the staged tile;
- ``cp_async16(buf, i, src, off, nbytes)`` / ``cp_async_wait_all()``: global -> shared copies
  of 16-byte chunks that bypass the registers (zero-filled past ``nbytes``), and the wait for
  them; ``cp_async_commit()`` / ``cp_async_wait_group<n>()``: close a group of copies, wait for
  all but the newest ``n`` groups (the multi-stage pipeline); ``addr_of(arr)``: an array's
  data address (the 16-byte alignment test);
- ``lds_v4(buf, i)`` / ``lds_v2(buf, i)``: the 4 (2) elements ``buf[i:i+4]`` of a shared
  array in one vector load (``ld.shared.v4``; ``i`` a multiple of 4 (2) in a 16-byte aligned
  buffer): an LLVM load of a vector from the shared window, not inline assembly, so LLVM and
  ptxas order and schedule it as any shared load (the FFMA matmul, ``ffma.py``).
"""

from __future__ import annotations

from llvmlite import ir
from numba import types

from .ptx_text import (
    ASM,
    CP_ASYNC16_CONSTRAINTS,
    CP_ASYNC16_TEXT,
    MMA_F_CONSTRAINTS,
    MMA_I_CONSTRAINTS,
    MMA_TF32_TEXT,
    SIDE_EFFECT,
    ldsm_text,
    mma_int_text,
    mma_text,
)

try:
    from numba.cuda.extending import intrinsic
except ImportError:  # pragma: no cover - older numba-cuda
    from numba.core.extending import intrinsic


def _mma(kind: str):
    asm_text = mma_text(kind)

    def impl(typingctx, a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
        sig = types.UniTuple(types.float32, 4)(*([types.uint32] * 6 + [types.float32] * 4))

        def codegen(context, builder, signature, args):
            f32, i32 = ir.FloatType(), ir.IntType(32)
            fnty = ir.FunctionType(ir.LiteralStructType([f32] * 4), [i32] * 6 + [f32] * 4)
            asm = ir.InlineAsm(fnty, asm_text, MMA_F_CONSTRAINTS)
            res = builder.call(asm, args)
            vals = [builder.extract_value(res, i) for i in range(4)]
            return context.make_tuple(builder, signature.return_type, vals)

        return sig, codegen

    impl.__name__ = f"mma_{kind}"
    return intrinsic(impl)


mma_f16 = _mma("f16")
mma_bf16 = _mma("bf16")


def _mma_int(kind: str):
    text = mma_int_text(kind)

    def impl(typingctx, a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
        sig = types.UniTuple(types.int32, 4)(*([types.uint32] * 6 + [types.int32] * 4))

        def codegen(context, builder, signature, args):
            i32 = ir.IntType(32)
            fnty = ir.FunctionType(ir.LiteralStructType([i32] * 4), [i32] * 10)
            asm = ir.InlineAsm(fnty, text, MMA_I_CONSTRAINTS)
            res = builder.call(asm, args)
            vals = [builder.extract_value(res, i) for i in range(4)]
            return context.make_tuple(builder, signature.return_type, vals)

        return sig, codegen

    impl.__name__ = f"mma_{kind}"
    return intrinsic(impl)


# int8 / uint8 operands, int32 accumulator (wrapping, as the interpreter's int32 sum)
mma_s8 = _mma_int("s8")
mma_u8 = _mma_int("u8")


@intrinsic
def mma_tf32(typingctx, a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
    """``mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32``: A as 4 ``uint32`` (the bits
    ``ldmatrix`` gives), B as 2 float32 (tfloat32 values in float32 containers), C/D 4
    float32."""
    sig = types.UniTuple(types.float32, 4)(*([types.uint32] * 4 + [types.float32] * 6))
    text = MMA_TF32_TEXT

    def codegen(context, builder, signature, args):
        f32, i32 = ir.FloatType(), ir.IntType(32)
        bits = [builder.bitcast(b, i32) for b in args[4:6]]
        fnty = ir.FunctionType(ir.LiteralStructType([f32] * 4), [i32] * 6 + [f32] * 4)
        asm = ir.InlineAsm(fnty, text, MMA_F_CONSTRAINTS)
        res = builder.call(asm, list(args[:4]) + bits + list(args[6:]))
        vals = [builder.extract_value(res, i) for i in range(4)]
        return context.make_tuple(builder, signature.return_type, vals)

    return sig, codegen


def _shared_addr(context, builder, arrty, arr, ix):
    """32-bit shared-window address (i32) of element ``ix`` of a shared array: the generic
    pointer cast to address space 3, so NVVM keeps shared addresses in 32-bit registers."""
    ary = context.make_array(arrty)(context, builder, arr)
    i64 = ir.IntType(64)
    if ix.type.width < 64:
        ix = builder.sext(ix, i64)
    ptr = builder.gep(ary.data, [ix])
    sptr = builder.addrspacecast(ptr, ptr.type.pointee.as_pointer(3))
    return builder.ptrtoint(sptr, ir.IntType(32))


def _ldsm(n: int, trans: bool, shared32: bool):
    # shared32: a 32-bit shared-window address; else a generic 64-bit address (the form
    # measured on the H100)
    text, constraint = ldsm_text(n, trans, shared32)

    def impl(typingctx, buf, idx):
        if not isinstance(buf, types.Array) or not isinstance(idx, types.Integer):
            return None
        sig = types.UniTuple(types.uint32, n)(buf, idx)

        def codegen(context, builder, signature, args):
            if shared32:
                addr = _shared_addr(context, builder, signature.args[0], args[0], args[1])
            else:
                addr = _elem_addr(context, builder, signature.args[0], args[0], args[1])
            fnty = ir.FunctionType(ir.LiteralStructType([ir.IntType(32)] * n), [addr.type])
            asm = ir.InlineAsm(fnty, text, constraint, side_effect=True)
            res = builder.call(asm, [addr])
            vals = [builder.extract_value(res, i) for i in range(n)]
            return context.make_tuple(builder, signature.return_type, vals)

        return sig, codegen

    impl.__name__ = f"ldsm{'32' if shared32 else ''}_x{n}{'_t' if trans else ''}"
    return intrinsic(impl)


ldsm_x2 = _ldsm(2, False, False)
ldsm32_x2 = _ldsm(2, False, True)
ldsm_x4 = _ldsm(4, False, False)
ldsm_x4_t = _ldsm(4, True, False)
ldsm_x2_t = _ldsm(2, True, False)
ldsm32_x4 = _ldsm(4, False, True)
ldsm32_x4_t = _ldsm(4, True, True)
ldsm32_x2_t = _ldsm(2, True, True)

def _elem_addr(context, builder, arrty, arr, ix):
    """Address (i64) of element ``ix`` (flat, in elements) of an array's data."""
    ary = context.make_array(arrty)(context, builder, arr)
    i64 = ir.IntType(64)
    if ix.type.width < 64:
        ix = builder.sext(ix, i64)
    return builder.ptrtoint(builder.gep(ary.data, [ix]), i64)


def _lds(n: int):
    def impl(typingctx, buf, idx):
        if not isinstance(buf, types.Array) or not isinstance(idx, types.Integer):
            return None
        sig = types.UniTuple(buf.dtype, n)(buf, idx)

        def codegen(context, builder, signature, args):
            arrty = signature.args[0]
            ary = context.make_array(arrty)(context, builder, args[0])
            ix = args[1]
            if ix.type.width < 64:
                ix = builder.sext(ix, ir.IntType(64))
            ptr = builder.gep(ary.data, [ix])
            sptr = builder.addrspacecast(ptr, ptr.type.pointee.as_pointer(3))
            et = context.get_data_type(arrty.dtype)
            vec = builder.load(builder.bitcast(sptr, ir.VectorType(et, n).as_pointer(3)),
                               align=n * context.get_abi_sizeof(et))
            vals = [builder.extract_element(vec, ir.Constant(ir.IntType(32), i))
                    for i in range(n)]
            return context.make_tuple(builder, signature.return_type, vals)

        return sig, codegen

    impl.__name__ = f"lds_v{n}"
    return intrinsic(impl)


lds_v2 = _lds(2)
lds_v4 = _lds(4)


@intrinsic
def cp_async16(typingctx, buf, idx, src, off, nbytes):
    """``cp.async.cg.shared.global`` of 16 bytes: ``buf[idx:idx+16/itemsize]`` (shared) from
    the 16-byte aligned ``src.data + off`` elements (global); only the first ``nbytes`` are
    read, the rest of the 16 are zero-filled (``nbytes = 0``: all zeros, nothing read)."""
    if not all(isinstance(a, types.Array) for a in (buf, src)) or not all(
            isinstance(a, types.Integer) for a in (idx, off, nbytes)):
        return None
    text = CP_ASYNC16_TEXT

    def codegen(context, builder, signature, args):
        bt, _, st, _, nt = signature.args
        dst = _shared_addr(context, builder, bt, args[0], args[1])
        gsrc = _elem_addr(context, builder, st, args[2], args[3])
        n = args[4]
        i32 = ir.IntType(32)
        n = builder.trunc(n, i32) if n.type.width > 32 else (
            builder.sext(n, i32) if n.type.width < 32 else n)
        fnty = ir.FunctionType(ir.VoidType(), [i32, ir.IntType(64), i32])
        asm = ir.InlineAsm(fnty, text, CP_ASYNC16_CONSTRAINTS, side_effect=True)
        builder.call(asm, [dst, gsrc, n])

    return types.void(buf, idx, src, off, nbytes), codegen


@intrinsic
def cp_async_wait_all(typingctx):
    """``cp.async.wait_all``: this thread's cp.async copies have landed in shared memory."""

    def codegen(context, builder, signature, args):
        asm = ir.InlineAsm(ir.FunctionType(ir.VoidType(), []), "cp.async.wait_all;",
                           "~{memory}", side_effect=True)
        builder.call(asm, [])

    return types.void(), codegen


@intrinsic
def cp_async_commit(typingctx):
    """``cp.async.commit_group``: this thread's copies issued since the last commit form a
    group (``cp_async_wait_group<n>`` waits for all but the newest ``n`` groups)."""

    def codegen(context, builder, signature, args):
        asm = ir.InlineAsm(ir.FunctionType(ir.VoidType(), []), "cp.async.commit_group;",
                           "~{memory}", side_effect=True)
        builder.call(asm, [])

    return types.void(), codegen


def _wait_group(n: int):
    def impl(typingctx):
        def codegen(context, builder, signature, args):
            asm = ir.InlineAsm(ir.FunctionType(ir.VoidType(), []),
                               f"cp.async.wait_group {n};", "~{memory}", side_effect=True)
            builder.call(asm, [])

        return types.void(), codegen

    impl.__name__ = f"cp_async_wait_group{n}"
    return intrinsic(impl)


# pipelines of up to 4 stages wait with n = stages - 2
CP_ASYNC_WAIT_GROUP = {f"cp_async_wait_group{n}": _wait_group(n) for n in range(3)}


@intrinsic
def addr_of(typingctx, arr):
    """The address of an array's first element (uint64), for alignment tests."""
    if not isinstance(arr, types.Array):
        return None

    def codegen(context, builder, signature, args):
        return _elem_addr(context, builder, signature.args[0], args[0],
                          ir.Constant(ir.IntType(64), 0))

    return types.uint64(arr), codegen


_NB = {"I": types.uint32, "i": types.int32, "l": types.int64, "f": types.float32,
       "d": types.float64}


def _from_asm(name: str):
    """A Numba intrinsic for the ``ptx_text.ASM`` entry ``name`` whose operands are scalars
    (codes ``I``/``i``/``l``/``f``) or one shared array and an index (``A``, ``s``: the
    32-bit shared address of that element): the wgmma family, whose 32-258 operands no
    hand-written signature lists.  Numba reads a typing function's own parameters, so each
    arity gets a generated one."""
    text, cons, ins, outs = ASM[name]
    res = [_NB[c] for c in outs]
    ret = types.void if not res else res[0] if len(res) == 1 else types.Tuple(res)

    def typer(typingctx, *args):
        if len(args) != len(ins):
            return None
        sig_args = []
        for a, k in zip(args, ins):
            if k == "A":
                if not isinstance(a, types.Array):
                    return None
                sig_args.append(a)
            elif k == "s":
                if not isinstance(a, types.Integer):
                    return None
                sig_args.append(a)
            else:
                sig_args.append(_NB[k])

        def codegen(context, builder, signature, vals):
            ops_ = []
            i = 0
            while i < len(ins):
                if ins[i] == "A":
                    ops_.append(_shared_addr(context, builder, signature.args[i], vals[i],
                                             vals[i + 1]))
                    i += 2
                    continue
                ops_.append(vals[i])
                i += 1
            tys = [v.type for v in ops_]
            lres = [context.get_value_type(t) for t in res]
            rty = (ir.VoidType() if not lres else lres[0] if len(lres) == 1
                   else ir.LiteralStructType(lres))
            call = builder.call(ir.InlineAsm(ir.FunctionType(rty, tys), text, cons,
                                             side_effect=SIDE_EFFECT.get(name, False)), ops_)
            if len(lres) > 1:
                vals_ = [builder.extract_value(call, j) for j in range(len(lres))]
                return context.make_tuple(builder, signature.return_type, vals_)
            return None if not lres else call

        return ret(*sig_args), codegen

    params = ", ".join(f"a{i}" for i in range(len(ins)))
    ns: dict = {"typer": typer}
    exec(f"def {name}(typingctx, {params}):\n    return typer(typingctx, {params})", ns)
    return intrinsic(ns[name])


GENERATED_PREFIXES = ("wgmma_", "fence_", "smem_addr32", "selp_f", "mbar_", "tma_load_",
                      "tma_store_", "bulk_", "bar_sync_named")


INTRINSICS = {"mma_f16": mma_f16, "mma_bf16": mma_bf16, "mma_tf32": mma_tf32,
              "mma_s8": mma_s8, "mma_u8": mma_u8, "ldsm_x2": ldsm_x2, "ldsm32_x2": ldsm32_x2,
              "ldsm_x4": ldsm_x4,
              "ldsm_x4_t": ldsm_x4_t, "ldsm_x2_t": ldsm_x2_t, "ldsm32_x4": ldsm32_x4,
              "ldsm32_x4_t": ldsm32_x4_t, "ldsm32_x2_t": ldsm32_x2_t, "cp_async16": cp_async16,
              "cp_async_wait_all": cp_async_wait_all, "addr_of": addr_of,
              "cp_async_commit": cp_async_commit, "lds_v2": lds_v2, "lds_v4": lds_v4,
              **CP_ASYNC_WAIT_GROUP,
              **{n: _from_asm(n) for n in ASM if n.startswith(GENERATED_PREFIXES)}}

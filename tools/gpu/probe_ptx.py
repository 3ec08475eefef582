"""The wgmma probe's inline PTX (``wgmma_probe.py``, issue 24):
``numba.cuda.extending.intrinsic``s emitting llvmlite ``InlineAsm`` (as
``cutile/numba_backend/ptx.py`` and ``shared/probes/tc_probe.py``): fences, mbarriers, TMA
loads and stores, bulk groups, the shared-window address of a shared array, and
``wgmma.mma_async`` with its accumulator helpers (zeros, the pin after ``wait_group``,
stores, the sum) for any N.
"""

from __future__ import annotations

from hopper_layout import acc_layout
from llvmlite import ir
from numba import types

try:
    from numba.cuda.extending import intrinsic
except ImportError:  # older numba-cuda
    from numba.core.extending import intrinsic

_LL = {types.uint32: ir.IntType(32), types.int32: ir.IntType(32), types.uint64: ir.IntType(64),
       types.float32: ir.FloatType()}


_ARITY = {
    0: lambda sig, cg: lambda typingctx: (sig, cg),
    1: lambda sig, cg: lambda typingctx, a: (sig, cg),
    2: lambda sig, cg: lambda typingctx, a, b: (sig, cg),
    4: lambda sig, cg: lambda typingctx, a, b, c, d: (sig, cg),
    5: lambda sig, cg: lambda typingctx, a, b, c, d, e: (sig, cg),
}


def _asm(name, text, constraints, argtys, resty=types.void):
    """An intrinsic emitting ``text`` with scalar operands of the numba types ``argtys``
    (call-site values are cast to them) and a scalar result or none; always marked as having
    side effects, so LLVM keeps these in program order among themselves and around
    barriers (each one that touches memory also clobbers it)."""
    sig = resty(*argtys)

    def codegen(context, builder, signature, vals):
        res = ir.VoidType() if resty is types.void else _LL[resty]
        fnty = ir.FunctionType(res, [_LL[t] for t in argtys])
        out = builder.call(ir.InlineAsm(fnty, text, constraints, side_effect=True), list(vals))
        return None if resty is types.void else out

    # numba's intrinsic typing folds arguments by the typing function's own signature, so
    # each arity needs its own (a *args typing function is read as a star-argument call)
    impl = _ARITY[len(argtys)](sig, codegen)
    impl.__name__ = name
    return intrinsic(impl)


U32, U64 = types.uint32, types.uint64
fence_proxy_async = _asm("fence_proxy_async", "fence.proxy.async.shared::cta;", "~{memory}", ())
wgmma_fence = _asm("wgmma_fence", "wgmma.fence.sync.aligned;", "~{memory}", ())
wgmma_commit = _asm("wgmma_commit", "wgmma.commit_group.sync.aligned;", "~{memory}", ())
wgmma_wait0 = _asm("wgmma_wait0", "wgmma.wait_group.sync.aligned 0;", "~{memory}", ())
wgmma_wait1 = _asm("wgmma_wait1", "wgmma.wait_group.sync.aligned 1;", "~{memory}", ())
mbar_init = _asm("mbar_init", "mbarrier.init.shared::cta.b64 [$0], $1;", "r,r,~{memory}",
                 (U32, U32))
# makes the initialised barriers visible to the async proxy (the copy engine's complete_tx)
fence_mbar_init = _asm("fence_mbar_init", "fence.mbarrier_init.release.cluster;", "~{memory}",
                       ())
mbar_expect_tx = _asm("mbar_expect_tx",
                      "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;",
                      "r,r,~{memory}", (U32, U32))
mbar_arrive = _asm("mbar_arrive", "mbarrier.arrive.shared::cta.b64 _, [$0];", "r,~{memory}",
                   (U32,))
# the arrival only where $1 is non-zero, without a branch (a branch in a K loop between two
# wgmma groups in flight made ptxas serialise them, C7515: probe_gemm_ws.py)
mbar_arrive_if = _asm("mbar_arrive_if", "{ .reg .pred p; setp.ne.u32 p, $1, 0; "
                      "@p mbarrier.arrive.shared::cta.b64 _, [$0]; }", "r,r,~{memory}", (U32, U32))
# 1 when the phase with parity $2 of the barrier at $1 has completed (try_wait may also
# return 0 after a system-dependent time: callers loop)
mbar_try_wait = _asm("mbar_try_wait",
                     "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2; "
                     "selp.u32 $0, 1, 0, p; }", "=r,r,r,~{memory}", (U32, U32), U32)
# the tensor map lives in global memory, written by the host before the launch; this fence
# orders those generic-proxy writes before the copy engine's (tensormap proxy) reads of it
fence_tensormap = _asm("fence_tensormap",
                       "fence.proxy.tensormap::generic.acquire.gpu [$0], 128;",
                       "l,~{memory}", (U64,))
# TMA 2-D tile load: box at element coordinates ($2 innermost, $3) of the tensor map at
# generic address $1 into shared $0 (1024-byte aligned for the 128-byte swizzle), completing
# its bytes on the mbarrier $4
tma_load_2d = _asm("tma_load_2d",
                   "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                   " [$0], [$1, {$2, $3}], [$4];", "r,l,r,r,r,~{memory}",
                   (U32, U64, types.int32, types.int32, U32))
tma_store_2d = _asm("tma_store_2d",
                    "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [$0, {$1, $2}], [$3];",
                    "l,r,r,r,~{memory}", (U64, types.int32, types.int32, U32))
bulk_commit = _asm("bulk_commit", "cp.async.bulk.commit_group;", "~{memory}", ())
bulk_wait_read1 = _asm("bulk_wait_read1", "cp.async.bulk.wait_group.read 1;", "~{memory}", ())
bulk_wait0 = _asm("bulk_wait0", "cp.async.bulk.wait_group 0;", "~{memory}", ())


@intrinsic
def smem_u32(typingctx, buf):
    """32-bit shared-window address (uint32) of a shared array's first element."""
    if not isinstance(buf, types.Array):
        return None

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        sptr = builder.addrspacecast(ary.data, ary.data.type.pointee.as_pointer(3))
        return builder.ptrtoint(sptr, ir.IntType(32))

    return types.uint32(buf), codegen


def make_wgmma(n: int, trans_b: int = 0):
    """``acc = wgmma_n(acc, desc_a, desc_b)``: one m64nNk16 f32 += f16 * f16, A K-major in
    shared memory, B K-major (``trans_b`` 0) or MN-major (1); ``acc`` a UniTuple of N/2
    float32 (this thread's fragment), passed in tied registers (``scale-d`` = 1: D = A B + D)."""
    k = n // 2
    outs = ",".join(f"${i}" for i in range(k))
    text = ("{ .reg .pred p; setp.ne.b32 p, $" + str(k + 2) + ", 0; "
            f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16 "
            "{" + outs + "}, $" + str(k) + ", $" + str(k + 1) + f", p, 1, 1, 0, {trans_b}; }}")
    # operands: outputs 0..k-1, descriptors k, k+1, scale-d k+2, then the tied inputs
    constraints = ",".join(["=f"] * k + ["l", "l", "r"] + [str(i) for i in range(k)])
    tup = types.UniTuple(types.float32, k)

    def impl(typingctx, acc, da, db):
        if acc != tup:
            return None

        def codegen(context, builder, signature, args):
            f32, i64 = ir.FloatType(), ir.IntType(64)
            fnty = ir.FunctionType(ir.LiteralStructType([f32] * k),
                                   [i64, i64, ir.IntType(32)] + [f32] * k)
            acc_in = [builder.extract_value(args[0], i) for i in range(k)]
            res = builder.call(ir.InlineAsm(fnty, text, constraints, side_effect=True),
                               [args[1], args[2], ir.Constant(ir.IntType(32), 1)] + acc_in)
            vals = [builder.extract_value(res, i) for i in range(k)]
            return context.make_tuple(builder, signature.return_type, vals)

        return tup(tup, types.uint64, types.uint64), codegen

    impl.__name__ = f"wgmma_{n}{'_t' * trans_b}"
    return intrinsic(impl)


def make_acc_pin(n: int, text: str = "", tag: str = "pin"):
    """``acc = pin(acc)`` after ``wgmma.wait_group``: every accumulator register through an
    empty side-effecting asm, so no use of a result is scheduled before the wait (LLVM sees
    the wgmma's outputs as ready when its asm returns).  With ``text`` (a fence or a wait) the
    accumulators are that instruction's tied operands, as the backend's ``wgmma_fence{n}`` /
    ``wgmma_wait1_{n}``: ptxas then sees which registers the wgmmas in flight own."""
    k = n // 2
    constraints = ",".join(["=f"] * k + [str(i) for i in range(k)] + ["~{memory}"])
    tup = types.UniTuple(types.float32, k)

    def impl(typingctx, acc):
        if acc != tup:
            return None

        def codegen(context, builder, signature, args):
            f32 = ir.FloatType()
            fnty = ir.FunctionType(ir.LiteralStructType([f32] * k), [f32] * k)
            res = builder.call(ir.InlineAsm(fnty, text, constraints, side_effect=True),
                               [builder.extract_value(args[0], i) for i in range(k)])
            vals = [builder.extract_value(res, i) for i in range(k)]
            return context.make_tuple(builder, signature.return_type, vals)

        return tup(tup), codegen

    impl.__name__ = f"acc_{tag}_{n}"
    return intrinsic(impl)


def make_acc_zeros(n: int):
    tup = types.UniTuple(types.float32, n // 2)

    def impl(typingctx):
        def codegen(context, builder, signature, args):
            zero = ir.Constant(ir.FloatType(), 0.0)
            return context.make_tuple(builder, signature.return_type, [zero] * (n // 2))

        return tup(), codegen

    impl.__name__ = f"acc_zeros_{n}"
    return intrinsic(impl)


@intrinsic
def acc_store(typingctx, out, idx, acc):
    """``out[idx + j] = acc[j]`` for every j (constant offsets: no run-time tuple index)."""
    if not (isinstance(out, types.Array) and isinstance(acc, types.UniTuple)):
        return None

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        i64 = ir.IntType(64)
        base = args[1] if args[1].type.width == 64 else builder.sext(args[1], i64)
        for j in range(signature.args[2].count):
            ptr = builder.gep(ary.data, [builder.add(base, ir.Constant(i64, j))])
            builder.store(builder.extract_value(args[2], j), ptr)

    return types.void(out, types.int64, acc), codegen


@intrinsic
def frag_store(typingctx, c, row, col, acc):
    """Scatter one thread's wgmma accumulator fragment into the 2-D float32 array ``c``:
    value j at ``c[row + dr_j, col + dc_j]``, (dr_j, dc_j) register j's offsets in
    ``hopper_layout.acc_layout`` (constants; ``row, col``: value 0's place)."""
    if not (isinstance(c, types.Array) and c.ndim == 2 and c.dtype == types.float32
            and isinstance(acc, types.UniTuple)):
        return None
    k = acc.count
    offs = [acc_layout(2 * k).reg_offsets(j) for j in range(k)]

    def codegen(context, builder, signature, args):
        arrty = signature.args[0]
        ary = context.make_array(arrty)(context, builder, args[0])
        i64 = ir.IntType(64)
        r0, c0 = (builder.sext(a, i64) if a.type.width < 64 else a for a in args[1:3])
        ld = builder.extract_value(ary.strides, 0)       # bytes
        ld = builder.udiv(ld, ir.Constant(i64, 4))
        for j, (dr, dc) in enumerate(offs):
            r = builder.add(r0, ir.Constant(i64, dr))
            cc = builder.add(c0, ir.Constant(i64, dc))
            ptr = builder.gep(ary.data, [builder.add(builder.mul(r, ld), cc)])
            builder.store(builder.extract_value(args[3], j), ptr)

    return types.void(c, types.int64, types.int64, acc), codegen


@intrinsic
def acc_sum(typingctx, acc):
    """The float32 sum of a tuple's values (keeps every accumulator live in the timing)."""
    if not isinstance(acc, types.UniTuple):
        return None

    def codegen(context, builder, signature, args):
        s = builder.extract_value(args[0], 0)
        for j in range(1, signature.args[0].count):
            s = builder.fadd(s, builder.extract_value(args[0], j))
        return s

    return types.float32(acc), codegen

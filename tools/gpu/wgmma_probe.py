"""Probe (H100/H200, sm_90a): what Hopper's asynchronous tensor-core path reaches from Numba,
measured before any of it goes into the backend (issue 24).  Each part is a small kernel and
a host check; the last lines printed are a table.

1. ``wgmma.mma_async`` m64nNk16 f32 += f16 * f16 (N = 64 / 128 / 256) with A and B in
   shared memory, 128-byte swizzled, through 64-bit matrix descriptors: an exact check of
   small-integer matrices against NumPy (one k16 step, and a K loop over two 64-wide
   blocks), then the throughput of many warpgroups issuing wgmma on resident tiles.
2. TMA: a ``CUtensorMap`` (2-D float16, 128-byte swizzle, 64 x 64 box) encoded on the host
   with ``cuTensorMapEncodeTiled``, ``cp.async.bulk.tensor`` loads completing on an
   ``mbarrier``: an exact check of the landed tiles (and of zero fill out of bounds), then a
   TMA load -> TMA store copy's GB/s against a device-to-device copy.
3. A mini GEMM: TMA loads into a 3-stage mbarrier ring feeding wgmma (128 x 256 tiles, two
   consumer warpgroups), checked against NumPy and timed at 4096^3 float16.

How the inline PTX gets in: ``numba.cuda.extending.intrinsic``s emitting llvmlite
``InlineAsm`` (as ``cutile/numba_backend/ptx.py`` and ``shared/probes/tc_probe.py``).  Layout
facts (swizzle, descriptor bits, accumulator fragment) are the backend's, in the forms these
kernels need from ``hopper_layout.py``.

The sm_90a target.  ``wgmma`` needs sm_90a; numba-cuda 0.30 already compiles a launched
kernel for the arch-specific target: ``CUDACodeLibrary._ensure_cc`` (numba/cuda/codegen.py)
turns the device's (9, 0) into (9, 0, "a") when no cc is given, so NVVM gets
``-arch=compute_90a``, the PTX says ``.target sm_90a`` and the linker builds sm_90a.  The
probe checks this on the GPU (``target`` line of the table).  Only ``compile_ptx`` with an
explicit ``cc=(9, 0)`` (and ``NUMBA_FORCE_CUDA_CC``, which cannot carry the suffix) give
``.target sm_90``; the ``--offline`` mode therefore edits that line to ``sm_90a`` before
``ptxas -arch=sm_90a`` (with NVRTC present, ``cc=(9, 0, "a")`` works too).

Usage: on the GPU machine ``source tools/gpu/setup.sh; python3 tools/gpu/wgmma_probe.py``
(``--n 64 128 256``, ``--skip-gemm``); without a GPU ``CUDA_HOME=/usr/local/cuda python3
tools/gpu/wgmma_probe.py --offline`` builds every kernel's PTX and prints ptxas' resources.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

if "--offline" in sys.argv:             # before numba reads its configuration
    os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
    os.environ.setdefault("NUMBA_FORCE_CUDA_CC", "9.0")

import numpy as np  # noqa: E402
from hopper_layout import (  # noqa: E402
    SW128_HI,
    acc_layout,
    desc_encode,
    fragments_to_matrix,
    sw128,
    unswizzle_tile,
)
from llvmlite import ir  # noqa: E402
from numba import cuda, int32, types, uint16, uint32, uint64  # noqa: E402

try:
    from numba.cuda.extending import intrinsic
except ImportError:  # older numba-cuda
    from numba.core.extending import intrinsic

NS = (64, 128, 256)
TILE_BYTES = 64 * 64 * 2        # one 64 x 64 float16 tile: 8 KiB, 8 swizzle atoms
STAGES = 3                      # mbarrier ring depth (copy and GEMM)

# ---------------------------------------------------------------------------------------
# inline-PTX intrinsics
# ---------------------------------------------------------------------------------------

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


def _wgmma(n: int, trans_b: int = 0):
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


def _acc_pin(n: int):
    """``acc = pin(acc)`` after ``wgmma.wait_group``: every accumulator register through an
    empty side-effecting asm, so no use of a result is scheduled before the wait (LLVM sees
    the wgmma's outputs as ready when its asm returns)."""
    k = n // 2
    constraints = ",".join(["=f"] * k + [str(i) for i in range(k)] + ["~{memory}"])
    tup = types.UniTuple(types.float32, k)

    def impl(typingctx, acc):
        if acc != tup:
            return None

        def codegen(context, builder, signature, args):
            f32 = ir.FloatType()
            fnty = ir.FunctionType(ir.LiteralStructType([f32] * k), [f32] * k)
            res = builder.call(ir.InlineAsm(fnty, "", constraints, side_effect=True),
                               [builder.extract_value(args[0], i) for i in range(k)])
            vals = [builder.extract_value(res, i) for i in range(k)]
            return context.make_tuple(builder, signature.return_type, vals)

        return tup(tup), codegen

    impl.__name__ = f"acc_pin_{n}"
    return intrinsic(impl)


def _acc_zeros(n: int):
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


# thread t's first value's (row, col) in the 64 x N result (the layout's thread part, the same
# for every N); value j's offset from it is the layout's register part
ROW0, COL0 = (acc_layout(256).thread_coord(d, np.arange(128)).astype(np.int32) for d in (0, 1))


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


LAYOUT_NS = (16, 32, 64, 128)          # N of the operand-layout checks
WGMMA = {n: _wgmma(n) for n in NS}
WGMMA_T = {n: _wgmma(n, 1) for n in LAYOUT_NS}
PIN = {n: _acc_pin(n) for n in sorted(set(NS) | set(LAYOUT_NS))}
ZEROS = {n: _acc_zeros(n) for n in sorted(set(NS) | set(LAYOUT_NS))}
wgmma_256, acc_pin_256, acc_zeros_256 = WGMMA[256], PIN[256], ZEROS[256]
sw128_dev = cuda.jit(device=True, inline=True)(sw128)
desc_dev = cuda.jit(device=True, inline=True)(desc_encode)


@cuda.jit(device=True, inline=True)
def desc_sw128(addr):
    """Descriptor of a K-major 128-byte swizzled operand at shared byte address ``addr``:
    LBO 16 (unused here), SBO 1024 (the next 8 rows of M/N): ``hopper_layout.SW128_HI``."""
    return desc_dev(addr, SW128_HI)


@cuda.jit(device=True, inline=True)
def aligned_base(buf):
    """(byte address, element offset) of the first 1024-byte aligned uint16 of ``buf``
    (the swizzle is address based: tiles must start on a swizzle atom)."""
    base = smem_u32(buf)
    pad = (uint32(1024) - (base & uint32(1023))) & uint32(1023)
    return base + pad, int32(pad >> uint32(1))


@cuda.jit(device=True, inline=True)
def stage_tile(buf, off, src, r0, c0, rows, tid, nthreads):
    """Ordinary stores of ``src[r0:r0+rows, c0:c0+64]`` into the swizzled tile at element
    offset ``off`` of ``buf``."""
    for i in range(tid, rows * 64, nthreads):
        r = i >> 6
        c = i & 63
        buf[off + sw128_dev(r, c)] = src[r0 + r, c0 + c]


@cuda.jit(device=True, inline=True)
def mbar_wait(bar, phase):
    while mbar_try_wait(bar, phase) == uint32(0):
        pass


# ---------------------------------------------------------------------------------------
# 1. wgmma
# ---------------------------------------------------------------------------------------

def make_wgmma_kernels(n: int):
    mma, pin, zeros = WGMMA[n], PIN[n], ZEROS[n]
    b_bytes = n * 128                   # an n x 64 float16 B tile

    def wgmma_check(a, bt, out, kblocks):
        """One warpgroup: out (fragments) = a (64 x K) @ bt.T (K x n), K = 64 * kblocks
        (kblocks = 0: a single k16 step on the first 16 columns)."""
        buf = cuda.shared.array(0, uint16)
        tid = cuda.threadIdx.x
        addr, off = aligned_base(buf)
        nkb = max(kblocks, 1)
        for kb in range(nkb):
            o = off + kb * (TILE_BYTES + b_bytes) // 2
            stage_tile(buf, o, a, 0, kb * 64, 64, tid, 128)
            stage_tile(buf, o + TILE_BYTES // 2, bt, 0, kb * 64, n, tid, 128)
        fence_proxy_async()             # generic-proxy stores -> async-proxy (wgmma) reads
        cuda.syncthreads()
        acc = zeros()
        wgmma_fence()
        for kb in range(nkb):
            ab = addr + uint32(kb * (TILE_BYTES + b_bytes))
            for kk in range(4 if kblocks > 0 else 1):
                acc = mma(acc, desc_sw128(ab + uint32(32 * kk)),
                          desc_sw128(ab + uint32(TILE_BYTES + 32 * kk)))
        wgmma_commit()
        wgmma_wait0()
        acc = pin(acc)
        acc_store(out, tid * (n // 2), acc)

    def wgmma_peak(a, bt, out, iters):
        """blockDim = 128 * W: warpgroup w multiplies its own resident 64 x 64 A tile by the
        block's shared n x 64 B tile, ``iters`` times 4 k16 steps, accumulators in registers."""
        buf = cuda.shared.array(0, uint16)
        tid = cuda.threadIdx.x
        nt = cuda.blockDim.x
        nwg = nt // 128
        addr, off = aligned_base(buf)
        for w in range(nwg):
            stage_tile(buf, off + w * TILE_BYTES // 2, a, w * 64, 0, 64, tid, nt)
        stage_tile(buf, off + nwg * TILE_BYTES // 2, bt, 0, 0, n, tid, nt)
        fence_proxy_async()
        cuda.syncthreads()
        wg = tid // 128
        da = desc_sw128(addr + uint32(wg * TILE_BYTES))
        db = desc_sw128(addr + uint32(nwg * TILE_BYTES))
        acc = zeros()
        wgmma_fence()
        for _ in range(iters):
            acc = mma(acc, da, db)              # +32 bytes = +2 in the address field
            acc = mma(acc, da + uint64(2), db + uint64(2))
            acc = mma(acc, da + uint64(4), db + uint64(4))
            acc = mma(acc, da + uint64(6), db + uint64(6))
            wgmma_commit()
            wgmma_wait1()
        wgmma_wait0()
        acc = pin(acc)
        out[cuda.grid(1)] = acc_sum(acc)

    u16_2d = types.Array(types.uint16, 2, "C")
    f32_1d = types.Array(types.float32, 1, "C")
    return {f"wgmma_check_n{n}": (wgmma_check, (u16_2d, u16_2d, f32_1d, types.int32)),
            f"wgmma_peak_n{n}": (wgmma_peak, (u16_2d, u16_2d, f32_1d, types.int32))}


def make_layout_kernels(n: int):
    """Operand layouts of any width as the backend stages them (``tensorcore.swizzle``):
    the host builds both shared-memory images and every k16 step's descriptor offsets, the
    kernel copies the images in verbatim (1024-byte aligned) and runs the wgmmas."""
    mma_k, mma_t, pin, zeros = WGMMA.get(n), WGMMA_T[n], PIN[n], ZEROS[n]

    def make(mma):
        def layout(img, nbytes_a, da, db, steps, out):
            buf = cuda.shared.array(0, uint16)
            tid = cuda.threadIdx.x
            addr, off = aligned_base(buf)
            for i in range(tid, img.shape[0], 128):
                buf[off + i] = img[i]
            fence_proxy_async()
            cuda.syncthreads()
            acc = zeros()
            wgmma_fence()
            for s in range(steps.shape[0]):
                a = da + uint64((addr + uint32(steps[s, 0])) >> uint32(4))
                b = db + uint64((addr + uint32(nbytes_a) + uint32(steps[s, 1])) >> uint32(4))
                acc = mma(acc, a, b)
            wgmma_commit()
            wgmma_wait0()
            acc = pin(acc)
            acc_store(out, tid * (n // 2), acc)
        return layout

    sig = (types.Array(types.uint16, 1, "C"), types.int32, types.uint64, types.uint64,
           types.Array(types.int32, 2, "C"), types.Array(types.float32, 1, "C"))
    out = {f"layout_t_n{n}": (make(mma_t), sig)}
    if mma_k is not None:
        out[f"layout_k_n{n}"] = (make(mma_k), sig)
    return out


# ---------------------------------------------------------------------------------------
# 2. TMA
# ---------------------------------------------------------------------------------------
# The tensor map: CUDA C++ passes it by value as a ``const __grid_constant__ CUtensorMap``
# kernel parameter (a 128-byte, 64-byte aligned struct in .param space).  Numba has no way
# to declare such a parameter (its kernel ABI flattens arrays into pointer/shape/stride
# fields and has no aligned by-value struct), so the host copies the 128 encoded bytes
# into device global memory and kernels take its generic address as a uint64;
# cp.async.bulk.tensor accepts a tensor map in .global memory by generic address.

def tma_check(tmap, out, coords):
    """Load the 64 x 64 boxes at ``coords[t] = (col, row)`` one by one and dump each
    landed (swizzled) shared tile raw to ``out[t]``."""
    buf = cuda.shared.array(0, uint16)
    tid = cuda.threadIdx.x
    addr, off = aligned_base(buf)
    bar = addr + uint32(TILE_BYTES)
    if tid == 0:
        fence_tensormap(tmap)
        mbar_init(bar, 1)
        fence_mbar_init()
    cuda.syncthreads()
    phase = uint32(0)
    for t in range(coords.shape[0]):
        if tid == 0:
            mbar_expect_tx(bar, TILE_BYTES)
            tma_load_2d(addr, tmap, coords[t, 0], coords[t, 1], bar)
        mbar_wait(bar, phase)
        phase ^= uint32(1)
        for i in range(tid, 64 * 64, cuda.blockDim.x):
            out[t, i] = buf[off + i]
        cuda.syncthreads()              # the tile is free before the next load


def tma_copy(maps, tiles_x, ntiles):
    """dst = src through shared memory, 64 x 64 tiles: one thread per block runs a ring of
    STAGES buffers (TMA load -> mbarrier -> TMA store); the stage of tile i-1 is reloaded
    once its store has read it (``wait_group.read 1`` after storing tile i)."""
    buf = cuda.shared.array(0, uint16)
    if cuda.threadIdx.x != 0:
        return
    addr, off = aligned_base(buf)
    src = maps
    dst = maps + uint64(128)
    bars = addr + uint32(STAGES * TILE_BYTES)
    mine = (ntiles - cuda.blockIdx.x + cuda.gridDim.x - 1) // cuda.gridDim.x
    fence_tensormap(src)
    fence_tensormap(dst)
    for s in range(STAGES):
        mbar_init(bars + uint32(8 * s), 1)
    fence_mbar_init()
    for s in range(min(STAGES, mine)):
        g = cuda.blockIdx.x + s * cuda.gridDim.x
        mbar_expect_tx(bars + uint32(8 * s), TILE_BYTES)
        tma_load_2d(addr + uint32(s * TILE_BYTES), src, (g % tiles_x) * 64, (g // tiles_x) * 64,
                    bars + uint32(8 * s))
    for i in range(mine):
        s = i % STAGES
        g = cuda.blockIdx.x + i * cuda.gridDim.x
        mbar_wait(bars + uint32(8 * s), uint32((i // STAGES) & 1))
        tma_store_2d(dst, (g % tiles_x) * 64, (g // tiles_x) * 64, addr + uint32(s * TILE_BYTES))
        bulk_commit()
        bulk_wait_read1()
        j = i - 1 + STAGES
        if i >= 1 and j < mine:
            sp = (i - 1) % STAGES
            gj = cuda.blockIdx.x + j * cuda.gridDim.x
            mbar_expect_tx(bars + uint32(8 * sp), TILE_BYTES)
            tma_load_2d(addr + uint32(sp * TILE_BYTES), src, (gj % tiles_x) * 64,
                        (gj // tiles_x) * 64, bars + uint32(8 * sp))
    bulk_wait0()


def plain_copy(src, dst):
    """Baseline: 8-byte words, grid-stride."""
    i = cuda.grid(1)
    for k in range(i, src.size, cuda.gridsize(1)):
        dst[k] = src[k]


def tma_kernels():
    u16_2d = types.Array(types.uint16, 2, "C")
    return {"tma_check": (tma_check, (types.uint64, u16_2d, types.Array(types.int32, 2, "C"))),
            "tma_copy": (tma_copy, (types.uint64, types.int32, types.int32)),
            "plain_copy": (plain_copy, (types.Array(types.uint64, 1, "C"),) * 2)}


# ---------------------------------------------------------------------------------------
# 3. mini GEMM: C (f32) = A (M x K f16) @ B (K x N f16) given as B^T (N x K), all K-major
# ---------------------------------------------------------------------------------------
# Block tile 128 x 256, K step 64; 3 warpgroups: warpgroup 0 is the producer (one thread
# issues the TMA loads), warpgroups 1 and 2 each own 64 rows x 256 columns of C (128
# accumulator registers per thread).  Stage s: A 128 x 64 (16 KiB) + B 256 x 64 (32 KiB);
# full[s] completes on the TMA bytes, empty[s] on the 2 consumer warpgroups' arrivals.
GB_M, GB_N = 128, 256
G_STAGE = (GB_M + GB_N) * 128           # bytes per stage
G_SMEM = STAGES * G_STAGE + 1024 + 64   # + alignment slack + 2 * STAGES mbarriers


def gemm(maps, c, ktiles):
    buf = cuda.shared.array(0, uint16)
    tid = cuda.threadIdx.x
    addr, off = aligned_base(buf)
    full = addr + uint32(STAGES * G_STAGE)
    empty = full + uint32(8 * STAGES)
    amap = maps
    bmap = maps + uint64(128)
    m0 = cuda.blockIdx.y * GB_M
    n0 = cuda.blockIdx.x * GB_N
    if tid == 0:
        fence_tensormap(amap)
        fence_tensormap(bmap)
        for s in range(STAGES):
            mbar_init(full + uint32(8 * s), 1)
            mbar_init(empty + uint32(8 * s), 2)
        fence_mbar_init()
    cuda.syncthreads()
    wg = tid // 128
    if wg == 0:
        if tid == 0:
            for kt in range(ktiles):
                s = kt % STAGES
                if kt >= STAGES:            # wait for the consumers to release the stage
                    mbar_wait(empty + uint32(8 * s), uint32(((kt // STAGES) - 1) & 1))
                st = addr + uint32(s * G_STAGE)
                f = full + uint32(8 * s)
                mbar_expect_tx(f, G_STAGE)
                tma_load_2d(st, amap, kt * 64, m0, f)
                tma_load_2d(st + uint32(TILE_BYTES), amap, kt * 64, m0 + 64, f)
                for q in range(4):
                    tma_load_2d(st + uint32((2 + q) * TILE_BYTES), bmap, kt * 64, n0 + 64 * q,
                                f)
    else:
        acc = acc_zeros_256()
        for kt in range(ktiles):
            s = kt % STAGES
            mbar_wait(full + uint32(8 * s), uint32((kt // STAGES) & 1))
            st = addr + uint32(s * G_STAGE)
            da = desc_sw128(st + uint32((wg - 1) * TILE_BYTES))
            db = desc_sw128(st + uint32(2 * TILE_BYTES))
            wgmma_fence()
            acc = wgmma_256(acc, da, db)
            acc = wgmma_256(acc, da + uint64(2), db + uint64(2))
            acc = wgmma_256(acc, da + uint64(4), db + uint64(4))
            acc = wgmma_256(acc, da + uint64(6), db + uint64(6))
            wgmma_commit()
            # wait_group 1 here (release the stage of k tile kt-1, keep kt in flight) makes
            # ptxas serialize every wgmma (C7515, measured offline); wait_group 0 does not
            wgmma_wait0()
            if tid % 128 == 0:
                mbar_arrive(empty + uint32(8 * s))
        acc = acc_pin_256(acc)
        t = tid % 128
        frag_store(c, m0 + (wg - 1) * 64 + ROW0[t], n0 + COL0[t], acc)


GEMM_THREADS = 384


def gemm_kernels():
    return {"gemm": (gemm, (types.uint64, types.Array(types.float32, 2, "C"), types.int32),
                     (GEMM_THREADS, 1))}


def all_kernels(ns=NS):
    """name -> (python function, argument types[, launch bounds]) of every probe kernel."""
    out = {}
    for n in ns:
        out.update(make_wgmma_kernels(n))
    for n in LAYOUT_NS:
        out.update(make_layout_kernels(n))
    out.update(tma_kernels())
    out.update(gemm_kernels())
    return out


# ---------------------------------------------------------------------------------------
# offline: PTX through NVVM, assembled by ptxas for sm_90a
# ---------------------------------------------------------------------------------------

def offline(ns=NS) -> int:
    """Build every kernel's PTX with numba's compile_ptx (no GPU), retarget it to sm_90a and
    assemble it with ``ptxas -arch=sm_90a -v``; print one resource line per kernel.  Exit
    status 1 when any kernel fails to build or assemble."""
    sys.path.insert(0, os.path.join(ROOT, "spec_tests"))
    from diff import ptxcheck
    tk = ptxcheck.toolkit()
    if tk is None or not tk["ptxas"]:
        print("no CUDA toolkit with libNVVM and ptxas (set CUDA_HOME)")
        return 2
    ptxcheck._setup_numba(tk)
    failed = 0
    with tempfile.TemporaryDirectory() as d:
        for name, spec in all_kernels(ns).items():
            fn, sig = spec[0], spec[1]
            bounds = spec[2] if len(spec) > 2 else None
            try:
                ptx, _ = cuda.compile_ptx(fn, sig, cc=(9, 0), launch_bounds=bounds)
            except Exception as e:  # noqa: BLE001 - reported per kernel
                print(f"{name}: NVVM FAILED {type(e).__name__}: {str(e)[:2000]}")
                failed += 1
                continue
            ptx = re.sub(r"^\.target sm_90\b", ".target sm_90a", ptx, flags=re.M)
            path = os.path.join(d, f"{name}.ptx")
            with open(path, "w") as f:
                f.write(ptx)
            r = subprocess.run([tk["ptxas"], "-arch=sm_90a", "-v", path, "-o", path + ".o"],
                               capture_output=True, text=True)
            log = (r.stdout + r.stderr).strip().splitlines()
            counts = {op: ptx.count(op)
                      for op in ("wgmma.mma_async", "cp.async.bulk.tensor", "mbarrier.")}
            ops = " ".join(f"{k.rstrip('.')}={v}" for k, v in counts.items() if v)
            if r.returncode != 0:
                failed += 1
                print(f"{name}: PTXAS FAILED")
                print("\n".join("  " + line for line in log))
                continue
            used = [line.split("info    : ", 1)[-1] for line in log if "Used" in line
                    or "bytes stack frame" in line]
            # ptxas says "(C7515) Potential Performance Loss: wgmma.mma_async instructions
            # are serialized ..." as an info line when it cannot pipeline the wgmmas
            warn = [line for line in log if "warning" in line.lower()
                    or "Performance" in line or "serialized" in line]
            print(f"{name:20s} {' | '.join(used)}   [{ops}]")
            for w in warn:
                print(f"{'':20s} {w}")
    print("offline:", "ok" if not failed else f"{failed} kernel(s) failed")
    return 1 if failed else 0


# ---------------------------------------------------------------------------------------
# on the GPU
# ---------------------------------------------------------------------------------------

RESULTS: list[tuple[str, str]] = []


def note(key, value):
    RESULTS.append((key, value))
    print(f"{key:58s} {value}", flush=True)


def f16_bits(x):
    return cuda.to_device(np.ascontiguousarray(x.astype(np.float16).view(np.uint16)))


def prepare(name, smem):
    """The kernel compiled for its probe signature (sm_90a: see the module docstring) and
    opted in to ``smem`` bytes of dynamic shared memory."""
    from numba.cuda.cudadrv.driver import binding, driver
    if name not in DISPATCHERS:
        spec = ALL[name]
        fn, sig = spec[0], spec[1]
        disp = cuda.jit(launch_bounds=spec[2])(fn) if len(spec) > 2 else cuda.jit(fn)
        DISPATCHERS[name] = (disp, disp.compile(sig))
    disp, kern = DISPATCHERS[name]
    if os.environ.get("WGMMA_PROBE_CUBINS"):    # for `cuobjdump -sass`: HGMMA/UTMALDG present?
        with open(os.path.join(os.environ["WGMMA_PROBE_CUBINS"], name + ".cubin"), "wb") as f:
            cubin = kern._codelibrary.get_cubin()
            f.write(bytes(getattr(cubin, "code", cubin)))   # cuda.core ObjectCode or bytes
    cufunc = kern._codelibrary.get_cufunc()
    attr = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    try:                                # as cutile/numba_backend/compile.py does
        driver.cuKernelSetAttribute(attr, smem, cufunc.kernel.handle,
                                    cuda.get_current_device().id)
    except Exception:  # noqa: BLE001 - older wrappers: the function-handle form
        driver.cuFuncSetAttribute(cufunc.handle, attr, smem)
    if not TARGET:
        ptx = kern._codelibrary.get_asm_str()
        m = re.search(r"^\.target (\S+)", ptx, flags=re.M)
        TARGET.append(m.group(1) if m else "?")
        note("target of launched kernels (needs sm_90a)", TARGET[0])
    return disp, kern.regs_per_thread


DISPATCHERS: dict = {}
TARGET: list = []
ALL: dict = {}


def best_time(fn, reps=5):
    fn()
    cuda.synchronize()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return best


def guarded(title):
    def deco(f):
        def run(*a):
            try:
                f(*a)
            except Exception as e:  # noqa: BLE001 - the probe reports and goes on
                note(title, f"FAILED {type(e).__name__}: {str(e)[:300]}")
        return run
    return deco


def tensor_map(arr, box_rows=64, box_cols=64):
    """128 encoded bytes (16 uint64) of a 2-D float16 tensor map over the row-major device
    array ``arr`` (uint16 bits), 128-byte swizzle, zero fill out of bounds."""
    from cuda.bindings import driver as drv
    rows, cols = arr.shape
    u32, u64 = drv.cuuint32_t, drv.cuuint64_t
    err, tm = drv.cuTensorMapEncodeTiled(
        drv.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2,
        arr.__cuda_array_interface__["data"][0],
        [u64(cols), u64(rows)], [u64(cols * 2)], [u32(box_cols), u32(box_rows)],
        [u32(1), u32(1)], drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        drv.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
        drv.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
        drv.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    if err != drv.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuTensorMapEncodeTiled: {err}")
    return np.array([int(v) for v in tm.opaque], dtype=np.uint64)


def maps_on_device(*arrs):
    return cuda.to_device(np.concatenate([tensor_map(a) for a in arrs]))


def dev_addr(d):
    return np.uint64(d.__cuda_array_interface__["data"][0])


def probe_wgmma(n, rng):
    @guarded(f"wgmma m64n{n}k16 exact")
    def exact():
        a = rng.integers(-3, 4, (64, 128)).astype(np.float32)
        bt = rng.integers(-3, 4, (n, 128)).astype(np.float32)
        for kblocks, ref in ((0, a[:, :16] @ bt[:, :16].T), (2, a @ bt.T)):
            smem = max(kblocks, 1) * (TILE_BYTES + n * 128) + 1024
            disp, regs = prepare(f"wgmma_check_n{n}", smem)
            out = cuda.device_array(128 * n // 2, np.float32)
            disp[1, 128, 0, smem](f16_bits(a), f16_bits(bt), out, np.int32(kblocks))
            got = fragments_to_matrix(out.copy_to_host(), n)
            bad = int(np.count_nonzero(got != ref))
            k = 16 if kblocks == 0 else 64 * kblocks
            note(f"wgmma m64n{n}k16 exact, K={k} ({regs} regs)",
                 "exact" if bad == 0 else f"{bad} of {got.size} wrong, max err "
                 f"{np.nanmax(np.abs(got - ref))}")

    @guarded(f"wgmma m64n{n}k16 throughput")
    def peak():
        sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
        for wgs in (1, 2, 3):
            smem = wgs * TILE_BYTES + n * 128 + 1024
            disp, regs = prepare(f"wgmma_peak_n{n}", smem)
            a = f16_bits(rng.integers(-2, 3, (64 * wgs, 64)) / 8)
            bt = f16_bits(rng.integers(-2, 3, (n, 64)) / 8)
            blocks = sms * 12
            per_iter = blocks * wgs * 4 * 2 * 64 * n * 16
            iters = max(16, int(2e13 / per_iter))
            out = cuda.device_array(blocks * 128 * wgs, np.float32)
            launch = disp[blocks, 128 * wgs, 0, smem]
            args = (a, bt, out, np.int32(iters))
            dt = best_time(lambda k=launch, x=args: k(*x), 3)
            note(f"wgmma m64n{n}k16 smem-resident, {wgs} warpgroup(s)/block ({regs} regs)",
                 f"{per_iter * iters / dt / 1e12:.0f} TFLOP/s")

    exact()
    peak()


def probe_layouts(rng):
    """The backend's own wgmma operand layouts (``cutile/numba_backend``: ``tensorcore.swizzle``
    with ``rows``, ``wgmma.WGPlan``'s descriptors and k16 steps) for every (K, N) below: A
    (64 x K, K-major) and B (K x N MN-major with the transposed flag, and N x K K-major,
    ``bt``), exact against NumPy?  At K=16 the MN-major case also runs with the other
    assignment of (panel stride, 8-row group stride) to (LBO, SBO), to show which one the
    hardware reads."""
    import dataclasses

    sys.path.insert(0, ROOT)
    from cutile.numba_backend.tensorcore import swizzle
    from cutile.numba_backend.wgmma import WGPlan, desc_hi

    def image(m, rows, cols):
        r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
        img = np.zeros(rows * cols, np.uint16)
        img[swizzle(r, c, cols, 8, rows)] = m.astype(np.float16).view(np.uint16)
        return img

    cases = [(16, 16), (16, 32), (16, 64), (16, 128), (32, 64), (32, 128), (64, 32),
             (64, 128), (128, 64), (128, 128), (256, 32)]
    for K, n in cases:
        @guarded(f"layout K={K} N={n}")
        def one(K=K, n=n):
            a = rng.integers(-3, 4, (64, K)).astype(np.float32)
            b = rng.integers(-3, 4, (K, n)).astype(np.float32)
            ref = a @ b
            plan = WGPlan(64, n, K, 128, 4, 1, "f16", GM=1)
            variants = [("B MN-major", f"layout_t_n{n}", image(b, K, n), plan.b_hi(), plan)]
            if K == 16:         # the swapped assignment (it reads far out of the tile beyond)
                pw = min(n, 64)
                variants.append(("B MN-major (swapped LBO/SBO)", f"layout_t_n{n}",
                                 image(b, K, n), desc_hi(8 * pw * 2, K * pw * 2, pw * 2),
                                 plan))
            if n in NS:
                pt = dataclasses.replace(plan, bt=True)
                variants.append(("B^T K-major", f"layout_k_n{n}", image(b.T, n, K), pt.b_hi(),
                                 pt))
            img_a = image(a, 64, K)
            for label, kname, img_b, bhi, p in variants:
                img = np.concatenate([img_a, img_b])
                smem = img.size * 2 + 1024
                disp, _ = prepare(kname, smem)
                steps = np.array([[p.a_step(0, kk), p.b_step(kk)] for kk in range(K // 16)],
                                 dtype=np.int32)
                out = cuda.device_array(128 * n // 2, np.float32)
                disp[1, 128, 0, smem](cuda.to_device(img), np.int32(img_a.size * 2),
                                      np.uint64(p.a_hi()), np.uint64(bhi),
                                      cuda.to_device(steps), out)
                got = fragments_to_matrix(out.copy_to_host(), n)
                bad = int(np.count_nonzero(got != ref))
                note(f"layout K={K} N={n}: A K-major sw{2 * min(K, 64)}, {label}",
                     "exact" if bad == 0 else f"{bad} of {got.size} wrong")
        one()


@guarded("TMA tile exact")
def probe_tma_check():
    src = np.arange(256 * 256, dtype=np.uint32).astype(np.uint16).reshape(256, 256)
    d_src = cuda.to_device(src)
    maps = maps_on_device(d_src)
    coords = np.array([[64, 128], [0, 0], [224, 224]], dtype=np.int32)  # (col, row)
    smem = TILE_BYTES + 1024 + 64
    disp, regs = prepare("tma_check", smem)
    out = cuda.device_array((len(coords), 64 * 64), np.uint16)
    disp[1, 128, 0, smem](dev_addr(maps), out, cuda.to_device(coords))
    got = out.copy_to_host()
    pad = np.zeros((256 + 64, 256 + 64), np.uint16)
    pad[:256, :256] = src
    bad = 0
    for t, (c, r) in enumerate(coords):
        bad += int(np.count_nonzero(unswizzle_tile(got[t], 64) != pad[r:r + 64, c:c + 64]))
    note(f"TMA 64x64 f16 box, 128B swizzle, 3 boxes incl. OOB ({regs} regs)",
         "exact" if bad == 0 else f"{bad} elements wrong")


@guarded("TMA copy")
def probe_tma_copy():
    rows = cols = 8192
    nbytes = rows * cols * 2
    src = cuda.to_device(np.random.default_rng(1).integers(0, 65535, (rows, cols),
                                                            dtype=np.uint16))
    dst = cuda.device_array((rows, cols), np.uint16)
    maps = maps_on_device(src, dst)
    smem = STAGES * TILE_BYTES + 1024 + 64
    disp, regs = prepare("tma_copy", smem)
    sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
    tiles_x, ntiles = cols // 64, (rows // 64) * (cols // 64)
    for per_sm in (4, 8):
        launch = disp[sms * per_sm, 32, 0, smem]
        dt = best_time(lambda k=launch: k(dev_addr(maps), np.int32(tiles_x), np.int32(ntiles)))
        ok = bool(np.array_equal(dst.copy_to_host(), src.copy_to_host()))
        note(f"TMA load->TMA store copy, {STAGES} stages, {per_sm} blocks/SM",
             f"{2 * nbytes / dt / 1e9:.0f} GB/s{'' if ok else ' WRONG DATA'}")
    s64 = src.reshape(rows * cols).view(np.uint64)
    d64 = dst.reshape(rows * cols).view(np.uint64)
    pc = cuda.jit(plain_copy)[sms * 16, 512]
    dt = best_time(lambda: pc(s64, d64))
    note("plain copy kernel (8-byte words)", f"{2 * nbytes / dt / 1e9:.0f} GB/s")
    dt = best_time(lambda: dst.copy_to_device(src))
    note("device-to-device memcpy", f"{2 * nbytes / dt / 1e9:.0f} GB/s")


@guarded("mini GEMM")
def probe_gemm(size=4096):
    rng = np.random.default_rng(2)
    a = rng.integers(-2, 3, (size, size)).astype(np.float32)
    bt = rng.integers(-2, 3, (size, size)).astype(np.float32)
    da, dbt = f16_bits(a), f16_bits(bt)
    c = cuda.device_array((size, size), np.float32)
    maps = maps_on_device(da, dbt)
    disp, regs = prepare("gemm", G_SMEM)
    grid = (size // GB_N, size // GB_M)

    def launch():
        disp[grid, GEMM_THREADS, 0, G_SMEM](dev_addr(maps), c, np.int32(size // 64))

    dt = best_time(launch)
    ref = a @ bt.T                       # integers below 2**24: exact in float32
    bad = int(np.count_nonzero(c.copy_to_host() != ref))
    note(f"mini GEMM TMA {STAGES}-stage ring + wgmma 128x256 ({regs} regs), {size}^3",
         f"{2 * size ** 3 / dt / 1e12:.0f} TFLOP/s, "
         + ("exact" if bad == 0 else f"{bad} elements WRONG"))
    try:
        import torch
        x = torch.from_numpy(a).half().cuda()
        y = torch.from_numpy(bt).half().cuda().t()
        torch.matmul(x, y)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(10):
            torch.matmul(x, y)
        torch.cuda.synchronize()
        note("torch.matmul f16 (cuBLAS) same size",
             f"{10 * 2 * size ** 3 / (time.perf_counter() - t0) / 1e12:.0f} TFLOP/s")
    except Exception as e:  # noqa: BLE001
        note("torch.matmul reference", f"unavailable: {type(e).__name__}")


def run_gpu(args) -> int:
    import numba
    ALL.update(all_kernels(tuple(args.n)))
    dev = cuda.get_current_device()
    print("numba", numba.__version__, "numba-cuda", getattr(cuda, "__version__", "?"),
          "device", dev.name, "cc", dev.compute_capability, "SMs", dev.MULTIPROCESSOR_COUNT)
    rng = np.random.default_rng(0)
    parts = set(args.parts.split(","))
    if args.skip_gemm:
        parts.discard("gemm")
    if "wgmma" in parts:
        for n in args.n:
            probe_wgmma(n, rng)
    if "layouts" in parts:
        probe_layouts(rng)
    if "tma" in parts:
        probe_tma_check()
    if "copy" in parts:
        probe_tma_copy()
    if "gemm" in parts:
        probe_gemm()
    print("\n== summary ==")
    for k, v in RESULTS:
        print(f"{k:58s} {v}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--offline", action="store_true",
                    help="no GPU: build PTX, assemble for sm_90a, print ptxas resources")
    ap.add_argument("--n", type=int, nargs="+", default=list(NS), choices=NS,
                    help="wgmma N values to probe")
    ap.add_argument("--skip-gemm", action="store_true")
    ap.add_argument("--parts", default="wgmma,layouts,tma,copy,gemm",
                    help="comma-separated parts to run (a wrong barrier or descriptor can hang "
                         "a kernel: run each part under `timeout` in its own process)")
    args = ap.parse_args()
    if args.offline:
        return offline(tuple(args.n))
    return run_gpu(args)


if __name__ == "__main__":
    sys.exit(main())

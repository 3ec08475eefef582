"""Part 5 of the wgmma probe (``wgmma_probe.py``, issue 24): the real cuTile's matmul shape
at the benchmark's 128 x 128 x 32 block tile, written from Numba.  ``tools/gpu/
cutile_sass.py`` showed what cuTile 1.7 builds there (611 TFLOP/s on an H200): 256 threads,
one producer warpgroup (its registers given back, ``setmaxnreg``) and one consumer warpgroup
owning the whole 128 x 128 accumulator (two m64n128k16 rows, 128 registers), TMA loads into
a deep mbarrier ring (~185 KiB of shared memory), the wgmma wait deferred one group, a TMA
store epilogue.

Here: the same split and ring (``PROBE_DEEP_RING`` stages of 16 KiB, default 8), A and B^T
tiles 128 x 32 with the 64-byte swizzle (one TMA box each per stage), the consumer's slot
release a predicated ``mbarrier.arrive``, the accumulators stored straight to global memory
(no TMA store).  Checked exactly against NumPy, timed beside cutile's own matmul at the same
tiles (``probe_gemm_ws.backend_beside``) in interleaved rounds (``PROBE_ROUNDS``).
"""

from __future__ import annotations

import os

import numpy as np
from hopper_layout import SW64_HI
from numba import cuda, types, uint16, uint32, uint64
from probe_device import (
    COL0,
    PIN,
    ROW0,
    WGMMA,
    ZEROS,
    desc_dev,
    mbar_wait,
    ring_at,
    ring_init,
)
from probe_gemm_ws import backend_beside
from probe_host import (
    dev_addr,
    gemm_operands,
    guarded,
    maps_on_device,
    note,
    prepare,
    report_gemms,
)
from probe_ptx import (
    frag_store,
    make_acc_pin,
    mbar_arrive_if,
    mbar_expect_tx,
    tma_load_2d,
    wgmma_commit,
)

D_RING = int(os.environ.get("PROBE_DEEP_RING", "8"))   # globals: Numba freezes them
D_UNROLL = int(os.environ.get("PROBE_DEEP_UNROLL", "1"))  # k tiles per wgmma group: 1 or 2
# 1: the accumulators are stored only when the (run-time) k tile count is negative, never:
# the mainloop's figure without the epilogue (its check then fails, as it should)
D_NOSTORE = int(os.environ.get("PROBE_DEEP_NOSTORE", "0"))
D_M = D_N = 128
D_K = 32
D_TILE = 128 * D_K * 2                  # one 128 x 32 float16 tile: 8 KiB
D_STAGE = 2 * D_TILE                    # A and B^T
D_SMEM = D_RING * D_STAGE + 1024 + 16 * D_RING
wgmma128, zeros128, pin128 = WGMMA[128], ZEROS[128], PIN[128]
fence128 = make_acc_pin(128, "wgmma.fence.sync.aligned;", "fence")
wait1_128 = make_acc_pin(128, "wgmma.wait_group.sync.aligned 1;", "wait1")
wait0_128 = make_acc_pin(128, "wgmma.wait_group.sync.aligned 0;", "wait0")


@cuda.jit(device=True, inline=True)
def desc64(addr):
    """Descriptor of a K-major 64-byte swizzled operand (512-byte atoms) at ``addr``."""
    return desc_dev(addr, SW64_HI)


@cuda.jit(device=True, inline=True)
def group(acc0, acc1, addr, s):
    """The four wgmmas of the k tile in slot ``s`` (both m64 rows, two k16 steps)."""
    st = addr + uint32(D_STAGE) * s
    da = desc64(st)
    db = desc64(st + uint32(D_TILE))
    da1 = da + uint64((64 * 64) >> 4)           # rows 64..127 of A: 64 rows of 64 bytes
    acc0 = wgmma128(acc0, da, db)
    acc1 = wgmma128(acc1, da1, db)
    acc0 = wgmma128(acc0, da + uint64(2), db + uint64(2))
    acc1 = wgmma128(acc1, da1 + uint64(2), db + uint64(2))
    return acc0, acc1


@cuda.jit(device=True, inline=True)
def consume_deep(addr, full, empty, ktiles):
    """The consumer warpgroup: ``D_UNROLL`` k tiles per wgmma group (cuTile's SASS has two:
    8 HGMMA per loop trip), the group left in flight, the previous group's slots released
    (predicated arrivals).  Slots and phases advance by selects, not by ``kt % S`` and
    ``kt // S`` (a k tile is ~400 cycles of tensor work: the divisions of a ring that is not
    a power of two cost a third)."""
    acc0 = zeros128()
    acc1 = zeros128()
    s = uint32(0)
    ph = uint32(0)
    prev = uint32(D_RING - 1)
    for g in range(ktiles // D_UNROLL):
        mbar_wait(full + uint32(8) * s, ph)
        s1 = s
        if D_UNROLL == 2:           # both k tiles landed before the fence (a wait between
            wrap = s == uint32(D_RING - 1)      # the wgmmas made ptxas serialise, C7520)
            s1 = uint32(0) if wrap else s + uint32(1)
            mbar_wait(full + uint32(8) * s1, ph ^ uint32(wrap))
        acc0 = fence128(acc0)
        acc1 = fence128(acc1)
        acc0, acc1 = group(acc0, acc1, addr, s)
        if D_UNROLL == 2:
            acc0, acc1 = group(acc0, acc1, addr, s1)
        wgmma_commit()
        acc0 = wait1_128(acc0)
        acc1 = wait1_128(acc1)
        first = uint32(g > 0 and cuda.threadIdx.x == 0)
        mbar_arrive_if(empty + uint32(8) * prev, first)
        if D_UNROLL == 2:
            p2 = uint32(D_RING - 1) if prev == uint32(0) else prev - uint32(1)
            mbar_arrive_if(empty + uint32(8) * p2, first)
        prev = s1
        wrap = s1 == uint32(D_RING - 1)
        ph ^= uint32(wrap) if D_UNROLL == 1 else uint32((s1 < s) | wrap)
        s = uint32(0) if wrap else s1 + uint32(1)
    return wait0_128(acc0), wait0_128(acc1)


@cuda.jit(device=True, inline=True)
def produce_deep(addr, full, empty, maps, ktiles, m0, n0):
    for kt in range(ktiles):
        s = kt % D_RING
        if kt >= D_RING:
            mbar_wait(empty + uint32(8 * s), uint32(((kt // D_RING) - 1) & 1))
        st = addr + uint32(s * D_STAGE)
        f = full + uint32(8 * s)
        mbar_expect_tx(f, D_STAGE)
        tma_load_2d(st, maps, kt * D_K, m0, f)
        tma_load_2d(st + uint32(D_TILE), maps + uint64(128), kt * D_K, n0, f)


def gemm_deep(maps, c, ktiles):
    buf = cuda.shared.array(0, uint16)
    tid = cuda.threadIdx.x
    addr, full, empty = ring_at(buf, D_RING, D_STAGE)
    m0 = cuda.blockIdx.y * D_M
    n0 = cuda.blockIdx.x * D_N
    if tid == 0:
        ring_init(maps, full, empty, D_RING, 1)
    cuda.syncthreads()
    if tid < 128:                       # consumers first (ptxas: see probe_gemm_ws.make_ws)
        acc0, acc1 = consume_deep(addr, full, empty, ktiles)
        if D_NOSTORE == 0 or ktiles < 0:
            frag_store(c, m0 + ROW0[tid], n0 + COL0[tid], acc0)
            frag_store(c, m0 + 64 + ROW0[tid], n0 + COL0[tid], acc1)
    elif tid == 128:
        produce_deep(addr, full, empty, maps, ktiles, m0, n0)


SIG = (types.uint64, types.Array(types.float32, 2, "C"), types.int32)


def gemm_deep_kernels():
    return {f"gemm_deep{D_RING}": (gemm_deep, SIG, (256, 1))}


def variant() -> str:
    return (f"deep{D_RING}" + ("u2" if D_UNROLL == 2 else "")
            + (" without its epilogue" if D_NOSTORE else ""))


@guarded("mini GEMM, cuTile's shape")
def probe_gemm_deep(size=4096):
    a, bt, da, dbt, ref = gemm_operands(size)
    maps = maps_on_device(da, dbt, box_rows=128, box_cols=D_K, swizzle=64)
    c = cuda.device_array((size, size), np.float32)
    disp, regs = prepare(f"gemm_deep{D_RING}", D_SMEM)
    grid = (size // D_N, size // D_M)

    def launch():
        disp[grid, 256, 0, D_SMEM](dev_addr(maps), c, np.int32(size // D_K))

    entries = [(f"mini GEMM {variant()} 128x128x32 (256 threads, {regs} regs)", launch, c)]
    entries += backend_beside(a, bt, size)[:1] + _cutile_beside(a, bt, size)
    report_gemms(entries, size, ref)


def _cutile_beside(a, bt, size):
    """The real cuTile's matmul (the same benchmark kernel, 128 x 128 x 32) on the same
    operands, when ``cuda.tile`` is importable (../shared/GPU.md's second call); else none."""
    try:
        import sys

        import cuda.tile as real
        import torch
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__)))), "benchmarks"))
        from gpu import make_kernels
    except ImportError as e:
        note("real cuTile beside", f"not importable ({e})")
        return []
    mm = make_kernels(real)["matmul"]
    x = torch.from_numpy(a.astype(np.float16)).cuda()
    y = torch.from_numpy(np.ascontiguousarray(bt.T).astype(np.float16)).cuda()
    c = torch.empty(size, size, device="cuda", dtype=torch.float32)
    stream = torch.cuda.current_stream()

    def launch():
        real.launch(stream, (size // 128, size // 128), mm, (x, y, c, 128, 128, 32))

    class Out:                          # the check's copy_to_host, for a torch tensor
        def copy_to_host(self):
            return c.cpu().numpy()

    return [("real cuTile 1.7 matmul 128x128x32", launch, Out())]

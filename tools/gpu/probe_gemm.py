"""Part 3 of the wgmma probe (``wgmma_probe.py``, issue 24): a mini GEMM, TMA loads into a
3-stage mbarrier ring feeding wgmma (128 x 256 tiles, two consumer warpgroups), checked
against NumPy and timed at 4096^3 float16.  C (f32) = A (M x K f16) @ B (K x N f16) given as
B^T (N x K), all K-major.
"""

from __future__ import annotations

import time

import numpy as np
from numba import cuda, types, uint16, uint32, uint64
from probe_device import (
    COL0,
    ROW0,
    STAGES,
    TILE_BYTES,
    acc_pin_256,
    acc_zeros_256,
    desc_sw128,
    mbar_wait,
    ring_at,
    ring_init,
    wgmma_256,
)
from probe_host import (
    best_time,
    dev_addr,
    gemm_operands,
    guarded,
    maps_on_device,
    note,
    prepare,
)
from probe_ptx import (
    frag_store,
    mbar_arrive,
    mbar_expect_tx,
    tma_load_2d,
    wgmma_commit,
    wgmma_fence,
    wgmma_wait0,
)

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
    addr, full, empty = ring_at(buf, STAGES, G_STAGE)
    amap = maps
    bmap = maps + uint64(128)
    m0 = cuda.blockIdx.y * GB_M
    n0 = cuda.blockIdx.x * GB_N
    if tid == 0:
        ring_init(maps, full, empty, STAGES, 2)
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


@guarded("mini GEMM")
def probe_gemm(size=4096):
    a, bt, da, dbt, ref = gemm_operands(size)
    c = cuda.device_array((size, size), np.float32)
    maps = maps_on_device(da, dbt)
    disp, regs = prepare("gemm", G_SMEM)
    grid = (size // GB_N, size // GB_M)

    def launch():
        disp[grid, GEMM_THREADS, 0, G_SMEM](dev_addr(maps), c, np.int32(size // 64))

    dt = best_time(launch)
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

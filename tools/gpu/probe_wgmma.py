"""Part 1 of the wgmma probe (``wgmma_probe.py``, issue 24): ``wgmma.mma_async`` m64nNk16
f32 += f16 * f16 with A and B in 128-byte swizzled shared memory, exact against NumPy (one
k16 step, and a K loop over two 64-wide blocks), then the throughput of many warpgroups
issuing wgmma on resident tiles.
"""

from __future__ import annotations

import numpy as np
from hopper_layout import fragments_to_matrix
from numba import cuda, types, uint16, uint32, uint64
from probe_device import PIN, TILE_BYTES, WGMMA, ZEROS, aligned_base, desc_sw128, stage_tile
from probe_host import best_time, f16_bits, guarded, note, prepare
from probe_ptx import (
    acc_store,
    acc_sum,
    fence_proxy_async,
    wgmma_commit,
    wgmma_fence,
    wgmma_wait0,
    wgmma_wait1,
)


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

"""Part 4 of the wgmma probe (``wgmma_probe.py``, issue 24): the mini GEMM of
``probe_gemm.py`` (TMA loads into an mbarrier ring feeding wgmma, 128 x 256 tiles, float16
-> float32 at 4096^3) in the forms a backend could take, to measure whether TMA beats the
backend's ``cp.async`` mainloop (528 TFLOP/s on the H200 for the benchmark's float16 matmul)
before building it in:

The ring depth ``S`` is ``PROBE_RING`` (default 4), the block tile 128 x ``PROBE_N`` (256 or
128; one of each per process: Numba freezes globals).

- ``ws{S}``: warp specialised, an ``S``-stage ring: warpgroup 0 the producer (one thread
  issues the TMA loads once the consumers released the slot), warpgroups 1 and 2 the
  consumers, each leaving its wgmmas of k tile ``kt`` in flight (``wait_group 1``, the
  accumulators tied through the fence and the wait as the backend ties them) and releasing
  the slot of ``kt - 1`` when they retire.
- ``tma{S}``: no producer warp (the shape the backend's pipelined K loop has): two consumer
  warpgroups; thread 0 issues k tiles ``0 .. S-1`` first, then in iteration ``kt`` the loads
  of k tile ``kt + S - 2`` into the slot of ``kt - 2`` once both warpgroups released it.

Each checked exactly against NumPy (small integers: exact in float32).
"""

from __future__ import annotations

import os

import numpy as np
from numba import cuda, types, uint16, uint32, uint64
from probe_device import (
    COL0,
    ROW0,
    TILE_BYTES,
    WGMMA,
    ZEROS,
    desc_sw128,
    mbar_wait,
    ring_at,
    ring_init,
)
from probe_gemm import GB_M
from probe_host import (
    dev_addr,
    gemm_operands,
    guarded,
    maps_on_device,
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

S_RING = int(os.environ.get("PROBE_RING", "4"))     # globals: Numba freezes them at compile
GB_N = int(os.environ.get("PROBE_N", "256"))        # block tile N (= the wgmma's N), 128 or 256
G_STAGE = (GB_M + GB_N) * 128                       # bytes per stage (K step 64)
wgmma_n, acc_zeros = WGMMA[GB_N], ZEROS[GB_N]
fence_acc = make_acc_pin(GB_N, "wgmma.fence.sync.aligned;", "fence")
wait1_acc = make_acc_pin(GB_N, "wgmma.wait_group.sync.aligned 1;", "wait1")
wait0_acc = make_acc_pin(GB_N, "wgmma.wait_group.sync.aligned 0;", "wait0")


@cuda.jit(device=True, inline=True)
def issue_stage(addr, full, amap, bmap, s, kt, m0, n0):
    """One thread: expect the stage's bytes on full[s], then its 64 x 64 TMA boxes
    (A 128 x 64, B^T N x 64) into slot ``s``."""
    st = addr + uint32(s * G_STAGE)
    f = full + uint32(8 * s)
    mbar_expect_tx(f, G_STAGE)
    tma_load_2d(st, amap, kt * 64, m0, f)
    tma_load_2d(st + uint32(TILE_BYTES), amap, kt * 64, m0 + 64, f)
    for q in range(GB_N // 64):
        tma_load_2d(st + uint32((2 + q) * TILE_BYTES), bmap, kt * 64, n0 + 64 * q, f)


@cuda.jit(device=True, inline=True)
def ws_group(acc, addr, empty, s, kt, wgoff):
    """One consumer warpgroup's k tile in slot ``s``: four k16 wgmmas (its 64 rows at byte
    offset ``wgoff`` of the A tile), committed as one group and left in flight (``wait_group
    1`` retires ``kt - 1``'s), then ``kt - 1``'s slot released (one arrival per warpgroup,
    predicated rather than branched around)."""
    st = addr + uint32(s * G_STAGE)
    da = desc_sw128(st + wgoff)
    db = desc_sw128(st + uint32(2 * TILE_BYTES))
    acc = fence_acc(acc)
    acc = wgmma_n(acc, da, db)
    acc = wgmma_n(acc, da + uint64(2), db + uint64(2))
    acc = wgmma_n(acc, da + uint64(4), db + uint64(4))
    acc = wgmma_n(acc, da + uint64(6), db + uint64(6))
    wgmma_commit()
    acc = wait1_acc(acc)
    mbar_arrive_if(empty + uint32(8 * ((kt + S_RING - 1) % S_RING)),
                   uint32(kt > 0 and cuda.threadIdx.x % 128 == 0))
    return acc


@cuda.jit(device=True, inline=True)
def consume(addr, full, empty, ktiles, wgoff):
    """A consumer warpgroup's K loop over the ring: wait for k tile ``kt`` in slot
    ``kt % S``, its four k16 wgmmas (its 64 rows at byte offset ``wgoff`` of the A tile)
    committed as one group and left in flight (``wait_group 1`` retires ``kt - 1``'s), then
    release ``kt - 1``'s slot (one arrival per warpgroup on empty[slot], predicated rather
    than branched around: the branch made ptxas serialise the wgmmas, C7515).  Returns the
    accumulators once the last group retired.  (With the warpgroup's offset computed inside
    this loop ptxas serialised the wgmmas, C7515; taken as an argument it does not.)"""
    acc = acc_zeros()
    for kt in range(ktiles):
        s = kt % S_RING
        mbar_wait(full + uint32(8 * s), uint32((kt // S_RING) & 1))
        acc = ws_group(acc, addr, empty, s, kt, wgoff)
    return wait0_acc(acc)


@cuda.jit(device=True, inline=True)
def consume_issue(addr, full, empty, ktiles, wgoff, maps, m0, n0):
    """``consume`` without a producer warp: at the top of iteration ``kt`` thread 0 issues k
    tile ``kt + S - 2`` into the slot of ``kt - 2``, which both warpgroups released in the
    previous iteration.  (Issued after the wgmmas, into the slot of ``kt - 1``, ptxas
    serialised the wgmmas, C7515.)"""
    acc = acc_zeros()
    for kt in range(ktiles):
        nk = kt + S_RING - 2
        if kt >= 2 and cuda.threadIdx.x == 0 and nk < ktiles:
            p = (kt - 2) % S_RING
            mbar_wait(empty + uint32(8 * p), uint32(((kt - 2) // S_RING) & 1))
            issue_stage(addr, full, maps, maps + uint64(128), p, nk, m0, n0)
        s = kt % S_RING
        mbar_wait(full + uint32(8 * s), uint32((kt // S_RING) & 1))
        acc = ws_group(acc, addr, empty, s, kt, wgoff)
    return wait0_acc(acc)


@cuda.jit(device=True, inline=True)
def produce(addr, full, empty, maps, ktiles, m0, n0):
    """The producer thread: k tile ``kt`` into slot ``kt % S`` once the consumers released
    the tile ``S`` before it."""
    for kt in range(ktiles):
        s = kt % S_RING
        if kt >= S_RING:
            mbar_wait(empty + uint32(8 * s), uint32(((kt // S_RING) - 1) & 1))
        issue_stage(addr, full, maps, maps + uint64(128), s, kt, m0, n0)


def make_ws(S):
    def gemm_ws(maps, c, ktiles):
        buf = cuda.shared.array(0, uint16)
        tid = cuda.threadIdx.x
        addr, full, empty = ring_at(buf, S, G_STAGE)
        m0 = cuda.blockIdx.y * GB_M
        n0 = cuda.blockIdx.x * GB_N
        if tid == 0:
            ring_init(maps, full, empty, S, 2)
        cuda.syncthreads()
        t = tid % 128
        wg = tid // 128
        # consumers first, the producer in the other branch: in the reverse order (and with
        # the producer's loop written out here) ptxas serialised the wgmmas (C7515)
        if wg > 0:
            acc = consume(addr, full, empty, ktiles, uint32((wg - 1) * TILE_BYTES))
            frag_store(c, m0 + (wg - 1) * 64 + ROW0[t], n0 + COL0[t], acc)
        elif tid == 0:
            produce(addr, full, empty, maps, ktiles, m0, n0)
    return gemm_ws


def make_nows(S):
    def gemm_tma(maps, c, ktiles):
        buf = cuda.shared.array(0, uint16)
        tid = cuda.threadIdx.x
        addr, full, empty = ring_at(buf, S, G_STAGE)
        m0 = cuda.blockIdx.y * GB_M
        n0 = cuda.blockIdx.x * GB_N
        if tid == 0:
            ring_init(maps, full, empty, S, 2)
            for kt in range(min(S, ktiles)):     # every slot is free at first
                issue_stage(addr, full, maps, maps + uint64(128), kt, kt, m0, n0)
        cuda.syncthreads()
        wg = tid // 128
        acc = consume_issue(addr, full, empty, ktiles, uint32(wg * TILE_BYTES), maps, m0, n0)
        t = tid % 128
        frag_store(c, m0 + wg * 64 + ROW0[t], n0 + COL0[t], acc)
    return gemm_tma


SIG = (types.uint64, types.Array(types.float32, 2, "C"), types.int32)
VARIANTS = {f"ws{S_RING}": (make_ws(S_RING), 384, S_RING),
            f"tma{S_RING}": (make_nows(S_RING), 256, S_RING)}


def gemm_ws_kernels():
    return {f"gemm_{k}": (fn, SIG, (nt, 1)) for k, (fn, nt, _) in VARIANTS.items()}


@guarded("mini GEMM variants")
def probe_gemm_ws(size=4096):
    """Every variant and cutile's own matmul beside them, timed and checked by
    ``probe_host.report_gemms``."""
    a, bt, da, dbt, ref = gemm_operands(size)
    maps = maps_on_device(da, dbt)
    grid = (size // GB_N, size // GB_M)
    entries = []
    for name, (_, nt, S) in VARIANTS.items():
        smem = S * G_STAGE + 1024 + 16 * S
        c = cuda.device_array((size, size), np.float32)
        disp, regs = prepare(f"gemm_{name}", smem)

        def launch(disp=disp, c=c, nt=nt, smem=smem):
            disp[grid, nt, 0, smem](dev_addr(maps), c, np.int32(size // 64))

        entries.append((f"mini GEMM {name} ({nt} threads, {regs} regs)", launch, c))
    entries += backend_beside(a, bt, size)
    report_gemms(entries, size, ref)


def backend_beside(a, bt, size):
    """cutile's own matmul (``benchmarks/gpu.py``'s kernel: the backend's cp.async + wgmma
    mainloop) on the same operands, float32 output: (label, launch, output) at the
    benchmark's 128 x 128 x 32 tiles and at the mini GEMM's 128 x N x 64."""
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.path.insert(0, os.path.join(root, "benchmarks"))
    from gpu import make_kernels

    import cutile
    mm = make_kernels(cutile)["matmul"]
    x = cuda.to_device(a.astype(np.float16))
    y = cuda.to_device(np.ascontiguousarray(bt.T).astype(np.float16))
    out = []
    for TM, TN, TK in ((128, 128, 32), (128, GB_N, 64)):
        c = cuda.device_array((size, size), np.float32)
        grid = (size // TM, size // TN)

        def launch(c=c, grid=grid, t=(TM, TN, TK)):
            cutile.launch(0, grid, mm, (x, y, c) + t)

        out.append((f"cutile matmul {TM}x{TN}x{TK} (cp.async + wgmma)", launch, c))
    return out

"""What the wgmma probe's kernels share (``wgmma_probe.py``, issue 24): the sizes, the
wgmma intrinsics per N, the accumulator fragment's origins and the device functions that
align, stage and describe swizzled tiles and wait on mbarriers.  Every kernel module takes
these as its own globals (Numba resolves a kernel's globals in its defining module).
"""

from __future__ import annotations

import numpy as np
from hopper_layout import SW128_HI, acc_layout, desc_encode, sw128
from numba import cuda, int32, uint32, uint64
from probe_ptx import (
    fence_mbar_init,
    fence_tensormap,
    make_acc_pin,
    make_acc_zeros,
    make_wgmma,
    mbar_init,
    mbar_try_wait,
    smem_u32,
)

NS = (64, 128, 256)
TILE_BYTES = 64 * 64 * 2        # one 64 x 64 float16 tile: 8 KiB, 8 swizzle atoms
STAGES = 3                      # mbarrier ring depth (copy and GEMM)

LAYOUT_NS = (16, 32, 64, 128)          # N of the operand-layout checks
WGMMA = {n: make_wgmma(n) for n in NS}
WGMMA_T = {n: make_wgmma(n, 1) for n in LAYOUT_NS}
PIN = {n: make_acc_pin(n) for n in sorted(set(NS) | set(LAYOUT_NS))}
ZEROS = {n: make_acc_zeros(n) for n in sorted(set(NS) | set(LAYOUT_NS))}
wgmma_256, acc_pin_256, acc_zeros_256 = WGMMA[256], PIN[256], ZEROS[256]
sw128_dev = cuda.jit(device=True, inline=True)(sw128)
desc_dev = cuda.jit(device=True, inline=True)(desc_encode)

# thread t's first value's (row, col) in the 64 x N result (the layout's thread part, the same
# for every N); value j's offset from it is the layout's register part
ROW0, COL0 = (acc_layout(256).thread_coord(d, np.arange(128)).astype(np.int32) for d in (0, 1))


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


@cuda.jit(device=True, inline=True)
def ring_init(maps, full, empty, stages, releases):
    """Thread 0 of a TMA GEMM: the two tensor maps at ``maps`` fenced for the copy engine,
    per slot a ``full`` barrier (one arrival: the producer's expect_tx) and an ``empty``
    one (``releases`` arrivals: the consumer warpgroups'), then the init fence."""
    fence_tensormap(maps)
    fence_tensormap(maps + uint64(128))
    for s in range(stages):
        mbar_init(full + uint32(8 * s), 1)
        mbar_init(empty + uint32(8 * s), releases)
    fence_mbar_init()


@cuda.jit(device=True, inline=True)
def ring_at(buf, stages, stage_bytes):
    """(first stage, full barriers, empty barriers): shared byte addresses of a TMA ring of
    ``stages`` stages in the dynamic shared array ``buf`` (1024-byte aligned), its 8-byte
    mbarriers after the last stage."""
    addr, off = aligned_base(buf)
    full = addr + uint32(stages * stage_bytes)
    return addr, full, full + uint32(8 * stages)

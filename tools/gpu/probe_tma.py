"""Part 2 of the wgmma probe (``wgmma_probe.py``, issue 24): TMA.  A ``CUtensorMap``
(2-D float16, 128-byte swizzle, 64 x 64 box) encoded on the host, ``cp.async.bulk.tensor``
loads completing on an ``mbarrier``: an exact check of the landed tiles (and of zero fill
out of bounds), then a TMA load -> TMA store copy's GB/s against a device-to-device copy.
"""

from __future__ import annotations

import numpy as np
from hopper_layout import unswizzle_tile
from numba import cuda, types, uint16, uint32, uint64
from probe_device import STAGES, TILE_BYTES, aligned_base, mbar_wait
from probe_host import best_time, dev_addr, guarded, maps_on_device, note, prepare
from probe_ptx import (
    bulk_commit,
    bulk_wait0,
    bulk_wait_read1,
    fence_mbar_init,
    fence_tensormap,
    mbar_expect_tx,
    mbar_init,
    tma_load_2d,
    tma_store_2d,
)

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

"""How many threads a generated kernel's blocks get, and how many blocks per SM it must fit.

The thread count ``T`` is part of every compiled kernel's key and of its generated source, so
it is chosen here, once per kernel and inputs, before anything is generated: an explicit
count (per launch or the kernel's ``numba_threads`` hint), ``CUTILE_NUMBA_THREADS``, or a
heuristic from the kernel's tile and mma sizes.  ``launch_bounds``/``min_blocks`` give
``cuda.jit`` the register budget that follows from ``T`` and the ``occupancy`` hint.
"""

from __future__ import annotations

import os
import threading
import weakref

from .. import config
from ..ir import ops
from ..ir.core import KernelIR, walk
from ..ir.types import TileType
from . import rt, wgmma
from .device_limits import device_compute_capability
from .mma_plan import wgmma_usable

# Thread counts: the simulator runs every thread as a Python thread, so keep it small there.
SIM_THREADS = 32
MAX_THREADS = 1024

_lock = threading.RLock()          # guards the thread-count cache


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def env_threads() -> int | None:
    return config.numba_threads()


_max_tiles: weakref.WeakKeyDictionary[KernelIR, tuple] = weakref.WeakKeyDictionary()


def _max_tile(ir: KernelIR) -> tuple[int, int, int]:
    """(largest tile size, largest mma accumulator size, number of mma ops) of the kernel.
    Cached per kernel IR: every launch asks (``min_blocks`` is part of the compiled kernel's
    key), and walking the IR cost ~100 us a launch."""
    return _scan(ir)[:3]


def _scan(ir: KernelIR) -> tuple[int, int, int, object, int]:
    """``_max_tile``'s facts, the kernel's ``Mma`` when it has exactly one, and how many
    ``Load`` ops load a tile of the largest size."""
    got = _max_tiles.get(ir)
    if got is not None:
        return got
    big, acc, n, mma = 1, 0, 0, None
    loads = []
    for op in walk(ir.body):
        for r in op.results:
            if isinstance(r.type, TileType):
                big = max(big, r.type.size)
        if isinstance(op, ops.Load):
            loads.append(op.result.type.size)
        if isinstance(op, ops.Mma):
            acc = max(acc, op.acc.type.size)
            n += 1
            mma = op
    _max_tiles[ir] = got = (big, acc, n, mma if n == 1 else None,
                            sum(1 for x in loads if x == big))
    return got


def _wgmma_threads(ir: KernelIR) -> int | None:
    """Threads for a kernel whose single mma takes Hopper's wgmma at one warpgroup per 128
    rows (two m64 blocks each, at least one warpgroup, at most 256 threads), or None: its
    plan (``wgmma.plan``, the one place its rules live) refuses that count, or wgmma is not
    usable here (``mma_plan.wgmma_usable``).  A float8 plan (``WGPlan.promotes``: a
    64-row block's fresh sums live beside the accumulators) takes one warpgroup per 64 rows
    where that is at most 256 threads: 128x128x64 at 128 threads spilled 268 bytes (255
    registers, ptxas sm_90a), at 256 none."""
    _, acc, _, mma, _ = _scan(ir)
    if mma is None or not wgmma_usable(config.numba_mma_acc(), device_compute_capability()):
        return None
    t = min(max(1 << max(acc // 128 - 1, 0).bit_length(), wgmma.WG_THREADS), 256)
    p = wgmma.plan(mma, t)
    if p is not None and p.promotes and p.MI > 1 and 2 * t <= 256 and wgmma.plan(mma, 2 * t):
        return 2 * t
    return t if p is not None else None


_threads_cache: weakref.WeakKeyDictionary[KernelIR, dict] = weakref.WeakKeyDictionary()


def choose_threads(ir: KernelIR, threads: int | None = None) -> int:
    """T for ``ir`` (cached per kernel and inputs; see ``_choose_threads``)."""
    key = (threads, os.environ.get("CUTILE_NUMBA_THREADS"), os.environ.get("CUTILE_NUMBA_WGMMA"),
           rt.simulator())
    with _lock:
        per_ir = _threads_cache.get(ir)
        if per_ir is None:
            per_ir = _threads_cache[ir] = {}
        t = per_ir.get(key)
        if t is None:
            t = per_ir[key] = _choose_threads(ir, threads)
    return t


def _hint(ir: KernelIR, name: str):
    """A kernel option for this device: ``ByTarget`` values resolved for its compute
    capability (``sm_90`` on an H100), the default under the simulator."""
    v = ir.options.get(name)
    if v is not None and hasattr(v, "by_arch"):
        arch = None
        if not rt.simulator():
            try:
                from numba import cuda
                major, minor = cuda.get_current_device().compute_capability
                arch = f"sm_{major}{minor}"
            except Exception:
                arch = None
        v = v.get(arch)
    return v


def _choose_threads(ir: KernelIR, threads: int | None = None) -> int:
    """T: explicit (per launch / per kernel) > CUTILE_NUMBA_THREADS > heuristic.

    Heuristic: under the simulator 32.  On a GPU, an mma kernel gets one thread per 64
    accumulator elements (an 8x8 register sub-tile), twice that with several mmas (attention:
    the scores, probabilities and output accumulator are all live; at 64 threads a 64x64
    flash-attention step spills, at 128 it does not, ptxas sm_90), clamped to [32, 256] (a
    single 16-bit-float mma that will take Hopper's wgmma: one per 128 elements, in [128,
    256]); other
    kernels one thread per 8 elements of their largest tile, per 16 from 4096 elements on,
    clamped to [32, 512] (a 1 x 4096 row softmax / layer norm on an H100, with whole-tile
    loads and one exchange per reduction: 256 threads 2833 / 2826 GB/s = 0.96 of copy, ptxas
    46 / 80 registers; 128 threads the same; 512 threads at full occupancy 2816 / 2004); and
    to 2048 / occupancy when the kernel's ``occupancy`` hint asks for that many blocks per SM.
    """
    if threads is None:
        threads = _hint(ir, "numba_threads")
    if threads is None:
        threads = env_threads()
    if threads is not None:
        if not _pow2(int(threads)) or threads > MAX_THREADS:
            raise ValueError(f"thread count must be a power of two <= {MAX_THREADS}, got "
                             f"{threads}")
        return int(threads)
    if rt.simulator():
        return SIM_THREADS
    big, acc, n_mma = _max_tile(ir)
    t = acc // 64 * min(n_mma, 2) if acc else big // (16 if big >= 4096 else 8)
    t = min(max(1 << max(t - 1, 0).bit_length(), 32), 256 if acc else 512)
    if acc:
        # wgmma: H200, 128x128x32 float16 matmul at 4096^3: 256 threads 475 TFLOP/s (90
        # registers, 2 blocks/SM), 128 threads 519 (158 registers, 3 blocks/SM)
        t = _wgmma_threads(ir) or t
    occ = _hint(ir, "occupancy")
    if isinstance(occ, int) and occ > 0:
        while t > 32 and t * occ > 2048:
            t //= 2
    return t


def launch_bounds(ir: KernelIR, T: int) -> tuple | None:
    """``cuda.jit``'s ``launch_bounds`` for ``ir`` at ``T`` threads: ``(T, min_blocks)`` when
    the kernel must fit that many blocks per SM; else ``(T,)`` above 256 threads, where a
    block's 65536 registers leave fewer than ptxas' own maximum of 255 per thread: without
    the bound ptxas may use more (a 16 x 32 x 64 float16 max over two axes at 512 threads:
    202) and the launch fails with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES; with it ptxas keeps to
    65536 / T and spills the rest to local memory.  None: ptxas chooses (T <= 256)."""
    mb = min_blocks(ir, T)
    if mb is not None:
        return (T, mb)
    return (T,) if T > 256 else None


def min_blocks(ir: KernelIR, T: int) -> int | None:
    """Blocks of ``T`` threads per SM the compiled kernel must fit (``launch_bounds``'
    second value: ptxas caps registers per thread at 65536 / (T * blocks), spilling if it
    must): the kernel's ``occupancy`` hint (cuTile's meaning: blocks per SM), else
    ``CUTILE_NUMBA_MIN_BLOCKS``, else the rules below by the kind of kernel, else None
    (ptxas chooses)."""
    occ = _hint(ir, "occupancy")
    if isinstance(occ, int) and occ > 0:
        return max(1, min(occ, 2048 // T))
    env = config.numba_min_blocks()
    if env is not None:
        return max(1, min(env, 2048 // T))
    big, _, n_mma = _max_tile(ir)
    if n_mma >= 2 and T <= 256:
        # several mmas live at once (attention): 512 threads per SM, at most 128 registers
        # per thread.  H200, 64x64 flash attention at 128 threads: ptxas alone 194 registers,
        # 2 blocks/SM, 101.8 TFLOP/s; 3 blocks 115.2; 4 blocks 118.6.  A single FFMA matmul
        # gains nothing (149 -> 128 registers: 18.9 -> 19.3) and loses at 80 (8.9): none there
        return 512 // T
    if n_mma == 0 and big <= 8 * T and T >= 128:
        # no mma and at most 8 elements of any tile per thread: a memory-bound kernel, whose
        # loads need every warp an SM can hold in flight.  Full occupancy caps registers at
        # 32.  H200, 8192 x 4096 f32 at 512 threads (8 per thread): softmax (ptxas alone 39
        # registers, 3 blocks/SM) 3073 -> 3264 GB/s; layer norm (46, 2 blocks) 1719 -> 2549
        # GB/s, though ptxas spills 80 bytes.  Vector add (1024 at 128 threads): 3970 -> 4220.
        # Tiles of 4096 and more get 16 elements per thread (``_choose_threads``): next rule
        return 2048 // T
    if n_mma == 0 and 8 * T < big <= 16 * T and T >= 256 and _scan(ir)[4] >= 2:
        # no mma, up to 16 elements per thread (the 1 x 4096 rows at 256 threads) and
        # several loads of such tiles, the later ones waiting on the reductions between: 64
        # registers per thread, 1024 threads per SM, so more blocks' loads are in flight.
        # H200, 8192 x 4096 f32 layer norm (3 loads; ptxas alone 80 registers, 3 blocks/SM):
        # 3640 -> 3716, 3619 -> 3736 and -> 3743 GB/s in three runs (0.88 -> 0.91 of copy).
        # Softmax (one load) lost by the same bound: 3770 -> 3680 and 3653 GB/s
        return 1024 // T
    return None

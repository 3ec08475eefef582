"""``inspect``: generated source, resources and theoretical occupancy of a specialised kernel.

Occupancy follows the seeds (001): each SM holds as many blocks as the scarcest resource
allows —

- threads: ``max_threads_per_sm // T``,
- blocks: ``max_blocks_per_sm``,
- shared memory: ``smem_per_sm // smem_per_block`` (e.g. 32 KiB x 256 threads = 128 B per
  thread: an A100's 164 KiB hold 1312 threads, 64 %),
- registers: ``regs_per_sm // (regs_per_warp * warps_per_block)``, registers being allocated
  per warp in units of 256,

and occupancy = resident threads / ``max_threads_per_sm``.  Limits come from the device's
properties when a GPU is present, else from an H100 (documented defaults below).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import rt
from .compile import compile_kernel, full_tiles
from .threads import choose_threads

# H100 SXM (sm_90) per-SM limits, used when no GPU can be queried.
H100 = {"max_threads_per_sm": 2048, "max_blocks_per_sm": 32,
        "smem_per_sm": 228 * 1024, "regs_per_sm": 65536, "smem_per_block": 48 * 1024,
        "reg_alloc_unit": 256, "warp_size": 32, "name": "H100 (defaults, no GPU queried)"}


@dataclass
class KernelInfo:
    name: str
    source: str
    threads: int
    shared_bytes: int
    registers: int | None
    barriers: int
    occupancy: float
    blocks_per_sm: int
    limiter: str
    limits: dict = field(repr=False, default_factory=dict)
    static_shared_bytes: int = 0       # cuda.shared.array buffers
    dynamic_shared_bytes: int = 0      # dynamic shared memory passed at launch (> 48 KiB plans)
    plan: str = ""                     # the mma strategy and its parameters, if any
    global_scratch_bytes: int = 0      # buffers in the global workspace, per block (smem.py)
    # GPU: "direct" (compiled without Numba's frontend, direct.py) or "numba: <why>"; "" under
    # the simulator
    compile_path: str = ""

    def summary(self) -> str:
        regs = "?" if self.registers is None else str(self.registers)
        dyn = (f" ({self.dynamic_shared_bytes} B dynamic)" if self.dynamic_shared_bytes
               else "")
        plan = f", {self.plan}" if self.plan else ""
        if self.global_scratch_bytes:
            dyn += f" + {self.global_scratch_bytes} B global workspace"
        return (f"{self.name}: {self.threads} threads/block, {self.shared_bytes} B shared/block"
                f"{dyn}, "
                f"{regs} regs/thread, {self.barriers} barriers in source, "
                f"{self.blocks_per_sm} blocks/SM ({self.limiter}), occupancy "
                f"{self.occupancy:.0%} on {self.limits.get('name', '?')}{plan}"
                + (f"; compiled: {self.compile_path}" if self.compile_path else ""))


def device_limits() -> dict:
    if rt.simulator():
        return dict(H100)
    try:
        from numba import cuda
        if not cuda.is_available():
            return dict(H100)
        d = cuda.get_current_device()
        lim = dict(H100)
        lim.update({
            "max_threads_per_sm": int(d.MAX_THREADS_PER_MULTIPROCESSOR),
            "smem_per_sm": int(d.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
            "regs_per_sm": int(d.MAX_REGISTERS_PER_MULTIPROCESSOR),
            "smem_per_block": int(d.MAX_SHARED_MEMORY_PER_BLOCK),
            "name": d.name.decode() if isinstance(d.name, bytes) else str(d.name),
        })
        try:
            lim["max_blocks_per_sm"] = int(d.MAX_BLOCKS_PER_MULTIPROCESSOR)
        except Exception:
            pass
        return lim
    except Exception:
        return dict(H100)


def occupancy(threads: int, smem: int, regs: int | None, lim: dict) -> tuple[float, int, str]:
    """(occupancy, blocks per SM, limiting resource) by the seeds' formula."""
    cand = {"threads": lim["max_threads_per_sm"] // threads,
            "blocks": lim["max_blocks_per_sm"]}
    if smem:
        cand["shared memory"] = lim["smem_per_sm"] // smem
    if regs:
        unit, ws = lim["reg_alloc_unit"], lim["warp_size"]
        per_warp = -(-regs * ws // unit) * unit
        warps = -(-threads // ws)
        cand["registers"] = lim["regs_per_sm"] // (per_warp * warps)
    limiter = min(cand, key=lambda k: cand[k])
    blocks = cand[limiter]
    return blocks * threads / lim["max_threads_per_sm"], blocks, limiter


def registers(ck) -> int | None:
    """Registers per thread from Numba (needs a GPU; None under the simulator)."""
    if rt.simulator():
        return None
    try:
        return ck.variant().registers()   # C-contiguous arrays
    except Exception:
        return None


def inspect_kernel(ir, grid, leaves, *, threads=None, mma_acc=None) -> KernelInfo:
    T = choose_threads(ir, threads)
    ck = compile_kernel(ir, T, mma_acc, full_tiles(ir, T, mma_acc, leaves))
    regs = registers(ck)
    lim = device_limits()
    occ, blocks, limiter = occupancy(ck.block_threads, ck.smem_bytes, regs, lim)
    return KernelInfo(ir.name, ck.source, ck.block_threads, ck.smem_bytes, regs, ck.n_barriers,
                      occ, blocks, limiter, lim, ck.static_smem, ck.dyn_smem, ck.plan,
                      ck.scratch_bytes, ck.path or "")

"""What the current device allows a kernel: shared memory per block and compute capability.

Device queries kept apart from compiling and launching so that each answers one question;
under Numba's CUDA simulator they answer as an H100 would (shared memory) or not at all
(compute capability: nothing is refused).
"""

from __future__ import annotations

from .. import config
from ..errors import TileUnsupportedFeatureError
from . import rt
from .smem import H100_OPTIN_LIMIT


def device_smem_limit() -> int:
    """Shared memory one block may use after the dynamic opt-in (the simulator: an H100's)."""
    if rt.simulator():
        return H100_OPTIN_LIMIT
    try:
        from numba import cuda
        dev = cuda.get_current_device()
        return int(dev.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
    except Exception:
        return H100_OPTIN_LIMIT


def smem_budget() -> int:
    """Shared memory per block a plan may use: the device's limit, or less when
    ``CUTILE_NUMBA_SMEM_LIMIT`` says so (buffers beyond go to the global workspace)."""
    knob = config.numba_smem_limit()
    limit = device_smem_limit()
    return limit if knob is None else min(knob, limit)


def device_compute_capability() -> tuple[int, int] | None:
    """The current device's (major, minor); None under the simulator or without a device."""
    if rt.simulator():
        return None
    try:
        from numba import cuda
        return tuple(cuda.get_current_device().compute_capability)
    except Exception:
        return None


def check_compute_capability(needs: list, cc: tuple[int, int] | None) -> None:
    """Refuse a kernel whose instructions the device lacks (``Gen.min_cc``), naming the op."""
    for need, why, loc in needs:
        if cc is not None and tuple(cc) < tuple(need):
            raise TileUnsupportedFeatureError(
                f"{why}; this device is {cc[0]}.{cc[1]}: not supported by the numba backend "
                f"here (run on the interpreter, or accumulate in float32)", loc)

"""``cuda.tile._cext`` (NVIDIA's C extension): feature switches, compute capability and the
calling convention; the dispatcher, launcher and grid queries are stand-ins."""

from __future__ import annotations

import os

from cutile import launch  # noqa: F401  (1.7's ct.launch is this module's launch)
from cutile.compilation import CallingConvention  # noqa: F401  (cutile has c1 only)

from ..placeholder import fallback_getattr

__getattr__ = fallback_getattr("cuda.tile._cext")

# The interpreter has no architecture: in CPU mode report the lent GPU's (H100/H200, sm_90),
# so Hopper-gated tests (float8) run and Blackwell-gated ones skip as they do there.
CPU_MODE_CC = (9, 0)


def dev_features_enabled() -> bool:
    """NVIDIA's unreleased features (bytecode 13.4): off, as in a released cuTile."""
    return False


def cconv_v3_enabled() -> bool:
    """cutile implements calling convention v1 only (``cutile.compilation.CallingConvention``)."""
    return False


def get_compute_capability(device_id: int = 0) -> tuple[int, int]:
    """``NVSUITE_CC=major.minor`` if set; in CPU mode (``NVSUITE_MODE=cpu``) sm_90; else the
    device's, through Numba (torch as a fallback)."""
    forced = os.environ.get("NVSUITE_CC", "").strip()
    if forced:
        major, minor = forced.split(".")
        return int(major), int(minor)
    if os.environ.get("NVSUITE_MODE", "gpu") == "cpu":
        return CPU_MODE_CC
    try:
        from numba import cuda
        if cuda.is_available():
            return tuple(cuda.gpus[device_id].compute_capability)
    except Exception:
        pass
    import torch
    return tuple(torch.cuda.get_device_capability(device_id))

"""The namespace generated kernels run in: casts, ``libdevice``, ``cuda`` and the runtime helpers.

Generated source names every dtype cast (``f32(x)``, ``i8(x)``: ``casts.py``) and calls every
operation whose rounding matters through ``libdevice``: on the GPU Numba's binding of NVIDIA's
libdevice, under the CUDA simulator ``sim_libdevice.SimLibdevice``.  ``namespace()`` gathers
those and the helpers of the runtime modules (``bits``, ``atom16``, ``pointer_rt``,
``printf_rt``, ``minifloat``'s device functions, ``ptx``/``ptx_sim``'s intrinsics) for the GPU
or the simulator (``simulator()``); it is the top of the runtime side, which the source
builders (``exprs``, ``conversions``) never import.
"""

from __future__ import annotations

import math

import numpy as np

from . import atom16, bits, intwrap, minifloat, pointer_rt
from .casts import NUMPY_TYPES
from .printf_rt import cu_printf
from .ptx_sim import SIM_INTRINSICS
from .sim_libdevice import SimLibdevice
from .tma_sim import SIM_TMA

_simulator: bool | None = None


def simulator() -> bool:
    """Whether numba.cuda is the CUDA simulator (decided once, when numba.cuda is imported)."""
    global _simulator
    if _simulator is None:
        from numba.cuda import config as cfg
        _simulator = bool(getattr(cfg, "ENABLE_CUDASIM", False))
    return _simulator


def namespace() -> dict:
    """Globals for exec'ing generated kernel source."""
    from numba import cuda
    ns = {"cuda": cuda, "np": np, "math": math}
    ns.update(NUMPY_TYPES)
    # element types of dynamic shared arrays (the simulator needs np.dtype instances there)
    ns.update({f"dyn_{k}": (np.dtype(v) if simulator() else v) for k, v in NUMPY_TYPES.items()})
    if simulator():
        ns["libdevice"] = SimLibdevice
        ns.update(SIM_INTRINSICS)       # CUTILE_NUMBA_TENSOR_CORES=sim (tests)
        ns.update(SIM_TMA)              # CUTILE_NUMBA_TMA=sim (tests)
    else:
        from numba.cuda import libdevice

        from .ptx import INTRINSICS  # lazy: GPU only; its import builds numba intrinsics
        intwrap.apply()                 # signed add/sub/mul wrap (R-MATH-4), not nsw
        ns["libdevice"] = libdevice
        ns.update(INTRINSICS)
    ns.update(_device_functions())
    ns["cu_printf"] = cu_printf(simulator())
    ns.update(atom16.functions(simulator()))
    ns.update(bits.functions(simulator()))
    ns.update(pointer_rt.functions(simulator()))
    return ns


_devfns: dict | None = None


def _device_functions() -> dict:
    """Helper device functions and constant tables shared by all generated kernels (built
    once; Numba compiles a device function into each kernel that calls it)."""
    global _devfns
    if _devfns is None:
        from numba import cuda
        ns: dict = {"math": math}
        exec(compile(minifloat.DEVICE_SOURCE, "<cutile-numba:minifloat>", "exec"), ns)
        _devfns = {name: cuda.jit(device=True)(ns[name])
                   for name in minifloat.DEVICE_FUNCTIONS}
        _devfns.update(minifloat.tables())
    return _devfns

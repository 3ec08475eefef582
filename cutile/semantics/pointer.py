"""Foreign pointers (§7): the view ``Array.from_foreign`` denotes.

A pointer is the byte address of an array's first element; ``view_at`` finds the launch
buffer holding it and builds the NumPy view with the given shape and strides.  The interpreter
uses it for ``FromForeign`` (``interp/rules/pointer.py``) and the Numba backend under the simulator
for ``array_at`` (``numba_backend/pointer_rt.py``), so both raise UB (R-UB-3) for the same
views.
"""

from __future__ import annotations

import numpy as np

from .buffers import byte_bounds
from .ub import UB


def view_at(addr: int, shape: tuple, strides: tuple, dtype: np.dtype, roots) -> np.ndarray:
    """The NumPy view ``Array.from_foreign`` denotes: ``shape`` and ``strides`` (in elements)
    from byte address ``addr`` inside one of the buffers ``roots``; UB (R-UB-3) when it is not
    inside one."""
    if any(n < 0 for n in shape) or any(s < 0 for s in strides):
        raise UB("R-UB-3", f"Array.from_foreign: shape {shape} and strides {strides} must be "
                           f"non-negative")
    dtype = np.dtype(dtype)
    item = dtype.itemsize
    span = 0 if 0 in shape else sum((n - 1) * s for n, s in zip(shape, strides)) * item + item
    for root in roots:
        low, high = byte_bounds(root)
        if low <= addr < high or (addr == high and span == 0):
            if addr + span > high:
                raise UB("R-UB-3", f"Array.from_foreign: shape {shape} with strides {strides} "
                                   f"reaches {addr + span - high} bytes past the end of the "
                                   f"buffer the pointer points into")
            if not (root.flags.c_contiguous or root.flags.f_contiguous):
                break
            return np.ndarray(shape, dtype, buffer=root, offset=addr - low,
                              strides=tuple(s * item for s in strides))
    raise UB("R-UB-3", "Array.from_foreign: the pointer does not point into an array of this "
                       "launch")

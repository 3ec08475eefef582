"""Interpreter rules for foreign pointers (§7): a pointer is the byte address of an array's
first element (int64); ``Array.from_foreign`` finds the launch buffer holding that address and
builds a NumPy view with the given shape and strides over it.  A view reaching outside that
buffer, or a pointer into no buffer of the launch, is undefined behaviour (R-UB-3)."""

from __future__ import annotations

import numpy as np

from ..ir import ops
from .machine import UB, PTile, rule
from .races import _byte_bounds, _root


@rule(ops.ForeignPointer)
def foreign_pointer(frame, op):
    a = frame[op.array]
    return PTile(np.array(a.__array_interface__["data"][0], np.int64))


def _buffers(frame):
    seen = {}
    for v in frame.values.values():
        if isinstance(v, np.ndarray):
            r = _root(v)
            seen.setdefault(id(r), r)
    return seen.values()


@rule(ops.FromForeign)
def from_foreign(frame, op):
    p = frame[op.pointer]
    if p.poison is not None:
        raise UB("R-UB-2", "Array.from_foreign: the pointer depends on UNDETERMINED padding")
    shape = tuple(int(frame[v].data) for v in op.shape)
    strides = tuple(int(frame[v].data) for v in op.strides)
    return view_at(int(p.data), shape, strides, op.result.type.dtype.np_dtype,
                   _buffers(frame))


def view_at(addr: int, shape: tuple, strides: tuple, dtype: np.dtype, roots) -> np.ndarray:
    """The NumPy view ``Array.from_foreign`` denotes: ``shape`` and ``strides`` (in elements)
    from byte address ``addr`` inside one of the buffers ``roots``; UB (R-UB-3) when it is not
    inside one.  Also the Numba backend's stand-in under the simulator (numba_backend/
    pointer_rt.py)."""
    if any(n < 0 for n in shape) or any(s < 0 for s in strides):
        raise UB("R-UB-3", f"Array.from_foreign: shape {shape} and strides {strides} must be "
                           f"non-negative")
    dtype = np.dtype(dtype)
    item = dtype.itemsize
    span = 0 if 0 in shape else sum((n - 1) * s for n, s in zip(shape, strides)) * item + item
    for root in roots:
        low, high = _byte_bounds(root)
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

"""Interpreter rules for foreign pointers (§7): a pointer is the byte address of an array's
first element (int64); ``Array.from_foreign`` finds the launch buffer holding that address and
builds a NumPy view with the given shape and strides over it (``semantics/pointer.py:view_at``,
shared with the Numba backend).  A view reaching outside that buffer, or a pointer into no
buffer of the launch, is undefined behaviour (R-UB-3)."""

from __future__ import annotations

import numpy as np

from ...ir import ops
from ...semantics.buffers import root_of
from ...semantics.pointer import view_at
from ...semantics.ub import UB
from ..core import PTile, rule


@rule(ops.ForeignPointer)
def foreign_pointer(frame, op):
    a = frame[op.array]
    return PTile(np.array(a.__array_interface__["data"][0], np.int64))


def _buffers(frame):
    seen = {}
    for v in frame.values.values():
        if isinstance(v, np.ndarray):
            r = root_of(v)
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


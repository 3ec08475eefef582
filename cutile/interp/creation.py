"""Interpreter rules for constant tiles and iota."""

from __future__ import annotations

import numpy as np

from ..ir import ops
from .machine import PTile, rule


@rule(ops.Constant)
def constant(frame, op):
    cached = getattr(op, "_value", None)
    if cached is None:
        if isinstance(op.value, np.ndarray):
            data = op.value.astype(op.dtype.np_dtype).reshape(op.shape)
        else:
            data = np.full(op.shape, op.value, dtype=op.dtype.np_dtype)
        data.setflags(write=False)      # shared across blocks: rules never write inputs
        cached = op._value = PTile(data)
    return cached


@rule(ops.Iota)
def iota(frame, op):
    return PTile(np.arange(op.size, dtype=np.int64).astype(op.dtype.np_dtype))

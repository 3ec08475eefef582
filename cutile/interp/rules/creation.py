"""Interpreter rules for constant tiles and iota."""

from __future__ import annotations

import numpy as np

from ... import dtypes as dt
from ...ir import ops
from ..core import PTile, rule


@rule(ops.Constant)
def constant(frame, op):
    cached = getattr(op, "_value", None)
    if cached is None:
        if op.dtype is dt.float8_e5m3fnu:       # values already rounded (R-CONST-4)
            v = np.broadcast_to(np.asarray(op.value, np.float64), op.shape)
            data = dt.e5m3_encode(np.reshape(v, op.shape), satfinite=False)
        elif isinstance(op.value, np.ndarray):
            data = op.value.astype(op.dtype.np_dtype).reshape(op.shape)
        else:
            data = np.full(op.shape, op.value, dtype=op.dtype.np_dtype)
        data.setflags(write=False)      # shared across blocks: rules never write inputs
        cached = op._value = PTile(data)
    return cached


@rule(ops.Iota)
def iota(frame, op):
    return PTile(np.arange(op.size, dtype=np.int64).astype(op.dtype.np_dtype))

"""Interpreter rules for reductions.  The combine order is ``numerics.reduce``'s documented
pairwise tree; a result element is poisoned when any element it reduced was."""

from __future__ import annotations

import numpy as np

from ..ir import ops
from . import numerics
from .machine import PTile, rule


@rule(ops.Reduce)
def reduce(frame, op):
    x = frame[op.x]
    t = op.result.type
    if x.data.ndim == 0:
        return PTile(x.data.copy(), x.poison)
    data = numerics.reduce(op.fn, x.data, tuple(op.axes), op.x.type.dtype,
                           propagate_nan=op.propagate_nan)
    poison = None if x.poison is None else x.poison.any(axis=tuple(op.axes), keepdims=True)
    data = np.reshape(data, t.shape)
    return PTile(data, None if poison is None else np.reshape(poison, t.shape))


@rule(ops.ArgReduce)
def arg_reduce(frame, op):
    x = frame[op.x]
    t = op.result.type
    data = numerics.argreduce(op.fn, x.data, op.axis, propagate_nan=op.propagate_nan)
    poison = None
    if x.poison is not None:
        poison = x.poison.any() if op.axis is None else x.poison.any(axis=op.axis)
        poison = np.reshape(poison, t.shape)
    return PTile(np.reshape(np.asarray(data, dtype=np.int32), t.shape), poison)

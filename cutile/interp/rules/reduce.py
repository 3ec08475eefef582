"""Interpreter rules for reductions (R-RED-1..7).

The combine order is ``numerics.reduce``'s documented pairwise tree (last reduced axis first,
``x[:n/2] op x[n/2:]`` halving), every step in the input dtype with the op's rounding mode and
flush-to-zero.  A result element is poisoned when any element it reduced was.
"""

from __future__ import annotations

import numpy as np

from ...ir import ops
from .. import numerics
from ..core import PTile, rule
from . import combine


@rule(ops.Reduce)
def reduce(frame, op):
    x = frame[op.x]
    t = op.result.type
    axes = tuple(op.axes)
    data = numerics.reduce(op.fn, x.data, axes, op.x.type.dtype,
                           propagate_nan=op.propagate_nan, rounding=op.rounding, ftz=op.ftz)
    poison = None
    if x.poison is not None:
        poison = np.reshape(x.poison.any(axis=axes, keepdims=True), t.shape)
    return PTile(np.reshape(data, t.shape), poison)


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


@rule(ops.ReduceFn)
def reduce_fn(frame, op):
    """The pairwise tree of ``numerics.reduce`` along ``op.axis``: the lower half is the
    combiner's left operand; each tree step runs the combiner region once (vectorised)."""
    xs = [frame[v] for v in op.xs]
    ax = op.axis
    parts = [PTile(np.moveaxis(t.data, ax, 0),
                   None if t.poison is None else np.moveaxis(t.poison, ax, 0)) for t in xs]
    n = parts[0].data.shape[0]
    while n > 1:
        n //= 2
        lo = [PTile(p.data[:n], None if p.poison is None else p.poison[:n]) for p in parts]
        hi = [PTile(p.data[n:2 * n], None if p.poison is None else p.poison[n:2 * n])
              for p in parts]
        parts = combine.combine(frame, op.body, lo, hi)
    out = []
    for p, r in zip(parts, op.results):
        shape = r.type.shape
        data = np.reshape(np.moveaxis(p.data, 0, ax), shape)
        poison = None if p.poison is None else np.reshape(np.moveaxis(p.poison, 0, ax), shape)
        out.append(PTile(data.copy(), poison))    # (ascontiguousarray makes 0-D 1-D)
    return out

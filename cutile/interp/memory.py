"""Interpreter rules for global memory: array queries and slices, load/store, gather/scatter.

The exact semantics (tile space, order, steps, padding, discarded stores, bounds) live in
``memory_model``; these rules unpack IR operands and pass the block's strictness flag.
"""

from __future__ import annotations

import numpy as np

from ..ir import ops
from . import memory_model as mm
from .machine import UB, PTile, check_not_poisoned, rule


def _index(frame, values) -> tuple[int, ...]:
    out = []
    for v in values:
        t = frame[v]
        check_not_poisoned(t, "tile index")
        out.append(int(t.data.item()))
    return tuple(out)


@rule(ops.ArrayDim)
def array_dim(frame, op):
    a = frame[op.array]
    return PTile(np.array(a.shape[op.axis], dtype=op.result.type.dtype.np_dtype))


@rule(ops.ArrayStride)
def array_stride(frame, op):
    a = frame[op.array]
    return PTile(np.array(a.strides[op.axis] // a.itemsize,
                          dtype=op.result.type.dtype.np_dtype))


@rule(ops.ArraySlice)
def array_slice(frame, op):
    a = frame[op.array]
    start, stop = _index(frame, (op.start, op.stop))
    n = a.shape[op.axis]
    if not 0 <= start <= stop <= n:
        raise UB("R-UB-4", f"Array.slice({op.axis}, {start}, {stop}) is out of bounds for "
                           f"extent {n} (needs 0 <= start <= stop <= extent)")
    sl = [slice(None)] * a.ndim
    sl[op.axis] = slice(start, stop)
    return a[tuple(sl)]


@rule(ops.Load)
def load(frame, op):
    a = frame[op.array]
    data, poison = mm.tile_space_load(
        a, _index(frame, op.index), op.shape, order=op.order, steps=op.steps,
        padding=op.padding, check_bounds=op.check_bounds, strict=frame.strict)
    return PTile(data, poison)


@rule(ops.Store)
def store(frame, op):
    t = frame[op.tile]
    mm.tile_space_store(frame[op.array], _index(frame, op.index), t.data, order=op.order,
                        steps=op.steps, check_bounds=op.check_bounds, poison=t.poison,
                        strict=frame.strict)


def _gs_indices(frame, op):
    idx = []
    for v in op.indices:
        t = frame[v]
        check_not_poisoned(t, "gather/scatter index")
        idx.append(t.data)
    mask = None
    if op.mask is not None:
        m = frame[op.mask]
        check_not_poisoned(m, "gather/scatter mask")
        mask = m.data
    return tuple(idx), mask


@rule(ops.Gather)
def gather(frame, op):
    idx, mask = _gs_indices(frame, op)
    pad = frame[op.padding]
    data = mm.gather(frame[op.array], idx, mask=mask, padding=pad.data,
                     check_bounds=op.check_bounds, strict=frame.strict)
    return PTile(data, pad.poison)


@rule(ops.Scatter)
def scatter(frame, op):
    idx, mask = _gs_indices(frame, op)
    v = frame[op.value]
    mm.scatter(frame[op.array], idx, v.data, mask=mask, check_bounds=op.check_bounds,
               poison=v.poison, strict=frame.strict)


_ = UB

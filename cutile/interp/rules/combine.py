"""Runs a reduce/scan combiner region vectorised: one pass over the region per combine step.

Region arguments are 0-d in the IR; here every value carries one extra trailing *batch* axis
(length K: all pairs combined in this step, or 1 for values that do not depend on them), so
each IR op runs once per step through its ordinary rule, never once per element.  The
frontend admits only elementwise, creation and index ops plus size-1 shape ops in a body
(``cutile/api/_combiner.py``), which is what this runner handles.
"""

from __future__ import annotations

import numpy as np

from ...errors import TileInternalError
from ...ir import ops
from ...ir.core import Region
from ..core import RULES, PTile


class _BatchFrame:
    """The block's frame seen from inside the region: outside values gain a batch axis."""

    def __init__(self, outer, local: dict):
        self._outer = outer
        self._local = local

    def __getitem__(self, v):
        t = self._local.get(v)
        if t is not None:
            return t
        t = self._outer[v]
        return _unbatched(t)

    def __getattr__(self, name):
        return getattr(self._outer, name)


def _unbatched(t: PTile) -> PTile:
    return PTile(t.data[..., None], None if t.poison is None else t.poison[..., None])


def _shape_op(op, x: PTile) -> PTile:
    k = x.data.shape[-1]

    def f(a):
        if isinstance(op, ops.Reshape):
            return a.reshape(tuple(op.shape) + (k,))
        if isinstance(op, ops.Broadcast):
            return np.broadcast_to(a, tuple(op.shape) + (k,))
        if isinstance(op, ops.Permute):
            return np.transpose(a, tuple(op.axes) + (len(op.axes),))
        raise TileInternalError(f"no batched combiner rule for {type(op).__name__}", op.loc)

    return PTile(f(x.data), None if x.poison is None else f(x.poison))


def run(frame, region: Region, args: list[PTile]) -> list[PTile]:
    """Run ``region`` on batched ``args`` (each of shape ``(K,)``); results of shape ``(K,)``."""
    k = max(a.data.shape[-1] for a in args)
    local: dict = dict(zip(region.args, args))
    bf = _BatchFrame(frame, local)
    for op in region.ops:
        if op.is_terminator:
            out = []
            for v in op.values:
                t = bf[v]
                data = np.broadcast_to(t.data, (k,)).reshape(k).copy()
                poison = None if t.poison is None else np.broadcast_to(t.poison, (k,)).copy()
                out.append(PTile(data, poison))
            return out
        if op.rearranges:                   # moves elements: keep the batch axis last
            res = _shape_op(op, bf[op.x])
        else:
            res = RULES[type(op)](bf, op)
            t = op.result.type
            if res.data.ndim == len(t.shape):           # did not depend on the batch
                res = _unbatched(res)
        t = op.result.type
        if res.data.dtype != t.dtype.np_dtype or res.data.shape[:-1] != t.shape:
            raise TileInternalError(f"combiner op {type(op).__name__} produced "
                                    f"{res.data.dtype}{list(res.data.shape)}, IR says {t}",
                                    op.loc)
        local[op.result] = res
    raise TileInternalError("combiner region has no terminator")


def combine(frame, region: Region, left: list[PTile], right: list[PTile]) -> list[PTile]:
    """``func(left..., right...)`` elementwise over tiles of one shape (any rank)."""
    shape = left[0].data.shape
    flat = [PTile(t.data.reshape(-1), None if t.poison is None else t.poison.reshape(-1))
            for t in left + right]
    if flat and flat[0].data.size == 0:
        return [PTile(np.empty(shape, t.data.dtype)) for t in left]
    out = run(frame, region, flat)
    return [PTile(o.data.reshape(shape), None if o.poison is None else o.poison.reshape(shape))
            for o in out]

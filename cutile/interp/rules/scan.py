"""Interpreter rules for scans (R-SCAN-1..3) in the documented sequential order.

Along the axis, ``out[0] = x[0]`` and ``out[i] = out[i-1] op x[i]`` (``reverse``: from the end,
``out[i] = x[i] op out[i+1]``), each step elementwise over all other coordinates at once.
cumsum/cumprod combine with ``numerics.binary`` in the dtype (integers wrap, ``rounding`` per
step); float16/bfloat16 run in float32 and round each output once.  ``ftz`` flushes inputs and
partial results.  ``ScanFn`` runs its combiner region once per step (``combine.py``).  An
output is poisoned when any element it combined was.
"""

from __future__ import annotations

import numpy as np

from ... import dtypes as dt
from ...ir import ops
from .. import numerics
from .. import rounding as rd
from ..core import PTile, rule
from . import combine as comb


def _order(n: int, reverse: bool):
    return range(n - 1, -1, -1) if reverse else range(n)


def _poison_scan(p, axis: int, reverse: bool):
    if p is None:
        return None
    m = np.moveaxis(p, axis, 0)
    if reverse:
        m = m[::-1]
    out = np.logical_or.accumulate(m, axis=0)
    if reverse:
        out = out[::-1]
    return np.moveaxis(out, 0, axis)


@rule(ops.CumScan)
def cum_scan(frame, op):
    x = frame[op.x]
    dtype = op.x.type.dtype
    acc = dt.float32 if dtype in (dt.float16, dt.bfloat16) else dtype
    fn = "add" if op.fn == "sum" else "mul"
    a = np.moveaxis(x.data, op.axis, 0)
    if op.ftz:
        a = rd.flush32(a)
    if acc is not dtype:
        a = a.astype(np.float32)
    if op.rounding is None and not op.ftz and (acc.is_integral or acc in (dt.float32,
                                                                          dt.float64)):
        # NumPy's accumulate is this same sequential loop, each step rounded (RN) or wrapped
        # in the dtype, and IEEE add/mul commute exactly, so reversing the axis is the reversed
        # scan: the fast path gives the documented result bit for bit.
        uf = np.add if fn == "add" else np.multiply
        with np.errstate(all="ignore"):
            out = uf.accumulate(a[::-1] if op.reverse else a, axis=0, dtype=acc.np_dtype)
        out = out[::-1] if op.reverse else out
    else:
        out = _sequential(a, acc, fn, op)
    if acc is not dtype:
        final = op.rounding if rd.mode_name(op.rounding) in ("RN", "RZ") else None
        out = numerics.convert(out, acc, dtype, final)
    data = np.ascontiguousarray(np.moveaxis(out, 0, op.axis))
    return PTile(data, _poison_scan(x.poison, op.axis, op.reverse))


def _sequential(a, acc, fn, op):
    out = np.empty(a.shape, acc.np_dtype)
    prev = None
    for i in _order(a.shape[0], op.reverse):
        if prev is None:
            prev = a[i]
        elif op.reverse:
            prev = numerics.binary(fn, a[i], prev, acc, rounding=op.rounding, ftz=op.ftz)
        else:
            prev = numerics.binary(fn, prev, a[i], acc, rounding=op.rounding, ftz=op.ftz)
        out[i] = prev
    return out


@rule(ops.ScanFn)
def scan_fn(frame, op):
    xs = [frame[v] for v in op.xs]
    ax = op.axis
    n = op.xs[0].type.shape[ax]
    moved = [PTile(np.moveaxis(t.data, ax, 0),
                   None if t.poison is None else np.moveaxis(t.poison, ax, 0)) for t in xs]
    outs = [np.empty(m.data.shape, m.data.dtype) for m in moved]
    pois = [np.zeros(m.data.shape, bool) for m in moved]
    prev = None
    for i in _order(n, op.reverse):
        cur = [PTile(m.data[i], None if m.poison is None else m.poison[i]) for m in moved]
        if prev is None:
            prev = cur
        elif op.reverse:
            prev = comb.combine(frame, op.body, cur, prev)
        else:
            prev = comb.combine(frame, op.body, prev, cur)
        for o, p, t in zip(outs, pois, prev):
            o[i] = t.data
            if t.poison is not None:
                p[i] = t.poison
    res = []
    for o, p in zip(outs, pois):
        res.append(PTile(np.ascontiguousarray(np.moveaxis(o, 0, ax)),
                         np.ascontiguousarray(np.moveaxis(p, 0, ax))))
    return res

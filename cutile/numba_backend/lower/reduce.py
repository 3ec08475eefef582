"""Lowering of reductions in the interpreter's documented order (``numerics.reduce``).

Along one axis of length ``n`` the tree combines element ``i`` with ``i + n/2``, then
``i + n/4``, ...: each step consumes the most significant remaining bit of the axis
coordinate.  Where that bit is a *register* bit of the layout, both operands sit in the same
thread and the step is a register combine (no communication).  The first time it is a
*thread* bit, the partial tile goes to shared memory and the remaining steps run there as the
classic shared-memory tree (one barrier per step), combining exactly the same pairs in the same
order, so float results are bit-identical to the interpreter's.  Axes are reduced one at a
time in descending order (as the interpreter does); results come back in the flat layout of
the partial shape, so scalar results are replicated in every thread.

ArgReduce combines (value, index) pairs with an order-independent rule (the best value, ties
and NaN cases to the smaller index), which equals "first index of the extreme" (R-RED-6).
"""

from __future__ import annotations

from ... import dtypes as dt
from ...ir import ops
from .. import combiner, exprs
from .. import layout as L
from ..codegen import row_major_strides
from . import lower

_RED_OP = {"sum": "add", "prod": "mul", "max": "maximum", "min": "minimum"}


def _insert_zero_bit(k: int, pos: int) -> int:
    low = k & ((1 << pos) - 1)
    return ((k >> pos) << (pos + 1)) | low


def _reduce_axis(g, site, lay, comps, dtypes, ax, combine):
    """Reduce ``ax`` of the tile held as ``comps`` (one register list per component) in
    ``lay`` down to length 1.  Returns (layout, comps) of the keepdims-shaped result."""
    while lay.shape[ax] > 1 and lay.bits[ax][-1][0] == "r":
        ri = lay.bits[ax][-1][1]
        new = lay.drop_top_bit(ax)
        out = [[] for _ in comps]
        for k in range(new.nregs):
            lo = _insert_zero_bit(k, ri)
            hi = lo | (1 << ri)
            res = combine(tuple(c[lo] for c in comps), tuple(c[hi] for c in comps))
            for c, r in zip(out, res):
                c.append(r)
        lay, comps = new, out
    if lay.shape[ax] == 1:
        return lay, comps
    # Cross-thread part: the shared-memory tree.
    shape = lay.shape
    n = shape[ax]
    size = lay.size
    strides = row_major_strides(shape)
    bufs = [g.buffer(site, 2 * ax + c, d, size) for c, d in enumerate(dtypes)]
    g.smem_before_write(*bufs)
    for buf, regs, d in zip(bufs, comps, dtypes):
        g.smem_write(buf, lay, regs, d, strides)
    g.smem_sync()
    inner = strides[ax]
    outer = size // (n * inner)
    stride = n // 2
    T = g.T
    while stride >= 1:
        npairs = outer * stride * inner
        for j in range((npairs + T - 1) // T):
            p = f"tid + {j * T}" if j else "tid"
            guarded = (j + 1) * T > npairs
            if guarded:
                g.line(f"if {p} < {npairs}:")
                g.e.level += 1
            pv = g.tmp("p")
            g.line(f"{pv} = {p}")
            lo = g.tmp("lo")
            parts = []
            if inner > 1:
                parts.append(f"({pv} % {inner})")
            if stride > 1:
                parts.append(f"(({pv} // {inner}) % {stride}) * {inner}")
            if outer > 1:
                parts.append(f"({pv} // {inner * stride}) * {n * inner}")
            g.line(f"{lo} = {' + '.join(parts) if parts else '0'}")
            hi = f"{lo} + {stride * inner}"
            a = tuple(g.smem_load(b, lo, d) for b, d in zip(bufs, dtypes))
            b_ = tuple(g.smem_load(b, hi, d) for b, d in zip(bufs, dtypes))
            av = [g.let(x) for x in a]       # read both operands before the write
            bv = [g.let(x) for x in b_]
            res = combine(tuple(av), tuple(bv))
            for buf, r, d in zip(bufs, res, dtypes):
                g.line(f"{buf}[{lo}] = {'u8(' + r + ')' if d.is_bool else r}")
            if guarded:
                g.e.level -= 1
        g.smem_sync()
        stride //= 2
    out_shape = tuple(1 if j == ax else d for j, d in enumerate(shape))
    out_lay = L.flat(out_shape, T)
    w = tuple(0 if j == ax else s for j, s in enumerate(strides))
    out = []
    for buf, d in zip(bufs, dtypes):
        regs = []
        for k in range(out_lay.nregs):
            t = g.tmp("r")
            g.line(f"{t} = {g.smem_load(buf, g.linear(out_lay, w, k), d)}")
            regs.append(t)
        out.append(regs)
        g.smem_did_read(buf)
    return out_lay, out


def _source_layout(g, v):
    tv = g.tv(v)
    lay = tv.layout if tv.layout is not None else g.natural(v)
    return lay, g.get(v, lay)


@lower(ops.Reduce)
def reduce_(g, op):
    x = op.x
    shape = x.type.shape
    dtype = x.type.dtype
    if shape == ():
        v = g.scalar(x)
        g.define(op.result, g.scalar_layout(), [exprs.ftz32(v) if op.ftz else v])
        return
    lay, regs = _source_layout(g, x)
    if op.ftz:                       # inputs flushed first, also of length-1 axes (R-RED-7)
        regs = [g.let(exprs.ftz32(r)) for r in regs]
    fn = _RED_OP[op.fn]
    acc = dtype
    if op.fn in ("sum", "prod") and dtype in (dt.float16, dt.bfloat16):
        # half-precision sums and products accumulate in float32, one rounding at the end
        acc = dt.float32
        regs = [f"f32({r})" for r in regs]

    def combine(lo, hi):
        t = g.tmp("s")
        g.line(f"{t} = " + exprs.binary(fn, acc, lo[0], hi[0], rounding=op.rounding,
                                         ftz=op.ftz, propagate_nan=op.propagate_nan,
                                         let=g.let))
        return (t,)

    comps = [regs]
    nd = len(shape)
    for ax in sorted({a % nd for a in op.axes}, reverse=True):
        lay, comps = _reduce_axis(g, ("red", id(op)), lay, comps, [acc], ax, combine)
    out_shape = op.result.type.shape
    out = lay.relabel(out_shape) if out_shape else L.Layout((), g.T, ())
    res = comps[0]
    if acc is not dtype:
        res = [exprs.convert(r, acc, dtype, let=g.let) for r in res]
    g.define(op.result, out, res)


def _better(fn: str, dtype, v1, i1, v2, i2, propagate: bool) -> str:
    """Condition under which (v2, i2) replaces (v1, i1)."""
    cmp = ">" if fn == "argmax" else "<"
    if dtype is dt.float16:
        v1, v2 = f"f32({v1})", f"f32({v2})"
    elif dtype.is_bool:
        v1, v2 = f"u8({v1})", f"u8({v2})"
    plain = f"(({v2} {cmp} {v1}) | (({v2} == {v1}) & ({i2} < {i1})))"
    if not dtype.is_float:
        return plain
    n1, n2 = f"({v1} != {v1})", f"({v2} != {v2})"
    b1, b2 = f"({v1} == {v1})", f"({v2} == {v2})"
    if propagate:      # NaN is the best value
        return (f"({n1} & {n2} & ({i2} < {i1})) | ({b1} & {n2}) | ({b1} & {b2} & {plain})")
    return f"({n1} & {n2} & ({i2} < {i1})) | ({n1} & {b2}) | ({b1} & {b2} & {plain})"


@lower(ops.ArgReduce)
def arg_reduce(g, op):
    x = op.x
    dtype = x.type.dtype
    lay, regs = _source_layout(g, x)
    if op.axis is None:
        bits = tuple(b for bl in reversed(lay.bits) for b in bl)
        lay = L.Layout((lay.size,), g.T, (bits,))
        ax = 0
    else:
        ax = op.axis % len(x.type.shape)
    idx = []
    for k in range(lay.nregs):
        idx.append(f"i32({g.coords(lay, k)[ax]})")
    names = [g.tmp("ix") for _ in idx]
    for n, e in zip(names, idx):
        g.line(f"{n} = {e}")

    def combine(lo, hi):
        c = g.tmp("c")
        g.line(f"{c} = {_better(op.fn, dtype, lo[0], lo[1], hi[0], hi[1], op.propagate_nan)}")
        v, i = g.tmp("v"), g.tmp("i")
        g.line(f"{v} = {exprs.select(c, hi[0], lo[0], dtype)}")
        g.line(f"{i} = {exprs.select(c, hi[1], lo[1], dt.int32)}")
        return (v, i)

    lay, comps = _reduce_axis(g, ("arg", id(op)), lay, [regs, names], [dtype, dt.int32], ax,
                              combine)
    out_shape = op.result.type.shape
    out = lay.relabel(out_shape) if out_shape else L.Layout((), g.T, ())
    g.define(op.result, out, comps[1])


@lower(ops.ReduceFn)
def reduce_fn(g, op):
    """The pairwise tree of ``reduce_`` with the user's combiner region emitted at every
    combine site (``combiner.emit``); the lower half is the left operand, as in the
    interpreter, so results match bit for bit."""
    dtypes = [v.type.dtype for v in op.xs]
    lay = None
    comps = []
    for v in op.xs:
        if lay is None:
            lay, regs = _source_layout(g, v)
        else:
            regs = g.get(v, lay)
        comps.append(regs)

    def combine(lo, hi):
        return combiner.emit(g, op.body, lo, hi)

    lay, comps = _reduce_axis(g, ("redfn", id(op)), lay, comps, dtypes, op.axis, combine)
    out_shape = op.results[0].type.shape
    out = lay.relabel(out_shape) if out_shape else L.Layout((), g.T, ())
    for r, c in zip(op.results, comps):
        g.define(r, out, c)

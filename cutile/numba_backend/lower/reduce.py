"""Lowering of reductions in the interpreter's documented order (``numerics.reduce``).

Along one axis of length ``n`` the tree combines element ``i`` with ``i + n/2``, then
``i + n/4``, ...: each step consumes the most significant remaining bit of the axis
coordinate.  Where that bit is a *register* bit of the layout, both operands sit in the same
thread and the step is a register combine.  Where it is a *thread* bit, the two operands sit
in threads ``t`` and ``t ^ 2**b``, at the same register index: each fetches the other's
register (a warp shuffle for lane bits on a GPU; else a shared-memory exchange, one barrier
for a whole run of consecutive such bits, ``_exchange_step``) and both combine the pair in
tree order (lower half on the left), so both hold the result.  The same pairs combine in
the same order as in the interpreter, so float results are bit-identical.  Axes are reduced
one at a time in descending order (as the interpreter does).
The result stays where the tree left it: the source layout without the reduced bits
(``Layout.reduced``; thread bits become replicas), which the layout assignment predicts, so a
reduced row broadcast back over its tile is a register rename (softmax, attention).

ArgReduce combines (value, index) pairs with an order-independent rule (the best value, ties
and NaN cases to the smaller index), which equals "first index of the extreme" (R-RED-6).
"""

from __future__ import annotations

from ... import dtypes as dt
from ...ir import ops
from .. import combiner, conversions, exprs, rt
from .. import layout as L
from ..registry import lower

_RED_OP = {"sum": "add", "prod": "mul", "max": "maximum", "min": "minimum"}


def _insert_zero_bit(k: int, pos: int) -> int:
    low = k & ((1 << pos) - 1)
    return ((k >> pos) << (pos + 1)) | low


def _reduce_axis(g, site, lay, comps, dtypes, ax, combine, commutative: bool = False):
    """Reduce ``ax`` of the tile held as ``comps`` (one register list per component) in
    ``lay`` down to length 1, consuming the axis bits from the top (the tree's order).
    Returns (``lay.reduced([ax])``, comps): thread bits of the axis become replica bits, so
    every thread that held part of a row holds the row's result.  ``commutative``: the
    combine gives the same bits with its operands swapped (IEEE and integer add and
    multiply), so a shuffle step needs no ordering of the pair."""
    level = 0
    while lay.shape[ax] > 1:
        kind, i = lay.bits[ax][-1]
        if kind == "r":
            new = lay.drop_top_bit(ax)
            out = [[] for _ in comps]
            for k in range(new.nregs):
                lo = _insert_zero_bit(k, i)
                hi = lo | (1 << i)
                res = combine(tuple(c[lo] for c in comps), tuple(c[hi] for c in comps))
                for c, r in zip(out, res):
                    c.append(r)
            lay, comps = new, out
        elif _shuffled(g, i, dtypes):
            lay, comps = lay.drop_top_bit(ax), _shuffle_step(g, comps, dtypes, i, combine,
                                                             commutative)
        else:
            run = _exchange_run(g, lay, ax, dtypes, len(comps) * len(comps[0]))
            comps = _exchange_step(g, (site, ax), level % 2, comps, dtypes, run, combine)
            for _ in run:
                lay = lay.drop_top_bit(ax)
            level += 1
    return lay, comps


# warp shuffles move these register types (numba's shfl_xor_sync); others go through shared
# memory
_SHUFFLED = (dt.float32, dt.float64, dt.int32, dt.int64)

# Shared-memory reads per thread one exchange may cost (2**bits per register and component):
# a run of thread bits reduced behind one barrier instead of one barrier per bit.
EXCHANGE_READS = 16


def _shuffled(g, bit: int, dtypes) -> bool:
    """Thread bit ``bit`` is exchanged by ``shfl.xor``: within a warp, on a GPU (the simulator
    has no shuffles), for register types a shuffle moves."""
    return bit < 5 and not rt.simulator() and all(d in _SHUFFLED for d in dtypes)


def _exchange_run(g, lay, ax, dtypes, regs: int) -> list:
    """The thread bits the next shared-memory exchange reduces: the top bits of ``ax``, in
    tree order, while they are thread bits that no shuffle moves and the reads stay within
    ``EXCHANGE_READS`` per register."""
    run = []
    while lay.shape[ax] > 1:
        kind, i = lay.bits[ax][-1]
        if kind != "t" or _shuffled(g, i, dtypes) or (run and regs << (len(run) + 1) >
                                                      max(EXCHANGE_READS, 2 * regs)):
            break
        run.append(i)
        lay = lay.drop_top_bit(ax)
    return run


def _shuffle_step(g, comps, dtypes, bit: int, combine, commutative: bool) -> list:
    """One tree step across lanes ``t`` and ``t ^ 2**bit``: each fetches the other's register
    with ``shfl.xor`` and both combine the pair in tree order (lower half on the left; in
    any order for a ``commutative`` combine: both lanes then get the same bits anyway)."""
    mask = 0xFFFFFFFF if g.T >= 32 else (1 << g.T) - 1
    partner = []
    for regs in comps:
        names = [g.tmp("x") for _ in regs]
        for n, r in zip(names, regs):
            g.line(f"{n} = cuda.shfl_xor_sync({mask:#x}, {r}, {1 << bit})")
        partner.append(names)
    out = [[] for _ in comps]
    if commutative:
        for k in range(len(comps[0])):
            res = combine(tuple(c[k] for c in comps), tuple(p[k] for p in partner))
            for c, r in zip(out, res):
                c.append(r)
        return out
    upper = g.let(f"((tid >> {bit}) & 1) != 0")     # this thread holds the upper half
    for k in range(len(comps[0])):
        own = tuple(c[k] for c in comps)
        other = tuple(p[k] for p in partner)
        lo = tuple(g.let(exprs.select(upper, b, a, d)) for a, b, d in zip(own, other, dtypes))
        hi = tuple(g.let(exprs.select(upper, a, b, d)) for a, b, d in zip(own, other, dtypes))
        for c, r in zip(out, combine(lo, hi)):
            c.append(r)
    return out


def _exchange_step(g, site, parity: int, comps, dtypes, run: list, combine) -> list:
    """The tree steps of thread bits ``run`` (in tree order) behind one barrier.

    Every thread writes its registers at ``k * T + tid`` (consecutive words, no bank
    conflicts), one barrier, then reads the registers of the ``2**len(run)`` threads that
    differ from it only in those bits, by their absolute position, and runs those tree steps
    itself: the same pairs in the same order (lower half on the left) as the pairwise
    exchanges, so every thread of the group holds the same, bit-identical result.  Two
    buffers (slots ``2c + parity``, so they stay two in the planner's shared mode too)
    alternate between consecutive exchanges, so an exchange's write never waits for the
    previous one's reads."""
    T = g.T
    n = len(comps[0])
    bufs = [g.buffer(site, 2 * c + parity, d, n * T) for c, d in enumerate(dtypes)]
    g.smem_before_write(*bufs)
    for buf, regs, d in zip(bufs, comps, dtypes):
        for k, r in enumerate(regs):
            g.line(f"{buf}[{k * T} + tid] = {'u8(' + r + ')' if d.is_bool else r}")
    g.smem_sync()
    group = sum(1 << b for b in run)
    base = g.let(f"tid & {(T - 1) & ~group}")
    # vals[a][c][k]: component c, register k of the thread whose run bits spell a (bit j of a
    # is thread bit run[j])
    vals = []
    for a in range(1 << len(run)):
        bits = sum(1 << b for j, b in enumerate(run) if a >> j & 1)
        # the run's bits are clear in base: + (an immediate offset of the shared load) is |
        src = f"{base} + {bits}" if bits else base
        per = []
        for buf, d in zip(bufs, dtypes):
            names = []
            for k in range(n):
                t = g.tmp("x")
                g.line(f"{t} = {g.smem_load(buf, f'{k * T} + {src}', d)}")
                names.append(t)
            per.append(names)
        vals.append(per)
    for buf in bufs:
        g.smem_did_read(buf)
    while len(vals) > 1:               # consume run[0], then run[1], ...: bit 0 of a
        nxt = []
        for a in range(0, len(vals), 2):
            lo, hi = vals[a], vals[a + 1]
            per = [[] for _ in comps]
            for k in range(n):
                res = combine(tuple(c[k] for c in lo), tuple(c[k] for c in hi))
                for c, r in zip(per, res):
                    c.append(r)
            nxt.append(per)
        vals = nxt
    return vals[0]


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
        lay, comps = _reduce_axis(g, ("red", id(op)), lay, comps, [acc], ax, combine,
                                  commutative=op.fn in ("sum", "prod"))
    out_shape = op.result.type.shape
    out = lay.relabel(out_shape) if out_shape else L.Layout((), g.T, ())
    res = comps[0]
    if acc is not dtype:
        res = [conversions.convert(r, acc, dtype, let=g.let) for r in res]
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

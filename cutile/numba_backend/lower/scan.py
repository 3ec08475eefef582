"""Lowering of scans in the interpreter's order (``cutile/interp/rules/scan.py``), bit for bit.

The tile goes to shared memory row-major (one buffer per component; float16/bfloat16
cumsum/cumprod as float32); each thread then owns whole lines along the axis (line ``p``,
``p + T``, ...) and scans them in place sequentially — ``out[i] = out[i-1] op x[i]`` — which
is the interpreter's combination order exactly, so float results match bit for bit.  One
barrier, then every thread reads its result registers.  Lines are independent, so a
``(rows, n)`` tile scans ``rows`` lines in parallel; a 1-D tile is one sequential line (the
price of bit-exactness; see docs/ops_scan.md).

Integer ``cumsum``/``cumprod`` have one result whatever the order (wrapping add and multiply
are associative and commutative), so they use a parallel (Hillis-Steele) scan over the whole
tile instead: log2(n) steps, every element updated by its own thread, two barriers a step.
"""

from __future__ import annotations

from ... import dtypes as dt
from ...ir import ops
from .. import combiner, conversions, exprs
from ..registry import lower
from ..values import row_major_strides


def _scan(g, op, sources, dtypes, combine, out_conv):
    x0 = sources[0][0]
    shape = x0.type.shape
    ax = op.axis
    n = shape[ax]
    inner = row_major_strides(shape)[ax]
    size = x0.type.size
    lines = size // n
    bufs = []
    for slot, ((v, conv), d) in enumerate(zip(sources, dtypes)):
        tv = g.tv(v)
        lay = tv.layout if tv.layout is not None else g.natural(v)
        regs = g.get(v, lay)
        buf = g.buffer(("scan", id(op)), slot, d, size)
        g.smem_write(buf, lay, [conv(r) for r in regs], d, row_major_strides(shape))
        bufs.append(buf)
    g.smem_sync()
    T = g.T
    for j in range((lines + T - 1) // T):
        p = f"tid + {j * T}" if j else "tid"
        guarded = (j + 1) * T > lines
        if guarded:
            g.line(f"if {p} < {lines}:")
            g.e.level += 1
        base = g.tmp("b")
        g.line(f"{base} = (({p}) // {inner}) * {n * inner} + ({p}) % {inner}")
        start = n - 1 if op.reverse else 0
        prev = []
        for b, d in zip(bufs, dtypes):
            t = g.tmp("acc")
            g.line(f"{t} = {g.smem_load(b, f'{base} + {start * inner}', d)}")
            prev.append(t)
        i = g.tmp("i")
        rng = f"range({n - 2}, -1, -1)" if op.reverse else f"range(1, {n})"
        g.line(f"for {i} in {rng}:")
        g.e.level += 1
        at = g.tmp("at")
        g.line(f"{at} = {base} + {i} * {inner}")
        cur = [g.let(g.smem_load(b, at, d)) for b, d in zip(bufs, dtypes)]
        res = combine(cur, prev) if op.reverse else combine(prev, cur)
        for t, r, b, d in zip(prev, res, bufs, dtypes):
            g.line(f"{t} = {r}")
            g.line(f"{b}[{at}] = {'u8(' + t + ')' if d.is_bool else t}")
        g.e.level -= 1
        if guarded:
            g.e.level -= 1
    g.smem_sync()
    strides = row_major_strides(shape)
    for r, b, d in zip(op.results, bufs, dtypes):
        lay = g.natural(r)
        regs = []
        for q in range(lay.nregs):
            t = g.tmp("r")
            g.line(f"{t} = {out_conv(g.smem_load(b, g.linear(lay, strides, q), d))}")
            regs.append(t)
        g.define(r, lay, regs)
        g.smem_did_read(b)


def _parallel_int(g, op, fn):
    """Hillis-Steele scan of an integer tile: step d adds the element d before (reversed:
    after) along the axis.  Exact because integer add/mul wrap associatively."""
    x = op.x
    d = x.type.dtype
    shape = x.type.shape
    n = shape[op.axis]
    inner = row_major_strides(shape)[op.axis]
    size = x.type.size
    strides = row_major_strides(shape)
    tv = g.tv(x)
    lay = tv.layout if tv.layout is not None else g.natural(x)
    buf = g.buffer(("pscan", id(op)), 0, d, size)
    g.smem_write(buf, lay, g.get(x, lay), d, strides)
    g.smem_sync()
    T = g.T
    per = (size + T - 1) // T
    step = 1
    while step < n:
        vals = []
        for j in range(per):
            q = g.tmp("q")
            p = f"tid + {j * T}" if j else "tid"
            g.line(f"{q} = min({p}, {size - 1})")
            c = f"(({q} // {inner}) % {n})"
            if op.reverse:
                has, src = f"{c} < {n - step}", f"{q} + {step * inner}"
            else:
                has, src = f"{c} >= {step}", f"{q} - {step * inner}"
            src = g.let(f"cuda.selp({has}, {src}, {q})")
            mine = g.let(g.smem_load(buf, q, d))
            comb = exprs.binary(fn, d, mine, g.smem_load(buf, src, d), let=g.let)
            t = g.tmp("h")
            g.line(f"{t} = {exprs.select(has, comb, mine, d)}")
            vals.append((p, t))
        g.smem_did_read(buf)
        g.smem_before_write(buf)                  # every read of this step before any write
        for j, (p, t) in enumerate(vals):
            guarded = (j + 1) * T > size
            if guarded:
                g.line(f"if {p} < {size}:")
                g.e.level += 1
            g.line(f"{buf}[{p}] = {t}")
            if guarded:
                g.e.level -= 1
        g.smem_sync()
        step *= 2
    res = g.natural(op.result)
    regs = []
    for k in range(res.nregs):
        t = g.tmp("r")
        g.line(f"{t} = {g.smem_load(buf, g.linear(res, strides, k), d)}")
        regs.append(t)
    g.define(op.result, res, regs)
    g.smem_did_read(buf)


@lower(ops.CumScan)
def cum_scan(g, op):
    dtype = op.x.type.dtype
    if dtype.is_integral:
        _parallel_int(g, op, "add" if op.fn == "sum" else "mul")
        return
    acc = dt.float32 if dtype in (dt.float16, dt.bfloat16) else dtype
    fn = "add" if op.fn == "sum" else "mul"

    def conv(r):
        r = exprs.ftz32(r) if op.ftz else r
        return f"f32({r})" if acc is not dtype else r

    def combine(a, b):
        t = g.tmp("s")
        g.line(f"{t} = " + exprs.binary(fn, acc, a[0], b[0], rounding=op.rounding, ftz=op.ftz,
                                         let=g.let))
        return (t,)

    def out(e):
        if acc is dtype:
            return e
        mode = op.rounding if exprs.rounding_suffix(op.rounding) in (None, "rz") else None
        return conversions.convert(e, acc, dtype, mode, let=g.let)

    _scan(g, op, [(op.x, conv)], [acc], combine, out)


@lower(ops.ScanFn)
def scan_fn(g, op):
    dtypes = [v.type.dtype for v in op.xs]
    _scan(g, op, [(v, lambda r: r) for v in op.xs], dtypes,
          lambda a, b: combiner.emit(g, op.body, a, b), lambda e: e)

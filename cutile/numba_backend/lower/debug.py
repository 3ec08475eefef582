"""Lowering of ``printf``/``print`` and ``assert_``.

``Print``: thread 0 prints the line through ``cu_printf`` (``printf_rt.py``), in chunks of at
most 32 values (CUDA's printf limit: lines of other blocks may interleave between chunks).  A
tile that is distributed over the threads is first written to shared memory (one barrier);
thread 0 reads its elements from there, so no thread holds the whole tile in registers.
``Assert``: every thread ANDs the condition elements it holds and ``cuda.syncthreads_and``
combines them over the block, so the failure path is block-uniform.  A failing block records
``(assert number, bid)`` in the launch's ``aerr`` buffer (the first failure wins, by
compare-and-swap) and returns; the launcher raises ``TileAssertionError`` on the host.  No
trap: the CUDA context stays usable.
"""

from __future__ import annotations

import numpy as np

from ... import printf_fmt as pf
from ...ir import ops
from .. import layout as L
from ..printf_rt import MAX_ARGS
from ..registry import lower
from ..values import row_major_strides
from .index import bid_exprs


def _elements(g, v, site) -> tuple[list[str], str | None]:
    """Expressions of ``v``'s elements in row-major order that thread 0 can evaluate, and the
    shared buffer they read (None when thread 0 already holds them all)."""
    shape = v.type.shape
    n = int(np.prod(shape, dtype=np.int64))
    tv = g.tv(v)
    lay = tv.layout
    if lay is None or lay.size == lay.nregs:       # flexible, or every thread holds it all
        rep = L.replicated(shape, g.T)
        regs = g.get(v, rep)
        strides = row_major_strides(shape)
        out = [None] * n
        for k, r in enumerate(regs):
            out[int(np.dot(rep.reg_offsets(k), strides)) if shape else 0] = r
        return out, None
    buf = g.buffer(site, 0, tv.dtype, n)
    g.smem_write(buf, lay, tv.regs, tv.dtype, row_major_strides(shape))
    g.smem_sync()
    return [g.smem_load(buf, str(k), tv.dtype) for k in range(n)], buf


def _arg_expr(reg: str, spec: pf.Spec, dtype) -> str:
    """The 64-bit value the C conversion reads (see ``printf_fmt.device_int``)."""
    if spec.type in pf.FLOAT_TYPES:
        return f"f64({reg})"
    if spec.type in "uoxX":
        bits = 8 if dtype.is_bool else dtype.bitwidth
        return f"(u64({reg}) & u64({(1 << bits) - 1}))"
    return f"u64({reg})" if dtype.is_unsigned else f"i64({reg})"


@lower(ops.Print)
def print_(g, op):
    elems, bufs = [], []
    for i, a in enumerate(op.args):
        e, buf = _elements(g, a, ("print", id(op), i))
        elems.append(e)
        if buf is not None:
            bufs.append(buf)
    expanded = pf.expand(pf.parse(op.fmt), [a.type.shape for a in op.args])
    calls, text, vals = [], [], []
    for p in expanded:
        if isinstance(p, str):
            text.append(p.replace("%", "%%"))
            continue
        spec, a, k = p
        if len(vals) == MAX_ARGS:
            calls.append(("".join(text), vals))
            text, vals = [], []
        text.append(spec.c_text())
        vals.append(_arg_expr(elems[a][k], spec, op.args[a].type.dtype))
    calls.append(("".join(text), vals))
    lead = g.hoist(("w0",), "lead", "tid == 0")
    g.line(f"if {lead}:")
    for fmt, vs in calls:
        tup = "(" + ", ".join(vs) + ("," if len(vs) == 1 else "") + ")"
        g.line(f"    cu_printf({fmt!r}, {tup})")
    for buf in bufs:
        g.smem_did_read(buf)


@lower(ops.Assert)
def assert_(g, op):
    tv = g.tv(op.cond)
    lay = tv.layout if tv.layout is not None else g.natural(op.cond)
    regs = g.get(op.cond, lay)
    mine = regs[0]
    for i in range(1, len(regs), 16):
        mine = g.let(" & ".join([f"({mine})"] + [f"({r})" for r in regs[i:i + 16]]))
    ok = g.tmp("ok")
    g.line(f"{ok} = cuda.syncthreads_and(i32({mine}))")   # a barrier: block-uniform result
    if g.bar is not None:
        g.bar.barrier()
    g.asserts.append((op.message, op.loc))
    n = len(g.asserts)
    lead = g.hoist(("w0",), "lead", "tid == 0")
    b0, b1, b2 = bid_exprs(g)
    g.line(f"if {ok} == 0:")
    g.line(f"    if {lead}:")
    g.line(f"        if cuda.atomic.cas(aerr, 0, i64(0), i64({n})) == 0:")
    g.line(f"            aerr[1] = i64({b0})")
    g.line(f"            aerr[2] = i64({b1})")
    g.line(f"            aerr[3] = i64({b2})")
    g.line("    return")

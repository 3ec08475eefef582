"""Lowering of ``printf``/``print`` and ``assert_``.

Both need the whole tile in one place: the argument is brought into the *replicated* layout
(every thread holds every element; a shared-memory exchange when it was distributed), then
thread 0 prints the line through ``cu_printf`` (``printf_rt.py``), in chunks of at most 32
values (CUDA's printf limit: lines of other blocks may interleave between chunks), and every
thread evaluates an assert's condition, so the failure path is block-uniform.  A failing block
records ``(assert number, bid)`` in the launch's ``aerr`` buffer (the first failure wins, by
compare-and-swap) and returns; the launcher raises ``TileAssertionError`` on the host.  No
trap: the CUDA context stays usable.
"""

from __future__ import annotations

import numpy as np

from ... import printf_fmt as pf
from ...ir import ops
from .. import layout as L
from ..codegen import row_major_strides
from ..printf_rt import MAX_ARGS
from . import lower
from .index import _bids


def _all_elements(g, v) -> list[str]:
    """Registers of ``v`` in row-major element order, in every thread."""
    shape = v.type.shape
    lay = L.replicated(shape, g.T)
    regs = g.get(v, lay)
    strides = row_major_strides(shape)
    out = [None] * lay.size
    for k, r in enumerate(regs):
        out[int(np.dot(lay.reg_offsets(k), strides)) if shape else 0] = r
    return out


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
    regs = [_all_elements(g, a) for a in op.args]
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
        vals.append(_arg_expr(regs[a][k], spec, op.args[a].type.dtype))
    calls.append(("".join(text), vals))
    lead = g.hoist(("w0",), "lead", "tid == 0")
    g.line(f"if {lead}:")
    for fmt, vs in calls:
        tup = "(" + ", ".join(vs) + ("," if len(vs) == 1 else "") + ")"
        g.line(f"    cu_printf({fmt!r}, {tup})")


@lower(ops.Assert)
def assert_(g, op):
    regs = _all_elements(g, op.cond)
    ok = regs[0]
    for i in range(1, len(regs), 16):
        ok = g.let(" & ".join([f"({ok})"] + [f"({r})" for r in regs[i:i + 16]]))
    g.asserts.append((op.message, op.loc))
    n = len(g.asserts)
    lead = g.hoist(("w0",), "lead", "tid == 0")
    b0, b1, b2 = _bids(g)
    g.line(f"if not ({ok}):")
    g.line(f"    if {lead}:")
    g.line(f"        if cuda.atomic.cas(aerr, 0, i64(0), i64({n})) == 0:")
    g.line(f"            aerr[1] = i64({b0})")
    g.line(f"            aerr[2] = i64({b1})")
    g.line(f"            aerr[3] = i64({b2})")
    g.line("    return")

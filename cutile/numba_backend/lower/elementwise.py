"""Lowering of elementwise ops: register-local, one expression per register (``exprs``)."""

from __future__ import annotations

from ...ir import ops
from .. import conversions, exprs
from ..registry import lower


def _operands(g, op, lay, *values):
    return [g.get(v, lay) for v in values]


@lower(ops.Unary)
def unary(g, op):
    lay = g.result_layout(op)
    (x,) = _operands(g, op, lay, op.x)
    d = op.x.type.dtype
    g.define(op.result, lay, [exprs.unary(op.fn, d, r, rounding=op.rounding, ftz=op.ftz, let=g.let)
                              for r in x])


@lower(ops.Binary)
def binary(g, op):
    lay = g.result_layout(op)
    x, y = _operands(g, op, lay, op.x, op.y)
    d = op.x.type.dtype
    g.define(op.result, lay, [
        exprs.binary(op.fn, d, a, b, rounding=op.rounding, ftz=op.ftz,
                     propagate_nan=op.propagate_nan, let=g.let) for a, b in zip(x, y)])


@lower(ops.Compare)
def compare(g, op):
    lay = g.result_layout(op)
    x, y = _operands(g, op, lay, op.x, op.y)
    d = op.x.type.dtype
    g.define(op.result, lay, [exprs.compare(op.fn, d, a, b) for a, b in zip(x, y)])


@lower(ops.Select)
def select(g, op):
    lay = g.result_layout(op)
    c, x, y = _operands(g, op, lay, op.cond, op.x, op.y)
    d = op.result.type.dtype
    g.define(op.result, lay, [exprs.select_value(cc, a, b, d) for cc, a, b in zip(c, x, y)])


@lower(ops.Convert)
def convert(g, op):
    lay = g.result_layout(op)
    (x,) = _operands(g, op, lay, op.x)
    src = op.x.type.dtype
    g.define(op.result, lay,
             [conversions.convert(r, src, op.dtype, op.rounding, let=g.let) for r in x])


@lower(ops.Fma)
def fma(g, op):
    lay = g.result_layout(op)
    a, b, c = _operands(g, op, lay, op.a, op.b, op.c)
    d = op.result.type.dtype
    g.define(op.result, lay, [exprs.fma(d, x, y, z, let=g.let) for x, y, z in zip(a, b, c)])

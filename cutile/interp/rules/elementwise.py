"""Interpreter rules for elementwise ops.  Numerics (exact per dtype) live in ``numerics``;
the poison mask of a result is the union of its operands' masks."""

from __future__ import annotations

import numpy as np

from ...ir import ops
from ...semantics.ub import UB
from .. import numerics
from ..core import PTile, rule


def _poison(*tiles: PTile):
    out = None
    for t in tiles:
        if t.poison is not None:
            out = t.poison if out is None else (out | t.poison)
    return out


_LOGICAL = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}


@rule(ops.Unary)
def unary(frame, op):
    x = frame[op.x]
    dtype = op.result.type.dtype
    if op.fn == "not":
        data = np.logical_not(x.data) if dtype.is_bool else np.invert(x.data)
        return PTile(np.asarray(data, dtype=dtype.np_dtype), x.poison)
    data = numerics.unary(op.fn, x.data, dtype, rounding=op.rounding, ftz=op.ftz)
    return PTile(data, x.poison)


# Integer ops whose right operand can make the whole op undefined: poisoned lanes of it (from
# UNDETERMINED padding) get a harmless value, their results stay poisoned.
_UB_RHS = {"floordiv": 1, "mod": 1, "cdiv": 1, "lshift": 0, "rshift": 0}


@rule(ops.Binary)
def binary(frame, op):
    x, y = frame[op.x], frame[op.y]
    dtype = op.result.type.dtype
    if op.fn in _LOGICAL:
        data = np.asarray(_LOGICAL[op.fn](x.data, y.data), dtype=dtype.np_dtype)
    else:
        yd = y.data
        if dtype.is_integral and op.fn in _UB_RHS and y.poison is not None:
            yd = np.where(y.poison, dtype.np_dtype.type(_UB_RHS[op.fn]), yd).astype(yd.dtype)
        try:
            data = numerics.binary(op.fn, x.data, yd, dtype, rounding=op.rounding,
                                   ftz=op.ftz, propagate_nan=op.propagate_nan)
        except ZeroDivisionError:
            raise UB("R-DIV-6", f"integer {op.fn} by zero") from None
        except numerics.ShiftCountUB as e:
            raise UB("R-BIT-4", str(e)) from None
    return PTile(data, _poison(x, y))


@rule(ops.Compare)
def compare(frame, op):
    x, y = frame[op.x], frame[op.y]
    return PTile(numerics.compare(op.fn, x.data, y.data), _poison(x, y))


@rule(ops.Select)
def select(frame, op):
    c, x, y = frame[op.cond], frame[op.x], frame[op.y]
    data = np.where(c.data, x.data, y.data).astype(op.result.type.dtype.np_dtype, copy=False)
    poison = None
    if x.poison is not None or y.poison is not None:
        px = x.poison if x.poison is not None else np.zeros(c.data.shape, bool)
        py = y.poison if y.poison is not None else np.zeros(c.data.shape, bool)
        poison = np.where(c.data, px, py)
    if c.poison is not None:
        poison = c.poison if poison is None else poison | c.poison
    return PTile(data, poison)


@rule(ops.Convert)
def convert(frame, op):
    x = frame[op.x]
    try:
        data = numerics.convert(x.data, op.x.type.dtype, op.dtype, op.rounding)
    except numerics.FloatToIntUB as e:
        if not frame.strict:
            # CUTILE_STRICT=0: the GPU's value (truncate, saturate, NaN -> 0)
            data = numerics.float_to_int_saturating(x.data, op.x.type.dtype, op.dtype)
        elif x.poison is not None:
            # A poisoned NaN converted to int is still only poison: keep it tracked; an
            # unpoisoned lane out of range is still R-UB-6.
            try:
                data = numerics.convert(np.where(x.poison, 0, x.data).astype(x.data.dtype),
                                        op.x.type.dtype, op.dtype, op.rounding)
            except numerics.FloatToIntUB as e2:
                raise UB("R-UB-6", "float to integer conversion of an unrepresentable value: "
                                   f"{e2}") from None
        else:
            raise UB("R-UB-6", f"float to integer conversion of an unrepresentable value: {e}") \
                from None
    return PTile(data, x.poison)


@rule(ops.Fma)
def fma(frame, op):
    a, b, c = frame[op.a], frame[op.b], frame[op.c]
    return PTile(numerics.fma(a.data, b.data, c.data, op.result.type.dtype), _poison(a, b, c))

"""Interpreter rules for ``Mma`` and ``MmaScaled``: exact products, documented accumulation
order (``numerics``).

A result element is poisoned when any element of its row of ``x``, column of ``y`` or its
accumulator element was."""

from __future__ import annotations

import numpy as np

from ... import dtypes as dt
from ...ir import ops
from .. import numerics
from ..core import PTile, rule


def poisoned(data, x, y, acc) -> PTile:
    """The result tile: poisoned where a row of ``x``, a column of ``y`` or ``acc`` was
    (any leading batch axes broadcast; the batched rule shares it)."""
    poison = acc.poison
    if x.poison is not None or y.poison is not None:
        shape = data.shape
        p = np.zeros(shape, dtype=bool)
        if x.poison is not None:
            p |= x.poison.any(axis=-1)[..., :, None]
        if y.poison is not None:
            p |= y.poison.any(axis=-2)[..., None, :]
        poison = p if poison is None else (poison | p)
    return PTile(data, poison)


@rule(ops.Mma)
def mma(frame, op):
    x, y, acc = frame[op.x], frame[op.y], frame[op.acc]
    return poisoned(numerics.matmul(x.data, y.data, acc.data, op.acc.type.dtype), x, y, acc)


@rule(ops.MmaScaled)
def mma_scaled(frame, op):
    """R-MM-6, exact: each scaled operand ``x * x_scale`` is exact in float64 (at most 6
    significant bits times a power of two inside float64's range), so ``numerics.matmul``'s
    definition applies unchanged: exact products, summed in float64 in k order, plus acc,
    rounded once to float32."""
    x, xs, y, ys, acc = (frame[v] for v in (op.x, op.x_scale, op.y, op.y_scale, op.acc))
    b = op.x.type.shape[-1] // op.x_scale.type.shape[-1]
    with np.errstate(all="ignore"):
        x64 = dt.to_float64(x.data) * np.repeat(dt.to_float64(xs.data), b, axis=-1)
        y64 = dt.to_float64(y.data) * np.repeat(dt.to_float64(ys.data), b, axis=-2)
    data = numerics.matmul(x64, y64, acc.data, op.acc.type.dtype)
    xp = _scaled_poison(x.poison, xs.poison, b, -1)
    yp = _scaled_poison(y.poison, ys.poison, b, -2)
    return poisoned(data, PTile(x64, xp), PTile(y64, yp), acc)


def _scaled_poison(p, ps, b, axis):
    if ps is not None:
        ps = np.repeat(ps, b, axis=axis)
        p = ps if p is None else (p | ps)
    return p

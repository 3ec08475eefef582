"""Interpreter rule for ``Mma``: exact products, documented accumulation order (``numerics``).

A result element is poisoned when any element of its row of ``x``, column of ``y`` or its
accumulator element was."""

from __future__ import annotations

import numpy as np

from ..ir import ops
from . import numerics
from .machine import PTile, rule


@rule(ops.Mma)
def mma(frame, op):
    x, y, acc = frame[op.x], frame[op.y], frame[op.acc]
    data = numerics.matmul(x.data, y.data, acc.data, op.acc.type.dtype)
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

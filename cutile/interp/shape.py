"""Interpreter rules for broadcast, reshape and permute; the poison mask moves with the data."""

from __future__ import annotations

import numpy as np

from ..ir import ops
from .machine import PTile, rule


def _both(t: PTile, fn) -> PTile:
    return PTile(fn(t.data), None if t.poison is None else fn(t.poison))


@rule(ops.Broadcast)
def broadcast(frame, op):
    return _both(frame[op.x], lambda a: np.broadcast_to(a, op.shape))


@rule(ops.Reshape)
def reshape(frame, op):
    return _both(frame[op.x], lambda a: np.reshape(a, op.shape))


@rule(ops.Permute)
def permute(frame, op):
    return _both(frame[op.x], lambda a: np.transpose(a, op.axes))

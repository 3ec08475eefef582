"""Interpreter rules for structured control flow (For, Loop, If); scalars drive it (R-EXEC-3)."""

from __future__ import annotations

import numpy as np

from ..ir import ops
from .machine import UB, PTile, Signal, check_not_poisoned, rule

# A loop that runs this many iterations without finishing is reported (R-EXEC-7): a sequential
# executor cannot make progress on a spin-wait for another block.
MAX_LOOP_ITERATIONS = 1 << 31


def _scalar(frame, v, what) -> int:
    t = frame[v]
    check_not_poisoned(frame, t, what, always=True)
    return t.data.item()


@rule(ops.For)
def for_(frame, op):
    start = _scalar(frame, op.start, "loop start")
    stop = _scalar(frame, op.stop, "loop stop")
    step = _scalar(frame, op.step, "loop step")
    if step <= 0:
        raise UB("R-UB-4", f"range() step must be positive at run time, got {step}")
    dtype = op.start.type.dtype.np_dtype
    carried = [frame[v] for v in op.inits]
    iv = start
    while iv < stop:
        sig = frame.run_region(op.body, [PTile(np.array(iv, dtype=dtype)), *carried])
        if sig is not None:
            if sig.kind in ("yield", "continue"):
                carried = sig.values
            elif sig.kind == "break":
                return sig.values
            else:
                return sig
        iv += step
    return carried


@rule(ops.Loop)
def loop(frame, op):
    carried = [frame[v] for v in op.inits]
    for _ in range(MAX_LOOP_ITERATIONS):
        sig = frame.run_region(op.body, carried)
        if sig is None:
            raise UB("R-EXEC-7", "loop body fell through without yield")
        if sig.kind in ("yield", "continue"):
            carried = sig.values
        elif sig.kind == "break":
            return sig.values
        else:
            return sig
    raise UB("R-EXEC-7", "while loop did not terminate (a sequential interpreter cannot wait "
                         "for another block)")


@rule(ops.If)
def if_(frame, op):
    c = frame[op.cond]
    check_not_poisoned(frame, c, "branch condition")
    sig = frame.run_region(op.then if c.data.item() else op.orelse, [])
    if sig is None:
        return []
    if sig.kind == "yield":
        return sig.values
    return sig


_ = Signal

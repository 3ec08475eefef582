"""Interpreter rules for structured control flow (For, Loop, If); scalars drive it (R-EXEC-3).

Loops poll the launch's wall-clock watchdog, and a ``while`` loop whose body has no effects
and whose iteration left every carried value bit-identical is reported at once: nothing else
runs while a block runs here, so every later iteration would repeat it (R-EXEC-7).
"""

from __future__ import annotations

import numpy as np

from ...ir import ops
from ...ir.effects import region_is_pure
from ...semantics.ub import UB
from ..core import PTile, Signal, rule
from ..undetermined import check_not_poisoned

# A loop that runs this many iterations without finishing is reported (R-EXEC-7): a sequential
# executor cannot make progress on a spin-wait for another block.
MAX_LOOP_ITERATIONS = 1 << 31
POLL_MASK = 255          # poll the watchdog every 256 iterations


def _scalar(frame, v, what) -> int:
    t = frame[v]
    check_not_poisoned(frame, None, t, what, always=True)
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
    n = 0
    while iv < stop:
        n += 1
        if not n & POLL_MASK:
            frame.watchdog.check()
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


def body_is_pure(op) -> bool:
    """Whether a loop's body has no effects (cached on the op)."""
    pure = op.__dict__.get("_cutile_pure")
    if pure is None:
        pure = op.__dict__["_cutile_pure"] = region_is_pure(op.body)
    return pure


def _same(a: list, b: list) -> bool:
    """Bit-identical carried values (NaNs included); anything but tiles compares unequal."""
    for x, y in zip(a, b):
        if x is y:
            continue
        if not (isinstance(x, PTile) and isinstance(y, PTile)):
            return False
        if x.data.dtype != y.data.dtype or x.data.shape != y.data.shape \
                or x.data.tobytes() != y.data.tobytes():
            return False
        if (x.poison is None) != (y.poison is None) or \
                (x.poison is not None and not np.array_equal(x.poison, y.poison)):
            return False
    return True


@rule(ops.Loop)
def loop(frame, op):
    carried = [frame[v] for v in op.inits]
    pure = body_is_pure(op)
    for n in range(MAX_LOOP_ITERATIONS):
        if not n & POLL_MASK:
            frame.watchdog.check()
        sig = frame.run_region(op.body, carried)
        if sig is None:
            raise UB("R-EXEC-7", "loop body fell through without yield")
        if sig.kind in ("yield", "continue"):
            if pure and _same(sig.values, carried):
                raise UB("R-EXEC-7", "this while loop never terminates: an iteration left "
                                     "every loop-carried value unchanged and the body has no "
                                     "side effects, so every later iteration repeats it (add "
                                     "a break, or change the loop condition)")
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
    check_not_poisoned(frame, op, c, "branch condition")
    sig = frame.run_region(op.then if c.data.item() else op.orelse, [])
    if sig is None:
        return []
    if sig.kind == "yield":
        return sig.values
    return sig


_ = Signal

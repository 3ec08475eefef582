"""Batched control flow: the batch stays together while its blocks agree, and splits by
predicate where they do not.

- ``If``: a condition equal in every block runs one branch for the batch; otherwise each
  branch runs for its own blocks (a sub-frame) and the yielded values are merged.  A branch
  that returns ends its blocks: at the kernel's top level the rest of the body runs for the
  others; elsewhere (and for a divergent ``break``/``continue``) the batch falls back.
- ``For``: equal bounds iterate the batch together; bounds that differ run masked, each
  iteration for the blocks still inside their range, carried values merged back.
- ``Loop``: iterates the batch together; a ``break`` taken by some blocks only falls back.
Poisoned conditions and bounds (R-UB-2), non-positive steps (R-UB-4) and a body that falls
through fall back: the per-block rerun reports them exactly.
"""

from __future__ import annotations

import numpy as np

from ..ir import ops
from .batch import Fallback, Narrow, batched_rule, expand, lead, merge, subset
from .control import _POLL, MAX_LOOP_ITERATIONS, _pure
from .machine import PTile


def _uniform(x: np.ndarray) -> bool:
    return x.shape[0] == 1 or bool((x == x[0]).all())


@batched_rule(ops.If)
def if_(f, op):
    c = f[op.cond]
    if c.poison is not None and f.strict:
        raise Fallback("poisoned branch condition")
    cd = c.data.astype(bool, copy=False)
    if _uniform(cd):
        sig = f.run_region(op.then if cd[0] else op.orelse, [])
        if sig is None:
            return []
        if sig.kind == "yield":
            return sig.values
        return sig
    parts, stay = [], []
    for region, sel in ((op.then, np.flatnonzero(cd)), (op.orelse, np.flatnonzero(~cd))):
        sig = f.sub(sel).run_region(region, [])
        if sig is None or sig.kind == "yield":
            parts.append((sel, [] if sig is None else sig.values))
            stay.append(sel)
        elif sig.kind != "return":
            raise Fallback(f"divergent {sig.kind}")
    if not stay:
        return _signal("return")
    if len(stay) == 1:
        sel, values = parts[0]
        return Narrow(sel, values)
    return [merge(f.n, [(sel, vals[k]) for sel, vals in parts])
            for k in range(len(op.results))]


def _signal(kind):
    from .machine import Signal
    return Signal(kind, [])


def _bound(f, v) -> np.ndarray:
    t = f[v]
    if t.poison is not None:
        raise Fallback("poisoned loop bound")
    return t.data


@batched_rule(ops.For)
def for_(f, op):
    start, stop, step = (_bound(f, v) for v in (op.start, op.stop, op.step))
    if (step <= 0).any():
        raise Fallback("non-positive step")
    dtype = op.start.type.dtype.np_dtype
    carried = [f[v] for v in op.inits]
    if _uniform(start) and _uniform(stop) and _uniform(step):
        iv, hi, st = start[0].item(), stop[0].item(), step[0].item()
        k = 0
        while iv < hi:
            k += 1
            if not k & _POLL:
                f.watchdog.check()
            sig = f.run_region(op.body, [PTile(np.array([iv], dtype=dtype)), *carried])
            if sig is not None:
                if sig.kind in ("yield", "continue"):
                    carried = sig.values
                elif sig.kind == "break":
                    return sig.values
                else:
                    return sig
            iv += st
        return carried
    # Masked: every iteration runs for the blocks still inside their range.
    n = f.n
    iv = np.broadcast_to(start, (n,)).astype(object)      # Python ints: no wraparound
    hi = np.broadcast_to(stop, (n,)).astype(object)
    st = np.broadcast_to(step, (n,)).astype(object)
    active = iv < hi
    k = 0
    while active.any():
        k += 1
        if not k & _POLL:
            f.watchdog.check()
        sel = np.flatnonzero(active)
        whole = sel.size == n
        g = f if whole else f.sub(sel)
        cur = carried if whole else [subset(c, sel) for c in carried]
        ivt = PTile(np.array(list(iv[sel]), dtype=dtype))
        sig = g.run_region(op.body, [ivt, *cur])
        if sig is not None:
            if sig.kind not in ("yield", "continue"):
                raise Fallback(f"{sig.kind} in a loop whose blocks iterate differently")
            new = sig.values
            if whole:
                carried = new
            else:
                carried = [_put(c, sel, x, n) for c, x in zip(carried, new)]
        iv[sel] = iv[sel] + st[sel]
        active = iv < hi
    return carried


def _put(full: PTile, sel: np.ndarray, part: PTile, n: int) -> PTile:
    """``full`` with the blocks ``sel`` replaced by ``part`` (a fresh value for the batch)."""
    rest = np.setdiff1d(np.arange(n), sel, assume_unique=True)
    return merge(n, [(rest, subset(expand(full, n), rest)), (sel, part)])


@batched_rule(ops.Loop)
def loop(f, op):
    carried = [f[v] for v in op.inits]
    pure = _pure(op)
    for k in range(MAX_LOOP_ITERATIONS):
        if not k & _POLL:
            f.watchdog.check()
        sig = f.run_region(op.body, carried)
        if sig is None:
            raise Fallback("loop body fell through without yield")
        if sig.kind in ("yield", "continue"):
            if pure and _some_block_same(sig.values, carried, f.n):
                raise Fallback("a block's while loop repeats itself (R-EXEC-7)")
            carried = sig.values
        elif sig.kind == "break":
            return sig.values
        else:
            return sig
    raise Fallback("while loop did not terminate")


def _some_block_same(new: list, old: list, n: int) -> bool:
    """Whether some block's carried values are all bit-identical after an iteration (the
    per-block machine reports that loop as never ending: control._same)."""
    same = np.ones(n, bool)
    for x, y in zip(new, old):
        if x is y:
            continue
        if not (isinstance(x, PTile) and isinstance(y, PTile)):
            return False
        a, b = expand(x, n), expand(y, n)
        w = a.data.dtype.itemsize
        if a.data.dtype != b.data.dtype or w not in (1, 2, 4, 8):
            return False
        u = f"u{w}"
        eq = np.ascontiguousarray(a.data).view(u) == np.ascontiguousarray(b.data).view(u)
        same &= eq.reshape(n, -1).all(axis=1)
        pa = np.zeros(a.data.shape, bool) if a.poison is None else a.poison
        pb = np.zeros(b.data.shape, bool) if b.poison is None else b.poison
        same &= (pa == pb).reshape(n, -1).all(axis=1)
    return bool(same.any())


_ = lead

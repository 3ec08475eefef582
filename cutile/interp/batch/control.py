"""Batched control flow: the batch stays together while its blocks agree, and splits by
predicate where they do not.

- ``If``: a condition equal in every block runs one branch for the batch; otherwise each
  branch runs for its own blocks (a sub-frame) and the yielded values are merged.
- Leaving a region: blocks that take ``break``/``continue``/``return`` while others go on
  leave as a ``Narrow``; the rest of the region runs for the others (``BatchFrame.run_region``)
  and the enclosing loop (or the kernel, for ``return``) sorts the blocks out.
- ``For``/``Loop``: every iteration runs the body for the blocks still looping (all of them
  while they agree): blocks leave at the end of their own range (bounds may differ), by
  ``break`` (with their values) or by ``return``; carried values are merged back per block.
Poisoned conditions and bounds (R-UB-2), non-positive steps (R-UB-4), a body that falls
through and a pure ``while`` loop repeating itself fall back: the per-block rerun reports them
exactly.
"""

from __future__ import annotations

import numpy as np

from ...ir import ops
from ..core import Fallback, PTile, Signal
from ..rules.control import MAX_LOOP_ITERATIONS, POLL_MASK, body_is_pure
from ..undetermined import relied_on
from .frame import (
    DifferentArrays,
    Multi,
    Split,
    batched_rule,
    expand,
    lead,
    merge,
    merge_parts,
    narrow,
    parts_of,
    subset,
)


def _uniform(x: np.ndarray) -> bool:
    return x.shape[0] == 1 or bool((x == x[0]).all())


@batched_rule(ops.If)
def if_(f, op):
    c = f[op.cond]
    if c.poison is not None:
        relied_on(f, op, "branch condition")   # Fallback unless lenient and warned already
    cd = c.data.astype(bool, copy=False)
    if _uniform(cd):
        sig = f.run_region(op.then if cd[0] else op.orelse, [])
        if sig is None:
            return []
        if isinstance(sig, Multi):
            return _split(f.n, parts_of(sig, np.arange(f.n)), len(op.results))
        if sig.kind == "yield":
            return sig.values
        return sig
    parts = []
    for region, sel in ((op.then, np.flatnonzero(cd)), (op.orelse, np.flatnonzero(~cd))):
        parts += parts_of(f.sub(sel).run_region(region, []), sel)
    return _split(f.n, parts, len(op.results))


def _split(n: int, parts: list, count: int):
    """The If's result from its blocks' outcomes: values where they yielded (or fell
    through), the others leave (break/continue/return) as a Narrow."""
    stay = [(sel, xs) for k, sel, xs in parts if k in (None, "yield") and len(sel)]
    exits = [(k, sel, xs) for k, sel, xs in parts if k not in (None, "yield") and len(sel)]
    if not exits and len(stay) == 1 and len(stay[0][0]) == n:
        return list(stay[0][1])
    if exits and not stay and len({k for k, _, _ in exits}) == 1 and exits[0][0] == "return":
        return Signal("return", [])
    try:
        return narrow(n, stay, exits, count)
    except DifferentArrays:
        if exits:
            raise
        return Split(stay)          # e.g. ``a = As[i]`` with i differing between blocks


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
    n = f.n
    dtype = op.start.type.dtype.np_dtype
    if _uniform(start) and _uniform(step):
        iv0, st = int(start[0]), int(step[0])      # Python ints: no wraparound
        if _uniform(stop):
            hi0 = int(stop[0])

            def running(k):
                return np.full(n, iv0 + k * st < hi0)
        else:
            hi = np.broadcast_to(stop, (n,)).astype(object)

            def running(k):
                return ((iv0 + k * st) < hi).astype(bool)

        def ivs(k, sel, whole):
            v = iv0 + k * st
            if whole:
                return PTile(np.array([v], dtype=dtype))
            return PTile(np.full(len(sel), v, dtype=dtype))
    else:
        lo = np.broadcast_to(start, (n,)).astype(object)
        hi = np.broadcast_to(stop, (n,)).astype(object)
        stp = np.broadcast_to(step, (n,)).astype(object)

        def ivs(k, sel, whole):
            return PTile(np.array(list(lo[sel] + k * stp[sel]), dtype=dtype))

        def running(k):
            return ((lo + k * stp) < hi).astype(bool)
    return _loop(f, op, running, ivs)


@batched_rule(ops.Loop)
def loop(f, op):
    return _loop(f, op, None, None)


def _loop(f, op, running, ivs):
    """A loop over the batch: each iteration runs the body for the blocks still looping
    (all of them while they agree); blocks leave by the end of their range, ``break`` or
    ``return``; carried values are merged back per block."""
    n = f.n
    count = len(op.results)
    carried = [f[v] for v in op.inits]
    active = np.ones(n, bool) if running is None else running(0)
    done: list = []                 # (sel, values) of blocks that left the loop
    gone: list = []                 # blocks that returned
    pure = running is None and body_is_pure(op)
    k = 0
    while active.any():
        if not k & POLL_MASK:
            f.watchdog.check()
        if running is None and k >= MAX_LOOP_ITERATIONS:
            raise Fallback("while loop did not terminate")
        sel = np.flatnonzero(active)
        whole = sel.size == n
        g = f if whole else f.sub(sel)
        cur = carried if whole else [subset(c, sel) for c in carried]
        args = cur if ivs is None else [ivs(k, sel, whole), *cur]
        sig = g.run_region(op.body, args)
        parts = parts_of(sig, np.arange(sel.size))
        new = []
        for kind, ls, xs in parts:
            if not len(ls):
                continue
            gs = sel[ls]
            if kind is None:
                if running is None:
                    raise Fallback("loop body fell through without yield")
                new.append((gs, [subset(c, gs) for c in carried]))
            elif kind in ("yield", "continue"):
                new.append((gs, xs))
            elif kind == "break":
                done.append((gs, xs))
                active[gs] = False
            else:                                   # return: the block ends here
                gone.append(gs)
                active[gs] = False
        if new:
            if pure and _some_block_same_parts(new, carried, n):
                raise Fallback("a block's while loop repeats itself (R-EXEC-7)")
            if len(new) == 1 and len(new[0][0]) == n:
                carried = list(new[0][1])
            else:
                carried = [_put_parts(c, [(gs, xs[j]) for gs, xs in new], n)
                           for j, c in enumerate(carried)]
        k += 1
        if running is not None:
            active &= running(k)
    left = np.ones(n, bool)
    for gs, _ in done:
        left[gs] = False
    for gs in gone:
        left[gs] = False
    rest = np.flatnonzero(left)
    if len(rest):
        done.append((rest, [subset(expand(c, n), rest) if len(rest) < n else c
                            for c in carried]))
    if not gone:
        return merge_parts(n, done, count)
    return narrow(n, done, [("return", np.concatenate(gone), [])], count)


def _put_parts(full, parts: list, n: int):
    """``full`` with the blocks of each ``(sel, value)`` part replaced."""
    if not isinstance(full, PTile):
        return merge(n, parts)
    covered = np.zeros(n, bool)
    for sel, _ in parts:
        covered[sel] = True
    rest = np.flatnonzero(~covered)
    pieces = list(parts)
    if len(rest):
        pieces.append((rest, subset(expand(full, n), rest)))
    return merge(n, pieces)


def _some_block_same_parts(new: list, carried: list, n: int) -> bool:
    for gs, xs in new:
        if _some_block_same(xs, [subset(expand(c, n), gs) for c in carried], len(gs)):
            return True
    return False


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

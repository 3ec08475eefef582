"""Full-tile facts of a launch: which cp.async-staged operand loads need no per-chunk bounds.

A tensor-core or FFMA (``ffma.py``) operand tile staged by ``cp.async``
(``lower/staging.stage_direct``) tests every 16-byte chunk against the array's edges, and,
in the kernel, whether the array's rows are 16-byte aligned.  When the launch's array has
dimensions that are multiples of the tile's (every tile is then wholly inside the array or
wholly outside) and 16-byte aligned rows, the host says so and the generator emits the
*full-tile* form: one in-or-out test per tile, no per-chunk bounds arithmetic, no
element-wise fallback.  The facts are part of the compiled kernel's key, so an array of
another shape gets the checked kernel.

``requirements(ir, T, mma_acc)``: ``(param index, rows, cols)`` of every staged load whose array
is a kernel parameter (cached per kernel IR); ``facts(reqs, leaves)``: the satisfied ones.
"""

from __future__ import annotations

import weakref

from .. import config
from .arrays import launch_layout
from .irindex import IRIndex
from .mma_plan import MmaPlanner, ffma_usable, tensor_cores_usable

_reqs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def requirements(ir, T: int, mma_acc: str) -> tuple:
    """``(param index, tile rows, tile cols)`` of the loads the generator would stage by
    cp.async at ``T`` threads (empty without tensor cores or the FFMA plan, or cp.async)."""
    tc, ff = tensor_cores_usable(mma_acc), ffma_usable(mma_acc)
    key = (T, mma_acc, tc, ff, config.numba_cp_async())
    per = _reqs.setdefault(ir, {})
    if key in per:
        return per[key]
    out = []
    if (tc or ff) and config.numba_cp_async():
        planner = MmaPlanner(IRIndex(ir), T, tensor_cores=tc, cp_async=True, ffma=ff)
        params = {id(p): i for i, p in enumerate(ir.params)}
        for ld in planner.staged_loads():
            if id(ld.array) in params:
                out.append((params[id(ld.array)], *ld.shape[-2:]))
    per[key] = tuple(sorted(set(out)))
    return per[key]


def facts(reqs: tuple, leaves: list) -> frozenset:
    """The requirements this launch's arrays meet (dimensions multiples of the tile's, element
    stride 1, other strides and the data address multiples of 16 bytes)."""
    out = []
    for i, R, C in reqs:
        try:
            shape, st, addr, item = launch_layout(leaves[i])
        except Exception:
            continue
        if (len(shape) >= 2 and shape[-2] % R == 0 and shape[-1] % C == 0 and st[-1] == item
                and all(s % 16 == 0 for s in st[:-1]) and addr % 16 == 0):
            out.append((i, R, C))
    return frozenset(out)

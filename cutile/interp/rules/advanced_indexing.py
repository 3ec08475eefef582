"""Interpreter rules for ``load/store_advanced_indexing`` (§10): gather/scatter semantics
(``memory_model``) plus the checks that only advanced indexing has, when strict: a tile with no
element inside the array (R-UB-1), duplicate in-bounds sparse indices of a store (R-UB-7), and
UNDETERMINED padding, which poisons the out-of-bounds lanes (R-PAD-3)."""

from __future__ import annotations

import numpy as np

from ...enums import PaddingMode
from ...ir import ops
from ...semantics.ub import UB
from .. import memory_model as mm
from ..core import PTile, rule
from ..undetermined import note_load, padding_origin, relied_on
from .memory import gs_indices, record_accesses, tracked_accesses


def _in_bounds(array, idx) -> np.ndarray:
    ok = np.ones(np.shape(idx[0]), bool)
    for d, ix in enumerate(idx):
        ok &= (ix >= 0) & (ix < array.shape[d])
    return ok


@rule(ops.AdvancedGather)
def advanced_gather(frame, op):
    idx, _ = gs_indices(frame, op)
    a = frame[op.array]
    if frame.strict and idx[0].size and not _in_bounds(a, idx).any():
        raise UB("R-UB-1", f"load_advanced_indexing: no element of the {np.shape(idx[0])} tile "
                           f"lies inside the array of shape {a.shape}")
    pad = frame[op.padding]
    touched = tracked_accesses(frame, a)
    data, accessed = mm.gather(a, idx, mask=None, padding=pad.data, check_bounds=True,
                               strict=frame.strict, with_accessed=True, touched=touched)
    record_accesses(frame, a, touched, False)
    poison = None
    if op.padding_mode is PaddingMode.UNDETERMINED and not accessed.all():
        poison = ~accessed
        data[poison] = mm.load_fill(a.dtype, op.padding_mode, frame.strict)
        note_load(frame, op)
    return PTile(data, poison)


@rule(ops.AdvancedScatter)
def advanced_scatter(frame, op):
    idx, _ = gs_indices(frame, op)
    a = frame[op.array]
    if frame.strict and idx[0].size:
        if not _in_bounds(a, idx).any():
            raise UB("R-UB-1", f"store_advanced_indexing: no element of the "
                               f"{np.shape(idx[0])} tile lies inside the array of shape "
                               f"{a.shape}")
        ax = op.sparse_axis
        rows = np.moveaxis(idx[ax], ax, 0).reshape(idx[ax].shape[ax], -1)[:, 0]
        ok = (rows >= 0) & (rows < a.shape[ax])
        vals, first, counts = np.unique(rows[ok], return_index=True, return_counts=True)
        if (counts > 1).any():
            r = int(vals[counts > 1][0])
            where = [int(j) for j in np.nonzero(rows == r)[0][:2]]
            raise UB("R-UB-7", f"store_advanced_indexing: sparse index {r} appears at "
                               f"positions {where[0]} and {where[1]}; rows stored twice are "
                               f"undefined")
    v = frame[op.value]
    touched = tracked_accesses(frame, a)
    try:
        observed = mm.scatter(a, idx, v.data, mask=None, check_bounds=True, poison=v.poison,
                              strict=frame.strict, touched=touched)
    except mm.PoisonObserved as e:
        raise UB(e.rule, e.message + padding_origin(frame)) from None
    record_accesses(frame, a, touched, True)
    if observed:                         # CUTILE_STRICT=0: written; warn
        relied_on(frame, op, "a value stored in bounds")

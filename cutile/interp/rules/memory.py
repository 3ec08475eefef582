"""Interpreter rules for global memory: array queries and slices, load/store, gather/scatter.

The exact semantics (tile space, order, steps, padding, discarded stores, bounds) live in
``memory_model``; these rules unpack IR operands and pass the block's strictness flag.

UNDETERMINED padding (R-PAD-3): a load that pads with UNDETERMINED returns a poison mask and
records itself (``undetermined.note_load``), so that an R-UB-2 report at a store or a scatter
also names the load(s) the padding came from; with ``CUTILE_STRICT=0`` the report is a
warning and the lanes read as zeros (``undetermined``).
"""

from __future__ import annotations

import numpy as np

from ...enums import MemoryOrder
from ...ir import ops
from ...semantics.buffers import bits
from ...semantics.ub import UB
from .. import memory_model as mm
from ..core import PTile, rule
from ..races import window_addresses
from ..undetermined import note_load, padding_origin, relied_on


def check_clean(frame, op, t: PTile, what: str) -> None:
    """R-UB-2 for values that steer memory accesses (indices, masks)."""
    if t.poison is not None:
        relied_on(frame, op, what)


def tile_index(frame, op, values) -> tuple[int, ...]:
    out = []
    for v in values:
        t = frame[v]
        check_clean(frame, op, t, "tile index")
        out.append(int(t.data.item()))
    return tuple(out)


@rule(ops.ArrayDim)
def array_dim(frame, op):
    a = frame[op.array]
    return PTile(np.array(a.shape[op.axis], dtype=op.result.type.dtype.np_dtype))


@rule(ops.ArrayStride)
def array_stride(frame, op):
    a = frame[op.array]
    # Strides in elements (R-ARRAY-1); NumPy views always have multiples of the itemsize.
    return PTile(np.array(a.strides[op.axis] // a.itemsize,
                          dtype=op.result.type.dtype.np_dtype))


@rule(ops.ArraySlice)
def array_slice(frame, op):
    a = frame[op.array]
    start, stop = tile_index(frame, op, (op.start, op.stop))
    n = a.shape[op.axis]
    if not 0 <= start <= stop <= n:
        if frame.strict:
            raise UB("R-UB-4", f"Array.slice({op.axis}, {start}, {stop}) is out of bounds for "
                               f"extent {n} (needs 0 <= start <= stop <= extent)")
        # §6.6 with the flag off: never touch memory outside the array; clamp the view.
        start = min(max(start, 0), n)
        stop = min(max(stop, start), n)
    sl = [slice(None)] * a.ndim
    sl[op.axis] = slice(start, stop)
    return a[tuple(sl)]


def tracked_accesses(frame, array) -> list | None:
    """A list collecting the accesses of ``array`` for the race tracker, or None when it is
    not tracked."""
    return [] if frame.races is not None and frame.races.tracks(array) else None


def record_accesses(frame, array, touched, write: bool, op=None) -> None:
    """Hand the accesses to the launch's race tracker (R-EXEC-4): ``("win", view)`` or
    ``("pts", addresses)``, writes followed by the old and the new values.  A load/store with
    a non-WEAK ``memory_order`` (R-LOAD-7, R-STORE-4) is an atomic access, synchronising as
    its order says (races.Sync)."""
    order = getattr(op, "memory_order", MemoryOrder.WEAK)
    for access in touched or ():
        if order is not MemoryOrder.WEAK:
            what = access[1]
            addrs = window_addresses(what) if access[0] == "win" else np.asarray(what)
            changed = (np.zeros(addrs.shape, bool) if not write else np.ravel(
                bits(np.asarray(access[2])) != bits(np.asarray(access[3]))))
            frame.races.atomic(array, addrs, changed, frame.block, frame.bid, order.name,
                               op.memory_scope.name)
        elif write:
            frame.races.write(array, access, frame.block, frame.bid)
        else:
            frame.races.read(array, access, frame.block, frame.bid)


@rule(ops.Load)
def load(frame, op):
    a = frame[op.array]
    touched = tracked_accesses(frame, a)
    data, poison = mm.tile_space_load(
        a, tile_index(frame, op, op.index), op.shape, order=op.order, steps=op.steps,
        padding=op.padding, check_bounds=op.check_bounds, strict=frame.strict, touched=touched)
    record_accesses(frame, a, touched, False, op)
    if poison is not None:      # UNDETERMINED padding, or a broken check_bounds=False
        note_load(frame, op)
    return PTile(data, poison)


@rule(ops.Store)
def store(frame, op):
    t = frame[op.tile]
    touched = tracked_accesses(frame, frame[op.array])
    try:
        observed = mm.tile_space_store(
            frame[op.array], tile_index(frame, op, op.index), t.data, order=op.order,
            steps=op.steps, check_bounds=op.check_bounds, poison=t.poison,
            strict=frame.strict, touched=touched)
    except mm.PoisonObserved as e:
        raise UB(e.rule, e.message + padding_origin(frame)) from None
    record_accesses(frame, frame[op.array], touched, True, op)
    if observed:                         # CUTILE_STRICT=0: written; warn
        relied_on(frame, op, "a value stored in bounds")


def gs_indices(frame, op):
    """(index arrays, mask array or None) of a gather/scatter-like op; R-UB-2 when one depends
    on UNDETERMINED padding."""
    idx = []
    for v in op.indices:
        t = frame[v]
        check_clean(frame, op, t, "gather/scatter index")
        idx.append(t.data)
    mask = None
    if op.mask is not None:
        m = frame[op.mask]
        check_clean(frame, op, m, "gather/scatter mask")
        mask = m.data
    return tuple(idx), mask


@rule(ops.Gather)
def gather(frame, op):
    idx, mask = gs_indices(frame, op)
    pad = frame[op.padding]
    touched = tracked_accesses(frame, frame[op.array])
    data, accessed = mm.gather(frame[op.array], idx, mask=mask, padding=pad.data,
                               check_bounds=op.check_bounds, strict=frame.strict,
                               with_accessed=True, touched=touched)
    record_accesses(frame, frame[op.array], touched, False)
    # Elements read from the array are clean; the others carry the padding value's poison.
    poison = None if pad.poison is None else pad.poison & ~accessed
    if not op.check_bounds:  # only reachable with strict off: OOB lanes are UNDETERMINED
        wanted = np.ones(accessed.shape, bool) if mask is None else mask
        oob = wanted & ~accessed
        poison = oob if poison is None else (poison | oob)
        if oob.any():
            note_load(frame, op)
    return PTile(data, poison)


@rule(ops.Scatter)
def scatter(frame, op):
    idx, mask = gs_indices(frame, op)
    v = frame[op.value]
    touched = tracked_accesses(frame, frame[op.array])
    try:
        observed = mm.scatter(frame[op.array], idx, v.data, mask=mask,
                              check_bounds=op.check_bounds, poison=v.poison,
                              strict=frame.strict, touched=touched)
    except mm.PoisonObserved as e:
        raise UB(e.rule, e.message + padding_origin(frame)) from None
    record_accesses(frame, frame[op.array], touched, True)
    if observed:                         # CUTILE_STRICT=0: written; warn
        relied_on(frame, op, "a value scattered in bounds")

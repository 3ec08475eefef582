"""Interpreter rules for global memory: array queries and slices, load/store, gather/scatter.

The exact semantics (tile space, order, steps, padding, discarded stores, bounds) live in
``memory_model``; these rules unpack IR operands and pass the block's strictness flag.

UNDETERMINED padding (R-PAD-3): a load that pads with UNDETERMINED returns a poison mask, and
the rule records the load's source location in the block's frame, so that an R-UB-2 error
raised later by a store or a scatter (located at the store) also names the load(s) the
padding came from.
"""

from __future__ import annotations

import numpy as np

from ..enums import MemoryOrder, PaddingMode
from ..ir import ops
from . import memory_model as mm
from .machine import UB, PTile, rule
from .races import _bits, window_addresses

# Key of the frame's value table under which the locations of the UNDETERMINED-padded loads
# executed so far by the block are kept (a list of ``Loc``, first-seen order).
_UNDETERMINED_LOADS = object()


def _note_undetermined_load(frame, op) -> None:
    locs = frame.values.setdefault(_UNDETERMINED_LOADS, [])
    if op.loc not in locs:
        locs.append(op.loc)


def padding_origin(frame) -> str:
    """Suffix of R-UB-2 messages naming the UNDETERMINED load(s) this block executed so far.

    Public so that other rules observing poison (branch conditions, reductions, prints) can
    append it to their own R-UB-2 messages.
    """
    locs = [loc for loc in frame.values.get(_UNDETERMINED_LOADS, ()) if loc is not None]
    if not locs:
        return " (choose a padding_mode)"
    where = ", ".join(f"{loc.filename}:{loc.line}" for loc in locs[:4])
    more = f" and {len(locs) - 4} more" if len(locs) > 4 else ""
    noun = "load" if len(locs) == 1 else "loads"
    return (f"; the UNDETERMINED padding comes from the {noun} at {where}{more} "
            f"(choose a padding_mode)")


def _check_clean(frame, t: PTile, what: str) -> None:
    """R-UB-2 for values that steer memory accesses (indices, masks); only when strict."""
    if frame.strict and t.poison is not None:
        raise UB("R-UB-2", f"{what} depends on UNDETERMINED padding" + padding_origin(frame))


def _index(frame, values) -> tuple[int, ...]:
    out = []
    for v in values:
        t = frame[v]
        _check_clean(frame, t, "tile index")
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
    start, stop = _index(frame, (op.start, op.stop))
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


def _touched(frame, array) -> list | None:
    return [] if frame.races is not None and frame.races.tracks(array) else None


def _record(frame, array, touched, write: bool, op=None) -> None:
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
                _bits(np.asarray(access[2])) != _bits(np.asarray(access[3]))))
            frame.races.atomic(array, addrs, changed, frame.block, frame.bid, order.name,
                               op.memory_scope.name)
        elif write:
            frame.races.write(array, access, frame.block, frame.bid)
        else:
            frame.races.read(array, access, frame.block, frame.bid)


@rule(ops.Load)
def load(frame, op):
    a = frame[op.array]
    touched = _touched(frame, a)
    data, poison = mm.tile_space_load(
        a, _index(frame, op.index), op.shape, order=op.order, steps=op.steps,
        padding=op.padding, check_bounds=op.check_bounds, strict=frame.strict, touched=touched)
    _record(frame, a, touched, False, op)
    if poison is not None and op.padding is PaddingMode.UNDETERMINED:
        _note_undetermined_load(frame, op)
    return PTile(data, poison)


@rule(ops.Store)
def store(frame, op):
    t = frame[op.tile]
    touched = _touched(frame, frame[op.array])
    try:
        mm.tile_space_store(frame[op.array], _index(frame, op.index), t.data, order=op.order,
                            steps=op.steps, check_bounds=op.check_bounds, poison=t.poison,
                            strict=frame.strict, touched=touched)
    except mm.PoisonObserved as e:
        raise UB(e.rule, e.message + padding_origin(frame)) from None
    _record(frame, frame[op.array], touched, True, op)


def _gs_indices(frame, op):
    idx = []
    for v in op.indices:
        t = frame[v]
        _check_clean(frame, t, "gather/scatter index")
        idx.append(t.data)
    mask = None
    if op.mask is not None:
        m = frame[op.mask]
        _check_clean(frame, m, "gather/scatter mask")
        mask = m.data
    return tuple(idx), mask


@rule(ops.Gather)
def gather(frame, op):
    idx, mask = _gs_indices(frame, op)
    pad = frame[op.padding]
    touched = _touched(frame, frame[op.array])
    data, accessed = mm.gather(frame[op.array], idx, mask=mask, padding=pad.data,
                               check_bounds=op.check_bounds, strict=frame.strict,
                               with_accessed=True, touched=touched)
    _record(frame, frame[op.array], touched, False)
    # Elements read from the array are clean; the others carry the padding value's poison.
    poison = None if pad.poison is None else pad.poison & ~accessed
    if not op.check_bounds:  # only reachable with strict off: OOB lanes hold the poison fill
        wanted = np.ones(accessed.shape, bool) if mask is None else mask
        oob = wanted & ~accessed
        poison = oob if poison is None else (poison | oob)
    return PTile(data, poison)


@rule(ops.Scatter)
def scatter(frame, op):
    idx, mask = _gs_indices(frame, op)
    v = frame[op.value]
    touched = _touched(frame, frame[op.array])
    try:
        mm.scatter(frame[op.array], idx, v.data, mask=mask, check_bounds=op.check_bounds,
                   poison=v.poison, strict=frame.strict, touched=touched)
    except mm.PoisonObserved as e:
        raise UB(e.rule, e.message + padding_origin(frame)) from None
    _record(frame, frame[op.array], touched, True)

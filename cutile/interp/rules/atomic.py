"""Interpreter rules for atomics (§20, R-VIEW-7, raw memory §7): exact, in a defined order.

Order (R-ATOM-2 leaves it free; the interpreter fixes one): the positions of the index shape
are applied one after another in row-major order.  When several positions hit one element,
each sees the value left by the previous ones, so the returned old values are those of that
serial order and a float ``add`` rounds once per position in that order.  Positions that are
masked off or out of bounds do nothing and return 0 (``atomic_cas``: ``expected``, R-ATOM-6).

``atomic_cas`` compares bit patterns, as the hardware's compare-and-swap does: for floats
``-0.0`` does not match ``0.0`` and a NaN matches a NaN with the same bits.

Inter-block races: atomic accesses are reported to the launch's race tracker as atomic
(``RaceTracker.atomic``), so atomics of different blocks never race each other, while a
plain access that meets another block's atomic one still does (R-EXEC-4).
"""

from __future__ import annotations

import numpy as np

from ...ir import ops
from ...semantics.buffers import bits
from .. import memory_model as mm
from .. import numerics
from ..core import PTile, rule
from ..races import window_addresses
from ..undetermined import relied_on
from .memory import check_clean


def _combine(kind: str, cur: np.ndarray, upd: np.ndarray, dtype) -> np.ndarray:
    """The new element values of R-ATOM-3 (exact, in the array dtype)."""
    if kind == "xchg":
        return upd.copy()
    if kind == "add":
        return numerics.binary("add", cur, upd, dtype)
    if kind in ("max", "min"):
        return (np.maximum if kind == "max" else np.minimum)(cur, upd)
    f = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[kind]
    return f(cur, upd)


def _raw_indices(array: np.ndarray, offsets: np.ndarray, want: np.ndarray, strict: bool):
    """Element offsets from the array's base (RawArrayMemory) -> (accessed, index arrays).

    An offset must address an element of the array (any other address is outside the array
    and undefined behaviour, R-UB-3); with ``strict`` off such lanes are skipped."""
    o = np.asarray(offsets)
    bad_u64 = o > np.uint64(np.iinfo(np.int64).max) if o.dtype == np.uint64 \
        else np.zeros(o.shape, bool)
    off = np.where(bad_u64, 0, o).astype(np.int64)
    base = array.__array_interface__["data"][0]
    # the element offset of every element, in C order (strides are multiples of the itemsize)
    elems = (window_addresses(array) - base) // array.itemsize if array.size \
        else np.zeros(0, np.int64)
    order = np.argsort(elems, kind="stable")
    srt = elems[order]
    pos = np.minimum(np.searchsorted(srt, off), max(srt.size - 1, 0))
    found = ~bad_u64 & (srt[pos] == off) if srt.size else np.zeros(off.shape, bool)
    bad = want & ~found
    if bad.any() and strict:
        k = tuple(int(p) for p in np.argwhere(bad)[0])
        raise mm.OutOfBounds("R-UB-3", f"raw memory access at position {k}: element offset "
                                       f"{o[k]} is not an element of the array of shape "
                                       f"{tuple(array.shape)}")
    flat = order[pos] if srt.size else np.zeros(off.shape, np.int64)
    idx = np.unravel_index(flat, array.shape) if array.ndim else ()
    return want & found, tuple(np.asarray(i, np.int64) for i in idx)


def positions(frame, op, array: np.ndarray, shape: tuple):
    """(accessed mask, index arrays) of an atomic or raw access, both of the index shape."""
    for v in op.indices:
        check_clean(frame, op, frame[v], "atomic index")
    mask = None
    if op.mask is not None:
        m = frame[op.mask]
        check_clean(frame, op, m, "atomic mask")
        mask = m.data
    if op.raw:
        want = np.ones(shape, bool) if mask is None else np.broadcast_to(mask, shape)
        return _raw_indices(array, np.broadcast_to(frame[op.indices[0]].data, shape),
                            np.array(want), frame.strict)
    accessed, idx = mm.atomic_positions(array, tuple(frame[v].data for v in op.indices),
                                        mask=mask, check_bounds=op.check_bounds,
                                        strict=frame.strict)
    return accessed, idx


def _check_value(frame, op, t: PTile, accessed, what: str) -> None:
    if t.poison is not None and (t.poison & accessed).any():
        relied_on(frame, op, f"the {what} of an atomic")


def apply(frame, array: np.ndarray, accessed, idx, kind: str, upd: np.ndarray,
          expected: np.ndarray | None, dtype, order: str = "ACQ_REL",
          scope: str = "DEVICE") -> np.ndarray:
    """Apply the atomic at every accessed position in row-major order; return the old values.

    Vectorised by rounds: round r applies the r-th occurrence (row-major) of every element, so
    within a round the elements are distinct and the result equals the serial order."""
    old = np.zeros(accessed.shape, array.dtype) if expected is None else expected.copy()
    where = np.flatnonzero(accessed.ravel())
    if where.size == 0:
        return old
    sel = tuple(ix.ravel()[where] for ix in idx)
    u = upd.ravel()[where]
    e = None if expected is None else expected.ravel()[where]
    # byte addresses (the race tracker's slots); a 0-D array's one element for every lane
    addr = mm.point_addresses(array, sel) if array.ndim else \
        np.repeat(mm.point_addresses(array, ()), where.size)
    srt = np.argsort(addr, kind="stable")
    sa = addr[srt]
    start = np.r_[0, np.flatnonzero(sa[1:] != sa[:-1]) + 1]
    rank = np.empty(where.size, np.int64)
    rank[srt] = np.arange(where.size) - np.repeat(start, np.diff(np.r_[start, where.size]))
    out = np.empty(where.size, array.dtype)
    races = frame.races if frame.races is not None and frame.races.tracks(array) else None
    for r in range(int(rank.max()) + 1):
        k = np.flatnonzero(rank == r)
        s = tuple(ix[k] for ix in sel)
        cur = np.array(array[s] if array.ndim else np.full(k.size, array[()]), array.dtype)
        wrote = None                        # every lane, but a failed compare-and-swap
        if kind == "cas":
            wrote = bits(cur) == bits(e[k])
            new = np.where(wrote, u[k], cur)
        else:
            new = _combine(kind, cur, u[k], dtype)
        out[k] = cur
        if races is not None:
            races.atomic(array, addr[k], bits(cur) != bits(new), frame.block, frame.bid,
                         order, scope, wrote)
        if array.ndim:
            array[s] = new
        else:
            array[()] = new[0]
    flat_old = old.reshape(-1)
    flat_old[where] = out
    return old


@rule(ops.AtomicRMW)
def atomic_rmw(frame, op):
    a = frame[op.array]
    u = frame[op.update]
    accessed, idx = positions(frame, op, a, u.data.shape)
    _check_value(frame, op, u, accessed, "update")
    return PTile(apply(frame, a, accessed, idx, op.kind, u.data, None, op.array.type.dtype,
                       op.order.name, op.scope.name))


@rule(ops.AtomicCAS)
def atomic_cas(frame, op):
    a = frame[op.array]
    e, d = frame[op.expected], frame[op.desired]
    accessed, idx = positions(frame, op, a, e.data.shape)
    _check_value(frame, op, e, accessed, "expected value")
    _check_value(frame, op, d, accessed, "desired value")
    return PTile(apply(frame, a, accessed, idx, "cas", d.data, np.array(e.data),
                       op.array.type.dtype, op.order.name, op.scope.name))


def _raw(frame, op, shape):
    a = frame[op.array]
    off = frame[op.offset]
    check_clean(frame, op, off, "raw memory offset")
    want = np.ones(shape, bool)
    if op.mask is not None:
        m = frame[op.mask]
        check_clean(frame, op, m, "raw memory mask")
        want = np.array(np.broadcast_to(m.data, shape))
    accessed, idx = _raw_indices(a, np.broadcast_to(off.data, shape), want, frame.strict)
    return a, accessed, tuple(ix[accessed] for ix in idx)


@rule(ops.RawLoad)
def raw_load(frame, op):
    pad = frame[op.padding]
    a, accessed, sel = _raw(frame, op, pad.data.shape)
    out = np.array(pad.data, a.dtype)
    out[accessed] = a[sel] if a.ndim else a[()]
    if frame.races is not None and frame.races.tracks(a) and accessed.any():
        frame.races.read(a, ("pts", mm.point_addresses(a, sel)), frame.block, frame.bid)
    poison = None if pad.poison is None else pad.poison & ~accessed
    return PTile(out, poison)


@rule(ops.RawStore)
def raw_store(frame, op):
    v = frame[op.value]
    a, accessed, sel = _raw(frame, op, v.data.shape)
    _check_value(frame, op, v, accessed, "stored value")
    vals = v.data[accessed]
    if a.ndim and vals.size:
        # the last position (row-major) hitting an element wins
        flat = np.ravel_multi_index(sel, a.shape)
        _, first_rev = np.unique(flat[::-1], return_index=True)
        keep = np.sort(vals.size - 1 - first_rev)
        sel, vals = tuple(s[keep] for s in sel), vals[keep]
    if not vals.size:
        return
    if frame.races is not None and frame.races.tracks(a):
        old = np.ravel(a[sel] if a.ndim else a[()])
        frame.races.write(a, ("pts", mm.point_addresses(a, sel), old, np.ravel(vals)),
                          frame.block, frame.bid)
    if a.ndim:
        a[sel] = vals
    else:
        a[()] = vals[-1]

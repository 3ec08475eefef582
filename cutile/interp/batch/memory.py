"""Batched global-memory rules: one gather/scatter per batch, logged for undo and races.

A tile-space load of a batch reads every block's window with one fancy index (a tiled strided
view of the array when every window lies inside it, clipped coordinates and the padding fill
otherwise); a store writes them with one fancy assignment, after saving the old values for
undo.  Gather/scatter reuse ``memory_model``'s position logic over the batch's index shape.
Whatever the per-block model reports as undefined behaviour (a window outside the array,
``check_bounds=False`` broken, UNDETERMINED padding reaching memory) falls back, so the
per-block rerun raises it with its exact message (with ``CUTILE_STRICT=0``: UNDETERMINED
padding reaching memory falls back the first time per line, so the rerun warns;
``undetermined``).  Accesses to buffers the kernel writes are
logged per element with their block (``log``) for the race check.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ...enums import PaddingMode
from ...ir import ops
from .. import memory_model as mm
from ..core import Fallback, PTile
from ..rules import memory as per_block
from ..undetermined import relied_on
from .frame import Gathered, Split, batched_rule, expand, lead
from .log import TileGeo, is_basic_key


def _uniform_tile(t: PTile) -> PTile:
    """``t`` with a leading axis of 1 if every block holds the same value, else Fallback."""
    if lead(t) == 1:
        return t
    d = t.data
    if not (d == d[0]).all():
        raise Fallback("per-block array views")
    return PTile(d[:1], None if t.poison is None else t.poison[:1])


def _clean(f, op, t: PTile, what: str = "tile index") -> np.ndarray:
    if t.poison is not None:
        relied_on(f, op, what)      # Fallback unless lenient and this line warned already
    return t.data


@batched_rule(ops.ArrayDim)
def array_dim(f, op):
    a = f[op.array]
    return PTile(np.array([a.shape[op.axis]], dtype=op.result.type.dtype.np_dtype))


@batched_rule(ops.ArrayStride)
def array_stride(f, op):
    a = f[op.array]
    return PTile(np.array([a.strides[op.axis] // a.itemsize],
                          dtype=op.result.type.dtype.np_dtype))


class UniformFrame:
    """A per-block frame view of a uniform batch, for per-block rules on uniform operands."""

    __slots__ = ("f", "strict", "values")
    batched = True                  # undetermined.relied_on: fall back, the per-block run warns

    def __init__(self, f):
        self.f, self.strict, self.values = f, f.strict, {}

    def __getitem__(self, v):
        x = self.f[v]
        if isinstance(x, PTile):
            x = _uniform_tile(x)
            return PTile(x.data[0], None if x.poison is None else x.poison[0])
        return x


@batched_rule(ops.ArraySlice)
def array_slice(f, op):
    """One view when every block slices alike, else a Split: the rest of the region runs
    once per group of blocks with the same bounds."""
    lo, hi = f[op.start], f[op.stop]
    if lead(lo) == 1 and lead(hi) == 1:
        return per_block.array_slice(UniformFrame(f), op)
    n = f.n
    key = np.stack([np.broadcast_to(_clean(f, op, lo).astype(np.int64), (n,)),
                    np.broadcast_to(_clean(f, op, hi).astype(np.int64), (n,))], axis=1)
    _, group = np.unique(key, axis=0, return_inverse=True)
    group = group.reshape(-1)
    if group.max() == 0:
        return per_block.array_slice(UniformFrame(f), op)
    out = []
    for g in range(group.max() + 1):
        sel = np.flatnonzero(group == g)
        out.append((sel, [per_block.array_slice(UniformFrame(f.sub(sel)), op)]))
    return Split(out)


def _geometry(f, op, a: np.ndarray, shape):
    """(view, tile shape, steps, index arrays (n,) per axis, axes whose index differs between
    blocks, whole-window mask (n,), any-lane mask (n,)).

    An index the same in every block (the usual loop counter, a constant) is checked once as
    a Python int; only block-dependent ones go through NumPy (a few microseconds per call
    matter: a K-loop's loads run this once per iteration)."""
    n = f.n
    order = op.order
    view = a if order == _IDENTITY[:a.ndim] else np.transpose(a, tuple(int(p) for p in order))
    shape = tuple(int(s) for s in shape)
    steps = shape if op.steps is None else tuple(int(s) for s in op.steps)
    idx, varying = [], []
    nonempty = full = True
    for k, (v, s, t, dim) in enumerate(zip(op.index, steps, shape, view.shape)):
        i = _clean(f, op, f[v])
        if i.shape[0] == 1:
            i0 = int(i[0])
            nonempty = nonempty & (0 <= i0 and i0 * s < dim)
            full = full & (0 <= i0 and i0 * s + t <= dim)
            idx.append(np.full(n, i0, np.int64))
        else:
            i = i.astype(np.int64)
            pos = i >= 0
            nonempty = nonempty & pos & (i * s < dim)
            full = full & pos & (i * s + t <= dim)
            idx.append(i)
            varying.append(k)
    # Each mask is a Python bool (every index block-uniform) or an (n,) array.
    nonempty = _trues(n) if nonempty is True else (
        nonempty if nonempty is not False else np.zeros(n, bool))
    full = _trues(n) if full is True else full if full is not False else np.zeros(n, bool)
    if f.strict and not nonempty.all():
        raise Fallback("tile entirely outside the array")
    if f.strict and not op.check_bounds and not full.all():
        raise Fallback("check_bounds=False broken")
    return view, shape, steps, idx, varying, full, nonempty


_IDENTITY = tuple(range(8))


def _trues(n: int) -> np.ndarray:
    """A read-only all-True mask of ``n`` blocks (shared)."""
    m = _TRUES.get(n)
    if m is None:
        m = np.ones(n, bool)
        m.flags.writeable = False
        if len(_TRUES) > 64:
            _TRUES.clear()
        _TRUES[n] = m
    return m


_TRUES: dict = {}


def _starts(idx: list, steps) -> np.ndarray:
    """(n, nd) first element of each block's window."""
    return np.stack([i * s for i, s in zip(idx, steps)], axis=1)


def _tiled_for(f, op, a, view, shape, steps, writeable):
    """``_tiled`` of an op's view of array ``a``, made once per launch (a loop's loads reuse
    it every iteration); the cache entry keeps ``a`` alive, so its id stays its own."""
    cache = f.log.shared.setdefault("tiled", {})
    key = (id(op), id(a), writeable)
    hit = cache.get(key)
    if hit is None:
        hit = cache[key] = (a, _tiled(view, shape, steps, writeable))
    return hit[1]


def _tiled(view, shape, steps, writeable):
    """``view`` as (tiles along each axis..., *tile shape): tile i is the window at i*steps."""
    counts = [(nn - t) // s + 1 for nn, t, s in zip(view.shape, shape, steps)]
    st = view.strides
    return as_strided(view, shape=tuple(counts) + shape,
                      strides=tuple(s * x for s, x in zip(steps, st)) + st, writeable=writeable)


def _moving(idx: list, varying: list) -> list:
    """The axes among ``varying`` (those that may) whose index differs between blocks."""
    n = len(idx[0])
    return [k for k in varying if n > 1 and not (idx[k] == idx[k][0]).all()]


def _tile_key(idx: list, varying: list) -> tuple:
    """Indexer of the tiled view selecting tile ``idx[.][j]`` for block j: basic slices when
    at most one coordinate varies (``varying``: the axes that do, ``_moving``), by a constant
    step (rows of a grid: a strided view, no gather), else the index arrays."""
    n = len(idx[0])
    if len(varying) > 1:
        return tuple(idx)
    key = [int(i[0]) for i in idx]
    if not varying:
        return tuple(key[:-1]) + (slice(key[-1], key[-1] + 1),) if n == 1 else tuple(idx)
    k = varying[0]
    i = idx[k]
    d = int(i[1] - i[0])
    if d == 0 or not (np.diff(i) == d).all():
        return tuple(idx)
    stop = int(i[0]) + d * n
    key[k] = slice(int(i[0]), stop if stop >= 0 else None, d)
    return tuple(key)


def _distinct(tiled: np.ndarray, idx: list, k: int) -> Gathered:
    """The windows of a load whose tile index differs between blocks along axis ``k`` only,
    not by a constant step (else ``_tile_key`` gave a strided view): the tiles along ``k``
    from the smallest index used to the largest (a view) and each block's position among
    them, gathered only if something other than ``mma`` reads them (``Gathered``)."""
    i = idx[k]
    lo, hi = int(i.min()), int(i.max())
    key = tuple(slice(lo, hi + 1) if a == k else int(c[0]) for a, c in enumerate(idx))
    return Gathered(tiled[key], i - lo)


def _coords(starts, shape, nonempty):
    """Per-axis coordinate arrays broadcastable to (n, *shape), and the in-bounds lane mask."""
    n, nd = starts.shape
    cs = []
    for k in range(nd):
        c = starts[:, k, None] + np.arange(shape[k], dtype=np.int64)[None]
        cs.append(c.reshape((n,) + (1,) * k + (shape[k],) + (1,) * (nd - k - 1)))
    return cs


def _lanes(view, cs, nonempty):
    inb = nonempty.reshape((-1,) + (1,) * len(cs))
    for c, nn in zip(cs, view.shape):
        inb = inb & (c >= 0) & (c < nn)
    return inb


def _tile_geo(log, a, view, shape, steps) -> TileGeo:
    """The element slots of the tiled view of ``view`` (for the race log)."""
    base, unit = log.slot_base(a, view)
    est = tuple(st // unit for st in view.strides)
    counts = tuple((nn - t) // s + 1 for nn, t, s in zip(view.shape, shape, steps))
    # Disjoint tiles need steps >= tile and a view whose own elements do not overlap.
    dims = sorted((abs(e), m) for e, m in zip(est, view.shape) if m > 1)
    flat_ok = all(dims[i + 1][0] >= dims[i][0] * dims[i][1] for i in range(len(dims) - 1))
    disjoint = flat_ok and all(d[0] > 0 for d in dims) and all(
        s >= t for s, t in zip(steps, shape))
    return TileGeo(base, counts, shape, tuple(s * e for s, e in zip(steps, est)), est,
                   disjoint)


def _window_slots(log, a, view, cs):
    """Element slots (for the race log) of the lanes at coordinates ``cs`` of ``view``."""
    base, unit = log.slot_base(a, view)
    s = base
    for c, st in zip(cs, view.strides):
        s = s + c * (st // unit)
    return s


@batched_rule(ops.Load)
def load(f, op):
    a = f[op.array]
    n = f.n
    log = f.log
    tracked = log.tracks(a)
    if not tracked and all(lead(f[v]) == 1 for v in op.index):
        # The same tile for every block: load it once (the per-block model, errors included).
        one = UniformFrame(f)
        data, poison = mm.tile_space_load(
            a, per_block.tile_index(one, op, op.index), op.shape, order=op.order, steps=op.steps,
            padding=op.padding, check_bounds=op.check_bounds, strict=f.strict)
        return PTile(data[None], None if poison is None else poison[None])
    view, shape, steps, idx, varying, full, nonempty = _geometry(f, op, a, op.shape)
    if full.all():
        varying = _moving(idx, varying)
        key = _tile_key(idx, varying)
        tiled = _tiled_for(f, op, a, view, shape, steps, False)
        if not tracked and len(varying) == 1 and not isinstance(key[varying[0]], slice):
            return _distinct(tiled, idx, varying[0])
        data = tiled[key]
        if tracked:
            # A buffer the kernel writes: copy (a later store must not change this tile).
            data = np.array(data)
            log.record_tiles(a, False, _tile_geo(log, a, view, shape, steps), idx, key,
                             f.blocks())
        # else a view: nothing writes the buffer during the launch, and rules never write
        # their operands.
        return PTile(data)
    cs = _coords(_starts(idx, steps), shape, nonempty)
    inb = _lanes(view, cs, nonempty)
    # a broken check_bounds=False promise makes the lanes UNDETERMINED (strict off only); a
    # tile entirely outside reads the padding fill (memory_model.tile_space_load)
    undet = ~full & (not op.check_bounds)
    pad = mm.load_fill(a.dtype, op.padding, f.strict)
    fill = np.full((n,) + (1,) * len(shape), pad, dtype=a.dtype)
    fill[undet] = mm.load_fill(a.dtype, PaddingMode.UNDETERMINED, f.strict)
    full_shape = (n,) + shape
    if min(view.shape) == 0:
        data = np.broadcast_to(fill, full_shape).copy()
    else:
        cc = tuple(np.clip(c, 0, nn - 1) for c, nn in zip(cs, view.shape))
        data = np.where(inb, view[cc], fill)
    if op.padding is PaddingMode.UNDETERMINED:
        poison = ~inb
    else:
        poison = ~inb & undet.reshape(fill.shape)
    if tracked:
        slots = _window_slots(log, a, view, cs)
        blk = np.broadcast_to(f.blocks().reshape(fill.shape), full_shape)
        log.record(a, False, slots[np.broadcast_to(inb, full_shape)], blk[inb])
    return PTile(data, poison)


@batched_rule(ops.Store)
def store(f, op):
    a = f[op.array]
    t = f[op.tile]
    n = f.n
    view, shape, steps, idx, varying, full, nonempty = _geometry(f, op, a, op.tile.type.shape)
    full_shape = (n,) + shape
    data = np.broadcast_to(t.data, full_shape)
    log = f.log
    if full.all():
        if t.poison is not None and t.poison.any():
            relied_on(f, op, "a value stored in bounds")
        tv = _tiled_for(f, op, a, view, shape, steps, True)
        key = _tile_key(idx, _moving(idx, varying))
        old = tv[key]
        if is_basic_key(key):
            old = old.copy()            # a view; index arrays gave a copy already (a second
            #                             megabyte-sized copy costs page faults, not just time)
        log.undo.append((tv, key, old))
        tv[key] = data
        if log.tracks(a):
            log.record_tiles(a, True, _tile_geo(log, a, view, shape, steps), idx, key,
                             f.blocks(), lambda: _changed(old, data))
        return None
    cs = _coords(_starts(idx, steps), shape, nonempty)
    inb = np.broadcast_to(_lanes(view, cs, nonempty), full_shape)
    if t.poison is not None and (np.broadcast_to(t.poison, full_shape) & inb).any():
        relied_on(f, op, "a value stored in bounds")
    sel = tuple(np.broadcast_to(c, full_shape)[inb] for c in cs)
    new = data[inb]
    old = view[sel]
    log.undo.append((view, sel, old))
    view[sel] = new
    if log.tracks(a):
        slots = _window_slots(log, a, view, sel)
        blk = np.broadcast_to(f.blocks().reshape((n,) + (1,) * len(shape)), full_shape)[inb]
        log.record(a, True, slots, blk, _changed(old, new))
    return None


def _changed(old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Lanes whose bits change (a store of the value already held is not a write, races.py)."""
    w = old.dtype.itemsize
    if w in (1, 2, 4, 8):
        u = f"u{w}"
        return np.ascontiguousarray(old).view(u) != np.ascontiguousarray(new).view(u)
    return np.ones(old.shape, bool)


def _gs(f, op, *extra):
    """(index arrays, mask, index shape including the batch axis) of a gather/scatter."""
    n = f.n
    idx = [_clean(f, op, f[v], "gather/scatter index") for v in op.indices]
    mask = None if op.mask is None else _clean(f, op, f[op.mask], "gather/scatter mask")
    shapes = [np.shape(i) for i in idx] + [np.shape(x) for x in extra]
    if mask is not None:
        shapes.append(np.shape(mask))
    S = np.broadcast_shapes(*shapes)
    S = (n,) + S[1:]
    return idx, mask, S


def _bpos(f, S) -> np.ndarray:
    return np.broadcast_to(f.blocks().reshape((f.n,) + (1,) * (len(S) - 1)), S)


@batched_rule(ops.Gather)
def gather(f, op):
    a = f[op.array]
    if a.ndim == 0:
        raise Fallback("gather from a 0-d array")
    pad = f[op.padding]
    idx, mask, S = _gs(f, op, pad.data)
    touched = [] if f.log.tracks(a) else None
    data, accessed = mm.gather(a, idx, mask=mask, padding=np.broadcast_to(pad.data, S),
                               check_bounds=op.check_bounds, strict=f.strict,
                               with_accessed=True, touched=touched)
    if touched:
        f.log.record_addresses(a, False, touched[0][1], _bpos(f, S)[accessed])
    poison = None if pad.poison is None else pad.poison & ~accessed
    if not op.check_bounds:
        wanted = np.ones(accessed.shape, bool) if mask is None else np.broadcast_to(mask, S)
        oob = wanted & ~accessed
        poison = oob if poison is None else (poison | oob)
    return PTile(data, poison)


@batched_rule(ops.Scatter)
def scatter(f, op):
    a = f[op.array]
    if a.ndim == 0:
        raise Fallback("scatter to a 0-d array")
    v = f[op.value]
    idx, mask, S = _gs(f, op, v.data)
    S_, ix, accessed = mm.gather_positions(a, [np.broadcast_to(i, S) for i in idx], mask,
                                     op.check_bounds, f.strict, "scatter", S)
    if v.poison is not None and (np.broadcast_to(v.poison, S) & accessed).any():
        relied_on(f, op, "a value scattered in bounds")
    sel = tuple(i[accessed] for i in ix)
    vals = np.broadcast_to(v.data, S)[accessed]
    blk = _bpos(f, S)[accessed]
    if vals.size > 1:
        flat = np.ravel_multi_index(sel, a.shape)
        order = np.argsort(flat, kind="stable")
        fs, bs = flat[order], blk[order]
        if ((fs[1:] == fs[:-1]) & (bs[1:] != bs[:-1])).any():
            raise Fallback("blocks of the batch scatter to one element")
        _, first_rev = np.unique(flat[::-1], return_index=True)
        keep = np.sort(vals.size - 1 - first_rev)
        sel, vals, blk = tuple(s[keep] for s in sel), vals[keep], blk[keep]
    old = a[sel]
    f.log.undo.append((a, sel, old))
    a[sel] = vals
    if f.log.tracks(a):
        f.log.record_addresses(a, True, mm.point_addresses(a, sel), blk, _changed(old, vals))
    return None


_ = expand

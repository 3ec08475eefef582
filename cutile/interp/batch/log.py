"""A batch's memory journal: undo records of its stores and its accesses to written buffers.

``commit`` proves the batch equivalent to running its blocks one after another, then updates
the launch's race tracker exactly as the per-block runs would have:

- no element is touched by two blocks of the batch where one of them stores to it (stored
  values unchanged included): then no block of the batch can see another's effect, and every
  order of the batch's blocks gives the same memory;
- with strict checking on (a ``RaceTracker``), no access conflicts with the blocks before the
  batch (R-EXEC-4: a read of an element another block wrote, a changing write of an element
  another block read or wrote).

Either failing raises ``Fallback``: the caller undoes the stores (``rollback``) and runs the
batch's blocks one by one, which reports the race with the per-block text.  The tracker then
gets, per element, the writing block of each changing write and the reading block (or
"many") of the reads, as ``RaceTracker.read``/``write`` would have set them.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ...semantics.buffers import byte_bounds, root_of
from ..core import Fallback
from ..races import MANY_BLOCKS, NO_BLOCK


def is_basic_key(key: tuple) -> bool:
    """Whether ``key`` is basic indexing (ints and slices: ``view[key]`` is a view)."""
    return all(isinstance(k, (int, slice)) for k in key)


class Rec:
    """One logged access of a batch: element ``slots`` (or ``tiles``: windows of a tiled
    view) by ``blocks``; ``changed`` marks the lanes of a write whose bits changed (given as
    a function for whole-window stores: computed only if the race check needs it)."""

    __slots__ = ("write", "blocks", "_changed", "slots", "tiles")

    def __init__(self, write, blocks, changed=None, slots=None, tiles=None):
        self.write, self.blocks, self._changed = write, blocks, changed
        self.slots, self.tiles = slots, tiles

    @property
    def changed(self):
        if callable(self._changed):
            self._changed = self._changed()
        return self._changed

    def flat(self):
        """(slots, blocks, changed) as flat arrays, one entry per lane."""
        if self.slots is None:
            geo, idx, _ = self.tiles
            self.slots = geo.slots(idx)
        shape = self.slots.shape
        b = np.broadcast_to(self.blocks.reshape(self.blocks.shape + (1,) * (len(shape) - 1)),
                            shape)
        ch = None if self.changed is None else self.changed.reshape(-1)
        return self.slots.reshape(-1), b.reshape(-1), ch


class TileGeo:
    """Where the tile windows of one load/store lie in a buffer's element slots: tile ``i``
    of shape ``shape`` starts at slot ``base + sum(i * tstrides)``, its lanes step by
    ``estrides``.  ``disjoint``: different tile indices never share an element."""

    __slots__ = ("base", "counts", "shape", "tstrides", "estrides", "disjoint", "key")

    def __init__(self, base, counts, shape, tstrides, estrides, disjoint):
        self.base, self.counts, self.shape = base, counts, shape
        self.tstrides, self.estrides, self.disjoint = tstrides, estrides, disjoint
        self.key = (base, counts, shape, tstrides, estrides)

    def slots(self, idx) -> np.ndarray:
        n, nd = len(idx[0]), len(self.shape)
        s = np.full((n,) + (1,) * nd, self.base, np.int64)
        for i, t in zip(idx, self.tstrides):
            s = s + (i * t).reshape((n,) + (1,) * nd)
        for k, (m, e) in enumerate(zip(self.shape, self.estrides)):
            s = s + (np.arange(m, dtype=np.int64) * e).reshape((1,) * (k + 1) + (m,)
                                                              + (1,) * (nd - k - 1))
        return s

    def view(self, state: np.ndarray) -> np.ndarray:
        """``state`` (one entry per element slot) laid out as (tiles..., *shape)."""
        it = state.itemsize
        return as_strided(state[self.base:], shape=self.counts + self.shape,
                          strides=tuple(t * it for t in self.tstrides + self.estrides))


class BatchLog:
    """Undo records and logged accesses of one batch (see the module doc)."""

    def __init__(self, tracker, roots: set | None, shared: dict):
        self.tracker = tracker          # the launch's RaceTracker, None without strict checks
        self.roots = roots              # ids of the buffers that may be written (None: all)
        self.shared = shared            # per launch: scratch owner arrays (all NO_BLOCK between
        #                                 uses) and "fresh": buffers no write/read reached yet
        self.undo: list = []            # (target, key, old values), in store order
        self.acc: dict = {}             # buffer key -> [(write?, slots, blocks, changed)]
        self._geo: dict = {}            # buffer key -> (low address, element count, root)

    def tracks(self, array: np.ndarray) -> bool:
        return self.roots is None or id(root_of(array)) in self.roots

    def _key(self, array: np.ndarray):
        root = root_of(array)
        key = (id(root), array.itemsize)
        if key not in self._geo:
            if self.tracker is not None:
                self.tracker.flush()        # an earlier batch's deferred update
                if key not in self.tracker._buffers:
                    self.shared.setdefault("fresh", {})[key] = (True, True)
            low, high = byte_bounds(root)      # as RaceTracker.state_of lays it out
            self._geo[key] = (low, max((high - low) // array.itemsize, 1), root)
        return key

    def slot_base(self, array: np.ndarray, view: np.ndarray) -> tuple[int, int]:
        """(slot of ``view``'s first element, element size); Fallback for odd strides."""
        low = self._geo[self._key(array)][0]
        unit = array.itemsize
        off = view.__array_interface__["data"][0] - low
        if off % unit or any(s % unit for s in view.strides):
            raise Fallback("strides that are not a multiple of the element size")
        return off // unit, unit

    def record(self, array, write: bool, slots, blocks, changed=None) -> None:
        """Accesses of element ``slots`` by ``blocks`` (same shape, or broadcastable)."""
        slots = np.asarray(slots)
        blocks = np.broadcast_to(blocks, slots.shape).reshape(-1)
        ch = None if changed is None else np.broadcast_to(changed, slots.shape).reshape(-1)
        self.acc.setdefault(self._key(array), []).append(
            Rec(write, blocks, ch, slots=slots.reshape(-1)))

    def record_tiles(self, array, write: bool, geo: TileGeo, idx, key, blocks, changed=None):
        """Whole-window accesses: block ``blocks[j]`` touches tile ``idx[.][j]`` of ``geo``;
        ``key`` indexes the tiled view with those tiles (basic slices where it can)."""
        self.acc.setdefault(self._key(array), []).append(
            Rec(write, blocks, changed, tiles=(geo, tuple(idx), key)))

    def record_addresses(self, array, write: bool, addrs, blocks, changed=None) -> None:
        low = self._geo[self._key(array)][0]
        self.record(array, write, (np.asarray(addrs) - low) // array.itemsize, blocks, changed)

    def rollback(self) -> None:
        for target, key, old in reversed(self.undo):
            target[key] = old
        self.undo.clear()

    def commit(self) -> None:
        multi = {key: self._conflicts_within(key, recs) for key, recs in self.acc.items()}
        if self.tracker is None:
            return
        if self.tracker._atomics:
            raise Fallback("atomic accesses in the launch")
        fresh = self.shared.setdefault("fresh", {})
        for key, recs in self.acc.items():
            fw, fr = fresh.get(key, (False, False))
            if fw and fr:
                continue                # nothing recorded yet that an access could meet
            _, writer, reader = self._tracker_state(key)
            for r in recs:
                if fw and (fr or not r.write):
                    continue            # nothing recorded yet that this access could meet
                if r.tiles is not None:
                    geo, _, tk = r.tiles
                    w = geo.view(writer)[tk] if not fw else None
                    rd = geo.view(reader)[tk] if r.write and not fr else None
                    ch = r.changed
                else:
                    w = writer[r.slots] if not fw else None
                    rd = reader[r.slots] if r.write and not fr else None
                    ch = r.changed
                bad = np.zeros((), bool)
                if w is not None:
                    bad = bad | (w != NO_BLOCK)
                if rd is not None:
                    bad = bad | (rd != NO_BLOCK)
                if r.write:
                    bad = bad & ch
                if bad.any():
                    raise Fallback("race with an earlier block")
        # The tracker's state is updated when it is next looked at (the next batch, a
        # per-block block, ``writer_of``), not now: after a launch's last batch, usually never.
        updates = []
        for key, recs in self.acc.items():
            fw, fr = fresh.get(key, (False, False))
            updates.append((self._geo[key][2], key[1], recs, multi[key], fw, fr))
            fresh[key] = (fw and not any(r.write for r in recs),
                          fr and all(r.write for r in recs))
        # The closure holds neither the log nor the tracker (no reference cycle: a launch's
        # buffers are freed when it returns).
        self.tracker.defer(lambda tracker: [_update(tracker, *u) for u in updates])
        self.undo = []                  # committed: nothing to undo any more

    def forget_fresh(self) -> None:
        """The per-block machine ran blocks: no buffer is known untouched any more."""
        self.shared["fresh"] = {}

    def _tracker_state(self, key):
        return self.tracker.state_of(self._geo[key][2], key[1])

    def _owner(self, key) -> np.ndarray:
        owners = self.shared.setdefault("owners", {})
        own = owners.get(key)
        if own is None:
            own = owners[key] = np.full(self._geo[key][1], NO_BLOCK, np.int64)
        return own

    def _conflicts_within(self, key, recs):
        """Fallback if two blocks of the batch touch one element and one of them writes.
        Returns, for the reads, which lanes' elements several blocks of the batch read
        (per record; None where none): the reader update needs it."""
        tiles = [r.tiles for r in recs]
        if all(t is not None for t in tiles) and all(
                t[0].disjoint and t[0].key == tiles[0][0].key for t in tiles):
            return self._tile_conflicts(recs)
        flat = [r.flat() for r in recs]
        own = self._owner(key)
        writes = [f for r, f in zip(recs, flat) if r.write]
        try:
            for slots, blocks, _ in writes:
                own[slots] = blocks
            for slots, blocks, _ in flat:
                o = own[slots]
                if ((o != NO_BLOCK) & (o != blocks)).any():
                    raise Fallback("blocks of the batch touch one element, one writing")
        finally:
            for slots, _, _ in writes:
                own[slots] = NO_BLOCK
        reads = [(i, f) for i, (r, f) in enumerate(zip(recs, flat)) if not r.write]
        out = [None] * len(recs)
        if reads and self.tracker is not None:
            try:
                for _, (slots, blocks, _) in reads:
                    own[slots] = blocks
                for _, (slots, blocks, _) in reads:
                    s = slots[own[slots] != blocks]
                    own[s] = MANY_BLOCKS          # an element several blocks of the batch read
                for i, (slots, _, _) in reads:
                    out[i] = own[slots] == MANY_BLOCKS
            finally:
                for _, (slots, _, _) in reads:
                    own[slots] = NO_BLOCK
        return out

    def _tile_conflicts(self, recs):
        """The same check for whole windows of one disjoint tiling: by tile number, not by
        element (a few thousand entries instead of millions)."""
        geo = recs[0].tiles[0]
        keys = [np.ravel_multi_index(r.tiles[1], geo.counts) for r in recs]
        K = np.concatenate(keys)
        B = np.concatenate([r.blocks for r in recs])
        W = np.concatenate([np.full(len(k), r.write) for k, r in zip(keys, recs)])
        order = np.argsort(K, kind="stable")
        Ks, Bs, Ws = K[order], B[order], W[order]
        start = np.ones(len(Ks), bool)
        start[1:] = Ks[1:] != Ks[:-1]
        gid = np.cumsum(start) - 1
        differ = np.zeros(gid[-1] + 1 if len(gid) else 0, bool)
        d = ~start[1:] & (Bs[1:] != Bs[:-1])
        differ[gid[1:][d]] = True
        anyw = np.zeros(len(differ), bool)
        np.logical_or.at(anyw, gid, Ws)
        if (differ & anyw).any():
            raise Fallback("blocks of the batch touch one element, one writing")
        many = np.empty(len(K), bool)
        many[order] = differ[gid]
        out, k = [], 0
        for key in keys:
            out.append(many[k:k + len(key)])
            k += len(key)
        return [None if r.write else m for r, m in zip(recs, out)]

def _update(tracker, root, item: int, recs, multi, fw: bool, fr: bool) -> None:
    """Set the tracker as the per-block runs would have (see the module doc) for the
    buffer ``root`` (elements of ``item`` bytes); ``fw``, ``fr``: no write / no read of
    it was recorded before the batch."""
    _, writer, reader = tracker.state_of(root, item)
    news = []
    for r, m in zip(recs, multi):         # from the state before the batch
        if r.write:
            continue
        if r.tiles is not None:
            geo, _, tk = r.tiles
            cur = None if fr else geo.view(reader)[tk]
            blk = r.blocks.reshape((-1,) + (1,) * len(geo.shape))
            full = (len(r.blocks),) + geo.shape
            # per tile (by-tile check) or per lane (element check)
            m = m.reshape(blk.shape if m.size == len(r.blocks) else full)
        else:
            cur = None if fr else reader[r.slots]
            blk = r.blocks
            full = blk.shape
        new = np.empty(full, np.int32)
        new[...] = blk
        new[np.broadcast_to(m, new.shape)] = MANY_BLOCKS
        if cur is not None:
            new[cur != NO_BLOCK] = MANY_BLOCKS
        news.append((r, new))
    for r, new in news:
        if r.tiles is not None:
            geo, _, tk = r.tiles
            geo.view(reader)[tk] = new
        else:
            reader[r.slots] = new
    for r in recs:
        if not r.write:
            continue
        if r.tiles is not None:
            geo, _, tk = r.tiles
            v = geo.view(writer)
            blk = r.blocks.reshape((-1,) + (1,) * len(geo.shape))
            if r.changed.any():
                cur = v[tk]             # a view for basic keys, else a copy
                np.copyto(cur, blk, where=r.changed)
                if not is_basic_key(tk):
                    v[tk] = cur
        else:
            writer[r.slots[r.changed]] = r.blocks[r.changed]

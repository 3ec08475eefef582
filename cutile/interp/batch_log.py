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

from .batch import Fallback
from .races import _MANY, _NONE, _byte_bounds, _root


class BatchLog:
    """Undo records and logged accesses of one batch (see the module doc)."""

    def __init__(self, tracker, roots: set | None, scratch: dict):
        self.tracker = tracker          # the launch's RaceTracker, None without strict checks
        self.roots = roots              # ids of the buffers that may be written (None: all)
        self.scratch = scratch          # per-launch scratch owner arrays, all _NONE between uses
        self.undo: list = []            # (target, key, old values), in store order
        self.acc: dict = {}             # buffer key -> [(write?, slots, blocks, changed)]
        self._geo: dict = {}            # buffer key -> (low address, element count)

    def tracks(self, array: np.ndarray) -> bool:
        return self.roots is None or id(_root(array)) in self.roots

    def _key(self, array: np.ndarray):
        root = _root(array)
        key = (id(root), array.itemsize)
        if key not in self._geo:
            if self.tracker is not None:
                low, writer, _ = self.tracker._state(array)
                size = writer.size
            else:
                low, high = _byte_bounds(root)
                size = max((high - low) // array.itemsize, 1)
            self._geo[key] = (low, size)
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
        """Accesses of element ``slots`` by ``blocks`` (broadcastable to the slots)."""
        slots = np.asarray(slots)
        blocks = np.broadcast_to(blocks, slots.shape).reshape(-1)
        ch = None if changed is None else np.broadcast_to(changed, slots.shape).reshape(-1)
        self.acc.setdefault(self._key(array), []).append((write, slots.reshape(-1), blocks, ch))

    def record_addresses(self, array, write: bool, addrs, blocks, changed=None) -> None:
        low = self._geo[self._key(array)][0]
        self.record(array, write, (np.asarray(addrs) - low) // array.itemsize, blocks, changed)

    def rollback(self) -> None:
        for target, key, old in reversed(self.undo):
            target[key] = old
        self.undo.clear()

    def commit(self) -> None:
        for key, recs in self.acc.items():
            self._conflicts_within(key, recs)
        if self.tracker is None:
            return
        if self.tracker._atomics:
            raise Fallback("atomic accesses in the launch")
        states = {}
        for key, recs in self.acc.items():
            states[key] = st = self._tracker_state(key)
            _, writer, reader = st
            for write, slots, _blocks, ch in recs:
                if write:
                    s = slots[ch]
                    if ((writer[s] != _NONE) | (reader[s] != _NONE)).any():
                        raise Fallback("race with an earlier block")
                elif (writer[slots] != _NONE).any():
                    raise Fallback("race with an earlier block")
        for key, recs in self.acc.items():
            self._update(key, recs, states[key])

    def _tracker_state(self, key):
        entry = self.tracker._buffers[key]
        return entry[1], entry[2], entry[3]

    def _owner(self, key) -> np.ndarray:
        own = self.scratch.get(key)
        if own is None:
            own = self.scratch[key] = np.full(self._geo[key][1], _NONE, np.int64)
        return own

    def _conflicts_within(self, key, recs) -> None:
        writes = [r for r in recs if r[0]]
        if not writes:
            return
        own = self._owner(key)
        try:
            for _, slots, blocks, _ in writes:
                own[slots] = blocks
            for _, slots, blocks, _ in recs:
                o = own[slots]
                if ((o != _NONE) & (o != blocks)).any():
                    raise Fallback("blocks of the batch touch one element, one writing")
        finally:
            for _, slots, _, _ in writes:
                own[slots] = _NONE

    def _update(self, key, recs, state) -> None:
        _, writer, reader = state
        reads = [r for r in recs if not r[0]]
        if reads:
            own = self._owner(key)
            try:
                for _, slots, blocks, _ in reads:
                    own[slots] = blocks
                many = [slots[own[slots] != blocks] for _, slots, blocks, _ in reads]
                # From the state before the batch (no block of the batch in it yet).
                new = [np.where(reader[slots] == _NONE, own[slots], _MANY)
                       for _, slots, _, _ in reads]
                for (_, slots, _, _), x in zip(reads, new):
                    reader[slots] = x
                for m in many:
                    reader[m] = _MANY
            finally:
                for _, slots, _, _ in reads:
                    own[slots] = _NONE
        for write, slots, blocks, ch in recs:
            if write:
                writer[slots[ch]] = blocks[ch]

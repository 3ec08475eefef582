"""Recording which block read and wrote each element of a launch's arrays (access maps).

``AccessRecorder`` stands in for the launch's race tracker (same hooks: ``tracks``, ``read``,
``write``; see races.py) but never raises: overlapping writes are what an access map shows.
Per element of every buffer it keeps the writing block (or "several"), the number of block
writes, the reading block (or "several") and the number of block reads.  Elements are
identified by address, so views of one buffer share their records.
"""

from __future__ import annotations

import numpy as np

from ..semantics.buffers import byte_bounds, root_of
from .races import window_addresses

NONE, SEVERAL = -1, -2


class AccessRecorder:
    """Per-launch record of the blocks that touched each element (see the module doc)."""

    def __init__(self, grid: tuple):
        self.grid = grid
        self._buffers: dict = {}      # (id(root), itemsize) -> (root, low, state dict)
        self._last: dict = {}         # (key, kind) -> block of the previous access: count once

    def tracks(self, array: np.ndarray) -> bool:
        return True

    def _state(self, array: np.ndarray):
        root = root_of(array)
        key = (id(root), array.itemsize)
        entry = self._buffers.get(key)
        if entry is None:
            low, high = byte_bounds(root)
            n = max((high - low) // array.itemsize, 1)
            entry = (root, low, {k: np.full(n, NONE if k in ("writer", "reader") else 0,
                                            np.int32)
                                 for k in ("writer", "writes", "reader", "reads")})
            self._buffers[key] = entry
        return key, entry[1], entry[2]

    def _slots(self, array, access, low):
        kind, what = access[0], access[1]
        addrs = window_addresses(what) if kind == "win" else np.asarray(what).ravel()
        return np.unique((addrs - low) // array.itemsize)

    def _mark(self, array, access, block: int, who: str, count: str) -> None:
        key, low, st = self._state(array)
        slots = self._slots(array, access, low)
        if slots.size == 0:
            return
        cur = st[who][slots]
        st[who][slots] = np.where(cur == NONE, block, np.where(cur == block, cur, SEVERAL))
        # a block counts once per element, however often it touches it
        first = st.setdefault(f"_{who}_last", np.full(st[who].shape, NONE, np.int32))
        fresh = first[slots] != block
        st[count][slots[fresh]] += 1
        first[slots] = block

    def read(self, array, access, block: int, bid: tuple) -> None:
        self._mark(array, access, block, "reader", "reads")

    def write(self, array, access, block: int, bid: tuple) -> None:
        self._mark(array, access, block, "writer", "writes")

    def atomic(self, array, addrs: np.ndarray, changed: np.ndarray, block: int,
               bid: tuple, order: str = "RELAXED", scope: str = "DEVICE",
               wrote: np.ndarray | None = None) -> None:
        """Atomic accesses (interp/rules/atomic.py): a read, and a write where the value changed
        (the memory order and scope do not change the map)."""
        self._mark(array, ("pts", addrs), block, "reader", "reads")
        if changed.any():
            self._mark(array, ("pts", addrs[changed]), block, "writer", "writes")

    def of(self, array: np.ndarray) -> dict:
        """The records of ``array``'s elements, each an int32 array of ``array.shape``:
        ``writer``/``reader`` (linear block number, -1 none, -2 several) and
        ``writes``/``reads`` (how many blocks)."""
        key, low, st = self._state(array)
        slots = ((window_addresses(array) - low) // array.itemsize).reshape(array.shape) \
            if array.ndim else np.array((array.__array_interface__["data"][0] - low)
                                        // array.itemsize)
        return {k: st[k][slots] for k in ("writer", "writes", "reader", "reads")}

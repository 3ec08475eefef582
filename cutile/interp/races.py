"""Data races between blocks (R-EXEC-4), detected by the interpreter.

Blocks run concurrently on a GPU, in an unspecified order; a non-atomic access to an element
that another block of the same launch writes is a data race with an undefined result.  The
interpreter runs the blocks one after another, so without a check it would quietly produce one
of the possible answers.  ``RaceTracker`` records, per element of every buffer behind an array
argument, the block that wrote it and the block(s) that read it during the launch, and reports
the first access that conflicts with another block's (read after another block's write, or a
write after another block's read or write).  A store of the value an element already holds is
not a write here: every block setting the same flag is harmless in any order.

Elements are identified by address (a slice, a transposed view and the original array share
one buffer), so accesses through different views of one argument are compared.  Atomics do not
take part (they are the sanctioned way for blocks to communicate).  Out-of-bounds lanes are not
accesses.  One launch's tracker costs two int32 per element of the buffers it touches.
"""

from __future__ import annotations

import numpy as np

from .memory_model import OutOfBounds

_NONE, _MANY = -1, -2


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.itemsize in (1, 2, 4, 8) else a


def _byte_bounds(a: np.ndarray) -> tuple[int, int]:
    try:
        from numpy.lib.array_utils import byte_bounds  # NumPy >= 2.0
    except ImportError:                                       # pragma: no cover - NumPy 1.x
        byte_bounds = np.byte_bounds
    return byte_bounds(a)


def _root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


class RaceTracker:
    """Per-launch record of which block wrote / read each element (see the module doc)."""

    def __init__(self, grid: tuple = (1, 1, 1)):
        self.grid = grid
        self._buffers: dict = {}          # (id(root), itemsize) -> (root, low, writer, reader)

    def _slots(self, array: np.ndarray, addrs: np.ndarray):
        root = _root(array)
        item = array.itemsize
        key = (id(root), item)
        entry = self._buffers.get(key)
        if entry is None:
            low, high = _byte_bounds(root)
            n = max((high - low) // item, 1)
            entry = (root, low, np.full(n, _NONE, np.int32), np.full(n, _NONE, np.int32))
            self._buffers[key] = entry
        _, low, writer, reader = entry
        return (addrs - low) // item, writer, reader

    def read(self, array: np.ndarray, addrs: np.ndarray, block: int, bid: tuple) -> None:
        if addrs.size == 0:
            return
        slots, writer, reader = self._slots(array, addrs)
        w = writer[slots]
        bad = (w != _NONE) & (w != block)
        if bad.any():
            self._race("reads", slots[bad][0], int(w[bad][0]), "wrote", bid)
        r = reader[slots]
        reader[slots] = np.where(r == _NONE, block, np.where(r == block, r, _MANY))

    def write(self, array: np.ndarray, addrs: np.ndarray, old: np.ndarray, new: np.ndarray,
              block: int, bid: tuple) -> None:
        """A write of ``new`` over ``old`` (same order as ``addrs``).  Writing the value an
        element already holds changes nothing any order could observe: such lanes are not
        writes here (every block storing the same flag value is fine)."""
        changed = _bits(old) != _bits(new)
        if not changed.any():
            return
        addrs = addrs[changed]
        slots, writer, reader = self._slots(array, addrs)
        w = writer[slots]
        bad = (w != _NONE) & (w != block)
        if bad.any():
            self._race("writes", slots[bad][0], int(w[bad][0]), "wrote", bid)
        r = reader[slots]
        bad = (r != _NONE) & (r != block)
        if bad.any():
            other = int(r[bad][0])
            self._race("writes", slots[bad][0], other, "read", bid)
        writer[slots] = block

    def _race(self, verb: str, slot, other: int, what: str, bid: tuple) -> None:
        g0, g1 = self.grid[0], self.grid[1]
        by = "another block" if other == _MANY else \
            f"block {(other % g0, other // g0 % g1, other // (g0 * g1))}"
        raise OutOfBounds(
            "R-EXEC-4", f"data race: block {bid} {verb} element #{int(slot)} of an array "
                        f"argument's buffer that {by} {what} in the same launch; blocks run "
                        f"concurrently in an unspecified order, so the result is undefined "
                        f"(communicate through atomics, or give each block its own elements)")

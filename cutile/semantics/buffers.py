"""Buffers behind NumPy array views: the root array owning the memory, its byte extent, and
an array's bit pattern.

Views of one launch argument (a slice, a transposed view) share one buffer, so race tracking,
foreign pointers and the simulator's copies of pointer-addressed arrays all identify memory by
its root and byte addresses.
"""

from __future__ import annotations

import numpy as np


def root_of(a: np.ndarray) -> np.ndarray:
    """The array owning ``a``'s memory (following ``.base`` through views)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def byte_bounds(a: np.ndarray) -> tuple[int, int]:
    """(first byte address, one past the last) of the memory ``a`` spans."""
    try:
        from numpy.lib.array_utils import byte_bounds as bounds  # NumPy >= 2.0
    except ImportError:                                       # pragma: no cover - NumPy 1.x
        bounds = np.byte_bounds
    return bounds(a)


def bits(a: np.ndarray) -> np.ndarray:
    """``a``'s elements as unsigned integers of the same width (a contiguous view or copy), so
    that equal bits compare equal (NaNs, signed zeros); other widths are returned unchanged."""
    a = np.asarray(a)
    if not a.flags.c_contiguous:
        a = a.copy()                # (np.ascontiguousarray would make a 0-D array 1-D)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.itemsize in (1, 2, 4, 8) else a

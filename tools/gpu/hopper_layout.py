"""The backend's Hopper layout facts in the forms ``wgmma_probe.py`` needs: inside its Numba
kernels (device functions and constants) and on the host to read results back.

The facts themselves are the backend's (``cutile/numba_backend``), so that what the probe
measures on the GPU is what the backend emits, not a second reading of the PTX ISA:

- the 128-byte swizzle of a tile of 16-bit elements stored as 64-element rows:
  ``tensorcore.swizzle(row, col, 64, 8)``.  Numba cannot compile that function (it asserts
  and calls ``int.bit_length``), so ``sw128`` looks its two halves up in tables computed
  here from it: the swizzle is linear over GF(2) in the bits of ``row`` and ``col`` (its
  docstring), so ``swizzle(r, c) == swizzle(r, 0) ^ swizzle(0, c)``;
- the 64-bit wgmma matrix descriptor: its constant bits (leading/stride byte offsets,
  swizzle mode) are ``wgmma.desc_hi``; the probe adds the start-address field
  (``desc_encode``: bits 0-13, ``(addr & 0x3FFFF) >> 4``, which the backend computes in
  the kernels it generates, ``lower/matmul_tc.py``, rather than in a Python function);
- the float32 accumulator fragment of ``wgmma.m64nNk16``: the ``layout.Layout`` of a
  one-warpgroup ``wgmma.WGPlan`` (value ``j`` of thread ``t`` is its register ``j``).

The hardware applies the swizzle to shared-memory address bits ([4:6] ^= [7:9]), so the
pattern holds only for a tile that starts at a 1024-byte aligned address (one swizzle atom:
8 rows of 128 bytes); the probe aligns every tile to 1024 bytes.
``spec_tests/test_wgmma_probe_ptx.py`` checks these forms against the PTX ISA's statements
(a wrong bit shows on the GPU only as wrong numbers), ``spec_tests/test_probe_layout.py``
that they equal what the probe's own formulas gave before they were derived from the backend.
"""

from __future__ import annotations

import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:                # run as a script from tools/gpu: cutile is not installed
    sys.path.insert(0, ROOT)

from cutile.numba_backend.layout import Layout  # noqa: E402
from cutile.numba_backend.tensorcore import swizzle  # noqa: E402
from cutile.numba_backend.wgmma import WG_THREADS, WGPlan, desc_hi  # noqa: E402

ROW_ELEMS = 64          # 16-bit elements per 128-byte swizzled row
ROW_BYTES = 2 * ROW_ELEMS
ATOM_BYTES = 8 * ROW_BYTES      # one 128-byte swizzle atom: 8 rows of 128 bytes
MAX_ROWS = 256          # rows of the probe's tallest staged tile (B of m64n256k16)

# swizzle(r, 0) and swizzle(0, c) of a 64-element-wide tile (int32: Numba keeps global
# arrays as constants of the kernel)
_ROW_IMAGE = swizzle(np.arange(MAX_ROWS), 0, ROW_ELEMS, 8).astype(np.int32)
_COL_IMAGE = swizzle(0, np.arange(ROW_ELEMS), ROW_ELEMS, 8).astype(np.int32)

# the constant bits of a K-major 128-byte swizzled operand's descriptor: leading byte offset
# 16 (unused for a K extent within the swizzle width), stride byte offset one atom (the next
# 8 rows of M/N)
SW128_HI = np.uint64(desc_hi(16, ATOM_BYTES, ROW_BYTES))
# the same for a 64-byte swizzled operand (32 16-bit elements of K per row, 512-byte atoms)
SW64_HI = np.uint64(desc_hi(16, 8 * 64, 64))

_M18 = np.uint64(0x3FFFF)
_U4 = np.uint64(4)


def sw128(row, col):
    """Element index, within a 1024-byte aligned tile of 16-bit elements stored as 64-element
    rows with the 128-byte swizzle, of element (``row``, ``col``), ``0 <= row < MAX_ROWS``,
    ``0 <= col < 64``: ``tensorcore.swizzle(row, col, 64, 8)``.  Table lookups: works on
    Python ints, NumPy arrays and inside a Numba kernel."""
    return _ROW_IMAGE[row] ^ _COL_IMAGE[col]


def desc_encode(addr, hi):
    """The 64-bit wgmma matrix descriptor (np.uint64) of a shared-memory operand starting at
    byte address ``addr`` of the shared window (bits 0-13: ``(addr & 0x3FFFF) >> 4``, address
    bits above the 18-bit window dropped) with the constant bits ``hi`` (``wgmma.desc_hi``,
    e.g. ``SW128_HI``).  Written with uint64 operands only, so Numba types it as uint64
    arithmetic."""
    return ((np.uint64(addr) & _M18) >> _U4) | np.uint64(hi)


def desc_decode(desc: int) -> dict:
    """The fields of a descriptor, in bytes, as the PTX ISA's "Matrix Descriptor Format"
    places them (host-side, for tests and printing)."""
    d = int(desc)
    return {"addr": (d & 0x3FFF) << 4, "lbo": ((d >> 16) & 0x3FFF) << 4,
            "sbo": ((d >> 32) & 0x3FFF) << 4, "base_offset": (d >> 49) & 7,
            "swizzle": (d >> 62) & 3}


def acc_layout(n: int) -> Layout:
    """The backend's layout of the 64 x ``n`` float32 result of one warpgroup's
    ``wgmma.m64nNk16`` (``n`` a power of two, 16 .. 256): register ``j`` of thread ``t``."""
    return WGPlan(64, n, 16, WG_THREADS, 4, 1, "f16", GM=1).layout()


def acc_coords(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols), each of shape (128, n // 2): where value ``j`` of warpgroup thread ``t``
    lies in the 64 x ``n`` float32 result of ``wgmma.m64nNk16``."""
    table = acc_layout(n).table
    return table[:, :, 0], table[:, :, 1]


def unswizzle_tile(raw: np.ndarray, rows: int) -> np.ndarray:
    """The ``rows`` x 64 tile whose 128-byte swizzled image is the flat array ``raw``."""
    r, c = np.meshgrid(np.arange(rows), np.arange(ROW_ELEMS), indexing="ij")
    return raw[sw128(r, c)]


def fragments_to_matrix(raw: np.ndarray, n: int) -> np.ndarray:
    """The 64 x ``n`` result from the flat per-thread dump (thread ``t``'s value ``j`` at
    ``raw[t * n // 2 + j]``) of one warpgroup's accumulators."""
    rows, cols = acc_coords(n)
    out = np.full((64, n), np.nan, dtype=raw.dtype)
    out[rows, cols] = raw.reshape(128, n // 2)
    return out

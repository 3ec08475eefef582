"""Host-side facts of Hopper's asynchronous tensor-core path, as pure Python/NumPy (no numba):
the 128-byte shared-memory swizzle, the 64-bit wgmma matrix descriptor and the wgmma
accumulator fragment.  ``wgmma_probe.py`` uses them in its kernels (the swizzle is compiled
by Numba as a device function) and to read its results back; ``spec_tests/
test_wgmma_probe_ptx.py`` checks them exactly, since a wrong bit here shows on the GPU only
as wrong numbers.

128-byte swizzle (PTX ISA, "Asynchronous Warpgroup Level Matrix Shared Memory Layout",
swizzling modes; the same pattern as ``CU_TENSOR_MAP_SWIZZLE_128B`` of the tensor-copy
engine).  A tile of 16-bit elements is stored as rows of 64 elements (128 bytes), row ``r``
at byte ``128 r``; within a row the 16-byte chunk ``c`` (elements ``8c .. 8c+7``) is stored at
chunk ``c ^ (r % 8)``.  The hardware applies the XOR to shared-memory *address* bits
[4:6] ^= [7:9], so the pattern above holds only for a tile that starts at a 1024-byte aligned
address (8 rows of 128 bytes, one swizzle atom); the probe aligns every tile to 1024 bytes.

Matrix descriptor (PTX ISA, "Matrix Descriptor Format" under the warpgroup-level matrix
shared-memory layout, section 9.7.15.5.1 in PTX ISA 8.x), a 64-bit value:

====== ====================================================================
bits   field
====== ====================================================================
0-13   matrix start address in the shared window: ``(addr & 0x3FFFF) >> 4``
16-29  leading-dimension byte offset ``>> 4`` (K direction between core matrices;
       not used for K-major operands in a swizzled layout whose K extent fits the
       swizzle width: set to 1, i.e. 16 bytes)
32-45  stride-dimension byte offset ``>> 4`` (M/N direction: from one 8-row group to
       the next; 1024 bytes = 8 rows of 128 bytes for the 128-byte swizzle)
49-51  matrix base offset (0: every tile starts on a swizzle-atom boundary)
62-63  swizzle mode: 0 none, 1 128-byte, 2 64-byte, 3 32-byte
====== ====================================================================

Moving along K inside one 128-byte row (one k16 step = 32 bytes of float16) adds 32 bytes to
the start address; the hardware swizzles the resulting addresses itself.

Accumulator fragment of ``wgmma.m64nNk16`` with float32 D (PTX ISA, "Matrix fragments for
wgmma.mma_async", register fragment D): warp ``w`` of the warpgroup owns rows
``16w .. 16w+15``; thread ``lane`` holds ``N/2`` values, value ``j`` at row
``16w + lane//4 + 8*((j%4)//2)``, column ``8*(j//4) + 2*(lane%4) + j%2`` (the mma.sync m16n8
pattern repeated over the N/8 column blocks).
"""

from __future__ import annotations

import numpy as np

ROW_ELEMS = 64          # 16-bit elements per 128-byte swizzled row
ATOM_BYTES = 1024       # one 128-byte swizzle atom: 8 rows of 128 bytes
SWIZZLE_128B = 1        # descriptor swizzle-mode code (bits 62-63)

_M14 = np.uint64(0x3FFF)
_M18 = np.uint64(0x3FFFF)
_U4, _U16, _U32, _U49, _U62 = (np.uint64(v) for v in (4, 16, 32, 49, 62))


def sw128(row, col):
    """Element index, within a 1024-byte aligned tile of 16-bit elements stored as 64-element
    rows with the 128-byte swizzle, of element (``row``, ``col``), ``0 <= col < 64``.  Plain
    integer arithmetic: works on Python ints, NumPy arrays and inside a Numba kernel."""
    return row * 64 + ((((col >> 3) ^ (row & 7)) << 3) | (col & 7))


def desc_encode(addr, lbo, sbo, swizzle):
    """The 64-bit wgmma matrix descriptor (np.uint64) of a shared-memory operand starting at
    byte address ``addr`` of the shared window, with leading/stride byte offsets ``lbo`` and
    ``sbo`` (multiples of 16) and swizzle mode code ``swizzle`` (``SWIZZLE_128B``); base
    offset 0.  Written with uint64 operands only, so Numba types it as uint64 arithmetic."""
    a = (np.uint64(addr) & _M18) >> _U4
    lo = (np.uint64(lbo) >> _U4) & _M14
    so = (np.uint64(sbo) >> _U4) & _M14
    return a | (lo << _U16) | (so << _U32) | (np.uint64(swizzle) << _U62)


def desc_decode(desc: int) -> dict:
    """The fields of a descriptor, in bytes (host-side, for tests and printing)."""
    d = int(desc)
    return {"addr": (d & 0x3FFF) << 4, "lbo": ((d >> 16) & 0x3FFF) << 4,
            "sbo": ((d >> 32) & 0x3FFF) << 4, "base_offset": (d >> 49) & 7,
            "swizzle": (d >> 62) & 3}


def acc_coords(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols), each of shape (128, n // 2): where value ``j`` of warpgroup thread ``t``
    lies in the 64 x ``n`` float32 result of ``wgmma.m64nNk16``."""
    t = np.arange(128)[:, None]
    j = np.arange(n // 2)[None, :]
    w, lane = t // 32, t % 32
    rows = 16 * w + lane // 4 + 8 * ((j % 4) // 2)
    cols = 8 * (j // 4) + 2 * (lane % 4) + j % 2
    return np.broadcast_to(rows, (128, n // 2)), np.broadcast_to(cols, (128, n // 2))


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


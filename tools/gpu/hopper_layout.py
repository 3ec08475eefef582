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


# -- operand layouts of any width (K-major A / B^T, MN-major B), as the backend stages them ----

SWIZZLE_CODE = {128: 1, 64: 2, 32: 3}   # panel row bytes -> descriptor swizzle-mode code


def panel_index(row, col, rows: int, cols: int, esize: int = 2):
    """Element index of (``row``, ``col``) of a ``rows`` x ``cols`` tile of ``esize``-byte
    elements stored as column panels at most 128 bytes wide (``cols`` split into panels of
    ``pw = min(cols, 128 // esize)`` elements, panel ``p`` at element ``p * rows * pw``), each
    panel row-major with its 16-byte chunks XOR-swizzled by the row as the 128/64/32-byte
    swizzle of a ``pw * esize``-byte row does (chunk ``c ^ ((row >> s) & m)``)."""
    epc = 16 // esize
    pw = min(cols, 128 // esize)
    cpr = pw // epc                       # chunks per panel row: 8, 4 or 2
    m = cpr - 1
    s = {8: 0, 4: 1, 2: 2}[cpr]
    p, c = col // pw, col % pw
    ch = (c // epc) ^ ((row >> s) & m)
    return p * rows * pw + row * pw + ch * epc + c % epc


def kmajor_desc(rows: int, k: int, esize: int = 2) -> tuple[int, int, int]:
    """(lbo, sbo, swizzle code) of a K-major operand (``rows`` x ``k``, ``panel_index``)."""
    pw = min(k, 128 // esize)
    return 16, 8 * pw * esize, SWIZZLE_CODE[pw * esize]


def kmajor_step(rows: int, k: int, kk: int, esize: int = 2) -> int:
    """Byte offset of k16 step ``kk`` of a K-major operand from its start."""
    pw = min(k, 128 // esize)
    return ((16 * kk) // pw) * rows * pw * esize + ((16 * kk) % pw) * esize


def mnmajor_desc(k: int, n: int, esize: int = 2, swapped: bool = False):
    """(lbo, sbo, swizzle code) of an MN-major B (``k`` x ``n``, ``panel_index``): the stride
    between 64-wide N panels and between 8-row k groups (``swapped``: the other assignment,
    for the probe to tell which one the hardware reads)."""
    pw = min(n, 128 // esize)
    panel, group = k * pw * esize, 8 * pw * esize
    lbo, sbo = (group, panel) if swapped else (panel, group)
    return lbo, sbo, SWIZZLE_CODE[pw * esize]


def mnmajor_step(k: int, n: int, kk: int, esize: int = 2) -> int:
    """Byte offset of k16 step ``kk`` of an MN-major B from its start (16 rows down)."""
    return 16 * kk * min(n, 128 // esize) * esize

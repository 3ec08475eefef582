"""The wgmma probe's layout tables (``tools/gpu/hopper_layout.py``), derived from the backend
(``tensorcore.swizzle``, ``wgmma.desc_hi``, ``wgmma.WGPlan.layout``), are the ones its own
formulas gave before: the probe's kernels and read-back are unchanged by the derivation.

The expected values are literal data computed once from the formulas of ``hopper_layout.py``
at commit c6dda85 (``git show c6dda85:tools/gpu/hopper_layout.py``): the descriptors as
numbers, the tables as the first 16 hex digits of the SHA-256 of their int64 bytes (row
major, in the order listed), over the shapes the probe uses: rows 0..255 of the swizzle
(its tallest staged tile is m64n256's 256-row B), N in 16..256 for the fragment.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys

import numpy as np
import pytest

from cutile.numba_backend.tensorcore import swizzle

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GPU = os.path.join(ROOT, "tools", "gpu")


def _load(name: str):
    if GPU not in sys.path:             # the probe's modules import their siblings
        sys.path.insert(0, GPU)
    path = os.path.join(GPU, f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"_probe_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


hl = _load("hopper_layout")

# N -> (acc_coords rows and cols, value j's (row, col) offset from value 0 for every j)
FRAGMENT = {16: ("5d97bd729c2cccdd", "2942e11f460c292f"),
            32: ("cec3c74701f66db9", "541086bc4e08fdee"),
            64: ("76291471da6d628b", "75e1c697e4bc6f89"),
            128: ("5ef8557dc9892c94", "369d228c1c8da8af"),
            256: ("4f85cd78d8ce5457", "ad056bc642f0ed31")}


def _digest(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(np.asarray(a, dtype=np.int64)).tobytes())
    return h.hexdigest()[:16]


def test_swizzle_table_is_the_old_formulas_and_the_backends():
    r, c = np.meshgrid(np.arange(hl.MAX_ROWS), np.arange(64), indexing="ij")
    idx = hl.sw128(r, c)
    assert _digest(idx) == "f28e20e562e94a9a"
    assert np.array_equal(idx, swizzle(r, c, 64, 8))
    assert int(hl.sw128(9, 17)) == 601          # Python ints too: row 9, chunk 2 ^ 1, + 1


def test_descriptor_constant_bits_are_the_old_ones():
    assert int(hl.SW128_HI) == 0x4000004000010000          # LBO 16, SBO 1024, 128-byte mode
    old = {0: 0x4000004000010000, 1024: 0x4000004000010040, 1024 + 32: 0x4000004000010042,
           0x3FC00 + 96: 0x4000004000013FC6, 0x40000 + 1024: 0x4000004000010040}
    for addr, want in old.items():
        d = hl.desc_encode(addr, hl.SW128_HI)
        assert isinstance(d, np.uint64) and int(d) == want, hex(addr)


@pytest.mark.parametrize("n", sorted(FRAGMENT))
def test_accumulator_fragment_is_the_old_formulas(n):
    rows, cols = hl.acc_coords(n)
    assert rows.shape == cols.shape == (128, n // 2)
    lay = hl.acc_layout(n)
    offs = [lay.reg_offsets(j) for j in range(n // 2)]      # what frag_store takes
    assert (_digest(rows, cols), _digest(offs)) == FRAGMENT[n]


def test_probe_fragment_origins_are_the_old_ones():
    """``probe_device.ROW0``/``COL0`` (the wgmma probe's constants shared by its kernels):
    thread t's value 0 in the 64 x N result (the mini GEMM's store); importing the probe
    builds no kernel."""
    probe = _load("probe_device")
    assert probe.ROW0.dtype == probe.COL0.dtype == np.int32
    assert _digest(probe.ROW0, probe.COL0) == "d606e74c141ce8a8"

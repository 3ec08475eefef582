"""The Hopper wgmma/TMA probe (``tools/gpu/wgmma_probe.py``, issue 24), without a GPU.

- its layout facts (the backend's, in ``tools/gpu/hopper_layout.py``'s forms), exactly
  against the PTX ISA's statements: the 128-byte swizzle is a bijection of a tile onto its
  buffer that keeps 16-byte chunks whole and permutes them within each 128-byte row as
  ``chunk ^ (row % 8)``; descriptor fields round-trip and sit at the documented bits; the
  wgmma accumulator fragment covers a 64 x N result once;
- every probe kernel builds (NVVM) and assembles for sm_90a (ptxas), skipped without a CUDA
  toolkit.  The GPU run itself: ``source tools/gpu/setup.sh; python3
  tools/gpu/wgmma_probe.py``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest
from diff import ptxcheck  # spec_tests/ is on sys.path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools", "gpu"))
import hopper_layout as hl  # noqa: E402

from cutile.numba_backend.wgmma import desc_hi  # noqa: E402


def test_sw128_is_a_chunk_permutation_within_rows():
    rows = 64
    r, c = np.meshgrid(np.arange(rows), np.arange(64), indexing="ij")
    idx = hl.sw128(r, c)
    assert sorted(idx.ravel().tolist()) == list(range(rows * 64))      # bijective
    assert np.array_equal(idx // 64, r)                                 # stays in its row
    assert np.array_equal(idx % 8, c % 8)                               # 16-byte chunks whole
    assert np.array_equal((idx % 64) // 8, (c // 8) ^ (r % 8))          # chunk ^ row % 8
    assert np.array_equal(idx[:1], np.arange(64)[None])                 # row 0 unswizzled
    # the byte-address form the hardware applies: bits [4:6] ^= bits [7:9]
    b = 2 * (64 * r + c)
    assert np.array_equal(2 * idx, b ^ (((b >> 7) & 7) << 4))


def test_unswizzle_inverts_the_stores():
    tile = np.arange(64 * 64, dtype=np.uint16).reshape(64, 64)
    raw = np.zeros(64 * 64, np.uint16)
    r, c = np.meshgrid(np.arange(64), np.arange(64), indexing="ij")
    raw[hl.sw128(r, c)] = tile
    assert np.array_equal(hl.unswizzle_tile(raw, 64), tile)
    assert not np.array_equal(raw.reshape(64, 64), tile)


def _desc(addr, lbo, sbo, row_bytes=128):
    return hl.desc_encode(addr, desc_hi(lbo, sbo, row_bytes))


@pytest.mark.parametrize("addr,lbo,sbo", [(0, 16, 1024), (1024 + 32, 16, 1024),
                                          (227 * 1024 - 16, 0x3FFF0, 0x3FFF0)])
def test_descriptor_fields_round_trip(addr, lbo, sbo):
    d = _desc(addr, lbo, sbo)
    assert isinstance(d, np.uint64)
    assert hl.desc_decode(d) == {"addr": addr, "lbo": lbo, "sbo": sbo, "base_offset": 0,
                                 "swizzle": 1}
    assert hl.desc_decode(hl.desc_encode(addr, hl.SW128_HI)) == {
        "addr": addr, "lbo": 16, "sbo": 1024, "base_offset": 0, "swizzle": 1}


def test_descriptor_bit_positions():
    sw = 1 << 62                                                        # bits 62-63: mode 1
    assert int(_desc(0, 0, 0)) == sw                                    # (128-byte swizzle)
    assert int(_desc(0x10, 0, 0)) == sw | 1                             # bits 0-13: addr>>4
    assert int(_desc(0, 0x10, 0)) == sw | 1 << 16                       # bits 16-29: LBO>>4
    assert int(_desc(0, 0, 0x10)) == sw | 1 << 32                       # bits 32-45: SBO>>4
    assert [int(_desc(0, 0, 0, rb)) >> 62 for rb in (64, 32)] == [2, 3]  # 64-, 32-byte
    # the 18-bit shared window: address bits above it are dropped, not carried
    assert int(_desc(0x40000 + 0x20, 0, 0)) == sw | 2
    # a k16 step of float16 (32 bytes) is +2 in the encoded address
    assert int(_desc(1024 + 32, 16, 1024)) == int(_desc(1024, 16, 1024)) + 2


@pytest.mark.parametrize("n", [64, 128, 256])
def test_accumulator_fragment_covers_the_tile_once(n):
    rows, cols = hl.acc_coords(n)
    flat = (rows * n + cols).ravel()
    assert sorted(flat.tolist()) == list(range(64 * n))
    # warp w owns rows 16w..16w+15; thread 0's first four values: (0,0) (0,1) (8,0) (8,1)
    assert np.array_equal(rows // 16, np.repeat(np.arange(4), 32)[:, None] + 0 * rows)
    assert [(int(rows[0, j]), int(cols[0, j])) for j in range(4)] == [(0, 0), (0, 1), (8, 0),
                                                                      (8, 1)]
    m = np.arange(64 * n, dtype=np.float32).reshape(64, n)
    assert np.array_equal(hl.fragments_to_matrix(m[rows, cols].ravel(), n), m)


@pytest.mark.skipif(ptxcheck.toolkit() is None or not (ptxcheck.toolkit() or {}).get("ptxas"),
                    reason="no CUDA toolkit with libNVVM and ptxas (CUDA_HOME)")
def test_probe_kernels_assemble_for_sm90a():
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gpu", "wgmma_probe.py"),
                        "--offline"], capture_output=True, text=True, env=env, cwd=ROOT,
                       timeout=600)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-4000:]
    assert "offline: ok" in out
    for n in (64, 128, 256):
        assert f"wgmma_peak_n{n} " in out and f"wgmma_check_n{n} " in out
    for name in ("tma_check", "tma_copy", "gemm", "gemm_ws4", "gemm_tma4", "gemm_deep8"):
        assert f"\n{name} " in out
    for n in (16, 32, 64, 128):                                 # the operand-layout part
        assert f"layout_t_n{n} " in out
    spills = re.findall(r"(\d+) bytes spill stores", out)
    assert len(spills) == 19 and set(spills) == {"0"}, out     # no kernel spills
    serialized, kernel = set(), None                            # ptxas' C7515 note
    for line in out.splitlines():
        if line and not line[0].isspace():
            kernel = line.split()[0]
        elif "serialized" in line:
            serialized.add(kernel)
    # the timed kernels keep their wgmmas pipelined (the exactness kernels may not), the
    # warp-specialised one with its wgmma groups in flight across iterations; the variant
    # without a producer warp is serialised (docs/backend.md: it is measured as it is)
    assert not {k for k in serialized
                if "peak" in k or k in ("gemm", "gemm_ws4", "gemm_deep8")}, out
    assert "gemm_tma4" in serialized, out

"""float8/float4 arrays on the Numba backend (``numba_backend/minifloat.py``): a load
decodes its byte through a 256-entry float32 table that the kernel binds once.

Numba makes a constant array at every read of a global NumPy array, so a kernel that
indexed the global table at each load site carried one 1 KiB copy per site: a float8
128 x 128 x 64 matmul has hundreds of sites and failed on an H200 with ptxas' "File uses
too much global constant data (0x20000 bytes, 0x10000 max)".  These tests check the
binding in the generated source and, where a CUDA toolkit is installed, in Numba's PTX.
"""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest
from backend_kernels import mm_kloop

import cutile as ct
from cutile.dtypes import normalize_dtype
from cutile.numba_backend import minifloat, rt


def _ir(d, M=128, N=128, K=128, tiles=(128, 128, 64)):
    args = (np.zeros((M, K), d), np.zeros((K, N), d), np.zeros((M, N), np.float32), *tiles,
            ct.float32)
    return mm_kloop.compile(mm_kloop.specialize(args))


@pytest.mark.parametrize("d", [ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2])
def test_each_decode_table_is_bound_once_and_read_through_the_binding(monkeypatch, d):
    from cutile.numba_backend.compile import generate
    monkeypatch.setattr(rt, "simulator", lambda: False)
    src = generate(_ir(d), 128, "f32", tensor_cores=False).source
    dtype = normalize_dtype(np.dtype(d))
    name, local = minifloat.table_name(dtype), minifloat.local_name(dtype)
    assert src.count(f"{local} = {name}") == 1
    assert src.count(name) == 1                    # the binding is the global's only read
    assert src.count(f"{local}[") >= 128           # every load site goes through it


def test_kernels_without_minifloat_loads_bind_no_table(monkeypatch):
    from cutile.numba_backend.compile import generate
    monkeypatch.setattr(rt, "simulator", lambda: False)
    src = generate(_ir(np.float16), 128, "f32", tensor_cores=False).source
    assert "MFDEC_" not in src and "mfd_" not in src


def _toolkit():
    from diff import ptxcheck
    return ptxcheck.toolkit()


@pytest.mark.skipif(_toolkit() is None, reason="no CUDA toolkit with libNVVM (set CUDA_HOME) "
                    "to compile the generated kernel through Numba")
def test_numba_ptx_holds_one_table_copy(monkeypatch):
    """The float8 matmul that failed on the H200 compiles through Numba with one 1 KiB
    constant table (it had one per load site)."""
    from diff import ptxcheck
    monkeypatch.setattr(rt, "simulator", lambda: False)
    ir = _ir(ml_dtypes.float8_e4m3fn)
    job = ptxcheck.job_for(ir, 128, tensor_cores=False)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    (r,) = ptxcheck.run_in_subprocess([job], root)
    assert r["ok"], r.get("error")
    consts = [ln for ln in r["ptx"].splitlines() if ln.startswith(".const")]
    assert len(consts) == 1 and "[1024]" in consts[0], consts[:3]

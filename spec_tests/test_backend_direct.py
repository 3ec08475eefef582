"""The direct path as launches use it (``cutile/numba_backend/direct.py``, issue 26).

Offline (libNVVM, no GPU): the kernel the direct path builds takes exactly the parameters
Numba's kernel of the same source takes (so ``params.Packer`` packs both), and carries the
same launch bounds.  On a GPU: kernels launched on the Numba backend are compiled by the
direct path, and give the same bits as the same kernels compiled by Numba
(``CUTILE_NUMBA_DIRECT=0``); a kernel it does not cover falls back and says why."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
from diff import nvvmcheck, ptxcheck  # spec_tests/ is on sys.path

import cutile as ct
from cutile.executors import gpu_usable

TK = ptxcheck.toolkit()
needs_nvvm = pytest.mark.skipif(TK is None, reason="no CUDA toolkit (libNVVM)")
needs_gpu = pytest.mark.skipif(not gpu_usable(), reason="needs a CUDA GPU (the direct path "
                               "compiles for a real device; the simulator runs Numba's)")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PARAM = re.compile(r"\.param\s+\.(\w+)\s+\w+")


def _entry_params(ptx: str, name: str) -> list[str]:
    """The PTX types of the parameters of entry ``name``."""
    i = ptx.index(f".entry {name}")
    return _PARAM.findall(ptx[i:ptx.index(")", i)])


def _numba_args(job):
    from numba.cuda import types
    return tuple(types.Array(getattr(types, a[1]), a[2], a[3] if len(a) > 3 else "A")
                 if a[0] == "array" else getattr(types, a[1]) for a in job["args"])


@needs_nvvm
def test_direct_kernels_take_numbas_parameters_and_launch_bounds():
    from cutile.numba_backend import direct
    from cutile.numba_backend.nvvm import emit, nvvmc
    jobs = nvvmcheck.corpus(8, seed=31, bench={"vadd", "softmax", "matmul:f16"})
    jobs = [(n, dict(j, bounds=[128, 2])) for n, j in jobs]
    theirs = ptxcheck.run_in_subprocess([j for _, j in jobs], ROOT)
    compared = 0
    for (name, job), r in zip(jobs, theirs):
        if not r["ok"] and name.startswith("progen") and "driver" in r["error"]:
            continue            # a program whose Numba compile needs a device (e.g. a view)
        assert r["ok"], (name, r.get("error"))
        ptx_numba = r["ptx"]
        entry = re.search(r"\.entry\s+(\w+)", ptx_numba).group(1)
        try:
            ll = emit.translate(job["source"], job["fn"],
                                direct.param_types(_numba_args(job)), 128, 2)
        except direct.Unsupported:
            assert name.startswith("progen"), name
            continue
        ptx = nvvmc.to_ptx(ll, TK["libdevice"], (9, 0))
        assert _entry_params(ptx, job["fn"]) == _entry_params(ptx_numba, entry), name
        for directive in (".maxntid 128, 1, 1", ".minnctapersm 2"):
            assert directive in ptx and directive in ptx_numba, (name, directive)
        compared += 1
    assert compared >= 7, compared


def test_param_types_refuse_what_the_translator_has_no_type_for():
    pytest.importorskip("numba")
    from numba.cuda import types

    from cutile.numba_backend import direct
    assert direct.param_types((types.Array(types.float16, 2, "C"), types.uint8)) == [
        direct.Array("h", 2, "C"), direct.Scalar("B")]
    with pytest.raises(direct.Unsupported):
        direct.param_types((types.complex64,))


@ct.kernel
def _vadd(x, y, out, TILE: ct.Constant[int]):
    b = ct.bid(0)
    a = ct.load(x, index=(b,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    c = ct.load(y, index=(b,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, index=(b,), tile=a * c + a)


@ct.kernel
def _row_softmax(x, out, N: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.load(x, index=(b, 0), shape=(1, N), padding_mode=ct.PaddingMode.NEG_INF)
    e = ct.exp(t - ct.max(t, axis=1, keepdims=True))
    ct.store(out, index=(b, 0), tile=e / ct.sum(e, axis=1, keepdims=True))


@ct.kernel
def _matmul(a, b, c, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(a, axis=1, shape=(TM, TK))):
        x = ct.load(a, index=(i, k), shape=(TM, TK), padding_mode=ct.PaddingMode.ZERO)
        y = ct.load(b, index=(k, j), shape=(TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(x, y, acc)
    ct.store(c, index=(i, j), tile=acc)


def _cases(rng):
    n = 5000
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    yield "vadd", _vadd, (-(-n // 1024),), (x, y, np.zeros(n, np.float32), 1024)
    s = rng.standard_normal((37, 200)).astype(np.float32)
    yield "softmax", _row_softmax, (37,), (s, np.zeros_like(s), 256)
    a = rng.standard_normal((200, 150)).astype(np.float16)
    b = rng.standard_normal((150, 130)).astype(np.float16)
    yield "matmul", _matmul, (4, 3), (a, b, np.zeros((200, 130), np.float32), 64, 64, 32)


@needs_gpu
def test_launches_take_the_direct_path_and_match_numbas_bits(monkeypatch):
    from cutile.testing import run_on
    monkeypatch.setenv("CUTILE_CACHE", "0")     # compile both ways (the cubin key is shared)
    for name, kern, grid, args in _cases(np.random.default_rng(7)):
        got = {}
        for flag in ("0", "1"):
            monkeypatch.setenv("CUTILE_NUMBA_DIRECT", flag)
            got[flag] = run_on(kern, grid, args, "numba")
            info = kern.inspect(*args, grid=grid)
            assert (info.compile_path == "direct") == (flag == "1"), (name, info.compile_path)
        for arr, p in got["0"].arrays.items():
            q = got["1"].arrays[arr]
            assert np.array_equal(p.view(np.uint8), q.view(np.uint8)), (name, arr)
            assert got["1"].guard_ok[arr], (name, arr)


def _nvjitlink() -> bool:
    try:
        from cuda.bindings import nvjitlink
        nvjitlink.version()
        return True
    except Exception:
        return False


@needs_nvvm
@pytest.mark.skipif(not _nvjitlink(), reason="no nvJitLink (the link numba-cuda uses for "
                    "LTO-IR; pip install nvidia-nvjitlink)")
def test_lto_link_keeps_the_kernel():
    """Linked as numba-cuda links (LTO-IR through nvJitLink), the kernel is in the cubin: an
    LTO link drops a kernel not listed in ``@llvm.used`` (every direct launch failed with
    CUDA_ERROR_NOT_FOUND on the H200 until it was)."""
    from cuda.core import Linker, LinkerOptions, ObjectCode

    from cutile.numba_backend.nvvm import emit, nvvmc
    from cutile.numba_backend.nvvm import types as T
    (_, job), = nvvmcheck.corpus(0, bench={"vadd"})
    ll = emit.translate(job["source"], job["fn"], [T.from_job_arg(a) for a in job["args"]])
    obj = ObjectCode.from_ltoir(nvvmc.to_ltoir(ll, TK["libdevice"], (9, 0)), name="k")
    cubin = Linker(obj, options=LinkerOptions(arch="sm_90", link_time_optimization=True)
                   ).link("cubin")
    assert job["fn"].encode() in bytes(cubin.code)


@needs_nvvm
@pytest.mark.skipif(TK is None or not TK["ptxas"], reason="no ptxas in the CUDA toolkit")
def test_whole_program_cubin_from_ptxas(monkeypatch):
    """The direct path assembles with the toolkit's ``ptxas`` as one whole program (an ELF
    cubin), and gives up (None: linked as numba-cuda links instead) when ``ptxas`` refuses."""
    from cutile.numba_backend import direct
    from cutile.numba_backend.nvvm import emit, nvvmc
    from cutile.numba_backend.nvvm import types as T
    monkeypatch.setenv("PATH", os.path.dirname(TK["ptxas"]) + os.pathsep + os.environ["PATH"])
    direct._ptxas.cache_clear()
    try:
        (_, job), = nvvmcheck.corpus(0, bench={"vadd"})
        ll = emit.translate(job["source"], job["fn"], [T.from_job_arg(a) for a in job["args"]])
        cubin = direct._whole_program_cubin(nvvmc.to_ptx(ll, TK["libdevice"], (9, 0)), (9, 0))
        assert cubin[:4] == b"\x7fELF" and job["fn"].encode() in cubin
        assert direct._whole_program_cubin(".version 99.0\n.target sm_90\n", (9, 0)) is None
    finally:
        direct._ptxas.cache_clear()

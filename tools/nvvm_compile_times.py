"""Offline compile time of the direct NVVM path against Numba's, per kernel (issue 26).

For vector add, softmax and the float16 matmul (tools/source_digest.py's arguments, T=128,
tensor cores on): Numba's path (``cuda.compile_ptx`` of the generated source with cutile's
typing memo: bytecode, typing, lowering, NVVM) and the direct path (``nvvm/emit.translate``
then libNVVM), each followed by ptxas for sm_90; CPU seconds of this process (wall for
ptxas).  Each kernel is compiled once first for warm-up (imports, libdevice), then timed.
Needs the CUDA toolkit; runs without a GPU and without the simulator.

    python3 tools/nvvm_compile_times.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "spec_tests")]
os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
os.environ["NUMBA_FORCE_CUDA_CC"] = "9.0"


def _ptxas(tk, ptx: str) -> float:
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "k.ptx")
        with open(p, "w") as f:
            f.write(ptx)
        t = time.perf_counter()
        subprocess.run([tk["ptxas"], "-arch=sm_90", p, "-o", os.path.join(d, "k.o")],
                       check=True, capture_output=True)
        return time.perf_counter() - t


def _numba(job, tk):
    from numba import cuda
    from numba.cuda import types

    from cutile.numba_backend import numba_speedups, rt
    args = [types.Array(getattr(types, a[1]), a[2], a[3] if len(a) > 3 else "A")
            if a[0] == "array" else getattr(types, a[1]) for a in job["args"]]
    ns = rt.namespace()
    exec(compile(job["source"], "<gen>", "exec"), ns)
    with numba_speedups.typing_memo():
        ptx, _ = cuda.compile_ptx(ns[job["fn"]], tuple(args), cc=(9, 0),
                                  launch_bounds=tuple(job["bounds"]) or None)
    return ptx


def _direct(job, tk):
    from cutile.numba_backend.nvvm import emit, nvvmc
    from cutile.numba_backend.nvvm import types as T
    t = time.process_time()
    ll = emit.translate(job["source"], job["fn"], [T.from_job_arg(a) for a in job["args"]],
                        (job["bounds"] or [None])[0])
    t1 = time.process_time()
    ptx = nvvmc.to_ptx(ll, tk["libdevice"])
    return ptx, t1 - t, time.process_time() - t1


def main() -> int:
    from diff import nvvmcheck, ptxcheck
    tk = ptxcheck.toolkit()
    if tk is None:
        print("no CUDA toolkit (libNVVM): nothing to time")
        return 1
    ptxcheck._setup_numba(tk)
    from cutile import config
    from cutile.numba_backend import numba_speedups
    if config.numba_speedups():
        numba_speedups.apply()
    jobs = nvvmcheck.corpus(0, bench={"vadd", "softmax", "matmul:f16"})
    print(f"{'kernel':12} {'numba->PTX':>11} {'ptxas':>7} | {'translate':>9} {'NVVM':>7} "
          f"{'ptxas':>7} | {'total numba':>11} {'total direct':>12}")
    for name, job in jobs:
        _numba(job, tk)
        _direct(job, tk)
        t = time.process_time()
        ptx_n = _numba(job, tk)
        tn = time.process_time() - t
        pn = _ptxas(tk, ptx_n)
        ptx_d, tt, tv = _direct(job, tk)
        pd = _ptxas(tk, ptx_d)
        print(f"{name:12} {tn:11.3f} {pn:7.3f} | {tt:9.3f} {tv:7.3f} {pd:7.3f} | "
              f"{tn + pn:11.3f} {tt + tv + pd:12.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The corpus and Numba's answers for the direct NVVM path's tests (test_backend_nvvm.py).

The corpus: the benchmark kernels of ``tools/source_digest.py`` (tensor cores on, T=128) and
random programs of ``progen`` (fixed seed), each as a ``ptxcheck.job_for`` job (generated
source, parameter types).  ``numba_typemaps`` runs Numba's typing only (its untyped passes and
type inference, stopped before lowering, so it costs a fraction of a compile) in a fresh
process without the simulator, and returns, per job, the set of Numba types each source
variable takes (``x``, ``x.1``, ``x.2``: Numba's SSA versions of ``x``).
"""

from __future__ import annotations

import os
import sys

from . import ptxcheck

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def corpus(n_programs: int, seed: int = 25, bench=True) -> list:
    """[(name, job)]: generated for a GPU (not the simulator's source); ``bench``: all the
    benchmark kernels (True), none (False) or those named (a set: "vadd", "matmul:f16")."""
    sys.path[:0] = [os.path.join(ROOT, "tools"), os.path.join(ROOT, "benchmarks")]
    import source_digest as sd

    from cutile.numba_backend import rt

    from . import ptxcheck
    real = rt.simulator
    rt.simulator = lambda: False
    out = []
    try:
        cases = [c for c in sd._bench_cases() if bench is True or bench and c[0] in bench]
        for name, k, args in cases:
            out.append((name, ptxcheck.job_for(k.compile(k.specialize(tuple(args))), 128,
                                               tensor_cores=True)))
        for name, k, args in (sd._programs(n_programs, seed) if n_programs else ()):
            try:
                ir = k.compile(k.specialize(tuple(args)))
                out.append((name, ptxcheck.job_for(ir, 128, tensor_cores=False)))
            except Exception:  # noqa: BLE001 - a program the backend refuses has no source
                continue
    finally:
        rt.simulator = real
    return out


_WORKER = r'''
import json, sys, numpy as np
sys.path.insert(0, sys.argv[1])
from spec_tests.diff import ptxcheck
tk = ptxcheck.toolkit()
ptxcheck._setup_numba(tk)
from numba.cuda import types
from numba.cuda.core import typed_passes
from numba.cuda.compiler import compile_cuda
from cutile.numba_backend import numba_speedups, rt
numba_speedups.apply()

class Stop(Exception):
    pass

seen = {}
real = typed_passes.NopythonTypeInference.run_pass
def run_pass(self, state):
    real(self, state)
    seen["typemap"] = dict(state.typemap)
    raise Stop()
typed_passes.NopythonTypeInference.run_pass = run_pass
out = []
for job in json.loads(sys.stdin.read()):
    args = [types.Array(getattr(types, a[1]), a[2], a[3] if len(a) > 3 else "A")
            if a[0] == "array" else getattr(types, a[1]) for a in job["args"]]
    ns = rt.namespace()
    exec(compile(job["source"], "<gen>", "exec"), ns)
    seen.clear()
    try:
        with numba_speedups.typing_memo():
            compile_cuda(ns[job["fn"]], None, tuple(args), cc=(9, 0))
    except Stop:
        pass
    except Exception as e:
        out.append({"error": f"{type(e).__name__}: {e}"[:2000]})
        continue
    names = {}
    for k, t in seen["typemap"].items():
        if k.startswith("$") or k.startswith("arg."):
            continue
        base = k.split(".")[0]
        names.setdefault(base, set()).add(str(types.unliteral(t)))
    out.append({"types": {k: sorted(v) for k, v in names.items()}})
print(json.dumps(out))
'''


def numba_typemaps(jobs: list) -> list:
    """Per job: {"types": {variable: [Numba type, ...]}} or {"error": message}."""
    return ptxcheck.run_in_subprocess(jobs, ROOT, worker=_WORKER)

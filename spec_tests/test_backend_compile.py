"""Compile time of the Numba backend (issue 22, docs/backend.md "Compile time").

- ``compile_stages``: the stage timer records only inside ``recording()``, nested stages and
  the frontend included; ``benchmarks/compile.py`` turns the records into exclusive times;
- ``numba_speedups``: its fixes to Numba (linear singly-assigned scan, typing memo, plain
  error messages) leave the LLVM IR of generated kernels unchanged and the memo does reuse
  resolutions.  Checked in a child process without the simulator, through Numba's typing and
  lowering only (no libNVVM or GPU needed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import cutile as ct
from cutile import compile_stages

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_stages_recorded_only_inside_recording():
    with compile_stages.stage("outside"):
        pass
    compile_stages.add("outside too", 1.0, 1.0)

    @ct.kernel
    def k(a, T: ct.Constant[int]):
        ct.store(a, (ct.bid(0),), ct.load(a, (ct.bid(0),), (T,)) + 1)

    with compile_stages.recording() as rec:
        with compile_stages.stage("outer"):
            with compile_stages.stage("inner"):
                pass
        k.compile(k.specialize((np.zeros(8, np.float32), 8)))
    names = [r[0] for r in rec]
    assert names == ["inner", "outer", "frontend (IR)"]
    assert all(w >= 0 and c >= 0 for _, w, c in rec)
    with compile_stages.recording() as again:
        k.compile(k.specialize((np.zeros(8, np.float32), 8)))     # cached: no stage
    assert again == []


def test_benchmark_summary_subtracts_nested_stages():
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        import compile as bench
    finally:
        sys.path.pop(0)
    rec = [("numba typing", 1.0, 0.5), ("nvvm", 0.5, 0.25), ("ptxas", 0.25, 0.25),
           (bench.NUMBA_COMPILE, 2.0, 1.0), (bench.LINK_LOAD, 0.5, 0.5),
           ("frontend (IR)", 0.1, 0.1)]
    got = bench.summarise(rec)
    assert got["numba other"] == [0.5, 0.25]
    assert got["launch other"] == [0.25, 0.25]          # link + load less ptxas
    assert bench.NUMBA_COMPILE not in got and bench.LINK_LOAD not in got
    assert got["frontend (IR)"] == [0.1, 0.1]


_CHILD = r'''
import json, re, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import cutile as ct
from numba.core import types
from numba.core.types import functions as F
from numba.cuda import lowering
from numba.cuda.compiler import compile_cuda
from cutile.ir.types import ArrayType
from cutile.numba_backend import numba_speedups as S
from cutile.numba_backend.compile import compile_kernel, full_tiles
from cutile.numba_backend.params import argument_types

@ct.kernel
def rows(x, y, TN: ct.Constant[int]):
    t = ct.load(x, (ct.bid(0), 0), (2, TN), padding_mode=ct.PaddingMode.NEG_INF)
    m = ct.max(t, axis=1, keepdims=True)
    e = ct.exp(t - m)
    ct.store(y, (ct.bid(0), 0), ct.where(e > 0.5, e / ct.sum(e, axis=1, keepdims=True), m))

@ct.kernel
def loop(a, b, c, T: ct.Constant[int]):
    acc = ct.zeros((T, T), dtype=ct.float32)
    for k in range(ct.num_tiles(a, 1, (T, T))):
        acc = ct.mma(ct.load(a, (ct.bid(0), k), (T, T)), ct.load(b, (k, 0), (T, T)), acc)
    ct.store(c, (ct.bid(0), 0), acc)

def compiled(kern, args):
    spec = kern.specialize(args)
    ir = kern.compile(spec)
    ck = compile_kernel(ir, 32, None, full_tiles(ir, 32, None, spec.leaves))
    n = sum(isinstance(p.type, ArrayType) for p in ir.params)
    sig = argument_types(ir, len(ck.strides_used), ("C",) * n, bool(ck.asserts))
    return ck.dispatcher.py_func, sig

def llvm(fn, sig):
    with S.typing_memo():
        cres = compile_cuda(fn, types.void, sig, cc=(9, 0), nvvm_options={"opt": 3})
    ir = cres.library.get_llvm_str()
    # compile counters and shared-array serials differ between two compiles of one function
    ir = re.sub(r"\$\d+", "$N", ir)
    ir = re.sub(r"B\d+v\d+B", "BvB", ir)
    return re.sub(r"_cudapy_smem_\d+", "smem", ir)

f32 = np.float32
jobs = [compiled(rows, (np.zeros((4, 32), f32), np.zeros((4, 32), f32), 32)),
        compiled(loop, (np.zeros((32, 32), f32), np.zeros((32, 32), f32),
                        np.zeros((32, 32), f32), 8))]
orig = (F.BaseFunction.get_call_type, lowering.Lower._find_singly_assigned_variable)
calls = [0]
def counting(self, *a):
    calls[0] += 1
    return orig[0](self, *a)
F.BaseFunction.get_call_type = counting
before = [llvm(*j) for j in jobs]
plain_calls = calls[0]
F.BaseFunction.get_call_type = orig[0]
applied = S.apply()
# count the calls that reach Numba's own resolution under the memo
inner = F.BaseFunction.get_call_type
if hasattr(inner, "__wrapped__"):
    F.BaseFunction.get_call_type = S._memo_get_call_type(counting)
calls[0] = 0
after = [llvm(*j) for j in jobs]
print("RESULT " + json.dumps({"applied": applied, "same": [a == b for a, b in zip(before, after)],
                              "plain_calls": plain_calls, "memo_calls": calls[0]}))
'''


def test_numba_speedups_keep_llvm_ir(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["CUTILE_NUMBA_TENSOR_CORES"] = "0"
    script = tmp_path / "child.py"          # a file: the frontend reads the kernels' source
    script.write_text(_CHILD)
    p = subprocess.run([sys.executable, str(script), ROOT], capture_output=True, text=True,
                       env=env, cwd=ROOT, timeout=600)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, p.stderr[-3000:]
    res = json.loads(lines[-1][len("RESULT "):])
    missing = [k for k, v in res["applied"].items() if not v and k != "messages"]
    if missing:
        pytest.skip(f"installed Numba's {', '.join(missing)} code differs from the source "
                    "numba_speedups.py was written against (fix not installed)")
    assert res["same"] == [True, True]
    assert 0 < res["memo_calls"] < res["plain_calls"] / 2

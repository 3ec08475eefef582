"""Compile generated kernels with the real Numba CUDA compiler (typing + NVVM -> PTX) on a
machine without a GPU, when a CUDA toolkit with libNVVM is installed.

The simulator runs generated source as plain Python, so it cannot see Numba typing errors or
what NVVM does to the arithmetic (FMA contraction).  This helper closes that gap for tests.
It must run in a process *without* NUMBA_ENABLE_CUDASIM (see ``run_in_subprocess``).
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys


def toolkit() -> dict | None:
    """Paths of libNVVM, libdevice and ptxas, or None."""
    roots = [os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"] + sorted(
        glob.glob("/usr/local/cuda-*"), reverse=True)
    for root in roots:
        if not root:
            continue
        nvvm = glob.glob(os.path.join(root, "lib*", "libnvvm.so*")) + glob.glob(
            os.path.join(root, "nvvm", "lib*", "libnvvm.so*"))
        libdevice = glob.glob(os.path.join(root, "nvvm", "libdevice", "libdevice*.bc"))
        if nvvm and libdevice:
            ptxas = os.path.join(root, "bin", "ptxas")
            return {"root": root, "nvvm": nvvm[0], "libdevice": libdevice[0],
                    "ptxas": ptxas if os.path.exists(ptxas) else None}
    return None


def _setup_numba(tk: dict) -> None:
    """Point numba-cuda at the toolkit without NVRTC (test-only: fills its path cache)."""
    import collections
    os.environ.setdefault("NUMBA_FORCE_CUDA_CC", "9.0")
    from numba.cuda import cuda_paths
    P = collections.namedtuple("P", "by info")
    cuda_paths.get_cuda_paths._cached_result = {
        "nvrtc": P("test", None), "nvvm": P("test", tk["nvvm"]),
        "libdevice": P("test", tk["libdevice"]),
        "cudalib_dir": P("test", os.path.join(tk["root"], "lib")),
        "static_cudalib_dir": P("test", os.path.join(tk["root"], "lib")),
        "include_dir": P("test", os.path.join(tk["root"], "include"))}


def compile_source(source: str, fn_name: str, consts: dict, arg_types: list, tk: dict,
                   launch_bounds: tuple | None = None, llvm: bool = False):
    """PTX of a generated kernel for sm_90 (with the backend's ``launch_bounds``), ptxas'
    register count (or None) and, with ``llvm``, the LLVM IR Numba hands NVVM (else None)."""
    _setup_numba(tk)
    from numba import cuda

    from cutile import config
    from cutile.numba_backend import numba_speedups, rt
    if config.numba_speedups():             # as compile.py compiles: with the same fixes
        numba_speedups.apply()
    ns = rt.namespace()
    ns.update(consts)
    exec(compile(source, "<gen>", "exec"), ns)
    from numba.cuda.compiler import compile_cuda
    with numba_speedups.typing_memo():
        ptx, _ = cuda.compile_ptx(ns[fn_name], tuple(arg_types), cc=(9, 0),
                                  launch_bounds=launch_bounds)
        if llvm:
            llvm = compile_cuda(ns[fn_name], None, tuple(arg_types),
                                cc=(9, 0)).library.get_llvm_str()
    regs = None
    if tk["ptxas"]:
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "k.ptx")
            with open(p, "w") as f:
                f.write(ptx)
            out = subprocess.run([tk["ptxas"], "-arch=sm_90", "-v", p, "-o",
                                  os.path.join(d, "k.o")], capture_output=True, text=True)
            import re
            m = re.search(r"Used (\d+) registers", out.stderr + out.stdout)
            regs = int(m.group(1)) if m else None
    return ptx, regs, llvm


_WORKER = r'''
import json, sys, numpy as np
sys.path.insert(0, sys.argv[1])
from numba import types
from spec_tests.diff import ptxcheck
req = json.loads(sys.stdin.read())
tk = ptxcheck.toolkit()
out = []
for job in req:
    args = []
    for a in job["args"]:
        if a[0] == "array":
            args.append(types.Array(getattr(types, a[1]), a[2], a[3] if len(a) > 3 else "A"))
        else:
            args.append(getattr(types, a[1]))
    consts = {k: np.array(v[0], dtype=v[1]) for k, v in job["consts"].items()}
    try:
        ptx, regs, llvm = ptxcheck.compile_source(job["source"], job["fn"], consts, args, tk,
                                                  tuple(job["bounds"]) or None,
                                                  bool(job.get("llvm")))
        out.append({"ok": True, "ptx": ptx, "regs": regs, "llvm": llvm or None})
    except Exception as e:
        out.append({"ok": False, "error": f"{type(e).__name__}: {e}"})
print(json.dumps(out))
'''


def run_in_subprocess(jobs: list, repo_root: str, worker: str = _WORKER) -> list:
    """Compile jobs ``{"source", "fn", "consts", "args"}`` in a fresh non-simulator process
    (``worker``: the script that reads the jobs as JSON on stdin and prints its results as one
    JSON line; nvvmcheck.py passes its typing-only one)."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["NUMBA_FORCE_CUDA_CC"] = "9.0"
    p = subprocess.run([sys.executable, "-c", worker, repo_root], input=json.dumps(jobs),
                       capture_output=True, text=True, env=env, cwd=repo_root, timeout=900)
    if p.returncode != 0:
        raise RuntimeError(p.stderr[-4000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def job_for(ir, T: int, mma_acc: str = "f32", tensor_cores: bool | None = None,
            full: frozenset = frozenset(), smem_limit: int | None = None) -> dict:
    """A compile job for a specialised kernel (generated here, compiled in the worker);
    ``full``: full-tile facts (numba_backend/fulltile.py); ``smem_limit``: shared memory the
    plan may use (smaller: buffers in the global workspace, smem.py)."""
    from cutile.ir.types import ArrayType
    from cutile.numba_backend.codegen import kernel_fn_name
    from cutile.numba_backend.compile import generate
    from cutile.numba_backend.params import storage_bits
    from cutile.numba_backend.threads import launch_bounds
    gen = generate(ir, T, mma_acc, tensor_cores=tensor_cores, full=full,
                   smem_limit=smem_limit)
    args = []
    for p in ir.params:
        if isinstance(p.type, ArrayType):
            bits = storage_bits(p.type.dtype)     # bfloat16/float8 arrays travel as bits
            name = f"uint{bits}" if bits else p.type.dtype.np_dtype.name
            args.append(["array", name.replace("bool", "boolean"), p.type.ndim])
        else:
            n = p.type.dtype.np_dtype.name
            args.append(["scalar", "boolean" if n == "bool" else n])
    args += [["scalar", "int32"]] * 3
    args += [["scalar", "int64"]] * len(gen.strides_used)
    if gen.ws is not None:                              # the TMA maps' address (tma.py)
        args.append(["scalar", "int64"])
    if gen.asserts:                                     # the assert_ record (lower/debug.py)
        args.append(["array", "int64", 1])
    from cutile.numba_backend.smem import NP_DTYPE
    args += [["array", NP_DTYPE[c], 2, "C"] for c in gen.smem.scratch_casts]  # workspace
    consts = {k: [v.tolist(), v.dtype.str] for k, v in gen.consts.items()}
    return {"source": gen.source, "fn": kernel_fn_name(ir), "consts": consts, "args": args,
            "bounds": list(launch_bounds(ir, gen.block_threads) or ())}

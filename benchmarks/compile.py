"""Where the Numba backend's compile time goes, stage by stage, beside the real cuTile (issue 22).

    python benchmarks/compile.py [--only vadd,matmul,reduce] [--mode auto|gpu|offline]
                                 [--no-cutile-ref] [--timeout 900] [--cpu] [--json FILE]

Each workload runs in a fresh child process with the on-disk kernel cache off
(``CUTILE_CACHE=0``; ``CUDA_TILE_CACHE_DIR=off`` for cuda.tile), and compiles two
specialisations of one kernel: the first pays the process's one-time costs, the second only
what every new specialisation pays.

- ``vadd``: vector add, float32, TILE 1024 then 512;
- ``matmul``: float16 operands, float32 accumulator and output, 128x128x64 tiles then 64x64x32;
- ``reduce``: a row maximum of a (16, 128) tile per block (the shape of NVIDIA's reduction
  tests), float32 then int32.

Stages (seconds; ``--cpu`` prints this process's CPU seconds instead, the steadier number on a
shared machine): the imports, then per specialisation cutile's own stages (``compile_stages``:
frontend, plan + source generation, ``exec`` + ``cuda.jit``, cache key) and Numba's, taken with
hooks installed in the child only: its untyped passes (bytecode -> Numba IR, SSA, rewrites),
typing (type inference and typed rewrites), lowering to LLVM IR, NVVM (LLVM IR -> PTX), then
PTX -> cubin (the driver's linker on a GPU, ``ptxas`` offline) and the module load (GPU only).

Modes: ``gpu`` launches for real (``ct.launch`` on PyTorch tensors when PyTorch is there, Numba
device arrays otherwise), also times each first launch end to end (imports and the CUDA context
done before; result checked) and, where ``cuda.tile`` imports, the same kernels on it, with
the ratios.  ``offline`` needs no GPU: the generated kernel is compiled for sm_90 with
``numba.cuda.compile_ptx`` (libNVVM: ``CUDA_HOME`` or a pip wheel such as
``nvidia-cuda-nvcc``; the child sets ``NUMBA_FORCE_CUDA_CC=9.0`` so that NVRTC is not needed)
and PTX -> cubin is timed with ``ptxas`` when it is found; without libNVVM it stops at Numba's
LLVM IR and says which stages it could not run.  ``auto``: ``gpu`` when a GPU is usable.
"""

# no "from __future__ import annotations": the kernels' ct.Constant annotations must be
# evaluated objects (they refer to the ct module passed in)

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TAG = "COMPILESTAGES "
WORKLOADS = ("vadd", "matmul", "reduce")

# rows of the table, in order: (key, label); "|" marks stages nested in the one above
PROCESS_ROWS = [("import cutile", "import numpy + cutile"),
                ("import numba.cuda", "import numba.cuda"),
                ("cuda context", "CUDA context (first device array)"),
                ("import cuda.tile", "import cuda.tile")]
SPEC_ROWS = [
    ("frontend (IR)", "frontend: AST -> typed IR"),
    ("plan + source (assign.py, codegen.py)", "plan + source generation"),
    ("plan (assign.py)", "| of which layout + mma plans"),
    ("exec + cuda.jit", "exec source + cuda.jit"),
    ("cache key", "disk-cache key (hashing)"),
    ("direct translate", "direct path: source -> NVVM IR (nvvm/)"),
    ("direct nvvm", "direct path: libNVVM -> PTX"),
    ("numba untyped", "Numba: bytecode -> IR, SSA, rewrites"),
    ("numba typing", "Numba: typing"),
    ("numba lowering", "Numba: lowering -> LLVM IR"),
    ("nvvm", "NVVM: LLVM IR -> PTX"),
    ("numba other", "Numba: other (fixups, IR text)"),
    ("ptxas", "PTX -> cubin (ptxas / driver link)"),
    ("module load", "module load"),
    ("launch other", "other (marshal, variant, launch)"),
]
NUMBA_COMPILE = "numba compile (typing, lowering, NVVM)"
LINK_LOAD = "link + load (PTX -> cubin, module load)"


# -- kernels ---------------------------------------------------------------------------------
def make_kernels(ct):
    """The workloads' kernels written once against the cuTile API module ``ct``."""
    sys.path.insert(0, HERE)
    from gpu import make_kernels as bench_kernels
    ks = bench_kernels(ct)

    @ct.kernel
    def rowmax(x, out, B: ct.Constant[int], N: ct.Constant[int]):
        blk = ct.bid(0)
        tile = ct.load(x, index=(blk, 0), shape=(B, N))
        ct.store(out, index=(blk,), tile=ct.max(tile, axis=1))

    return {"vadd": ks["vadd"], "matmul": ks["matmul"], "reduce": rowmax}


def specs(workload: str, np):
    """[(label, kernel name, host args, grid, output index, reference)] of a workload."""
    rng = np.random.default_rng(0)
    out = []
    if workload == "vadd":
        n = 1 << 20
        for tile in (1024, 512):
            a, b = (rng.standard_normal(n, dtype=np.float32) for _ in range(2))
            out.append((f"TILE {tile}", "vadd", [a, b, np.zeros_like(a), tile], (n // tile,),
                        2, a + b))
    elif workload == "matmul":
        s = 512
        for tm, tn, tk in ((128, 128, 64), (64, 64, 32)):
            a, b = (rng.standard_normal((s, s)).astype(np.float16) for _ in range(2))
            ref = a.astype(np.float32) @ b.astype(np.float32)
            out.append((f"{tm}x{tn}x{tk}", "matmul",
                        [a, b, np.zeros((s, s), np.float32), tm, tn, tk], (s // tm, s // tn),
                        2, ref))
    elif workload == "reduce":
        for dt in (np.float32, np.int32):
            x = (rng.standard_normal((512, 128)) * 100).astype(dt)
            out.append((np.dtype(dt).name, "reduce", [x, np.zeros(512, dt), 16, 128], (32,), 1,
                        x.max(axis=1)))
    else:
        raise SystemExit(f"unknown workload {workload!r} (known: {', '.join(WORKLOADS)})")
    return out


# -- hooks (child only) ----------------------------------------------------------------------
def _timed(fn, name):
    from cutile import compile_stages

    def wrapper(*a, **k):
        w, c = time.perf_counter(), time.process_time()
        try:
            return fn(*a, **k)
        finally:
            compile_stages.add(name, time.perf_counter() - w, time.process_time() - c)
    wrapper.__wrapped__ = fn
    return wrapper


def install_hooks(gpu: bool) -> None:
    """Time Numba's passes (outermost pipeline only: a device function compiled while typing
    counts as typing), NVVM, the driver's link and the module load; and assign.py's calls."""
    from numba.cuda.core import compiler_machinery as cm
    from numba.cuda.cudadrv import nvvm

    from cutile import compile_stages
    typed = {"nopython_type_inference", "strip_phis", "inline_overloads", "nopython_rewrites"}
    depth = [0]
    run_pass = cm.PassManager._runPass

    def _runPass(self, index, pss, state):
        if depth[0]:
            return run_pass(self, index, pss, state)
        name = pss.name()
        if name in typed:
            cat = "numba typing"
        elif any(w in name for w in ("lowering", "legaliz", "backend", "annotate", "feature")):
            cat = "numba lowering"
        else:
            cat = "numba untyped"
        depth[0] += 1
        w, c = time.perf_counter(), time.process_time()
        try:
            return run_pass(self, index, pss, state)
        finally:
            depth[0] -= 1
            compile_stages.add(cat, time.perf_counter() - w, time.process_time() - c)
    cm.PassManager._runPass = _runPass
    nvvm.compile_ir = _timed(nvvm.compile_ir, "nvvm")
    if gpu:
        from numba.cuda.cudadrv import driver
        driver._Linker.complete = _timed(driver._Linker.complete, "ptxas")
        driver.load_module_image = _timed(driver.load_module_image, "module load")
    # the layout and matmul plans: the time inside their methods (outermost calls only)
    from cutile.numba_backend import assign, irindex, mma_plan
    adepth = [0]

    def wrap_method(fn):
        def m(*a, **k):
            if adepth[0]:
                return fn(*a, **k)
            adepth[0] += 1
            w, c = time.perf_counter(), time.process_time()
            try:
                return fn(*a, **k)
            finally:
                adepth[0] -= 1
                compile_stages.add("plan (assign.py)", time.perf_counter() - w,
                                   time.process_time() - c)
        return m
    for cls in (assign.Assignment, irindex.IRIndex, mma_plan.MmaPlanner):
        for k, v in list(vars(cls).items()):
            if callable(v) and not isinstance(v, (staticmethod, classmethod, type)):
                setattr(cls, k, wrap_method(v))


def summarise(records: list) -> dict:
    """{stage: [wall, cpu]} with the umbrella stages replaced by their unexplained rest."""
    tot: dict = {}
    for name, w, c in records:
        t = tot.setdefault(name, [0.0, 0.0])
        t[0] += w
        t[1] += c

    def rest(parent, children, into):
        if parent in tot:
            p = tot.pop(parent)
            for i in range(2):
                p[i] -= sum(tot.get(ch, [0.0, 0.0])[i] for ch in children)
            tot[into] = [max(0.0, x) for x in p]
    rest(NUMBA_COMPILE, ["numba untyped", "numba typing", "numba lowering", "nvvm"],
         "numba other")
    rest(LINK_LOAD, ["ptxas", "module load"], "link other")
    if "link other" in tot:                 # cuda.core's ObjectCode/kernel lookups: small
        lo = tot.pop("link other")
        t = tot.setdefault("launch other", [0.0, 0.0])
        t[0] += lo[0]
        t[1] += lo[1]
    return tot


# -- child -----------------------------------------------------------------------------------
def child_cutile(workload: str, mode: str) -> dict:
    res: dict = {"impl": "cutile", "workload": workload, "process": {}, "specs": [],
                 "missing": []}
    w, c = time.perf_counter(), time.process_time()
    import numpy as np

    import cutile as ct
    res["process"]["import cutile"] = [time.perf_counter() - w, time.process_time() - c]
    from cutile import compile_stages
    from cutile.executors import backend
    w, c = time.perf_counter(), time.process_time()
    from numba import cuda
    res["process"]["import numba.cuda"] = [time.perf_counter() - w, time.process_time() - c]
    if mode == "auto":
        mode = "gpu" if cuda.is_available() else "offline"
    res["mode"] = mode
    nvvm_ok = True
    if mode == "offline":
        try:
            from numba.cuda import cuda_paths
            cuda_paths.get_cuda_paths()
        except Exception:           # no NVRTC (numba-cuda asks it for the arch list only):
            sys.path.insert(0, ROOT)        # point Numba at a toolkit's NVVM as the tests do
            from spec_tests.diff import ptxcheck
            tk = ptxcheck.toolkit()
            if tk is not None:
                ptxcheck._setup_numba(tk)
        try:
            from numba.cuda.cudadrv import nvvm
            nvvm.NVVM()
        except Exception as e:
            nvvm_ok = False
            res["missing"].append(f"NVVM, PTX -> cubin and module load (no libNVVM: "
                                  f"{type(e).__name__}: {str(e).splitlines()[0][:120]})")
        res["missing"].append("module load and the launch itself (no GPU)")
    install_hooks(mode == "gpu")
    ks = make_kernels(ct)
    torch = None
    if mode == "gpu":
        try:
            import torch
            if not torch.cuda.is_available():
                torch = None
        except ImportError:
            torch = None
        w, c = time.perf_counter(), time.process_time()
        if torch is not None:
            torch.zeros(1, device="cuda")
            torch.cuda.synchronize()
        else:
            cuda.to_device(np.zeros(1))
            cuda.synchronize()
        res["process"]["cuda context"] = [time.perf_counter() - w, time.process_time() - c]
        res["arrays"] = "torch" if torch is not None else "numba"
    ptxas = _find_ptxas() if mode == "offline" and nvvm_ok else None
    if mode == "offline" and nvvm_ok and ptxas is None:
        res["missing"].append("PTX -> cubin (no ptxas: set CUDA_HOME)")
    for label, kname, args, grid, out_i, ref in specs(workload, np):
        kern = ks[kname]
        with compile_stages.recording() as rec:
            w, c = time.perf_counter(), time.process_time()
            if mode == "gpu":
                ok = _launch_gpu(ct, backend, kern, args, grid, out_i, ref, torch, np)
            else:
                ok = None
                lowered = _compile_offline(kern, args, nvvm_ok, ptxas)
            total = [time.perf_counter() - w, time.process_time() - c]
        st = summarise(rec)
        if mode == "offline" and not lowered:
            for k in ("numba lowering", "numba other"):
                st.pop(k, None)
            note = "Numba lowering (numba-cuda reads the LLVM data layout from libNVVM)"
            if note not in res["missing"]:
                res["missing"].append(note)
        if mode == "gpu":
            known = [sum(v[i] for k, v in st.items() if k != "plan (assign.py)")
                     for i in range(2)]
            extra = st.setdefault("launch other", [0.0, 0.0])
            for i in range(2):
                extra[i] += max(0.0, total[i] - known[i])
        res["specs"].append({"label": label, "stages": st, "total": total, "ok": ok})
    if mode == "gpu":
        from cutile.numba_backend import direct
        res["paths"] = repr(direct.stats)       # which compile path the variants took
    return res


def _find_ptxas():
    for root in (os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""),
                 "/usr/local/cuda"):
        p = os.path.join(root, "bin", "ptxas") if root else ""
        if p and os.path.exists(p):
            return p
    return shutil.which("ptxas")


def _launch_gpu(ct, backend, kern, args, grid, out_i, ref, torch, np):
    from numba import cuda
    if torch is not None:
        dev = [torch.from_numpy(a).cuda() if isinstance(a, np.ndarray) else a for a in args]
        stream = torch.cuda.current_stream()
        sync = torch.cuda.synchronize
    else:
        dev = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
        stream, sync = None, cuda.synchronize
    sync()
    with backend("numba"):
        ct.launch(stream, grid, kern, tuple(dev))
    sync()
    got = dev[out_i].cpu().numpy() if torch is not None else dev[out_i].copy_to_host()
    return _close(got, ref, np)


def _close(got, ref, np) -> bool:
    if ref.dtype.kind in "iu":
        return bool(np.array_equal(got, ref))
    scale = max(1.0, float(np.abs(ref).max()))
    return float(np.abs(got.astype(np.float64) - ref).max()) / scale <= 1e-2


def _compile_offline(kern, args, nvvm_ok, ptxas) -> bool:
    """The launch path up to the compiled kernel, without a device (launch.run's steps);
    False when Numba could not lower it (no libNVVM)."""
    from numba import cuda
    from numba.core import types

    from cutile.compile_stages import stage
    from cutile.ir.types import ArrayType
    from cutile.numba_backend.compile import compile_kernel, full_tiles
    from cutile.numba_backend.params import argument_types
    from cutile.numba_backend.threads import choose_threads, min_blocks
    spec = kern.specialize(tuple(args))
    ir = kern.compile(spec)
    T = choose_threads(ir, None)
    ck = compile_kernel(ir, T, None, full_tiles(ir, T, None, spec.leaves))
    n_arrays = sum(isinstance(p.type, ArrayType) for p in ir.params)
    sig = argument_types(ir, len(ck.strides_used), ("C",) * n_arrays, bool(ck.asserts))
    mb = min_blocks(ir, T)
    from cutile.numba_backend.numba_speedups import typing_memo
    with stage(NUMBA_COMPILE), typing_memo():
        if nvvm_ok:
            ptx, _ = cuda.compile_ptx(ck.dispatcher.py_func, sig, cc=(9, 0),
                                      launch_bounds=(T, mb) if mb else None)
        else:
            from numba.cuda.compiler import compile_cuda
            try:
                compile_cuda(ck.dispatcher.py_func, types.void, sig, cc=(9, 0),
                             nvvm_options={"opt": 3, "fastmath": False})
            except Exception:
                # numba-cuda's lowering takes the LLVM data layout from libNVVM: typing is
                # as far as it goes without it
                return False
    if nvvm_ok and ptxas:
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "k.ptx")
            with open(p, "w") as f:
                f.write(ptx)
            w = time.perf_counter()
            r = subprocess.run([ptxas, "-arch=sm_90", p, "-o", os.path.join(d, "k.cubin")],
                               capture_output=True, text=True)
            wall = time.perf_counter() - w
            if r.returncode:
                raise RuntimeError(f"ptxas failed: {r.stderr[-500:]}")
            from cutile import compile_stages
            compile_stages.add("ptxas", wall, wall)   # a child process: its wall time
    return True


def child_cuda_tile(workload: str) -> dict:
    res: dict = {"impl": "cuda.tile", "workload": workload, "process": {}, "specs": []}
    import numpy as np
    import torch
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    w, c = time.perf_counter(), time.process_time()
    import cuda.tile as ct
    res["process"]["import cuda.tile"] = [time.perf_counter() - w, time.process_time() - c]
    ks = make_kernels(ct)
    for label, kname, args, grid, out_i, ref in specs(workload, np):
        dev = [torch.from_numpy(a).cuda() if isinstance(a, np.ndarray) else a for a in args]
        torch.cuda.synchronize()
        w, c = time.perf_counter(), time.process_time()
        ct.launch(torch.cuda.current_stream(), grid, ks[kname], tuple(dev))
        torch.cuda.synchronize()
        total = [time.perf_counter() - w, time.process_time() - c]
        ok = _close(dev[out_i].cpu().numpy(), ref, np)
        res["specs"].append({"label": label, "stages": {}, "total": total, "ok": ok})
    return res


# -- parent ----------------------------------------------------------------------------------
def spawn(impl: str, workload: str, mode: str, timeout: float) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", impl, "--workload", workload,
           "--mode", mode]
    env = dict(os.environ, CUTILE_CACHE="0", CUDA_TILE_CACHE_DIR="off")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    if mode == "offline":
        env.setdefault("NUMBA_FORCE_CUDA_CC", "9.0")
    try:
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    for line in r.stdout.splitlines():
        if line.startswith(TAG):
            return json.loads(line[len(TAG):])
    tail = (r.stderr or r.stdout).strip().splitlines()[-4:]
    return {"error": f"exit {r.returncode}: " + " | ".join(tail)}


def gpu_present() -> bool:
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    r = subprocess.run([sys.executable, "-c",
                        "from numba import cuda; print(int(cuda.is_available()))"],
                       env=env, capture_output=True, text=True)
    return r.stdout.strip().endswith("1")


def cuda_tile_present() -> bool:
    r = subprocess.run([sys.executable, "-c", "import cuda.tile, torch; "
                        "print(int(torch.cuda.is_available()))"], capture_output=True, text=True)
    return r.stdout.strip().endswith("1")


def table(results: list, ref: dict, cpu: bool, out) -> None:
    k = 1 if cpu else 0
    cols, heads = [], []
    for res in results:
        if "error" in res:
            continue
        for i in range(len(res["specs"])):
            cols.append((res, i))
            heads.append(f"{res['workload']} {'1st' if i == 0 else '2nd'}")
    w0 = 40
    print(f"{'stage (' + ('CPU s' if cpu else 's') + ')':{w0}}" +
          "".join(f"{h:>14}" for h in heads), file=out)
    for key, label in PROCESS_ROWS:
        if not any(key in res["process"] for res, _ in cols):
            continue
        row = [f"{res['process'][key][k]:.3f}" if i == 0 and key in res["process"] else ""
               for res, i in cols]
        print(f"{label:{w0}}" + "".join(f"{v:>14}" for v in row), file=out)
    for key, label in SPEC_ROWS:
        if not any(key in res["specs"][i]["stages"] for res, i in cols):
            continue
        row = [f"{res['specs'][i]['stages'][key][k]:.3f}" if key in res["specs"][i]["stages"]
               else "-" for res, i in cols]
        print(f"{label:{w0}}" + "".join(f"{v:>14}" for v in row), file=out)
    tot = [sum(v[k] for n, v in res["specs"][i]["stages"].items()
               if n not in ("plan (assign.py)", "launch other")) for res, i in cols]
    print(f"{'compile total (sum of the stages)':{w0}}" + "".join(f"{t:>14.3f}" for t in tot),
          file=out)
    for res in results:
        if res.get("paths"):
            print(f"{res['workload']}: {res['paths']}", file=out)
    if any(res.get("mode") == "gpu" for res, _ in cols):
        e2e = [res["specs"][i]["total"][k] for res, i in cols]
        print(f"{'launch end to end (cutile)':{w0}}" + "".join(f"{t:>14.3f}" for t in e2e),
              file=out)
        theirs = []
        for res, i in cols:
            r = ref.get(res["workload"])
            theirs.append(r["specs"][i]["total"][k] if r and "error" not in r else None)
        if any(t is not None for t in theirs):
            print(f"{'launch end to end (cuda.tile)':{w0}}" +
                  "".join(f"{t:>14.3f}" if t is not None else f"{'-':>14}" for t in theirs),
                  file=out)
            rat = [f"{a / t:.1f}x" if t else "-" for a, t in zip(e2e, theirs)]
            print(f"{'ratio cutile / cuda.tile':{w0}}" + "".join(f"{r:>14}" for r in rat),
                  file=out)
            imp = [r["process"].get("import cuda.tile") for r in ref.values()
                   if "error" not in r]
            if imp:
                print(f"(import cuda.tile: {min(x[k] for x in imp):.3f} s)", file=out)
        bad = [f"{res['workload']} {res['specs'][i]['label']}" for res, i in cols
               if res["specs"][i]["ok"] is False]
        bad += [f"cuda.tile {r['workload']} {s['label']}" for r in ref.values()
                if "error" not in r for s in r["specs"] if s["ok"] is False]
        if bad:
            print("WRONG RESULTS: " + ", ".join(bad), file=out)
    labels = [f"{res['workload']} {'1st' if i == 0 else '2nd'}: {res['specs'][i]['label']}"
              for res, i in cols]
    print("columns: " + "; ".join(labels), file=out)
    missing = sorted({m for res, _ in cols for m in res.get("missing", [])})
    for m in missing:
        print(f"not measured: {m}", file=out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(WORKLOADS))
    ap.add_argument("--mode", default="auto", choices=("auto", "gpu", "offline"))
    ap.add_argument("--no-cutile-ref", action="store_true", help="skip the real cuTile")
    ap.add_argument("--cpu", action="store_true", help="print CPU seconds, not wall seconds")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per child")
    ap.add_argument("--json", default=None, help="also write the raw results here")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--workload", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        res = (child_cutile(args.workload, args.mode) if args.child == "cutile"
               else child_cuda_tile(args.workload))
        print(TAG + json.dumps(res), flush=True)
        return 0
    mode = args.mode
    if mode == "auto":
        mode = "gpu" if gpu_present() else "offline"
    workloads = [w for w in args.only.split(",") if w]
    ref_ok = mode == "gpu" and not args.no_cutile_ref and cuda_tile_present()
    print(f"mode: {mode}; cutile's disk cache off; cuda.tile "
          f"{'compared' if ref_ok else 'not compared'}", flush=True)
    results, ref = [], {}
    for wl in workloads:
        res = spawn("cutile", wl, mode, args.timeout)
        if "error" in res:
            print(f"{wl}: FAILED ({res['error'][:300]})", flush=True)
        results.append(res)
        if ref_ok:
            ref[wl] = spawn("cuda.tile", wl, mode, args.timeout)
            if "error" in ref[wl]:
                print(f"{wl} on cuda.tile: FAILED ({ref[wl]['error'][:300]})", flush=True)
    table(results, ref, args.cpu, sys.stdout)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cutile": results, "cuda.tile": ref}, f, indent=1)
    bad = any("error" in r for r in results) or any(
        s["ok"] is False for r in results if "error" not in r for s in r["specs"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

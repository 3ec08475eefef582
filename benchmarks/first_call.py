"""First launch of each benchmark workload in a fresh process, with the on-disk kernel cache
cold (empty) and then warm, on the Numba backend (issue 15).

    python benchmarks/first_call.py [--only vadd,softmax,mm_f32,mm_f16] [--quick | --tiny]
                                    [--threads N] [--timeout 300]

For each workload a new empty cache directory (``CUTILE_CACHE_DIR``; the user's own cache is
never touched) serves two child processes in turn; each child imports torch (when it has a
GPU) and cutile, allocates the inputs, then times its first ``ct.launch`` up to the
synchronised result (Numba's import and compilation or the cache load included), checks the
result and reports.  Printed per workload::

    vector add 2^26 f32: first call cold 3.7 s, warm 0.4 s  (cold stored 1, warm loaded 1)

``--tiny`` sizes run under the CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``), which compiles no
cubin: there cold and warm are the same and only the process mechanics are exercised.
``gpu.py`` runs this first.
"""

# no "from __future__ import annotations": the kernels' ct.Constant annotations must be
# evaluated objects (make_kernels in gpu.py)

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
WORKLOADS = ("vadd", "softmax", "mm_f32", "mm_f16")
TAG = "FIRSTCALL "


def sizes(workload: str, mode: str) -> dict:
    """Problem and tile sizes of a workload: the benchmark's (full/quick), or tiny ones."""
    if workload == "vadd":
        n = {"full": 2 ** 26, "quick": 2 ** 20, "tiny": 2048}[mode]
        return {"n": n, "tile": 1024, "name": f"vector add 2^{n.bit_length() - 1} f32"}
    if workload == "softmax":
        r, c = {"full": (8192, 4096), "quick": (1024, 4096), "tiny": (2, 64)}[mode]
        return {"rows": r, "cols": c, "name": f"softmax {r}x{c} f32"}
    s = {"full": 4096, "quick": 1024, "tiny": 32}[mode]
    tiles = (32, 32, 16) if mode == "tiny" else (128, 128, 32)
    dtype = "float16" if workload == "mm_f16" else "float32"
    return {"s": s, "tiles": tiles, "dtype": dtype, "name": f"matmul {s}^3 {dtype}"}


# -- child: one first launch -----------------------------------------------------------------
def child(workload: str, mode: str, threads) -> dict:
    import numpy as np

    import cutile as ct
    from cutile import cache
    from cutile.executors import backend
    sys.path.insert(0, HERE)
    from gpu import make_kernels

    ks = make_kernels(ct)
    sz = sizes(workload, mode)
    rng = np.random.default_rng(0)
    torch = None
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") in ("", "0"):
        try:
            import torch
            if not torch.cuda.is_available():
                torch = None
        except ImportError:
            torch = None

    def dev(a):
        return torch.from_numpy(a).cuda() if torch is not None else a

    if workload == "vadd":
        a, b = (rng.standard_normal(sz["n"], dtype=np.float32) for _ in range(2))
        c = np.zeros_like(a)
        args, grid, kern = [dev(a), dev(b), dev(c), sz["tile"]], (sz["n"] // sz["tile"],), "vadd"
        ref, out, tol = a + b, 2, 0.0
    elif workload == "softmax":
        x = rng.standard_normal((sz["rows"], sz["cols"]), dtype=np.float32)
        e = np.exp(x - x.max(axis=1, keepdims=True))
        args, grid, kern = [dev(x), dev(np.zeros_like(x)), sz["cols"]], (sz["rows"],), "softmax"
        ref, out, tol = e / e.sum(axis=1, keepdims=True), 1, 1e-5
    else:
        s, (tm, tn, tk) = sz["s"], sz["tiles"]
        A, B = (rng.standard_normal((s, s)).astype(sz["dtype"]) for _ in range(2))
        args = [dev(A), dev(B), dev(np.zeros((s, s), np.float32)), tm, tn, tk]
        grid, kern = (s // tm, s // tn), "matmul"
        ref, out = A.astype(np.float64) @ B.astype(np.float64), 2
        tol = 2e-2 if sz["dtype"] == "float16" else 1e-3
    sync = torch.cuda.synchronize if torch is not None else (lambda: None)
    stream = torch.cuda.current_stream() if torch is not None else None
    sync()
    t0 = time.perf_counter()
    with backend("numba", threads=threads):
        ct.launch(stream, grid, ks[kern], tuple(args))
    sync()
    first = time.perf_counter() - t0
    got = args[out].cpu().numpy() if torch is not None else args[out]
    scale = max(1.0, float(np.abs(ref).max()))
    err = float(np.abs(got.astype(np.float64) - ref).max()) / scale
    return {"workload": workload, "name": sz["name"], "first_s": first, "ok": err <= tol,
            "err": err, "arrays": "torch" if torch is not None else "numpy",
            "hits": cache.stats.hits, "stores": cache.stats.stores,
            "cache_errors": cache.stats.errors[:3]}


# -- parent: cold and warm per workload ------------------------------------------------------
def _spawn(workload: str, mode: str, threads, cache_dir: str, timeout: float) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", workload, "--mode", mode]
    if threads:
        cmd += ["--threads", str(threads)]
    env = dict(os.environ, CUTILE_CACHE_DIR=cache_dir, CUTILE_CACHE="1")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    wall = time.perf_counter() - t0
    for line in r.stdout.splitlines():
        if line.startswith(TAG):
            res = json.loads(line[len(TAG):])
            res["process_s"] = wall
            return res
    tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
    return {"error": f"exit {r.returncode}: " + " | ".join(tail)}


def _fmt(res: dict) -> str:
    if "error" in res:
        return f"FAILED ({res['error'][:160]})"
    wrong = "" if res["ok"] else f" WRONG (rel err {res['err']:.3g})"
    return f"{res['first_s']:.1f} s{wrong}"


def first_calls(workloads, *, quick=False, tiny=False, threads=None, timeout=300.0,
                out=None, cache_dir=None) -> list:
    """Measure and print cold/warm first calls; returns [(workload, cold, warm, line)].

    ``cache_dir``: an empty folder to use as the cache (each workload launches its own kernel,
    so one folder serves them all, cold for each); the caller keeps it.  Default: a temporary
    folder, deleted afterwards."""
    out = out or sys.stdout
    mode = "tiny" if tiny else "quick" if quick else "full"
    print("first launch in a fresh process, on-disk kernel cache empty (cold) then warm:",
          file=out, flush=True)
    d = cache_dir or tempfile.mkdtemp(prefix="cutile-firstcall-")
    try:
        return [_one(w, mode, threads, d, timeout, out) for w in workloads]
    finally:
        if cache_dir is None:
            shutil.rmtree(d, ignore_errors=True)


def _one(w: str, mode: str, threads, d: str, timeout: float, out) -> tuple:
    if w not in WORKLOADS:
        line = f"{w}: unknown workload (known: {', '.join(WORKLOADS)})"
        print(line, file=out)
        return w, {"error": "unknown workload"}, {"error": "unknown workload"}, line
    cold = _spawn(w, mode, threads, d, timeout)
    warm = _spawn(w, mode, threads, d, timeout)
    name = cold.get("name") or warm.get("name") or sizes(w, mode)["name"]
    note = ""
    if "error" not in cold and "error" not in warm:
        note = (f"  (cold stored {cold['stores']}, warm loaded {warm['hits']}; "
                f"processes {cold['process_s']:.1f} s / {warm['process_s']:.1f} s; "
                f"{warm['arrays']} arrays)")
        errs = cold["cache_errors"] + warm["cache_errors"]
        if errs:
            note += f"\n    cache errors: {'; '.join(errs)[:300]}"
    line = f"{name}: first call cold {_fmt(cold)}, warm {_fmt(warm)}"
    print(line + note, file=out, flush=True)
    return w, cold, warm, line


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(WORKLOADS))
    ap.add_argument("--quick", action="store_true", help="the benchmark's smaller sizes")
    ap.add_argument("--tiny", action="store_true", help="simulator sizes (mechanics only)")
    ap.add_argument("--threads", type=int, default=None, help="numba threads per block")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per process")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--mode", default="full", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(TAG + json.dumps(child(args.child, args.mode, args.threads)), flush=True)
        return 0
    res = first_calls([w for w in args.only.split(",") if w], quick=args.quick, tiny=args.tiny,
                      threads=args.threads, timeout=args.timeout)
    bad = [w for w, c, m, _ in res if "error" in c or "error" in m or not (c["ok"] and m["ok"])]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

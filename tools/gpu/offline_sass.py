"""Compile one benchmark kernel of ``benchmarks/gpu.py`` for sm_90 without a GPU, and print
ptxas' resource line (registers, spills, shared memory) — and, with ``--sass``, write the
PTX, the SASS and the generated Python source to a folder.

Needs NVVM and ptxas (a CUDA toolkit: ``CUDA_HOME``) and NVRTC, which Numba asks only for
the list of supported architectures (e.g. ``pip install --target /tmp/nvrtc
nvidia-cuda-nvrtc`` and ``LD_LIBRARY_PATH=/tmp/nvrtc/nvidia/cu13/lib``)::

    CUDA_HOME=/usr/local/cuda python3 tools/gpu/offline_sass.py softmax --threads 512

Register counts here are the ones the GPU's driver reports for the same PTX (ptxas is the
same compiler); timings still need the GPU.  Workloads: the names ``make_kernels`` returns,
at the benchmark's sizes; mm_f32 / mm_f16 pick the matmul's operand dtype.
"""

import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))


def workload(name, ks, np):
    """(kernel, args, grid) at the benchmark's sizes, as host arrays (only their types and
    shapes matter here)."""
    f32 = np.float32
    z = np.zeros
    if name == "softmax":
        return ks["softmax"], (z((8192, 4096), f32), z((8192, 4096), f32), 4096), (8192,)
    if name == "layernorm":
        x = z((8192, 4096), f32)
        return ks["layernorm"], (x, z(4096, f32), z(4096, f32), x.copy(), 1e-5, 4096), (8192,)
    if name == "vadd":
        n = 1 << 26
        return ks["vadd"], (z(n, f32), z(n, f32), z(n, f32), 1024), (n // 1024,)
    if name in ("mm_f32", "mm_f16"):
        dt = f32 if name == "mm_f32" else np.float16
        a = z((4096, 4096), dt)
        return ks["matmul"], (a, a.copy(), z((4096, 4096), f32), 128, 128, 32), (32, 32)
    if name == "attention":
        q = z((128, 1024, 64), np.float16)
        return ks["attention"], (q, q.copy(), q.copy(), q.copy(), 0.125, 64, 64, 64), (16, 128)
    raise SystemExit(f"unknown workload {name!r}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workload")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--tensor-cores", action="store_true",
                    help="plan tensor-core mma as on a device (CUTILE_NUMBA_TENSOR_CORES=1)")
    ap.add_argument("--sass", metavar="DIR", help="write source.py, kernel.ptx, kernel.sass here")
    args = ap.parse_args()
    if args.tensor_cores:
        os.environ["CUTILE_NUMBA_TENSOR_CORES"] = "1"
    import numpy as np
    from gpu import make_kernels
    from numba import cuda

    import cutile as ct
    from cutile.launch_args import check_grid
    from cutile.numba_backend.compile import compile_kernel, full_tiles
    from cutile.numba_backend.params import argument_types
    from cutile.numba_backend.threads import choose_threads, launch_bounds
    kern, kargs, grid = workload(args.workload, make_kernels(ct), np)
    spec = kern.specialize(kargs)
    ir = kern.compile(spec)
    T = choose_threads(ir, args.threads)
    ck = compile_kernel(ir, T, None, full_tiles(ir, T, None, spec.leaves))
    check_grid(grid)
    n_arrays = sum(1 for p in ir.params if hasattr(p.type, "ndim"))
    sig = argument_types(ir, len(ck.strides_used), ("C",) * n_arrays, bool(ck.asserts),
                         tuple(c for c, _ in ck.scratch))
    bounds = launch_bounds(ir, T)
    ptx, _ = cuda.compile_ptx(ck.dispatcher.py_func, sig, cc=(9, 0), launch_bounds=bounds)
    out = args.sass or tempfile.mkdtemp()
    os.makedirs(out, exist_ok=True)
    p = os.path.join(out, "kernel.ptx")
    with open(p, "w") as f:
        f.write(ptx)
    with open(os.path.join(out, "source.py"), "w") as f:
        f.write(ck.source)
    ptxas = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "ptxas")
    cubin = os.path.join(out, "kernel.cubin")
    r = subprocess.run([ptxas, "-arch=sm_90", "-v", p, "-o", cubin], capture_output=True,
                       text=True)
    print(f"{args.workload}: {T} threads, launch_bounds {bounds}, "
          f"plan {ck.plan or '-'}, shared {ck.smem_bytes} B")
    print("\n".join(line for line in r.stderr.splitlines() if "Used" in line or "spill" in line))
    if args.sass:
        import shutil
        dis = shutil.which("cuobjdump") or os.path.join(os.path.dirname(ptxas), "cuobjdump")
        if os.path.exists(dis):       # pip: nvidia-cuda-cuobjdump, if the toolkit lacks it
            s = subprocess.run([dis, "-sass", cubin], capture_output=True, text=True).stdout
            with open(os.path.join(out, "kernel.sass"), "w") as f:
                f.write(s)
        print(f"wrote {out}/source.py, kernel.ptx" + (", kernel.sass" if os.path.exists(dis)
                                                       else " (no cuobjdump: no SASS)"))
    return r.returncode


if __name__ == "__main__":
    sys.exit(main())

"""Launch one benchmark kernel of ``benchmarks/gpu.py`` on the Numba backend, for a profiler.

    ncu --kernel-name regex:cutile_ --launch-skip 1 --launch-count 1 --section SpeedOfLight \
        python3 tools/gpu/profile_kernel.py softmax [--threads N] [--repeat 2]

The kernel runs ``--repeat`` times (the first compiles; profile a later one), at the
benchmark's full sizes, and its result is checked against PyTorch so a profile of a wrong
kernel is never read as a speed figure.  Workloads: softmax, layernorm, attention, mm_f32,
mm_f16.  ``--inspect`` prints the kernel's plan first (``kernel.inspect``: threads, shared
memory, registers, occupancy, mma strategy).
"""

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workload")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--inspect", action="store_true",
                    help="also print kernel.inspect's summary (threads, registers, occupancy)")
    args = ap.parse_args()
    import torch
    from gpu import make_kernels

    import cutile as ct
    from cutile.executors import backend
    ks = make_kernels(ct)
    dev = torch.device("cuda")
    torch.manual_seed(0)
    w = args.workload
    if w == "softmax":
        x = torch.randn(8192, 4096, device=dev)
        y = torch.empty_like(x)
        grid, kern, kargs = (8192,), ks["softmax"], (x, y, 4096)
        ref, out, tol = torch.softmax(x, 1), y, 1e-5
    elif w == "layernorm":
        x = torch.randn(8192, 4096, device=dev)
        g, b = torch.randn(4096, device=dev), torch.randn(4096, device=dev)
        y = torch.empty_like(x)
        grid, kern, kargs = (8192,), ks["layernorm"], (x, g, b, y, 1e-5, 4096)
        ref, out, tol = torch.nn.functional.layer_norm(x, (4096,), g, b, 1e-5), y, 1e-4
    elif w == "attention":
        q, k, v = (torch.randn(128, 1024, 64, device=dev, dtype=torch.float16) for _ in range(3))
        o = torch.empty_like(q)
        grid, kern, kargs = (16, 128), ks["attention"], (q, k, v, o, 0.125, 64, 64, 64)
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        out, tol = o, 1e-2
    elif w in ("mm_f32", "mm_f16"):
        dt = torch.float32 if w == "mm_f32" else torch.float16
        a, b = (torch.randn(4096, 4096, device=dev, dtype=dt) for _ in range(2))
        c = torch.empty(4096, 4096, device=dev)
        grid, kern, kargs = (32, 32), ks["matmul"], (a, b, c, 128, 128, 32)
        ref, out, tol = a.double() @ b.double(), c, 1e-3 * 64
    else:
        raise SystemExit(f"unknown workload {w!r}")
    stream = torch.cuda.current_stream()
    if args.inspect:
        print(kern.inspect(*kargs, grid=grid, threads=args.threads).summary())
    for _ in range(args.repeat):
        with backend("numba", threads=args.threads):
            ct.launch(stream, grid, kern, kargs)
    torch.cuda.synchronize()
    err = (out.double() - ref.double()).abs().max().item()
    print(f"{w}: max abs error {err:.3g} ({'ok' if err <= tol else 'WRONG'})")
    return 0 if err <= tol else 1


if __name__ == "__main__":
    sys.exit(main())

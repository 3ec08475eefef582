"""Where the host time of one ``ct.launch`` goes on the Numba backend, stage by stage.

    python3 tools/gpu/launch_stages.py [--n 2000]

Launches the benchmark's layer norm on 8 rows (the GPU work is a few microseconds) and times
each step ``ct.launch`` takes, the same calls in the same order (``kernel.launch`` and
``numba_backend.launch.run``), each over ``--n`` repetitions, in microseconds per call; then
the whole ``ct.launch`` for comparison.  Needs a GPU and PyTorch.
"""

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [ROOT, os.path.join(ROOT, "benchmarks")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    n = ap.parse_args().n
    import torch
    from gpu import make_kernels

    import cutile as ct
    from cutile.device_arrays import DeviceArrayRef
    from cutile.executors import backend
    from cutile.kernel import _check_writable
    from cutile.launch_args import check_grid
    from cutile.numba_backend import launch as L
    from cutile.numba_backend import params as P
    from cutile.numba_backend.compile import compile_kernel, full_tiles
    from cutile.numba_backend.threads import choose_threads
    from cutile.streams import check_stream
    k = make_kernels(ct)["layernorm"]
    g, b = torch.randn(4096, device="cuda"), torch.randn(4096, device="cuda")
    x = torch.randn(8, 4096, device="cuda")
    y = torch.empty_like(x)
    args, grid = (x, g, b, y, 1e-5, 4096), (8,)
    s = torch.cuda.current_stream()
    with backend("numba"):
        ct.launch(s, grid, k, args)
    torch.cuda.synchronize()
    spec = k.specialize(args)
    ir = k.compile(spec)
    T = choose_threads(ir, None)
    full = full_tiles(ir, T, None, spec.leaves)
    ck = compile_kernel(ir, T, None, full)
    st, core = L.resolve_stream(s)
    g3 = check_grid(grid)
    margs, _ = L.marshal(ck, g3, spec.leaves, st)
    refs = P.refs(margs)
    stages = [
        ("check_stream + grid", lambda: (check_stream(s), check_grid(grid))),
        ("specialize (argument classes)", lambda: k.specialize(args)),
        ("compile (cached IR)", lambda: k.compile(spec)),
        ("check writable", lambda: _check_writable(ir, spec)),
        ("choose_threads", lambda: choose_threads(ir, None)),
        ("full_tiles", lambda: full_tiles(ir, T, None, spec.leaves)),
        ("compile_kernel (cached)", lambda: compile_kernel(ir, T, None, full)),
        ("resolve_stream", lambda: L.resolve_stream(s)),
        ("marshal", lambda: L.marshal(ck, g3, spec.leaves, st)),
        ("refs (describe the arguments)", lambda: P.refs(margs)),
        ("variant + pack", lambda: ck.variant(tuple(P.layout(v) for v in refs
                                                    if isinstance(v, DeviceArrayRef)))
         .packer.pack(refs)),
        ("_launch_gpu (refs, pack, launch)", lambda: L._launch_gpu(ck, L.cuda_grid(g3), margs,
                                                                  st, core)),
    ]

    def whole():
        with backend("numba"):
            ct.launch(s, grid, k, args)

    print(f"{'stage':34} {'us/call':>8}")
    total = 0.0
    for name, fn in stages + [("whole ct.launch (in backend())", whole)]:
        fn()
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
        us = (time.perf_counter() - t) / n * 1e6
        if not name.startswith("whole"):
            total += us
        print(f"{name:34} {us:8.1f}")
    print(f"{'sum of the stages':34} {total:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

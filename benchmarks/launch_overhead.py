"""Host-side cost of one ``ct.launch`` on the Numba backend, next to PyTorch's launch.

    python benchmarks/launch_overhead.py [--n 2000]

A tiny kernel (one block, 1024 float32) is launched ``n`` times back to back without
synchronising; the wall time per call is the host overhead (the GPU work is ~2 us, so the
GPU never is the bottleneck).  Rows:

- ``ct.launch`` with PyTorch tensors, with Numba device arrays, and with NumPy arrays (the
  last includes the copies to the device and back);
- the Numba dispatcher alone on the generated kernel with prepared arguments (what Numba costs
  on its own);
- ``torch.add(a, b, out=c)`` (the reference: one PyTorch kernel launch).

The table gives microseconds per call and the ratio to the PyTorch launch.
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def per_call(fn, n, sync) -> float:
    fn()
    sync()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    sync()
    return (time.perf_counter() - t) / n * 1e6


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    args = ap.parse_args(argv)

    import cutile as ct
    from cutile.executors import backend, gpu_usable
    if not gpu_usable():
        print("no usable CUDA GPU (Numba); nothing to measure")
        return 0
    from numba import cuda

    @ct.kernel
    def vadd(a, b, c, TILE: ct.Constant[int]):
        bid = ct.bid(0)
        ct.store(c, (bid,), ct.load(a, (bid,), (TILE,)) + ct.load(b, (bid,), (TILE,)))

    n = 1024
    rows = []
    ha, hb, hc = (np.ones(n, np.float32) for _ in range(3))
    da, db, dc = (cuda.to_device(x) for x in (ha, hb, hc))
    sync = cuda.synchronize
    with backend("numba"):
        rows.append(("ct.launch, Numba device arrays",
                     per_call(lambda: ct.launch(None, (1,), vadd, (da, db, dc, n)), args.n, sync)))
        rows.append(("ct.launch, NumPy arrays (copies)",
                     per_call(lambda: ct.launch(None, (1,), vadd, (ha, hb, hc, n)),
                              max(args.n // 10, 10), sync)))
        try:
            import torch
            ta, tb, tc = (torch.ones(n, device="cuda") for _ in range(3))
            stream = torch.cuda.current_stream()
            rows.append(("ct.launch, torch tensors + torch stream",
                         per_call(lambda: ct.launch(stream, (1,), vadd, (ta, tb, tc, n)),
                                  args.n, torch.cuda.synchronize)))
            rows.append(("torch.add(out=) [reference]",
                         per_call(lambda: torch.add(ta, tb, out=tc), args.n,
                                  torch.cuda.synchronize)))
        except ImportError:
            print("[note] PyTorch absent: no reference row")
        from cutile.numba_backend import launch as L
        from cutile.numba_backend.compile import compile_kernel
        from cutile.numba_backend.threads import choose_threads
        spec = vadd.specialize((da, db, dc, n))
        ck = compile_kernel(vadd.compile(spec), choose_threads(vadd.compile(spec)))
        kargs, _ = L.marshal(ck, (1, 1, 1), spec.leaves, 0)
        st = cuda.default_stream()
        rows.append(("numba dispatcher alone",
                     per_call(lambda: ck.dispatcher[(1, 1, 1), ck.T, st](*kargs), args.n, sync)))
    ref = dict(rows).get("torch.add(out=) [reference]")
    print(f"\n{'launch':42} {'us/call':>9} {'/ torch':>8}")
    print("-" * 61)
    for name, us in rows:
        r = f"{us / ref:8.1f}" if ref else f"{'-':>8}"
        print(f"{name:42} {us:9.1f} {r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

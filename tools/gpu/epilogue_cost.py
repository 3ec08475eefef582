"""What the epilogue costs the TMA ring's matmul: ``benchmarks/gpu.py``'s float16 matmul at
4096^3 against the same kernel whose store sits behind a run-time condition that is never
true (the K loop and its wgmmas stay; the result is never written), each tile of
``EPILOGUE_TILES`` (default 128x256x64,256x128x64), timed in interleaved rounds in one
process (``probe_host.best_time``).  An upper bound on what a TMA-store epilogue could win.

    source tools/gpu/setup.sh; python3 tools/gpu/epilogue_cost.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

import cutile as ct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [HERE, os.path.join(ROOT, "benchmarks"), ROOT]


@ct.kernel
def matmul_maybe_store(a, b, c, store: int, TM: ct.Constant[int], TN: ct.Constant[int],
                       TK: ct.Constant[int]):
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    for k in range(ct.num_tiles(a, 1, (TM, TK))):
        x = ct.load(a, (ct.bid(0), k), (TM, TK), padding_mode=ct.PaddingMode.ZERO)
        y = ct.load(b, (k, ct.bid(1)), (TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(x, y, acc)
    if store > 0:
        ct.store(c, (ct.bid(0), ct.bid(1)), acc.astype(c.dtype))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    from gpu import make_kernels
    from numba import cuda
    from probe_host import best_time

    S = 4096
    rng = np.random.default_rng(0)
    x = cuda.to_device(rng.integers(-2, 3, (S, S)).astype(np.float16))
    y = cuda.to_device(rng.integers(-2, 3, (S, S)).astype(np.float16))
    c = cuda.device_array((S, S), np.float32)
    tiles = [tuple(int(v) for v in t.split("x")) for t in
             os.environ.get("EPILOGUE_TILES", "128x256x64,256x128x64").split(",")]
    mm = make_kernels(ct)["matmul"]
    entries = []
    for t in tiles:
        grid = (S // t[0], S // t[1])
        entries.append((f"{'x'.join(map(str, t))} matmul", lambda g=grid, t=t:
                        ct.launch(0, g, mm, (x, y, c) + t)))
        entries.append((f"{'x'.join(map(str, t))} no store", lambda g=grid, t=t:
                        ct.launch(0, g, matmul_maybe_store, (x, y, c, 0) + t)))
        entries.append((f"{'x'.join(map(str, t))} store", lambda g=grid, t=t:
                        ct.launch(0, g, matmul_maybe_store, (x, y, c, 1) + t)))
    figs = {n: [] for n, _ in entries}
    for _ in range(args.rounds):
        for n, f in entries:
            figs[n].append(2 * S ** 3 / best_time(f, reps=5) / 1e12)
    for n, _ in entries:
        each = " ".join(f"{v:.0f}" for v in figs[n])
        print(f"{n:28s} {np.median(figs[n]):6.0f} TFLOP/s ({each})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How deep should a pipelined wgmma K loop be?  ``benchmarks/gpu.py``'s float16 matmul at
4096^3 for several block tiles, compiled under several shared-memory budgets of
``mma_plan`` (``PIPELINE_SMEM``: the stages' bytes, ``MAX_STAGES``, ``DEFERRED_SMEM``: the
bytes with the wgmma wait deferred), each compiled once, then timed in interleaved rounds
in one process (bursts of back-to-back launches between CUDA events,
``probe_host.best_time``): the same card's clocks and the arrays' placement are shared by
every figure.  Prints one line per (tile, budget): the plan, the median TFLOP/s and each
round's.

    source tools/gpu/setup.sh; python3 tools/gpu/stage_sweep.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [HERE, os.path.join(ROOT, "benchmarks"), ROOT]

TILES = ((128, 128, 32), (128, 128, 64), (128, 256, 32), (128, 256, 64), (256, 128, 32),
         (256, 128, 64))
# (name, PIPELINE_SMEM, MAX_STAGES, DEFERRED_SMEM)
BUDGETS = (("default", None, None, None),
           ("192K/4", 192 * 1024, 4, 192 * 1024),
           ("144K/4+d", 144 * 1024, 4, 200 * 1024),
           ("200K/8", 200 * 1024, 8, 200 * 1024))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--size", type=int, default=4096)
    args = ap.parse_args()
    from gpu import make_kernels
    from numba import cuda
    from probe_host import best_time

    import cutile
    from cutile.executors import inspect
    from cutile.numba_backend import mma_plan
    S = args.size
    rng = np.random.default_rng(0)
    a = rng.integers(-2, 3, (S, S)).astype(np.float16)
    b = rng.integers(-2, 3, (S, S)).astype(np.float16)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    x, y = cuda.to_device(a), cuda.to_device(b)
    default = (mma_plan.PIPELINE_SMEM, mma_plan.MAX_STAGES, mma_plan.DEFERRED_SMEM)
    entries = []
    for name, smem, stages, deferred in BUDGETS:
        for t in TILES:
            mm = make_kernels(cutile)["matmul"]       # a kernel of its own: compiled afresh
            c = cuda.device_array((S, S), np.float32)
            grid = (S // t[0], S // t[1])
            mma_plan.PIPELINE_SMEM, mma_plan.MAX_STAGES, mma_plan.DEFERRED_SMEM = (
                v if v is not None else d for v, d in zip((smem, stages, deferred), default))
            try:
                cutile.launch(0, grid, mm, (x, y, c) + t)
                cuda.synchronize()
                info = inspect(mm, (x, y, c) + t, grid=grid).summary()
            except Exception as e:  # noqa: BLE001 - reported, the sweep goes on
                print(f"{t} {name}: FAILED {type(e).__name__}: {str(e)[:200]}", flush=True)
                continue
            finally:
                mma_plan.PIPELINE_SMEM, mma_plan.MAX_STAGES, mma_plan.DEFERRED_SMEM = default
            ok = bool(np.array_equal(c.copy_to_host(), ref))

            def launch(mm=mm, c=c, grid=grid, t=t):
                cutile.launch(0, grid, mm, (x, y, c) + t)

            entries.append((t, name, str(info).replace("\n", " ")[:400], launch, ok))
    figures = {id(e): [] for e in entries}
    for _ in range(args.rounds):
        for e in entries:
            figures[id(e)].append(2 * S ** 3 / best_time(e[3], reps=5) / 1e12)
    for e in entries:
        t, name, info, _, ok = e
        f = figures[id(e)]
        print(f"{'x'.join(map(str, t)):12s} {name:9s} {np.median(f):6.0f} TFLOP/s "
              f"({' '.join(f'{v:.0f}' for v in f)}) {'exact' if ok else 'WRONG'} | {info}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How deep should a pipelined wgmma K loop be?  ``benchmarks/gpu.py``'s float16 matmul at
4096^3 for several block tiles, compiled under several shared-memory budgets of
``mma_plan`` (``PIPELINE_SMEM``: the stages' bytes, ``WHOLE_SM_PIPELINE_SMEM``: theirs when
registers keep a block alone on its SM, ``DEFERRED_SMEM``: the bytes with the wgmma wait
deferred) with and without the epilogue's coalescing exchange
(``CUTILE_NUMBA_STORE_EXCHANGE``; ``+x``), each compiled once, then timed in interleaved rounds
in one process (bursts of back-to-back launches between CUDA events,
``probe_host.best_time``): the same card's clocks and the arrays' placement are shared by
every figure.  Prints one line per (tile, budget): the plan, the median TFLOP/s and each
round's.

    source tools/gpu/setup.sh; python3 tools/gpu/stage_sweep.py [--rounds 3]
    (STAGE_SWEEP_ONLY=default,cp.async,tma-all: those budgets only; STAGE_SWEEP_TILES=...)
"""

from __future__ import annotations

import argparse
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [HERE, os.path.join(ROOT, "benchmarks"), ROOT]

TILES = tuple(tuple(int(v) for v in t.split("x")) for t in os.environ.get(
    "STAGE_SWEEP_TILES", "128x128x32,128x128x64,128x256x32,128x256x64,256x128x32,256x128x64"
).split(","))
# (name, mma_plan constants set while it compiles, the switches it compiles and runs under:
# CUTILE_NUMBA_TMA "1" the default, "0" the cp.async loop, "all" the TMA ring on any tile)
X, NOX = {"CUTILE_NUMBA_STORE_EXCHANGE": "1"}, {"CUTILE_NUMBA_STORE_EXCHANGE": "0"}
BUDGETS = (("default", {}, {**NOX, "CUTILE_NUMBA_TMA": "1", "CUTILE_NUMBA_TMA_STORE": "1"}),
           ("cp.async", {}, {**NOX, "CUTILE_NUMBA_TMA": "0"}),
           ("tma-all", {}, {**NOX, "CUTILE_NUMBA_TMA": "all", "CUTILE_NUMBA_TMA_STORE": "1"}),
           ("tma-nostore", {}, {**NOX, "CUTILE_NUMBA_TMA": "all", "CUTILE_NUMBA_TMA_STORE": "0"}),
           ("96K", {"WHOLE_SM_PIPELINE_SMEM": 0}, {**NOX, "CUTILE_NUMBA_TMA": "0"}),
           ("192K/4", {"PIPELINE_SMEM": 192 * 1024, "DEFERRED_SMEM": 192 * 1024},
            {**NOX, "CUTILE_NUMBA_TMA": "0"}),
           ("144K/4+d", {"PIPELINE_SMEM": 144 * 1024, "DEFERRED_SMEM": 200 * 1024},
            {**NOX, "CUTILE_NUMBA_TMA": "0"}),
           ("default+x", {}, {**X, "CUTILE_NUMBA_TMA": "1"}),
           ("192K/4+x", {"PIPELINE_SMEM": 192 * 1024, "DEFERRED_SMEM": 192 * 1024},
            {**X, "CUTILE_NUMBA_TMA": "0"}))


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
    entries = []
    only = set(os.environ.get("STAGE_SWEEP_ONLY", "").split(",")) - {""}
    for name, consts, env in BUDGETS:
        if only and name not in only:
            continue
        os.environ.update(env)
        for t in TILES:
            mm = make_kernels(cutile)["matmul"]       # a kernel of its own: compiled afresh
            c = cuda.device_array((S, S), np.float32)
            grid = (S // t[0], S // t[1])
            saved = {k: getattr(mma_plan, k) for k in consts}
            for k, v in consts.items():
                setattr(mma_plan, k, v)
            try:
                cutile.launch(0, grid, mm, (x, y, c) + t)
                cuda.synchronize()
                info = inspect(mm, (x, y, c) + t, grid=grid).summary()
            except Exception as e:  # noqa: BLE001 - reported, the sweep goes on
                print(f"{t} {name}: FAILED {type(e).__name__}: {str(e)[:200]}", flush=True)
                continue
            finally:
                for k, v in saved.items():
                    setattr(mma_plan, k, v)
            ok = bool(np.array_equal(c.copy_to_host(), ref))

            def launch(mm=mm, c=c, grid=grid, t=t, env=env):
                # the switches are part of the compiled kernel's key: each entry its own
                os.environ.update(env)
                cutile.launch(0, grid, mm, (x, y, c) + t)

            brief = " ".join(re.findall(r"\d+ B shared/block|\d+ regs/thread|\d+ blocks/SM|"
                                        r"\d+-stage|\d+-slot mbarrier ring|wait deferred|"
                                        r"stored by TMA",
                                        str(info)))
            entries.append((t, name, brief, launch, ok))
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

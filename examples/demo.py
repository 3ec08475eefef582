"""Run every example on the interpreter, and on the Numba backend where it can run (a GPU, or
Numba's CUDA simulator with ``NUMBA_ENABLE_CUDASIM=1``), and print the max error of each
against NumPy.

The simulator runs every GPU thread in Python, hundreds of times slower than the interpreter:
there the examples run at the small sizes of ``SIMULATOR_SIZES``.
"""

from __future__ import annotations

import importlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cutile as ct  # noqa: E402
from cutile import config  # noqa: E402
from cutile.testing.executors import numba_unavailable  # noqa: E402

EXAMPLES = ["vector_add", "matmul", "softmax", "layer_norm", "transpose", "attention", "histogram",
            "splitk_matmul", "topk", "fft", "prefix_sum", "grouped_gemm", "static_helpers"]

# example -> run() keyword arguments on Numba's CUDA simulator (a few blocks each)
SIMULATOR_SIZES = {
    "vector_add": {"n": 3000, "tile": 1024},
    "matmul": {"m": 70, "n": 40, "k": 40},
    "softmax": {"rows": 3, "cols": 100},
    "layer_norm": {"rows": 3, "cols": 100},
    "transpose": {"m": 40, "n": 30},
    "attention": {"heads": 1, "seq": 40, "d": 16},
    "histogram": {"n": 3000, "nbins": 16, "tile": 1024},
    "splitk_matmul": {"m": 40, "n": 30, "k": 64, "split": 2},
    "topk": {"rows": 2, "cols": 64, "k": 4},
    "fft": {"rows": 4, "n": 8},
    "prefix_sum": {"n": 3000},
    "grouped_gemm": {"shapes": ((40, 20, 30), (16, 16, 20))},
    "static_helpers": {"n": 1000},
}

def backends() -> tuple[list[tuple[str, str]], str | None]:
    """[(executor, label)] to run on, and a line saying why Numba is left out (or None)."""
    why = numba_unavailable()
    if why:
        return [("interp", "interp")], why
    return [("interp", "interp"), ("numba", "numba-sim" if config.cuda_simulator() else "numba")], \
        None


def row(cells: tuple, widths: tuple) -> str:
    """One table row: the name columns left-aligned, the numbers right-aligned."""
    name, label, err, secs = cells
    return (f"{name:<{widths[0]}}  {label:<{widths[1]}}  {err:>{widths[2]}}  "
            f"{secs:>{widths[3]}}")


def main() -> int:
    worst = 0.0
    runs, note = backends()
    head = ("example", "backend", "max error", "seconds")
    widths = (max(map(len, EXAMPLES + [head[0]])), max(len(lb) for _, lb in runs + [("", head[1])]),
              len(head[2]), len(head[3]))
    print(row(head, widths))
    for be, label in runs:
        sizes = SIMULATOR_SIZES if label == "numba-sim" else {}
        for name in EXAMPLES:
            mod = importlib.import_module(name)
            t0 = time.perf_counter()
            with ct.executors.backend(be):
                err = mod.run(**sizes.get(name, {}))
            dt = time.perf_counter() - t0
            worst = max(worst, err)
            print(row((name, label, f"{err:.3g}", f"{dt:.2f}"), widths), flush=True)
    if note:
        print(note)
    ok = worst < 1e-3
    print("all examples agree with NumPy" if ok else "ERROR: an example disagrees with NumPy")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

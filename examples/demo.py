"""Run every example on the interpreter (and on the GPU backend when one is usable) and print
the max error of each against NumPy."""

from __future__ import annotations

import importlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cutile as ct  # noqa: E402

EXAMPLES = ["vector_add", "matmul", "softmax", "layer_norm", "transpose", "attention", "histogram",
            "splitk_matmul", "topk", "fft", "prefix_sum", "grouped_gemm", "static_helpers"]


def backends() -> list[str]:
    out = ["interp"]
    try:
        from cutile.executors import gpu_usable
    except ImportError:
        return out
    if gpu_usable():
        out.append("numba")
    return out


def main() -> int:
    worst = 0.0
    print(f"{'example':<12} {'backend':<8} {'max error':>10} {'seconds':>8}")
    for be in backends():
        ct.set_backend(be)
        for name in EXAMPLES:
            mod = importlib.import_module(name)
            t0 = time.perf_counter()
            err = mod.run()
            dt = time.perf_counter() - t0
            worst = max(worst, err)
            print(f"{name:<12} {be:<8} {err:>10.3g} {dt:>8.2f}")
    ct.set_backend(None)
    ok = worst < 1e-3
    print("all examples agree with NumPy" if ok else "ERROR: an example disagrees with NumPy")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

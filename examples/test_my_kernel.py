"""A user's property test of their own kernel, written only against the documented API
(docs/testing.md).  Run it with ``python -m pytest examples/test_my_kernel.py``.

The kernel adds a per-column bias to a ragged 2-D array and scales it, one (TM, TN) tile per block.
Hypothesis draws array shapes that are not multiples of the tile, tile shapes, dtypes and
values with NaN/inf/-0.0/subnormals; each example is checked against NumPy on every executor
that can run here (``cutile_executor``: the interpreter, plus the Numba backend on a GPU or
under ``NUMBA_ENABLE_CUDASIM=1``), and the executors are diffed against each other.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cutile as ct
from cutile.testing import (
    ExecutorMismatch,
    assert_executors_agree,
    assert_matches,
    available_executors,
)
from cutile.testing import strategies as cts


@ct.kernel
def scale_bias(x, bias, out, alpha, TM: ct.Constant[int], TN: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    t = ct.load(x, (i, j), (TM, TN), padding_mode=ct.PaddingMode.ZERO)
    b = ct.load(bias, (j,), (TN,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, (i, j), ((t + ct.reshape(b, (1, TN))) * alpha).astype(out.dtype))


@ct.kernel
def scale_bias_broken(x, bias, out, alpha, TM: ct.Constant[int], TN: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    t = ct.load(x, (i, j), (TM, TN), padding_mode=ct.PaddingMode.ZERO)
    b = ct.load(bias, (i,), (TN,), padding_mode=ct.PaddingMode.ZERO)   # bug: row block index
    ct.store(out, (i, j), ((t + ct.reshape(b, (1, TN))) * alpha).astype(out.dtype))


def reference(x, bias, out, alpha, TM, TN):
    """What the kernel must write, in NumPy: float32 arithmetic (a float16 tile plus a float32
    tile promotes to float32), one rounding per op.  (Had the kernel written ``t * alpha + b``,
    cuTile would fuse it into one fma, R-FMA-1, and the reference would have to round once.)"""
    y = x.astype(np.float32) + bias.astype(np.float32)[None, :]
    return {"out": (y * np.float32(alpha)).astype(out.dtype)}


def case(tiled, dtype, data):
    x = data.draw(cts.arrays(dtype, tiled.shape), label="x")
    bias = data.draw(cts.arrays(np.float32, tiled.shape[1:]), label="bias")
    out = np.zeros(tiled.shape, dtype)
    return (x, bias, out, np.float32(1.5), *tiled.tile)


@settings(max_examples=15, deadline=None)
@given(tiled=cts.tiled_shapes(ndim=2, max_side=40, max_tile=16),
       dtype=st.sampled_from([np.float32, np.float16]), data=st.data())
def test_matches_numpy(cutile_executor, tiled, dtype, data):
    args = case(tiled, np.dtype(dtype), data)
    assert_matches(scale_bias, tiled.grid, args, reference, executor=cutile_executor)


@pytest.mark.skipif("numba" not in available_executors(),
                    reason="the Numba backend needs a GPU or NUMBA_ENABLE_CUDASIM=1")
@settings(max_examples=10, deadline=None)
@given(tiled=cts.tiled_shapes(ndim=2, max_side=40, max_tile=16), data=st.data())
def test_executors_agree(tiled, data):
    args = case(tiled, np.dtype(np.float32), data)
    assert_executors_agree(scale_bias, tiled.grid, args)


def test_broken_kernel_is_caught():
    """The same check on a kernel with a bug names the first wrong elements, both values and
    the block that wrote each."""
    x = np.arange(6 * 20, dtype=np.float32).reshape(6, 20)
    bias = np.arange(20, dtype=np.float32)
    args = (x, bias, np.zeros_like(x), np.float32(1.5), 4, 8)
    with pytest.raises(ExecutorMismatch) as err:
        assert_matches(scale_bias_broken, (2, 3), args, reference)
    report = str(err.value)
    assert "out: " in report and "element(s) differ" in report
    assert "written by block (0, 1, 0)" in report       # first bad element: out[0, 8]
    assert err.value.mismatches[0].index == (0, 8)

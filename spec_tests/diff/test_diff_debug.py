"""Interpreter vs Numba backend: advanced indexing with out-of-bounds sparse and dense
indices, printed output (the same text from both executors), assert_ failures (the same block,
line and message) and the backend's refusal of mma_scaled."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import cutile as ct
from cutile import Constant
from cutile.executors import backend

from .harness import assert_same, examples, poison, run_both, sim


@ct.kernel
def adv(x, idx, y, z, s, N: Constant[int], W: Constant[int]):
    rows = ct.load(idx, (ct.bid(0),), (N,))
    t = ct.load_advanced_indexing(x, (rows, ct.Slice(s, W)), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, (ct.bid(0), 0), t)
    ct.store_advanced_indexing(z, (rows, ct.Slice(s, W)), t + 1)


@settings(max_examples=examples(8))
@given(rows=st.integers(1, 12), cols=st.integers(1, 12), n=st.sampled_from([1, 2, 4, 8]),
       w=st.sampled_from([1, 2, 4, 8]), s=st.integers(-4, 12), seed=st.integers(0, 2**16))
def test_advanced_indexing_matches(rows, cols, n, w, s, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-100, 100, (rows, cols)).astype(np.int32)
    # distinct rows (duplicates make the store undefined, R-UB-7), some out of bounds
    cand = rng.permutation(np.arange(-2, rows + 2))
    idx = np.concatenate([cand, np.arange(rows + 2, rows + 2 + n)])[:n].astype(np.int32)
    # a tile with no element inside the array is undefined (R-UB-1): not compared
    assume(((idx >= 0) & (idx < rows)).any() and s < cols and s + w > 0)
    y = poison((n, w), np.int32)
    z = np.zeros((rows, cols), np.int32)
    ref, got = run_both(adv, (1,), [x, idx, y, z, s, n, w])
    for r, g, name in zip(ref, got, ["x", "idx", "y", "z"]):
        assert_same(r, g, what=name)


@ct.kernel
def printing(x, T: Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, (bid, 0), (2, T))
    ct.printf("b%d %+.3e %#x\n", bid, t, t.astype(ct.int32))
    print(f"{bid}: {t:8.2f} {ct.sum(t, None)}", (bid, "s"), sep="|")
    ct.print(t > 0, end="!\n")
    for i in range(bid + 1):
        if i % 2 == 0:
            ct.printf("loop %d of block %d: %5.1f%%\n", i, bid, ct.sum(t, None))


def test_print_output_matches(capsys):
    """The same text from both executors, on sys.stdout when the launch returns (R-PRINT-5;
    on a GPU only the lines of the two blocks may interleave differently)."""
    x = np.array([[1.5, -2.25, 3.0, 0.0], [7.0, -0.5, 8.125, 1e-3],
                  [2.0, 4.0, -8.0, 16.0], [0.1, 0.2, 0.3, 0.4]], np.float32)
    outs = []
    for be in ("interp", "numba"):
        with backend(be):
            ct.launch(None, (2,), printing, (x, 4))
        outs.append(capsys.readouterr().out)
    if sim():                       # the simulator runs the blocks in order
        assert outs[0] == outs[1]
    else:
        assert sorted(outs[0].splitlines()) == sorted(outs[1].splitlines())
    assert outs[0].count("\n") == 6 + 2


@ct.kernel
def checking(x):
    t = ct.load(x, (ct.bid(0),), (8,))
    ct.assert_(t >= 0, "negative value")
    ct.store(x, (ct.bid(0),), t + 1)


def test_assert_failure_matches():
    errs = []
    for be in ("interp", "numba"):
        x = np.arange(32, dtype=np.int64)
        x[19] = -1                                      # block 2
        with backend(be), pytest.raises(AssertionError, match="negative value") as info:
            ct.launch(None, (4,), checking, (x,))
        errs.append((info.value.block, info.value.loc.line))
        assert (x[16:24] == np.where(np.arange(16, 24) == 19, -1, np.arange(16, 24))).all()
    assert errs[0] == errs[1] and errs[0][0] == (2, 0, 0)


@ct.kernel
def scaled(x, xs, y, ys, z):
    acc = ct.load(z, (0, 0), (2, 2))
    acc = ct.mma_scaled(ct.load(x, (0, 0), (2, 32)), ct.load(xs, (0, 0), (2, 1)),
                        ct.load(y, (0, 0), (32, 2)), ct.load(ys, (0, 0), (1, 2)), acc)
    ct.store(z, (0, 0), acc)


def test_mma_scaled_refused_by_the_backend():
    f8, e8 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e8m0fnu
    args = (np.ones((2, 32), f8), np.ones((2, 1), e8), np.ones((32, 2), f8),
            np.ones((1, 2), e8), np.zeros((2, 2), np.float32))
    with backend("interp"):                                # the interpreter runs it
        ct.launch(None, (1,), scaled, args)
    np.testing.assert_array_equal(args[-1], np.full((2, 2), 32.0, np.float32))
    with backend("numba"), pytest.raises(ct.TileUnsupportedFeatureError,
                                         match="mma_scaled is not supported by the numba"):
        ct.launch(None, (1,), scaled, args)


@ct.kernel
def e5m3_roundtrip(x, y, z):
    e = ct.load(x, (0,), (32,)).astype(ct.float8_e5m3fnu)
    ct.store(y, (0,), e)
    ct.store(z, (0,), ct.load(y, (0,), (32,)).astype(ct.float64) + 1)


def test_float8_e5m3fnu_conversions_match():
    rng = np.random.default_rng(11)
    x = (rng.standard_normal(32) * 2.0 ** rng.integers(-20, 18, 32)).astype(np.float32)
    x[:4] = [np.nan, np.inf, -np.inf, 118784.0]
    from cutile.dtypes import E5M3_NP
    ref, got = run_both(e5m3_roundtrip, (1,), [x, np.zeros(32, E5M3_NP), np.zeros(32)])
    assert (ref[1].view(np.uint8) == got[1].view(np.uint8)).all()
    assert_same(ref[2], got[2], what="z")

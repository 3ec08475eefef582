"""§10 advanced indexing: ``load_advanced_indexing``/``store_advanced_indexing`` with one sparse
index tile and ``ct.Slice`` dense dimensions (R-ADV-1..5).  Expected values are NumPy fancy
indexing written here."""

from __future__ import annotations

import linecache

import numpy as np
import pytest
from spec_executor import interp_only_ub

import cutile as ct
from cutile import Constant

P = ct.PaddingMode


@ct.kernel
def k_load(x, y, S: Constant[int]):
    rows = ct.arange(4, dtype=ct.int32)
    t = ct.load_advanced_indexing(x, (rows, ct.Slice(S, 4)))
    ct.store(y, (0, 0), t)


def test_load_example_R_ADV_3():
    x = np.arange(64, dtype=np.int32).reshape(8, 8)
    y = np.zeros((4, 4), np.int32)
    ct.launch(None, (1,), k_load, (x, y, 2))
    np.testing.assert_array_equal(y, x[0:4, 2:6])
    assert y[0].tolist() == [2, 3, 4, 5] and y[3].tolist() == [26, 27, 28, 29]


@ct.kernel
def k_load_pad(x, idx, y, s, PAD: Constant[object]):
    rows = ct.load(idx, (0,), (4,))
    t = ct.load_advanced_indexing(x, (rows, ct.Slice(s, 8)), padding_mode=PAD)
    ct.store(y, (0, 0), t)


@pytest.mark.parametrize("pad,fill", [(P.ZERO, 0.0), (P.NEG_INF, -np.inf), (P.NAN, np.nan),
                                      (P.POS_INF, np.inf)])
def test_out_of_bounds_sparse_and_dense_are_padded_R_ADV_4(pad, fill):
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    idx = np.array([7, 8, 2, 9], np.int32)          # rows 8, 9 are outside the array
    y = np.zeros((4, 8), np.float32)
    ct.launch(None, (1,), k_load_pad, (x, idx, y, -3, pad))   # columns -3..4: 3 padded
    want = np.full((4, 8), fill, np.float32)
    for i, r in enumerate(idx):
        for j, c in enumerate(range(-3, 5)):
            if 0 <= r < 8 and 0 <= c < 8:
                want[i, j] = x[r, c]
    np.testing.assert_array_equal(y, want)


@ct.kernel
def k_repeat(x, y):
    rows = ct.full((4,), 1, dtype=ct.int64)
    ct.store(y, (0, 0), ct.load_advanced_indexing(x, (rows, ct.Slice(0, 2))))


def test_repeated_sparse_indices_read_the_same_row_R_ADV_3():
    x = np.arange(8, dtype=np.int16).reshape(4, 2)
    y = np.zeros((4, 2), np.int16)
    ct.launch(None, (1,), k_repeat, (x, y))
    np.testing.assert_array_equal(y, np.repeat(x[1:2], 4, axis=0))


@ct.kernel
def k_3d(x, y, z0):
    cols = ct.arange(2, dtype=ct.int32) * 3
    t = ct.load_advanced_indexing(x, (ct.Slice(z0, 2), cols, ct.Slice(1, 4)))
    ct.store(y, (0, 0, 0), t)
    ct.store_advanced_indexing(x, (ct.Slice(z0, 2), cols, ct.Slice(1, 4)), t * 10)


def test_sparse_in_the_middle_and_store_R_ADV_3_5():
    x = np.arange(2 * 6 * 5, dtype=np.float64).reshape(2, 6, 5)
    x0 = x.copy()
    y = np.zeros((2, 2, 4), np.float64)
    ct.launch(None, (1,), k_3d, (x, y, 0))
    np.testing.assert_array_equal(y, x0[:, [0, 3], 1:5])
    want = x0.copy()
    want[:, [0, 3], 1:5] *= 10
    np.testing.assert_array_equal(x, want)


@ct.kernel
def k_store(x, idx):
    rows = ct.load(idx, (0,), (4,))
    ct.store_advanced_indexing(x, (rows, ct.Slice(6, 4)), ct.full((4, 4), 7, dtype=ct.int32))


def test_store_drops_out_of_bounds_and_casts_R_ADV_5():
    x = np.zeros((8, 8), np.int64)
    idx = np.array([0, 9, 5, -1], np.int32)
    ct.launch(None, (1,), k_store, (x, idx))
    want = np.zeros((8, 8), np.int64)
    want[[0, 5], 6:8] = 7
    np.testing.assert_array_equal(x, want)


def kernel_from(body: str):
    src = ("def k(x, x1, f):\n    r = ct.arange(4, dtype=ct.int32)\n"
           f"    {body}\n")
    name = f"<test_adv_{abs(hash(src))}>"
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    ns = {"ct": ct}
    exec(compile(src, name, "exec"), ns)
    return ct.kernel(ns["k"])


@pytest.mark.parametrize("body,match", [
    ("ct.load_advanced_indexing(x1, (r,))", "requires a 2D or higher-rank array"),
    ("ct.load_advanced_indexing(x, (r,))", "does not match array rank"),
    ("ct.load_advanced_indexing(x, (ct.Slice(0, 4), ct.Slice(0, 4)))",
     "exactly one index must be a 1D integer Tile"),
    ("ct.load_advanced_indexing(x, (r, r))", "exactly one index must be a 1D integer Tile"),
    ("ct.load_advanced_indexing(x, (ct.reshape(r, (2, 2)), ct.Slice(0, 4)))",
     "must be a 1D integer tile"),
    ("ct.load_advanced_indexing(x, (ct.load(f, (0,), (4,)), ct.Slice(0, 4)))",
     "must be a 1D integer tile"),
    ("ct.load_advanced_indexing(x, (f, ct.Slice(0, 4)))", "must be a 1D integer Tile or a"),
    ("ct.load_advanced_indexing(x, (r, ct.Slice(0, 3)))", "power of two"),
    ("ct.load_advanced_indexing(x, (r, ct.Slice(0, ct.bid(0))))", "compile-time constant"),
    ("ct.load_advanced_indexing(x, (r, ct.Slice(1.5, 4)))", "signed integer scalar"),
    ("ct.store_advanced_indexing(x, (r, ct.Slice(0, 4)), ct.zeros((4, 2), ct.int32))",
     "does not match the shape implied by indices"),
    ("ct.store_advanced_indexing(x, (r, ct.Slice(0, 4)), 1)",
     "does not match the shape implied by indices"),
])
def test_errors_R_ADV_1_2_5(body, match):
    with pytest.raises(ct.TileTypeError, match=match):
        ct.launch(None, (1,), kernel_from(body),
                  (np.zeros((8, 8), np.int32), np.zeros(8, np.int32), np.zeros(4, np.float32)))


def test_slice_on_the_host_is_a_plain_record():
    s = ct.Slice(2, 4)
    assert (s.start, s.length) == (2, 4)


@ct.kernel
def k_ub_load(x, idx, y, s):
    rows = ct.load(idx, (0,), (4,))
    ct.store(y, (0, 0), ct.load_advanced_indexing(x, (rows, ct.Slice(s, 4)),
                                                  padding_mode=ct.PaddingMode.ZERO))


@ct.kernel
def k_ub_store(x, idx, s):
    rows = ct.load(idx, (0,), (4,))
    ct.store_advanced_indexing(x, (rows, ct.Slice(s, 4)), ct.zeros((4, 4), ct.float32))


@interp_only_ub
@pytest.mark.parametrize("rows,s", [([8, 9, -1, 20], 0), ([0, 1, 2, 3], 8), ([0, 1, 2, 3], -4)])
def test_entirely_outside_is_ub_R_ADV_6_R_UB_1(rows, s):
    x = np.zeros((8, 8), np.float32)
    idx = np.array(rows, np.int32)
    with pytest.raises(ct.UndefinedBehaviorError, match="R-UB-1"):
        ct.launch(None, (1,), k_ub_load, (x, idx, np.zeros((4, 4), np.float32), s))
    with pytest.raises(ct.UndefinedBehaviorError, match="R-UB-1"):
        ct.launch(None, (1,), k_ub_store, (x, idx, s))


@interp_only_ub
def test_duplicate_sparse_indices_of_a_store_are_ub_R_ADV_5_R_UB_7():
    x = np.zeros((8, 8), np.float32)
    with pytest.raises(ct.UndefinedBehaviorError, match="R-UB-7.*sparse index 3"):
        ct.launch(None, (1,), k_ub_store, (x, np.array([3, 1, 3, 9], np.int32), 0))
    ct.launch(None, (1,), k_ub_store, (x, np.array([3, 1, 9, 9], np.int32), 0))  # OOB repeats


@ct.kernel
def k_undetermined(x, y):
    rows = ct.arange(4, dtype=ct.int32) + 6
    t = ct.load_advanced_indexing(x, (rows, ct.Slice(0, 4)))      # rows 8, 9: padding
    ct.store(y, (0, 0), t)


@interp_only_ub
def test_undetermined_padding_is_poison_R_ADV_4_R_UB_2():
    with pytest.raises(ct.UndefinedBehaviorError, match="R-UB-2.*UNDETERMINED"):
        ct.launch(None, (1,), k_undetermined, (np.zeros((8, 4), np.float32),
                                               np.zeros((4, 4), np.float32)))

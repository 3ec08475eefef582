"""Top-k per row: ``k`` rounds of an arg-max through ``ct.reduce`` with a (value, index) tuple
combiner, each round masking the winner out; results gathered into a (1, K) tile with
``insert``.  Ties go to the smaller index, as ``np.argsort(-x, kind="stable")`` does."""

from __future__ import annotations

import numpy as np

import cutile as ct


@ct.function
def better(v, i, w, j):
    """(v, i) o (w, j): the larger value, the smaller index on a tie (associative)."""
    take = (w > v) | ((w == v) & (j < i))
    return ct.where(take, w, v), ct.where(take, j, i)


@ct.kernel
def topk_kernel(x, values, indices, N: ct.Constant[int], K: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, (row, 0), (1, N), padding_mode=ct.PaddingMode.NEG_INF)
    idx = ct.reshape(ct.arange(N, dtype=ct.int32), (1, N))
    vals = ct.full((1, K), 0, dtype=x.dtype)
    inds = ct.full((1, K), 0, dtype=ct.int32)
    for j in range(K):
        v, i = ct.reduce((t, idx), 1, better, (-np.inf, 0), keepdims=True)   # (1, 1) each
        vals = vals.insert((0, j), v)
        inds = inds.insert((0, j), i)
        t = ct.where(idx == i, -np.inf, t)                 # drop the winner
    ct.store(values, (row, 0), vals)
    ct.store(indices, (row, 0), inds)


def next_pow2(n: int) -> int:
    return 1 << (n - 1).bit_length()


def run(launch=ct.launch, rows: int = 6, cols: int = 200, k: int = 8, rng=None) -> float:
    rng = rng or np.random.default_rng(5)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    x[0, 10] = x[0, 20] = 9.0                      # a tie: index 10 first
    values = np.full((rows, k), np.nan, np.float32)
    indices = np.full((rows, k), -1, np.int32)
    launch(None, (rows,), topk_kernel, (x, values, indices, next_pow2(cols), k))
    ref_i = np.argsort(-x, axis=1, kind="stable")[:, :k]
    ref_v = np.take_along_axis(x, ref_i, axis=1)
    wrong = int(np.sum(indices != ref_i))
    return float(np.max(np.abs(values - ref_v))) + wrong


if __name__ == "__main__":
    print(f"topk: max error {run():.3g}")

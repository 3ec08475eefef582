"""Row softmax: one block per row, the row padded with -inf so padded lanes vanish in exp."""

from __future__ import annotations

import numpy as np

import cutile as ct


@ct.kernel
def softmax_kernel(x, out, BLOCK_N: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, BLOCK_N), padding_mode=ct.PaddingMode.NEG_INF)
    t = t.astype(ct.float32)
    m = ct.max(t, axis=1, keepdims=True)
    e = ct.exp(t - m)
    s = ct.sum(e, axis=1, keepdims=True)
    ct.store(out, index=(row, 0), tile=(e / s).astype(out.dtype))


def next_pow2(n: int) -> int:
    return 1 << (n - 1).bit_length()


def run(launch=ct.launch, rows: int = 37, cols: int = 1000, rng=None) -> float:
    rng = rng or np.random.default_rng(2)
    x = (rng.standard_normal((rows, cols)) * 4).astype(np.float32)
    out = np.full_like(x, np.nan)
    launch(None, (rows,), softmax_kernel, (x, out, next_pow2(cols)))
    xd = x.astype(np.float64)
    ref = np.exp(xd - xd.max(axis=1, keepdims=True))
    ref /= ref.sum(axis=1, keepdims=True)
    return float(np.max(np.abs(out - ref)))


if __name__ == "__main__":
    print(f"softmax: max error {run():.3g}")

"""Layer norm over the last axis: mean and variance with padded lanes masked out, then a
per-column scale and shift."""

from __future__ import annotations

import numpy as np

import cutile as ct


@ct.kernel
def layer_norm_kernel(x, weight, bias, out, eps, BLOCK_N: ct.Constant[int]):
    row = ct.bid(0)
    n = x.shape[1]
    t = ct.load(x, index=(row, 0), shape=(1, BLOCK_N), padding_mode=ct.PaddingMode.ZERO)
    t = t.astype(ct.float32)
    mean = ct.sum(t, axis=1, keepdims=True) / n
    cols = ct.arange(BLOCK_N, dtype=ct.int32)[None, :]
    centered = ct.where(cols < n, t - mean, 0.0)
    var = ct.sum(centered * centered, axis=1, keepdims=True) / n
    inv = ct.rsqrt(var + eps)
    w = ct.load(weight, index=(0,), shape=(BLOCK_N,), padding_mode=ct.PaddingMode.ZERO)
    b = ct.load(bias, index=(0,), shape=(BLOCK_N,), padding_mode=ct.PaddingMode.ZERO)
    y = centered * inv * w[None, :] + b[None, :]
    ct.store(out, index=(row, 0), tile=y.astype(out.dtype))


def run(launch=ct.launch, rows: int = 29, cols: int = 300, rng=None) -> float:
    rng = rng or np.random.default_rng(3)
    x = (rng.standard_normal((rows, cols)) * 3 + 1).astype(np.float32)
    w = rng.standard_normal(cols).astype(np.float32)
    b = rng.standard_normal(cols).astype(np.float32)
    out = np.full_like(x, np.nan)
    eps = 1e-5
    launch(None, (rows,), layer_norm_kernel, (x, w, b, out, eps, 1 << (cols - 1).bit_length()))
    xd = x.astype(np.float64)
    mu = xd.mean(axis=1, keepdims=True)
    var = ((xd - mu) ** 2).mean(axis=1, keepdims=True)
    ref = (xd - mu) / np.sqrt(var + eps) * w + b
    return float(np.max(np.abs(out - ref)))


if __name__ == "__main__":
    print(f"layer norm: max error {run():.3g}")

"""Fused attention with an online softmax (flash-attention style), causal or not.

Exercises the idioms of real cuTile kernels: constant booleans steering compile-time
branches, runtime loop bounds, masks built from ``arange`` with ``[:, None]``, ``exp2`` with
flush-to-zero, an ``order=`` load that transposes K, and two ``mma`` per iteration.
"""

from __future__ import annotations

import math

import numpy as np

import cutile as ct

LOG2E = 1.0 / math.log(2)
ConstInt = ct.Constant[int]
ConstBool = ct.Constant[bool]


@ct.kernel(occupancy=2)
def attention_kernel(Q, K, V, Out, scale: float, D: ConstInt, TILE_M: ConstInt,
                     TILE_N: ConstInt, CAUSAL: ConstBool):
    bm = ct.bid(0)
    head = ct.bid(1)
    scale = scale * LOG2E
    rows = (bm * TILE_M + ct.arange(TILE_M, dtype=np.int32))[:, None]
    cols0 = ct.arange(TILE_N, dtype=np.int32)[None, :]
    m_i = ct.full((TILE_M, 1), -np.inf, dtype=np.float32)
    l_i = ct.full((TILE_M, 1), 0.0, dtype=np.float32)
    acc = ct.full((TILE_M, D), 0.0, dtype=np.float32)
    q = ct.load(Q, index=(head, bm, 0), shape=(1, TILE_M, D),
                padding_mode=ct.PaddingMode.ZERO).reshape((TILE_M, D))
    seq_k = K.shape[1]
    n_tiles = ct.cdiv(seq_k, TILE_N)
    if CAUSAL:
        n_tiles = min(n_tiles, ct.cdiv((bm + 1) * TILE_M, TILE_N))
    for j in range(n_tiles):
        k = ct.load(K, index=(head, 0, j), shape=(1, D, TILE_N), order=(0, 2, 1),
                    padding_mode=ct.PaddingMode.ZERO, latency=2).reshape((D, TILE_N))
        qk = ct.mma(q, k, ct.full((TILE_M, TILE_N), 0.0, dtype=np.float32))
        cols = j * TILE_N + cols0
        mask = cols < seq_k
        if CAUSAL:
            mask = mask & (rows >= cols)
        qk = qk + ct.where(mask, 0.0, -np.inf)
        m_ij = max(m_i, ct.max(qk, axis=-1, keepdims=True) * scale)
        p = ct.exp2(qk * scale - m_ij, flush_to_zero=True)
        alpha = ct.exp2(m_i - m_ij, flush_to_zero=True)
        l_i = l_i * alpha + ct.sum(p, axis=-1, keepdims=True)
        v = ct.load(V, index=(head, j, 0), shape=(1, TILE_N, D),
                    padding_mode=ct.PaddingMode.ZERO).reshape((TILE_N, D))
        acc = ct.mma(p.astype(Q.dtype), v, acc * alpha)
        m_i = m_ij
    out = ct.truediv(acc, l_i).reshape((1, TILE_M, D)).astype(Out.dtype)
    ct.store(Out, index=(head, bm, 0), tile=out)


def reference(q, k, v, causal):
    s = np.einsum("hmd,hnd->hmn", q.astype(np.float64), k.astype(np.float64)) / math.sqrt(
        q.shape[-1])
    if causal:
        m, n = s.shape[-2:]
        s = np.where(np.arange(n)[None, :] <= np.arange(m)[:, None], s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    return np.einsum("hmn,hnd->hmd", p, v.astype(np.float64))


def run(launch=ct.launch, heads: int = 2, seq: int = 100, d: int = 32, rng=None) -> float:
    rng = rng or np.random.default_rng(5)
    q, k, v = (rng.standard_normal((heads, seq, d)).astype(np.float16) for _ in range(3))
    err = 0.0
    for causal in (False, True):
        out = np.full((heads, seq, d), np.nan, np.float16)
        launch(None, (ct.cdiv(seq, 32), heads), attention_kernel,
               (q, k, v, out, 1.0 / math.sqrt(d), d, 32, 32, causal))
        err = max(err, float(np.max(np.abs(out.astype(np.float64)
                                           - reference(q, k, v, causal)))))
    return err


if __name__ == "__main__":
    print(f"attention: max error {run():.3g}")

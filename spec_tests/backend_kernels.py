"""Kernels shared by the Numba-backend tests (codegen, PTX, differential): one definition each."""

from __future__ import annotations

import numpy as np

import cutile as ct
from cutile import Constant


@ct.kernel
def mm_kloop(a, b, c, TM: Constant[int], TN: Constant[int], TK: Constant[int],
             ACC: Constant[object]):
    """The seeds' tiled matmul: a K loop of zero-padded loads into an ``ACC`` accumulator."""
    acc = ct.zeros((TM, TN), dtype=ACC)
    for k in range(ct.num_tiles(a, 1, (TM, TK))):
        x = ct.load(a, (ct.bid(0), k), (TM, TK), padding_mode=ct.PaddingMode.ZERO)
        y = ct.load(b, (k, ct.bid(1)), (TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(x, y, acc)
    ct.store(c, (ct.bid(0), ct.bid(1)), acc)


@ct.kernel
def bmm_kloop(a, b, c, TM: Constant[int], TN: Constant[int], TK: Constant[int]):
    """Batched ``mm_kloop`` as benchmarks/gpu.py writes it: 3-D loads reshaped to 2-D for the
    mma, the float32 accumulator stored through a (1, TM, TN) reshape in ``c``'s dtype."""
    z = ct.bid(2)
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    for k in range(ct.num_tiles(a, 2, (1, TM, TK))):
        x = ct.load(a, (z, ct.bid(0), k), (1, TM, TK), padding_mode=ct.PaddingMode.ZERO)
        y = ct.load(b, (z, k, ct.bid(1)), (1, TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(ct.reshape(x, (TM, TK)), ct.reshape(y, (TK, TN)), acc)
    ct.store(c, (z, ct.bid(0), ct.bid(1)), ct.reshape(acc.astype(c.dtype), (1, TM, TN)))


@ct.kernel
def mm_narrow(a, b, c, TM: Constant[int], TN: Constant[int], TK: Constant[int]):
    """benchmarks/gpu.py's matmul: ``mm_kloop`` in float32, stored in ``c``'s dtype."""
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    for k in range(ct.num_tiles(a, 1, (TM, TK))):
        x = ct.load(a, (ct.bid(0), k), (TM, TK), padding_mode=ct.PaddingMode.ZERO)
        y = ct.load(b, (k, ct.bid(1)), (TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(x, y, acc)
    ct.store(c, (ct.bid(0), ct.bid(1)), acc.astype(c.dtype))


@ct.kernel
def mm_two_loops(a, b, c, d, TM: Constant[int], TN: Constant[int], TK: Constant[int]):
    """Two K loops one after the other: ``c = a @ b``, then ``d = a @ b.T`` (``b`` square);
    the second loop's staging may take the buffers the first one retired (smem.py)."""
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    for k in range(ct.num_tiles(a, 1, (TM, TK))):
        x = ct.load(a, (ct.bid(0), k), (TM, TK), padding_mode=ct.PaddingMode.ZERO)
        y = ct.load(b, (k, ct.bid(1)), (TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(x, y, acc)
    ct.store(c, (ct.bid(0), ct.bid(1)), acc)
    acc2 = ct.zeros((TM, TN), dtype=ct.float32)
    for k in range(ct.num_tiles(a, 1, (TM, TK))):
        x = ct.load(a, (ct.bid(0), k), (TM, TK), padding_mode=ct.PaddingMode.ZERO)
        y = ct.load(b, (ct.bid(1), k), (TN, TK), padding_mode=ct.PaddingMode.ZERO)
        acc2 = ct.mma(x, ct.transpose(y), acc2)
    ct.store(d, (ct.bid(0), ct.bid(1)), acc2)


@ct.kernel
def mm_tf32_kloop(a, b, c, TM: Constant[int], TN: Constant[int], TK: Constant[int]):
    """``mm_kloop`` on float32 arrays with tfloat32 operands (R-MM-5), float32 accumulator."""
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    for k in range(ct.num_tiles(a, 1, (TM, TK))):
        x = ct.load(a, (ct.bid(0), k), (TM, TK), padding_mode=ct.PaddingMode.ZERO)
        y = ct.load(b, (k, ct.bid(1)), (TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(x.astype(ct.tfloat32), y.astype(ct.tfloat32), acc)
    ct.store(c, (ct.bid(0), ct.bid(1)), acc)


@ct.kernel
def attention_fwd(q, k, v, o, scale: float, TM: Constant[int], TN: Constant[int],
                  D: Constant[int]):
    """benchmarks/gpu.py's attention forward (non-causal, online softmax): two mmas per K
    step, one operand loaded before the loop, one transposed, one a plain load in the loop."""
    bm, bh = ct.bid(0), ct.bid(1)
    qt = ct.reshape(ct.load(q, (bh, bm, 0), (1, TM, D)), (TM, D))
    m = ct.full((TM, 1), -float("inf"), dtype=ct.float32)
    den = ct.zeros((TM, 1), dtype=ct.float32)
    acc = ct.zeros((TM, D), dtype=ct.float32)
    for j in range(ct.num_tiles(k, 1, (1, TN, D))):
        kt = ct.reshape(ct.load(k, (bh, j, 0), (1, TN, D)), (TN, D))
        s = ct.mma(qt, ct.transpose(kt), ct.zeros((TM, TN), dtype=ct.float32)) * scale
        m_new = ct.maximum(m, ct.max(s, axis=1, keepdims=True))
        p = ct.exp(s - m_new)
        alpha = ct.exp(m - m_new)
        den = den * alpha + ct.sum(p, axis=1, keepdims=True)
        vt = ct.reshape(ct.load(v, (bh, j, 0), (1, TN, D)), (TN, D))
        acc = ct.mma(p.astype(q.dtype), vt, acc * alpha)
        m = m_new
    ct.store(o, (bh, bm, 0), ct.reshape((acc / den).astype(o.dtype), (1, TM, D)))


@ct.kernel
def attention_ragged(q, k, v, o, scale: float, TM: Constant[int], TN: Constant[int],
                     D: Constant[int]):
    """``attention_fwd`` over a key length that need not be a multiple of ``TN``: the K and V
    tiles keep the default UNDETERMINED padding and the scores of keys past the end are
    masked with ``where``, the pattern of NVIDIA's attention kernels.  The padded rows of V
    then meet zero weights only: finite padding (cutile's GPU backend, the interpreter with
    CUTILE_STRICT=0) gives the right answer, the strict interpreter reports R-UB-2 at the
    store, naming the loads (issue 22)."""
    bm, bh = ct.bid(0), ct.bid(1)
    n = k.shape[1]
    qt = ct.reshape(ct.load(q, (bh, bm, 0), (1, TM, D)), (TM, D))
    keys = ct.reshape(ct.arange(TN, dtype=ct.int32), (1, TN))
    m = ct.full((TM, 1), -float("inf"), dtype=ct.float32)
    den = ct.zeros((TM, 1), dtype=ct.float32)
    acc = ct.zeros((TM, D), dtype=ct.float32)
    for j in range(ct.cdiv(n, TN)):
        kt = ct.reshape(ct.load(k, (bh, j, 0), (1, TN, D)), (TN, D))
        s = ct.mma(qt, ct.transpose(kt), ct.zeros((TM, TN), dtype=ct.float32)) * scale
        s = ct.where(j * TN + keys < n, s, -float("inf"))
        m_new = ct.maximum(m, ct.max(s, axis=1, keepdims=True))
        p = ct.exp(s - m_new)
        alpha = ct.exp(m - m_new)
        den = den * alpha + ct.sum(p, axis=1, keepdims=True)
        vt = ct.reshape(ct.load(v, (bh, j, 0), (1, TN, D)), (TN, D))
        acc = ct.mma(p.astype(q.dtype), vt, acc * alpha)
        m = m_new
    ct.store(o, (bh, bm, 0), ct.reshape((acc / den).astype(o.dtype), (1, TM, D)))


def attention_reference(q, k, v, scale: float):
    """float64 softmax(q k^T * scale) v over the last two axes (the heads leading)."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    s = np.einsum("hmd,hnd->hmn", q, k) * scale
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return np.einsum("hmn,hnd->hmd", p / p.sum(axis=-1, keepdims=True), v)


@ct.kernel
def mm_bt_kloop(a, bt, c, TM: Constant[int], TN: Constant[int], TK: Constant[int]):
    """``a @ bt.T``: the B operand is the transpose of a plain (N x K) load, float32 acc."""
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    for k in range(ct.num_tiles(a, 1, (TM, TK))):
        x = ct.load(a, (ct.bid(0), k), (TM, TK), padding_mode=ct.PaddingMode.ZERO)
        y = ct.load(bt, (ct.bid(1), k), (TN, TK), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(x, ct.transpose(y), acc)
    ct.store(c, (ct.bid(0), ct.bid(1)), acc)

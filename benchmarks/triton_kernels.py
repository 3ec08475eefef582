"""The four kernels of ``benchmarks/interp.py`` written in Triton, run by Triton's interpreter
(``TRITON_INTERPRET=1``, CPU tensors): the column issue 14 compares cutile's interpreter with.

Each builder takes the same NumPy arrays as the cutile launch and returns a zero-argument
function that runs the Triton kernel on ``torch.from_numpy`` views of them (shared memory: the
result lands in the NumPy output).  ``unavailable()`` says why there is no column (Triton or
PyTorch missing), or None.
"""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")      # must precede the import of triton

try:
    import torch
    import triton
    import triton.language as tl
    _WHY = None
except Exception as e:                               # noqa: BLE001 - any import failure
    _WHY = f"{type(e).__name__}: {e}"


def unavailable() -> str | None:
    if _WHY is not None:
        return f"Triton's interpreter is not importable here ({_WHY})"
    if os.environ.get("TRITON_INTERPRET") != "1":
        return "TRITON_INTERPRET is not 1 (set it before triton is imported)"
    return None


if _WHY is None:
    @triton.jit
    def _vec_add(a, b, c, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(c + offs, tl.load(a + offs, mask=m) + tl.load(b + offs, mask=m), mask=m)

    @triton.jit
    def _matmul(a, b, c, M, N, K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                BK: tl.constexpr):
        rm = tl.program_id(0) * BM + tl.arange(0, BM)
        rn = tl.program_id(1) * BN + tl.arange(0, BN)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        # K is a constexpr: Triton's interpreter passes runtime scalars as 1-element arrays,
        # which NumPy >= 2.5 no longer converts to a Python int for range() ("only
        # 0-dimensional arrays can be converted to Python scalars": Triton 3.6 with NumPy
        # 2.5.2 on the GPU host; Triton 3.9 with an older NumPy took a runtime K)
        for k0 in range(0, K, BK):
            rk = k0 + tl.arange(0, BK)
            x = tl.load(a + rm[:, None] * K + rk[None, :],
                        mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
            y = tl.load(b + rk[:, None] * N + rn[None, :],
                        mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc += tl.dot(x, y, input_precision="ieee")
        tl.store(c + rm[:, None] * N + rn[None, :], acc,
                 mask=(rm[:, None] < M) & (rn[None, :] < N))

    @triton.jit
    def _softmax(x, out, N, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        v = tl.load(x + row * N + cols, mask=cols < N, other=-float("inf"))
        e = tl.exp(v - tl.max(v, axis=0))
        tl.store(out + row * N + cols, e / tl.sum(e, axis=0), mask=cols < N)

    @triton.jit
    def _layer_norm(x, w, b, y, N, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        m = cols < N
        v = tl.load(x + row * N + cols, mask=m, other=0.0)
        mean = tl.sum(v, axis=0) / N
        d = tl.where(m, v - mean, 0.0)
        rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / N + eps)
        out = d * rstd * tl.load(w + cols, mask=m) + tl.load(b + cols, mask=m)
        tl.store(y + row * N + cols, out, mask=m)


def _t(*arrays):
    return [torch.from_numpy(a) for a in arrays]


def vector_add(a, b, c, block: int = 1024):
    ta, tb, tc = _t(a, b, c)
    n = a.size
    return lambda: _vec_add[(triton.cdiv(n, block),)](ta, tb, tc, n, BLOCK=block)


def matmul(A, B, C, bm: int, bn: int, bk: int):
    ta, tb, tc = _t(A, B, C)
    (M, K), N = A.shape, B.shape[1]
    grid = (triton.cdiv(M, bm), triton.cdiv(N, bn))
    return lambda: _matmul[grid](ta, tb, tc, M, N, K, BM=bm, BN=bn, BK=bk)


def softmax(x, out):
    tx, to = _t(x, out)
    rows, n = x.shape
    return lambda: _softmax[(rows,)](tx, to, n, BLOCK=triton.next_power_of_2(n))


def layer_norm(x, w, b, y, eps: float):
    tx, tw, tb, ty = _t(x, w, b, y)
    rows, n = x.shape
    return lambda: _layer_norm[(rows,)](tx, tw, tb, ty, n, eps,
                                        BLOCK=triton.next_power_of_2(n))

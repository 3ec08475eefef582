"""Tiled matmul: the seeds' K-loop ``mma`` with FP32 accumulation and partial tiles, and a
persistent, swizzled variant (``for tile in range(bid, n, num_blocks)``)."""

from __future__ import annotations

import numpy as np

import cutile as ct


@ct.kernel
def matmul_kernel(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    bx = ct.bid(0)
    by = ct.bid(1)
    num_k = ct.num_tiles(A, axis=1, shape=(tm, tk))
    acc = ct.full((tm, tn), 0, dtype=ct.float32)            # FP32 accumulator
    for k in range(num_k):
        a = ct.load(A, index=(bx, k), shape=(tm, tk), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, index=(k, by), shape=(tk, tn), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bx, by), tile=acc.astype(C.dtype))   # OOB edge lanes discarded


def swizzle(tile_id, num_m, num_n, GROUP: ct.Constant[int]):
    """Map a linear tile id to (m, n) so that GROUP rows of tiles share B tiles in cache."""
    per_group = GROUP * num_n
    group = tile_id // per_group
    first_m = group * GROUP
    rows = min(num_m - first_m, GROUP)
    m = first_m + (tile_id % per_group) % rows
    n = (tile_id % per_group) // rows
    return m, n


@ct.kernel
def persistent_matmul(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int],
                      tk: ct.Constant[int], GROUP: ct.Constant[int]):
    num_m = ct.num_tiles(C, axis=0, shape=(tm, tn))
    num_n = ct.num_tiles(C, axis=1, shape=(tm, tn))
    num_k = ct.num_tiles(A, axis=1, shape=(tm, tk))
    for tile_id in range(ct.bid(0), num_m * num_n, ct.num_blocks(0)):
        m, n = swizzle(tile_id, num_m, num_n, GROUP)
        acc = ct.zeros((tm, tn), dtype=ct.float32)
        for k in range(num_k):
            a = ct.load(A, index=(m, k), shape=(tm, tk), padding_mode=ct.PaddingMode.ZERO)
            b = ct.load(B, index=(k, n), shape=(tk, tn), padding_mode=ct.PaddingMode.ZERO)
            acc = ct.mma(a, b, acc)
        ct.store(C, index=(m, n), tile=acc.astype(C.dtype))


def run(launch=ct.launch, m: int = 200, n: int = 150, k: int = 100, rng=None) -> float:
    """Both kernels on ragged shapes; max abs error against NumPy (float64 reference)."""
    rng = rng or np.random.default_rng(1)
    A = rng.standard_normal((m, k)).astype(np.float32)
    B = rng.standard_normal((k, n)).astype(np.float32)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    tm, tn, tk = 64, 64, 32
    C = np.full((m, n), np.nan, np.float32)
    launch(None, (ct.cdiv(m, tm), ct.cdiv(n, tn)), matmul_kernel, (A, B, C, tm, tn, tk))
    err = float(np.max(np.abs(C - ref)))
    C2 = np.full((m, n), np.nan, np.float32)
    launch(None, (3,), persistent_matmul, (A, B, C2, tm, tn, tk, 2))
    return max(err, float(np.max(np.abs(C2 - ref))))


if __name__ == "__main__":
    print(f"matmul: max error {run():.3g}")

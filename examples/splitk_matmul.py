"""Split-K matmul: the K dimension is cut into ``SPLIT`` slices, one per ``bid(2)``; every
block computes its partial product and adds it into C with the tiled view's
``atomic_store_add`` (R-VIEW-7), so several blocks accumulate into each output tile.

C starts at zero.  Float addition does not associate, so the low bits depend on the order in
which the slices land (R-ATOM-2); the error bound covers every order."""

from __future__ import annotations

import numpy as np

import cutile as ct


@ct.kernel
def splitk_kernel(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int],
                  SPLIT: ct.Constant[int]):
    bx, by, bz = ct.bid(0), ct.bid(1), ct.bid(2)
    num_k = ct.num_tiles(A, axis=1, shape=(tm, tk))
    per = ct.cdiv(num_k, SPLIT)
    acc = ct.zeros((tm, tn), dtype=ct.float32)
    for k in range(bz * per, min((bz + 1) * per, num_k)):
        a = ct.load(A, index=(bx, k), shape=(tm, tk), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, index=(k, by), shape=(tk, tn), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    C.tiled_view((tm, tn)).atomic_store_add((bx, by), acc)   # OOB edge lanes ignored


def run(launch=ct.launch, m: int = 96, n: int = 80, k: int = 512, split: int = 4,
        rng=None) -> float:
    """Ragged M/N, long K; max abs error against NumPy (float64 reference)."""
    rng = rng or np.random.default_rng(1)
    A = rng.standard_normal((m, k)).astype(np.float32)
    B = rng.standard_normal((k, n)).astype(np.float32)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    tm, tn, tk = 32, 32, 32
    C = np.zeros((m, n), np.float32)
    launch(None, (ct.cdiv(m, tm), ct.cdiv(n, tn), split), splitk_kernel, (A, B, C, tm, tn, tk,
                                                                         split))
    return float(np.max(np.abs(C - ref)))


if __name__ == "__main__":
    print(f"splitk_matmul: max error {run():.3g}")

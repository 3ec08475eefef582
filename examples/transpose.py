"""2-D transpose: load tile (i, j), transpose it in registers, store it at (j, i)."""

from __future__ import annotations

import numpy as np

import cutile as ct


@ct.kernel
def transpose_kernel(x, out, TM: ct.Constant[int], TN: ct.Constant[int]):
    i = ct.bid(0)
    j = ct.bid(1)
    t = ct.load(x, index=(i, j), shape=(TM, TN))
    ct.store(out, index=(j, i), tile=ct.transpose(t))


def run(launch=ct.launch, m: int = 100, n: int = 70, rng=None) -> float:
    rng = rng or np.random.default_rng(4)
    x = rng.standard_normal((m, n)).astype(np.float32)
    out = np.full((n, m), np.nan, np.float32)
    tm, tn = 32, 16
    launch(None, (ct.cdiv(m, tm), ct.cdiv(n, tn)), transpose_kernel, (x, out, tm, tn))
    return float(np.max(np.abs(out - x.T)))


if __name__ == "__main__":
    print(f"transpose: max error {run():.3g}")

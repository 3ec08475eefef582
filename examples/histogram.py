"""Histogram: every block loads a tile of bin ids and ``atomic_add``s 1 into their bins.

Many lanes (of one block and of different blocks) hit the same bin: each increment lands
(R-ATOM-2), so the result is exact whatever the order.  Lanes past the end of the data get
the out-of-bounds bin -1, and an out-of-bounds atomic does nothing (R-ATOM-6)."""

from __future__ import annotations

import numpy as np

import cutile as ct


@ct.kernel
def histogram_kernel(data, bins, TILE: ct.Constant[int]):
    pos = ct.bid(0) * TILE + ct.arange(TILE, dtype=ct.int32)
    d = ct.load(data, index=(ct.bid(0),), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ids = ct.where(pos < data.shape[0], d, -1)               # ragged tail: no-op lanes
    ct.atomic_add(bins, ids, 1, memory_order=ct.MemoryOrder.RELAXED)


def run(launch=ct.launch, n: int = 100_000, nbins: int = 64, tile: int = 1024,
        rng=None) -> float:
    """Skewed data (most values in a few bins); max abs error against ``np.bincount``."""
    rng = rng or np.random.default_rng(1)
    data = np.minimum(rng.geometric(0.15, n) - 1, nbins - 1).astype(np.int32)
    bins = np.zeros(nbins, np.int32)
    launch(None, (ct.cdiv(n, tile),), histogram_kernel, (data, bins, tile))
    return float(np.max(np.abs(bins - np.bincount(data, minlength=nbins))))


if __name__ == "__main__":
    print(f"histogram: max error {run():.3g}")

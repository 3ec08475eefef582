"""Vector add, in both load forms of the seed notes: a tiled view and one-call ``ct.load``.

The array length is not a multiple of the tile: the last tile is partial, its padded lanes
only reach out-of-bounds store lanes, which are discarded.
"""

from __future__ import annotations

import numpy as np

import cutile as ct


@ct.kernel
def vec_add_view(a, b, c, TILE: ct.Constant[int]):
    a_view = a.tiled_view((TILE,))
    b_view = b.tiled_view((TILE,))
    c_view = c.tiled_view((TILE,))
    bid = ct.bid(0)
    c_view.store((bid,), a_view.load((bid,)) + b_view.load((bid,)))


@ct.kernel
def vec_add_load(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    a_tile = ct.load(a, index=(bid,), shape=(TILE,))
    b_tile = ct.load(b, index=(bid,), shape=(TILE,))
    ct.store(c, index=(bid,), tile=a_tile + b_tile)


def run(launch=ct.launch, n: int = 100_003, tile: int = 1024, rng=None) -> float:
    """Run both forms; return the max abs error against NumPy."""
    rng = rng or np.random.default_rng(0)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    err = 0.0
    for k in (vec_add_view, vec_add_load):
        c = np.full(n, np.nan, np.float32)
        launch(None, (ct.cdiv(n, tile),), k, (a, b, c, tile))
        err = max(err, float(np.max(np.abs(c - (a + b)))))
    return err


if __name__ == "__main__":
    print(f"vector add: max error {run():.3g}")

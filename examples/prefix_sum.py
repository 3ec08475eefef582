"""Prefix sum of 10**6 elements: per-block ``cumsum`` plus a carry between blocks.

Three launches: (1) each block scans its 1024-element tile and writes its total, (2) one
block turns the block totals into an exclusive scan (``cumsum(s) - s``: the carry into each
block), (3) each block adds its carry.  The carry goes through a second launch because
inter-block communication inside one launch needs atomics (a decoupled look-back with
``ct.atomic_*`` replaces launches 2-3 once those exist).
"""

from __future__ import annotations

import numpy as np

import cutile as ct

BLOCK = 1024


@ct.kernel
def block_scan(x, out, totals, BLOCK: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.load(x, (b,), (BLOCK,), padding_mode=ct.PaddingMode.ZERO)
    s = ct.cumsum(t)
    ct.store(out, (b,), s)
    ct.store(totals, (b,), ct.extract(s, (BLOCK - 1,), (1,)))        # the block's total


@ct.kernel
def carries(totals, carry, NB: ct.Constant[int]):
    t = ct.load(totals, (0,), (NB,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(carry, (0,), ct.cumsum(t) - t)                          # exclusive scan


@ct.kernel
def add_carry(carry, out, BLOCK: ct.Constant[int]):
    b = ct.bid(0)
    c = ct.load(carry, (b,), (1,))
    t = ct.load(out, (b,), (BLOCK,))
    ct.store(out, (b,), t + c)


def prefix_sum(x: np.ndarray, launch=ct.launch) -> np.ndarray:
    n = x.shape[0]
    nb = (n + BLOCK - 1) // BLOCK
    nb2 = 1 << (nb - 1).bit_length()
    if nb2 > 4096:
        raise ValueError("prefix_sum: at most 4096 blocks (one block scans the totals)")
    out = np.empty_like(x)
    totals = np.zeros(nb, x.dtype)
    carry = np.zeros(nb, x.dtype)
    launch(None, (nb,), block_scan, (x, out, totals, BLOCK))
    launch(None, (1,), carries, (totals, carry, nb2))
    launch(None, (nb,), add_carry, (carry, out, BLOCK))
    return out


def run(launch=ct.launch, n: int = 10 ** 6, rng=None) -> float:
    rng = rng or np.random.default_rng(7)
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    got = prefix_sum(x, launch)
    return float(np.max(np.abs(got.astype(np.int64) - np.cumsum(x, dtype=np.int64))))


if __name__ == "__main__":
    print(f"prefix_sum: max error {run():.3g}")

"""Prefix sum of 10**6 elements: per-block ``cumsum`` plus a carry between blocks through
atomics.

Two launches, and no block ever waits for another (blocks run in any order, the interpreter's
one at a time):

1. each block scans its ``BLOCK``-element tile (``ct.cumsum``) and adds its total into the
   carry slot of every *later* block with one vectorised ``ct.atomic_add`` over the index tile
   ``arange(NB)``; the slots of this block and of earlier ones get the index -1, and an
   out-of-bounds position does nothing (R-ATOM-6).  When the launch ends, ``carry[b]`` is the
   sum of the totals of blocks ``0..b-1``, whatever order the blocks ran in (R-ATOM-2: every
   increment lands);
2. each block adds its carry to its tile.

Integer data: exact (integer addition associates; the demo's int32 sums stay in range).
Float data: the carries are summed in the order the blocks happened to land, so the last bits
of the result may differ from run to run and between executors.  Every output element is
still one float sum of ``x[0..i]`` in some order, so the classic bound for any summation order
holds: ``|out[i] - sum(x[0..i])| <= gamma(i) * sum(|x[0..i]|)`` with ``gamma(k) = k*u/(1-k*u)``
and ``u`` the unit roundoff (``error_bound`` below adds the float64 reference's own bound;
overflow aside).  Launch 1 does
``nb * NB`` atomic positions (``NB`` = ``nb`` rounded up to a power of two; about 10**6 for
the demo), cheap next to the scan itself on a GPU.
"""

from __future__ import annotations

import numpy as np

import cutile as ct

BLOCK = 1024


@ct.kernel
def scan_and_carry(x, out, carry, BLOCK: ct.Constant[int], NB: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.load(x, (b,), (BLOCK,), padding_mode=ct.PaddingMode.ZERO)
    s = ct.cumsum(t)
    ct.store(out, (b,), s)
    slot = ct.arange(NB, dtype=ct.int32)
    later = ct.where(slot > b, slot, -1)                 # -1: out of bounds, no operation
    ct.atomic_add(carry, later, ct.sum(t), memory_order=ct.MemoryOrder.RELAXED)


@ct.kernel
def add_carry(carry, out, BLOCK: ct.Constant[int]):
    b = ct.bid(0)
    c = ct.load(carry, (b,), (1,))
    t = ct.load(out, (b,), (BLOCK,))
    ct.store(out, (b,), t + c)


def prefix_sum(x: np.ndarray, launch=ct.launch) -> np.ndarray:
    """Inclusive prefix sum of a 1-D int32/int64/float32/float64 array."""
    n = x.shape[0]
    nb = max(1, (n + BLOCK - 1) // BLOCK)
    nb2 = 1 << (nb - 1).bit_length()                     # the index tile's (power-of-two) size
    out = np.empty_like(x)
    carry = np.zeros(nb, x.dtype)
    launch(None, (nb,), scan_and_carry, (x, out, carry, BLOCK, nb2))
    launch(None, (nb,), add_carry, (carry, out, BLOCK))
    return out


def error_bound(x: np.ndarray) -> np.ndarray:
    """Per element, the largest error any summation order of ``x[0..i]`` in ``x``'s dtype can
    make, plus that of the float64 sequential reference ``np.cumsum`` (R-SCAN order)."""
    if x.dtype.kind in "iu":
        return np.zeros(x.shape, np.float64)
    i = np.arange(x.shape[0], dtype=np.float64)
    total = np.cumsum(np.abs(x.astype(np.float64)))
    bound = np.zeros(x.shape, np.float64)
    for u in (float(np.finfo(x.dtype).eps) / 2, 2.0 ** -53):
        bound += i * u / (1 - i * u) * total
    return bound


def run(launch=ct.launch, n: int = 10 ** 6, rng=None, dtype=np.int32) -> float:
    """Max error against a float64/int64 NumPy cumsum beyond ``error_bound`` (0: within it)."""
    rng = rng or np.random.default_rng(7)
    if np.dtype(dtype).kind in "iu":
        x = rng.integers(-1000, 1000, n).astype(dtype)
        want = np.cumsum(x, dtype=np.int64)
        return float(np.max(np.abs(prefix_sum(x, launch).astype(np.int64) - want)))
    x = rng.standard_normal(n).astype(dtype)
    err = np.abs(prefix_sum(x, launch).astype(np.float64) - np.cumsum(x.astype(np.float64)))
    return float(np.max(np.maximum(err - error_bound(x), 0.0)))


if __name__ == "__main__":
    print(f"prefix_sum: max error {run():.3g}")

"""Grouped GEMM: one launch multiplies several (A, B) pairs of different shapes, the arrays
passed as Python lists (R-PY-4: a list argument needs no annotation; ``Annotated[list,
ct.ListAnnotation(element=...)]`` only sets the arrays' index dtype).  Each block finds its
group with a runtime loop over the groups' tile counts, then indexes the lists with that
runtime group id.  The same source runs on NVIDIA's cuda.tile 1.7."""

from __future__ import annotations

import numpy as np

import cutile as ct


def tiles_of(c, tm, tn):
    """Output tiles of one group's C."""
    return ct.num_tiles(c, axis=0, shape=(tm, tn)) * ct.num_tiles(c, axis=1, shape=(tm, tn))


@ct.kernel
def grouped_gemm(As, Bs, Cs, tm: ct.Constant[int], tn: ct.Constant[int],
                 tk: ct.Constant[int]):
    bid = ct.bid(0)
    group = 0
    first = 0                                   # first block of `group`
    for g in range(len(Cs) - 1):                # runtime loop, runtime list index
        n = tiles_of(Cs[g], tm, tn)
        if bid < first + n:
            break
        group = g + 1
        first = first + n
    a, b, c = As[group], Bs[group], Cs[group]
    local = bid - first
    if local < tiles_of(c, tm, tn):             # blocks past the last group do nothing
        cols = ct.num_tiles(c, axis=1, shape=(tm, tn))
        m, n = local // cols, local % cols
        acc = ct.zeros((tm, tn), dtype=ct.float32)
        for k in range(ct.num_tiles(a, axis=1, shape=(tm, tk))):
            x = ct.load(a, index=(m, k), shape=(tm, tk), padding_mode=ct.PaddingMode.ZERO)
            y = ct.load(b, index=(k, n), shape=(tk, tn), padding_mode=ct.PaddingMode.ZERO)
            acc = ct.mma(x, y, acc)
        ct.store(c, index=(m, n), tile=acc.astype(c.dtype))


SHAPES = ((70, 40, 50), (33, 64, 17), (16, 16, 100))     # (m, n, k) per group


def run(launch=ct.launch, shapes=SHAPES, tiles=(32, 32, 16), rng=None) -> float:
    """All groups in one launch; max abs error against NumPy.  The inputs are small integers
    held in float32, so every product and partial sum is exact on any executor."""
    rng = rng or np.random.default_rng(3)
    tm, tn, tk = tiles
    As = [rng.integers(-4, 5, (m, k)).astype(np.float32) for m, n, k in shapes]
    Bs = [rng.integers(-4, 5, (k, n)).astype(np.float32) for m, n, k in shapes]
    Cs = [np.full((m, n), np.nan, np.float32) for m, n, k in shapes]
    blocks = sum(ct.cdiv(m, tm) * ct.cdiv(n, tn) for m, n, k in shapes)
    launch(None, (blocks,), grouped_gemm, (As, Bs, Cs, tm, tn, tk))
    return max(float(np.max(np.abs(c - a @ b))) for a, b, c in zip(As, Bs, Cs))


if __name__ == "__main__":
    print(f"grouped gemm: max error {run():.3g}")

"""Kernels shared by the Numba-backend tests (codegen, PTX, differential): one definition each."""

from __future__ import annotations

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

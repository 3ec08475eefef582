"""Matmul numerics shared by both executors: how a float16 accumulator consumes K.

The interpreter rounds a float16 accumulator once per chunk of K (``interp/matmul_numerics.py``)
and the Numba backend emits the same chunking (``numba_backend/lower/matmul.py``): the chunk is
the K of the tensor-core instruction for the input width.
"""

from __future__ import annotations

# K-chunk of the tensor-core instruction per input width (bytes): f16 m16n8k16, f8 k32.
_F16_ACC_CHUNK = {2: 16, 1: 32}


def f16_acc_chunk(input_itemsize: int) -> int:
    """K elements per float16-accumulator rounding for inputs of this width (bytes)."""
    return _F16_ACC_CHUNK.get(input_itemsize, 16)

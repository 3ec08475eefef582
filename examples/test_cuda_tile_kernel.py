"""A cuTile user's test file: kernels written for NVIDIA's ``cuda.tile``, property-tested on
the real cuTile (a GPU) against cutile's exact interpreter.

    python3 -m pytest examples/test_cuda_tile_kernel.py                        # GPU + cuda.tile
    CUTILE_AS_CUDA_TILE=1 python3 -m pytest examples/test_cuda_tile_kernel.py  # a laptop

On a GPU with cuda.tile installed, ``cutile_executor`` is "interp" and "cuda.tile" (and
"numba" where Numba runs); ``CUTILE_AS_CUDA_TILE=1`` makes ``import cuda.tile`` give cutile,
so the same file runs on the interpreter alone.  See docs/testing.md, "For cuTile users".
"""

import cuda.tile as ct
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cutile.testing import assert_executors_agree, assert_matches, available_executors
from cutile.testing import strategies as cts


@ct.kernel
def add_scale(x, y, out, alpha, TM: ct.Constant[int], TN: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    a = ct.load(x, (i, j), (TM, TN), padding_mode=ct.PaddingMode.ZERO)
    b = ct.load(y, (i, j), (TM, TN), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, (i, j), ((a + b) * alpha).astype(out.dtype))


def reference(x, y, out, alpha, TM, TN):
    with np.errstate(over="ignore", invalid="ignore"):         # inf and NaN are drawn too
        return {"out": ((x + y) * np.float32(alpha)).astype(out.dtype)}


@settings(max_examples=10, deadline=None)
@given(tiled=cts.tiled_shapes(ndim=2, max_side=40, max_tile=16), data=st.data())
def test_add_scale_matches_numpy(cutile_executor, tiled, data):
    x = data.draw(cts.arrays(np.float32, tiled.shape))
    y = data.draw(cts.arrays(np.float32, tiled.shape))
    args = (x, y, np.zeros(tiled.shape, np.float32), np.float32(1.5), *tiled.tile)
    # two correctly rounded operations, no FMA to contract: exact on every executor
    assert_matches(add_scale, tiled.grid, args, reference, executor=cutile_executor)


@settings(max_examples=10, deadline=None)
@given(tiled=cts.tiled_shapes(ndim=2, max_side=40, max_tile=16), data=st.data())
def test_add_scale_executors_agree(tiled, data):
    x = data.draw(cts.arrays(np.float32, tiled.shape))
    y = data.draw(cts.arrays(np.float32, tiled.shape))
    args = (x, y, np.zeros(tiled.shape, np.float32), np.float32(1.5), *tiled.tile)
    assert_executors_agree(add_scale, tiled.grid, args, executors=available_executors())

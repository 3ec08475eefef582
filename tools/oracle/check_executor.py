"""The cuda.tile executor of cutile.testing on a GPU, in three checks (a few minutes at most):

1. a correct kernel agrees on ("interp", "cuda.tile"), bit for bit, on fixed ragged shapes and
   in a Hypothesis property test (drawn shapes, tiles and special values), float32 and
   bfloat16 (bit-view transfers);
2. a planted off-by-one tile index fails with the element, both values and the block;
3. a kernel that relies on UNDETERMINED padding is reported as undefined behaviour by the
   interpreter, not as a disagreement with cuTile.

On the GPU machine, with the real cuTile importable (../shared/GPU.md; one call carrying
.gpu/oracle):
    python3 -m pip install -q --no-index --no-deps --target /tmp/ct .gpu/oracle/*.whl \
      && mkdir -p /tmp/ctk && tar xJf .gpu/oracle/ctk134.tar.xz -C /tmp/ctk \
      && export PATH=/tmp/ctk/nvidia/cu13/bin:$PATH PYTHONPATH=/tmp/ct:$PWD \
      && unset CUDA_HOME CUDA_PATH && python3 tools/oracle/check_executor.py
It ends with "summary: 3 of 3 checks passed" (exit status 0), or names the failed check.
"""

from __future__ import annotations

import os
import sys
import time

import ml_dtypes
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import cutile as ct  # noqa: E402
from cutile.errors import UndefinedBehaviorError  # noqa: E402
from cutile.testing import (  # noqa: E402
    ExecutorMismatch,
    assert_executors_agree,
    assert_matches,
    cuda_tile,  # noqa: E402
)

BOTH = ("interp", "cuda.tile")


@ct.kernel
def scale_add(x, y, out, TM: ct.Constant[int], TN: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    a = ct.load(x, (i, j), (TM, TN), padding_mode=ct.PaddingMode.ZERO)
    b = ct.load(y, (i, j), (TM, TN), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, (i, j), (a * 2 + b).astype(out.dtype))


@ct.kernel
def scale_add_off_by_one(x, y, out, TM: ct.Constant[int], TN: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    a = ct.load(x, (i, j + 1), (TM, TN), padding_mode=ct.PaddingMode.ZERO)   # planted bug:
    # the column block is off by one (launched on one column of blocks fewer, it stays inside)
    b = ct.load(y, (i, j), (TM, TN), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, (i, j), (a * 2 + b).astype(out.dtype))


@ct.kernel
def block_sums(x, out, T: ct.Constant[int]):
    b = ct.bid(0)
    t = ct.load(x, (b,), (T,))                 # UNDETERMINED padding past the end
    ct.store(out, (b,), ct.reshape(ct.sum(t), (1,)))


def grid2(shape, tile):
    return (-(-shape[0] // tile[0]), -(-shape[1] // tile[1]), 1)


def check_correct() -> str:
    """Fixed ragged shapes, then a Hypothesis property test (drawn shapes, tiles and values:
    NaN, inf, -0.0, subnormals), float32 and bfloat16, every output bit compared."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from cutile.testing import strategies as cts
    rng = np.random.default_rng(0)
    n = [0]
    for shape in [(16, 16), (1, 1), (7, 5), (33, 17), (64, 48), (100, 3)]:
        for dtype in (np.float32, ml_dtypes.bfloat16):
            x = rng.standard_normal(shape).astype(dtype)
            y = rng.standard_normal(shape).astype(dtype)
            args = (x, y, np.zeros(shape, dtype), 16, 16)
            assert_executors_agree(scale_add, grid2(shape, (16, 16)), args, executors=BOTH)
            n[0] += 1

    @settings(max_examples=40, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(tiled=cts.tiled_shapes(ndim=2, max_side=70, max_tile=32),
           dtype=st.sampled_from([np.dtype(np.float32), np.dtype(ml_dtypes.bfloat16)]),
           data=st.data())
    def prop(tiled, dtype, data):
        x = data.draw(cts.arrays(dtype, tiled.shape))
        y = data.draw(cts.arrays(dtype, tiled.shape))
        args = (x, y, np.zeros(tiled.shape, dtype), *tiled.tile)
        # a*2 is exact, so cuTile's fused a*2+b rounds as the interpreter's two steps do
        assert_executors_agree(scale_add, tiled.grid, args, executors=BOTH)
        n[0] += 1

    prop()
    return (f"PASS correct kernel agrees on {BOTH}: {n[0]} launches (6 fixed shapes and "
            f"Hypothesis-drawn shapes/tiles/values; float32, bfloat16)")


def check_planted() -> str:
    shape = (20, 40)
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    y = np.ones(shape, np.float32)
    args = (x, y, np.zeros(shape, np.float32), 16, 16)
    try:
        g = grid2(shape, (16, 16))
        assert_matches(scale_add_off_by_one, (g[0], g[1] - 1, 1), args,
                       lambda x, y, out, TM, TN: {"out": x * 2 + y}, executor="cuda.tile")
    except ExecutorMismatch as e:
        first = str(e).splitlines()
        ok = e.mismatches and e.mismatches[0].block is not None
        return ("PASS" if ok else "FAIL (no block named)") + " planted off-by-one caught:\n    " \
            + "\n    ".join(first[:4])
    return "FAIL planted off-by-one was not caught"


def check_undetermined() -> str:
    x = np.arange(50, dtype=np.float32)
    args = (x, np.zeros(4, np.float32), 16)
    try:
        assert_executors_agree(block_sums, (4,), args, executors=("cuda.tile", "interp"))
    except UndefinedBehaviorError as e:
        return "PASS UNDETERMINED padding reported as UB by the interpreter:\n    " \
            + str(e).splitlines()[0][:200]
    except ExecutorMismatch as e:
        return "FAIL reported as a disagreement, not UB:\n    " + str(e).splitlines()[0]
    return "FAIL no error for a kernel relying on UNDETERMINED padding"


def main() -> int:
    why = cuda_tile.unavailable()
    if why:
        print(why)
        return 2
    results = []
    for check in (check_correct, check_planted, check_undetermined):
        t = time.perf_counter()
        try:
            line = check()
        except Exception as e:  # noqa: BLE001 - report every check
            line = f"FAIL {check.__name__}: {type(e).__name__}: {str(e)[:400]}"
        results.append(line)
        print(f"{line}  [{time.perf_counter() - t:.1f} s]", flush=True)
    failed = sum(not r.startswith("PASS") for r in results)
    print(f"summary: {len(results) - failed} of {len(results)} checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Interpreter vs Numba backend for tiles whose exchange buffers do not fit shared memory
(issue 22 item 3): such buffers live in the per-launch global workspace (numba_backend/smem.py).

NVIDIA's test_reduction.py reduces a 512 x 128 tile over all axes (max of float16: two 128 KiB
exchange buffers, 256 KiB, above the H100's 227 KiB) and a 16 x 32 x 64 tile over two axes.
Under the simulator tiles must stay small, so ``CUTILE_NUMBA_SMEM_LIMIT=0`` sends every buffer
that may move to the workspace; the generated code is otherwise the same as on a GPU, and the
results must be bit-identical to the interpreter's (R-RED-3..6, R-SCAN-1, R-SHAPE ops), with no
race on the workspace (racecheck records its accesses like shared memory's)."""

from __future__ import annotations

import numpy as np
import pytest

import cutile as ct
from cutile import Constant
from cutile.executors import inspect

from .harness import assert_same, run_both, sim
from .racecheck import racecheck


@ct.kernel
def reduce_all(x, out, B: Constant[int], N: Constant[int], OP: Constant[int]):
    t = ct.load(x, (0, 0), (B, N))
    if OP == 0:
        r = ct.max(t, axis=None, keepdims=True)
    elif OP == 1:
        r = ct.sum(t, axis=None, keepdims=True)
    elif OP == 2:
        r = ct.prod(t, axis=None, keepdims=True)
    else:
        r = ct.reshape(ct.argmin(t, axis=None), (1, 1))
    ct.store(out, (0, 0), r)


@ct.kernel
def reduce_two_axes(x, out, TILE: Constant[int], N: Constant[int], M: Constant[int],
                    A1: Constant[int], A2: Constant[int]):
    t = ct.load(x, (ct.bid(0), 0, 0), (TILE, N, M))
    ct.store(out, (ct.bid(0),), ct.min(t, axis=(A1, A2)))


@ct.kernel
def transpose_scan(x, out, M: Constant[int], N: Constant[int]):
    t = ct.load(x, (ct.bid(0), 0), (M, N))
    ct.store(out, (0, ct.bid(0)), ct.cumsum(ct.transpose(t), axis=1))


def _values(rng, shape, dtype):
    v = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "f":
        v = np.where(rng.random(shape) < 0.05, np.float64(np.nan), v)
    return v.astype(dtype)


@pytest.fixture
def tiny_smem(monkeypatch):
    """Every buffer that may move goes to the global workspace (smem.py)."""
    monkeypatch.setenv("CUTILE_NUMBA_SMEM_LIMIT", "0")


# On a GPU a reduction within one warp takes shuffles and needs no buffer: two warps make the
# tree's last step an exchange, the buffer that must go to the workspace (on a GPU too)
TWO_WARPS = 64


def _uses_workspace(kernel, args, grid, threads):
    info = inspect(kernel, args, grid=grid, threads=threads)
    assert info.global_scratch_bytes > 0 and "gs_" in info.source, info.summary()
    assert f"{info.global_scratch_bytes} B global workspace" in info.summary()
    return info


@pytest.mark.parametrize("dtype", [np.float16, np.float32, "bfloat16"])
@pytest.mark.parametrize("op", [0, 1, 2, 3], ids=["max", "sum", "prod", "argmin"])
def test_reduction_over_all_axes_in_the_workspace(tiny_smem, dtype, op):
    """R-RED-1..6: the same tree as the interpreter, its exchanges through global memory."""
    import ml_dtypes
    npd = ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype
    rng = np.random.default_rng(op)
    x = _values(rng, (8, 16), npd) if op != 2 else (1 + rng.random((8, 16)) / 8).astype(npd)
    out = np.zeros((1, 1), np.int32 if op == 3 else npd)
    args = (x, out, 8, 16, op)
    _uses_workspace(reduce_all, args, (1,), TWO_WARPS)
    with racecheck() as races:
        ref, got = run_both(reduce_all, (1,), args, threads=TWO_WARPS)
    assert not races, races.describe()
    assert_same(ref[1], got[1], what=f"op {op}")


@pytest.mark.parametrize("axes", [(1, 2), (2, 1), (-1, -2)])
def test_reduction_over_two_axes_in_the_workspace(tiny_smem, axes):
    """R-RED-1: two axes of a 3-D tile per block; two blocks use two rows of the workspace."""
    x = _values(np.random.default_rng(1), (4, 4, 16), np.float16)
    args = (x, np.zeros(4, np.float16), 2, 4, 16, *axes)
    _uses_workspace(reduce_two_axes, args, (2,), TWO_WARPS)
    with racecheck() as races:
        ref, got = run_both(reduce_two_axes, (2,), args, threads=TWO_WARPS)
    assert not races, races.describe()
    assert_same(ref[1], got[1], what=f"axes {axes}")


def test_transpose_and_scan_in_the_workspace(tiny_smem):
    """R-SCAN-1 and a transpose: whole-tile staging buffers moved to global memory, three
    blocks at once (each block its own row)."""
    x = np.random.default_rng(2).integers(-50, 50, (24, 16)).astype(np.int32)
    args = (x, np.zeros((16, 24), np.int32), 8, 16)
    info = _uses_workspace(transpose_scan, args, (3,), 32)
    assert info.shared_bytes == 0
    with racecheck() as races:
        ref, got = run_both(transpose_scan, (3,), args, threads=32)
    # all of them in the workspace (the racecheck log exists under the simulator only)
    assert (races.accesses or not sim()) and not races, races.describe()
    assert_same(ref[1], got[1], what="cumsum of the transpose")


@pytest.mark.skipif(sim(), reason="needs a GPU: a 512 x 128 tile at 512 threads is far too "
                                  "slow for the CUDA simulator (the workspace path itself runs "
                                  "there above, at small tiles)")
@pytest.mark.parametrize("op", [0, 1, 3], ids=["max", "sum", "argmin"])
def test_nvidia_sized_reduction_over_all_axes(op):
    """NVIDIA's test_reduction.py size: 512 x 128 float16 over all axes, 256 KiB of exchange
    at the default 512 threads, on the device's own shared-memory limit."""
    x = _values(np.random.default_rng(op), (512, 128), np.float16)
    out = np.zeros((1, 1), np.int32 if op == 3 else np.float16)
    ref, got = run_both(reduce_all, (1,), (x, out, 512, 128, op))
    assert_same(ref[1], got[1], what=f"op {op}")


@pytest.mark.skipif(sim(), reason="needs a GPU: a 16 x 32 x 64 tile at 512 threads is far too "
                                  "slow for the CUDA simulator")
def test_nvidia_sized_reduction_over_two_axes():
    """NVIDIA's 16 x 32 x 64 float16 tile over axes (1, 2): 202 registers per thread at 512
    threads without a bound (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES); runs under launch_bounds."""
    x = _values(np.random.default_rng(3), (32, 32, 64), np.float16)
    ref, got = run_both(reduce_two_axes, (2,), (x, np.zeros(32, np.float16), 16, 32, 64, 1, 2))
    assert_same(ref[1], got[1], what="two axes")

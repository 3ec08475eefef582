"""UNDETERMINED padding on both executors (R-PAD-1, R-PAD-3, issue 22): the Numba backend reads
zeros in the out-of-bounds lanes (``cutile.padding``), and the interpreter with
``CUTILE_STRICT=0`` reads the same bits, so kernels relying on finite padding, as NVIDIA's
attention kernels do, give the same answer on both."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from backend_kernels import attention_ragged, attention_reference

import cutile as ct
from cutile import Constant
from cutile import dtypes as dt

from .harness import assert_same, poison, run_both


@ct.kernel
def undetermined_copy(a, b, T0: Constant[int], T1: Constant[int], ORD: Constant[object]):
    t = ct.load(a, (ct.bid(0), 0), (T0, T1), order=ORD)     # default padding: UNDETERMINED
    ct.store(b, (ct.bid(0), 0), t)


@pytest.fixture
def lenient(monkeypatch):
    monkeypatch.setenv("CUTILE_STRICT", "0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ct.UndefinedBehaviorWarning)
        yield


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.uint8, np.bool_,
                                   dt.bfloat16.np_dtype, dt.float8_e4m3fn.np_dtype],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("order", [(0, 1), (1, 0)], ids=["C", "T"])
def test_undetermined_lanes_read_zero_on_both(lenient, dtype, order):
    # A 3 x 5 array read as a 4 x 8 tile (transposed: tile space 5 x 3) into a 4 x 8 output:
    # every out-of-bounds lane is stored in bounds, and holds 0 on both executors.
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((3, 5)) * 3).astype(dtype)
    b = poison((4, 8), dtype)
    ref, got = run_both(undetermined_copy, (1,), [a, b, 4, 8, order])
    assert_same(ref[1], got[1], what=f"UNDETERMINED copy {np.dtype(dtype).name}")
    view = (a if order == (0, 1) else a.T)[:4, :8]
    r, c = view.shape
    want = np.zeros((4, 8), dtype)
    want[:r, :c] = view
    assert_same(want, got[1], what="in-bounds lanes copied, padding 0")


def test_attention_ragged_both_executors(lenient):
    # NVIDIA's attention pattern over 37 keys in tiles of 16: V's padded rows meet zero
    # weights.  NaN padding made the backend's output NaN; zeros give softmax attention on
    # both executors (float32; the backend's FFMA mma rounds differently from the exact one).
    H, M, N, D, T = 1, 20, 37, 16, 16
    rng = np.random.default_rng(5)
    q = rng.standard_normal((H, M, D)).astype(np.float32)
    k, v = (rng.standard_normal((H, N, D)).astype(np.float32) for _ in range(2))
    o = poison((H, M, D), np.float32)
    ref, got = run_both(attention_ragged, (2, H), [q, k, v, o, 0.25, T, T, D], threads=64)
    want = attention_reference(q, k, v, 0.25)
    for out in (ref[3], got[3]):
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    assert_same(ref[3], got[3], rtol=1e-5, atol=1e-6, what="attention, interp vs numba")


@pytest.mark.parametrize("cp_async", ["0", "1"])
def test_attention_ragged_tensor_cores_on_instruction_models(lenient, monkeypatch, cp_async):
    # The same over float16 operands on the tensor-core path (the instruction models): K and V
    # staged into shared memory by cp.async zero-fill or through registers, both reading 0
    # past the 37th key.  Bound as test_attention_tensor_cores_on_instruction_models.
    monkeypatch.setenv("CUTILE_NUMBA_TENSOR_CORES", "sim")
    monkeypatch.setenv("CUTILE_NUMBA_CP_ASYNC", cp_async)
    H, M, N, D, T = 1, 16, 37, 16, 16
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((H, r, D)).astype(np.float16) for r in (M, N, N))
    o = poison((H, M, D), np.float16)
    ref, got = run_both(attention_ragged, (1, H), [q, k, v, o, D ** -0.5, T, T, D],
                        threads=64)
    want = attention_reference(q, k, v, D ** -0.5)
    bound = 2.0 ** -10 * (np.abs(v.astype(np.float64)).max() + np.abs(want))
    for out in (ref[3], got[3]):
        err = np.abs(out.astype(np.float64) - want)
        assert np.all(err <= bound), f"max err {err.max()}"

"""Interpreter vs Numba backend: mma/matmul with a K loop and partial tiles (every supported
input/accumulator dtype, both accumulation modes), and control flow: loops with runtime bounds,
while/break/continue, branches on the block id, early return."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from backend_kernels import attention_fwd, bmm_kloop, mm_bt_kloop, mm_kloop, mm_narrow, mm_two_loops
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import cutile as ct
from cutile import Constant

from .harness import (
    assert_same,
    examples,
    mma_f8_wgmma_bound,
    mma_f32_bound,
    poison,
    run_both,
    shards,
    sim,
)
from .racecheck import racecheck


@ct.kernel
def mm_tf32(a, b, c, TM: Constant[int], TN: Constant[int], TK: Constant[int]):
    acc = ct.full((TM, TN), 0.5, dtype=ct.float32)
    for k in range(ct.num_tiles(a, 1, (TM, TK))):
        x = ct.load(a, (ct.bid(0), k), (TM, TK), padding_mode=ct.PaddingMode.ZERO)
        y = ct.load(b, (k, ct.bid(1)), (TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(x.astype(ct.tfloat32), y.astype(ct.tfloat32), acc)
    ct.store(c, (ct.bid(0), ct.bid(1)), acc)


CASES = [  # (input dtype, accumulator dtype)
    (np.float32, ct.float32), (np.float16, ct.float32), (np.float16, ct.float16),
    (np.float64, ct.float64), (np.int8, ct.int32), (np.uint8, ct.int32),
    (ml_dtypes.bfloat16, ct.float32),
]


def _data(rng, shape, d):
    if np.dtype(d).kind in "iu":
        info = np.iinfo(d)
        return rng.integers(info.min, info.max, size=shape, dtype=d, endpoint=True)
    return rng.standard_normal(shape).astype(d)


@st.composite
def mm_case(draw):
    din, acc = draw(st.sampled_from(CASES))
    TM, TN = draw(st.sampled_from([(16, 16), (8, 16), (16, 8), (32, 8)]))
    TK = draw(st.sampled_from([4, 8, 16]))
    M = draw(st.integers(1, 2 * TM))
    N = draw(st.integers(1, 2 * TN))
    K = draw(st.integers(1, 3 * TK))
    mode = draw(st.sampled_from(["exact", "f32"]))
    return din, acc, TM, TN, TK, M, N, K, mode, draw(st.integers(0, 2 ** 16))


@pytest.mark.parametrize("shard", shards())
@settings(max_examples=examples(24))
@given(mm_case())
def test_mma_kloop_partial_tiles(shard, case):
    din, acc, TM, TN, TK, M, N, K, mode, seed = case
    rng = np.random.default_rng(seed)
    a, b = _data(rng, (M, K), din), _data(rng, (K, N), din)
    c = poison((M, N), acc.np_dtype)
    grid = (-(-M // TM), -(-N // TN))
    ref, got = run_both(mm_kloop, grid, [a, b, c, TM, TN, TK, acc], mma_acc=mode,
                        threads=32 if seed & 1 else 16)
    exact = mode == "exact" or np.dtype(din).kind in "iu" or din is np.float64
    if exact:
        assert_same(ref[2], got[2], what=f"mma {np.dtype(din).name}->{acc.name} exact")
    else:
        # float32 accumulation: mma_f32_bound (FFMA path, or tensor cores for float16/bfloat16
        # on a GPU at >= 32 threads).  A float16 accumulator is rounded once per mma call
        # (TK <= 16 = one interpreter chunk) by both executors, each rounding off by
        # <= 2**-11 * |partial sum| <= 2**-11 * S on either side: + ceil(K / TK) * 2 * 2**-11
        # * S.  (One final rounding was not a bound: the H100 found 1 ulp of 1.0 at K=43,
        # TK=16, where three partial sums were rounded.)
        s = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
        bound = mma_f32_bound(a, b, TK, tensor_cores=_tc(din, acc))
        if acc is ct.float16:
            bound += s * -(-K // TK) * 2.0 ** -10
        err = np.abs(ref[2].astype(np.float64) - got[2].astype(np.float64))
        assert np.all(err <= bound + 1e-30), f"max err {err.max()} bound {bound.max()}"


def _tc(din, acc) -> bool:
    """Whether the backend may take the tensor-core path (GPU, 16-bit floats, f32 acc)."""
    return not sim() and acc is ct.float32 and np.dtype(din) in (np.float16, ml_dtypes.bfloat16)


@pytest.mark.parametrize("din", [np.float16, ml_dtypes.bfloat16], ids=["f16", "bf16"])
@pytest.mark.parametrize("tiles", [(16, 16, 16, 32), (32, 64, 32, 128), (64, 32, 64, 64)])
def test_mma_tensor_core_tiles(din, tiles):
    """R-MM-7: float16/bfloat16 x float32-accumulator mma at warp-filling tiles (on a GPU the
    tensor-core path: several warps, several mma tiles per warp, k steps per call, partial
    tiles), within mma_f32_bound.  Under the simulator the same kernels run the FFMA path at
    16x16x16 tiles and 32 threads."""
    TM, TN, TK, T = tiles if not sim() else (16, 16, 16, 32)
    M, N, K = 2 * TM + 3, TN + 5, 3 * TK - 7
    rng = np.random.default_rng(TM * 100 + TN + TK)
    a, b = _data(rng, (M, K), din), _data(rng, (K, N), din)
    c = poison((M, N), np.float32)
    grid = (-(-M // TM), -(-N // TN))
    ref, got = run_both(mm_kloop, grid, [a, b, c, TM, TN, TK, ct.float32], mma_acc="f32",
                        threads=T)
    bound = mma_f32_bound(a, b, TK, tensor_cores=_tc(din, ct.float32))
    err = np.abs(ref[2].astype(np.float64) - got[2].astype(np.float64))
    assert np.all(err <= bound), f"max err {err.max()} bound {bound.max()}"

@pytest.mark.skipif("not sim()", reason="on a GPU the real instructions run "
                    "(test_mma_tensor_core_tiles)")
@pytest.mark.parametrize("case,din,cp_async", [
    ((16, 16, 16, 32, 37, 21, 40), np.float16, "0"),
    ((16, 16, 16, 32, 37, 21, 40), ml_dtypes.bfloat16, "1"),
    ((32, 32, 32, 64, 64, 40, 72), np.float16, "1"),
    ((32, 32, 32, 64, 64, 40, 72), ml_dtypes.bfloat16, "0"),
    ((16, 16, 16, 32, 20, 24, 20), np.float16, "1"),
    ((16, 16, 16, 32, 24, 16, 150), np.float16, "1"),
    ((32, 32, 32, 64, 64, 32, 160), ml_dtypes.bfloat16, "1"),
], ids=["1warp-f16-regs", "1warp-bf16-cp_async", "2warps-f16-cp_async", "2warps-bf16-regs",
        "unaligned_rows-f16-cp_async", "4stages_10iterations-f16-cp_async",
        "full_tiles-bf16-cp_async"])
def test_tensor_core_path_on_instruction_models(monkeypatch, case, din, cp_async):
    """R-MM-7: the generated tensor-core kernel (CUTILE_NUMBA_TENSOR_CORES=sim: ptx_sim.py's
    models of ldmatrix, mma.sync and cp.async under the simulator) agrees with the interpreter
    within mma_f32_bound: staging, swizzle, fragment addresses, the accumulator's fragment
    layout across the K loop, partial tiles, and (cp_async) the 16-byte chunk copies or, for
    rows that are not 16-byte aligned (K = 20), the element-wise fallback, and the pipelined
    K loop's slots (4 stages reused over 10 iterations; shorter loops than the pipeline), the
    full-tile form (shapes multiples of the tiles: no per-chunk bounds), with no shared-memory
    race (racecheck: cp.async copies in flight until their wait_group)."""
    monkeypatch.setenv("CUTILE_NUMBA_TENSOR_CORES", "sim")
    monkeypatch.setenv("CUTILE_NUMBA_CP_ASYNC", cp_async)
    TM, TN, TK, T, M, N, K = case
    rng = np.random.default_rng(M * N + K)
    a, b = _data(rng, (M, K), din), _data(rng, (K, N), din)
    c = poison((M, N), np.float32)
    grid = (-(-M // TM), -(-N // TN))
    with racecheck() as races:
        ref, got = run_both(mm_kloop, grid, [a, b, c, TM, TN, TK, ct.float32], mma_acc="f32",
                            threads=T)
    assert not races, races.describe()
    bound = mma_f32_bound(a, b, TK, tensor_cores=True)
    err = np.abs(ref[2].astype(np.float64) - got[2].astype(np.float64))
    assert np.all(err <= bound), f"max err {err.max()} bound {bound.max()}"


@pytest.mark.parametrize("case,din", [((16, 8, 16, 32, 16, 8, 48), np.float16),
                                      ((32, 64, 32, 128, 40, 70, 72), ml_dtypes.bfloat16)],
                         ids=["n8-x2-f16", "4warps-partial-bf16"])
def test_transposed_b_operand_tensor_cores(monkeypatch, case, din):
    """R-MM-7: ``mma(x, ct.transpose(load))`` stages the loaded (N x K) tile as it lies (B
    transposed) by cp.async and reads it with ldmatrix without .trans (pipelined K loop,
    partial tiles); within mma_f32_bound of the interpreter, race-free."""
    if sim():
        monkeypatch.setenv("CUTILE_NUMBA_TENSOR_CORES", "sim")
    TM, TN, TK, T, M, N, K = case
    rng = np.random.default_rng(M + N + K)
    a, bt = _data(rng, (M, K), din), _data(rng, (N, K), din)
    c = poison((M, N), np.float32)
    with racecheck() as races:
        ref, got = run_both(mm_bt_kloop, (-(-M // TM), -(-N // TN)), [a, bt, c, TM, TN, TK],
                            mma_acc="f32", threads=T)
    assert not races, races.describe()
    bound = mma_f32_bound(a, bt.T, TK, tensor_cores=True)
    err = np.abs(ref[2].astype(np.float64) - got[2].astype(np.float64))
    assert np.all(err <= bound), f"max err {err.max()} bound {bound.max()}"


@pytest.mark.skipif("not sim()", reason="on a GPU the real instructions run "
                    "(benchmarks/gpu.py --only attention)")
@pytest.mark.parametrize("cp_async", ["0", "1"])
def test_attention_tensor_cores_on_instruction_models(monkeypatch, cp_async):
    """R-MM-7: benchmarks/gpu.py's attention forward (two tensor-core mmas per K step: Q
    staged from before the loop, K transposed through registers, P converted from the first
    mma's fragments, V a plain load staged by cp.async) on the instruction models at 2 warps
    agrees with softmax(Q K^T * scale) V in float64, and no two threads touch a shared-memory
    byte between the same barriers (racecheck)."""
    monkeypatch.setenv("CUTILE_NUMBA_TENSOR_CORES", "sim")
    monkeypatch.setenv("CUTILE_NUMBA_CP_ASYNC", cp_async)
    _attention_on_models(1, 32, 16, 16, 64, 12)


def _attention_on_models(H: int, S: int, D: int, TL: int, T: int, seed: int) -> None:
    """attention_fwd at ``T`` threads against softmax(Q K^T / sqrt(D)) V in float64, with no
    shared-memory race."""
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((H, S, D)).astype(np.float16) for _ in range(3))
    o = poison((H, S, D), np.float16)
    with racecheck() as races:
        ref, got = run_both(attention_fwd, (S // TL, H), [q, k, v, o, D ** -0.5, TL, TL, D],
                            threads=T)
    assert not races, races.describe()
    s = np.einsum("hmd,hnd->hmn", q.astype(np.float64), k.astype(np.float64)) * D ** -0.5
    p = np.exp(s - s.max(-1, keepdims=True))
    want = (p / p.sum(-1, keepdims=True)) @ v.astype(np.float64)
    # P is rounded to float16 for the second mma (relative 2**-11: <= 2**-11 max|V| on a
    # weighted mean of V), the output to float16 (2**-11 |O|); float32 sums far below that
    bound = 2.0 ** -10 * (np.abs(v.astype(np.float64)).max() + np.abs(want))
    for out in (got[3], ref[3]):
        err = np.abs(out.astype(np.float64) - want)
        assert np.all(err <= bound), f"max err {err.max()}"


@pytest.mark.parametrize("tiles", [(16, 16, 8, 32, 20, 12, 24), (32, 32, 16, 64, 40, 40, 50),
                                   (16, 8, 8, 32, 16, 8, 16)],
                         ids=["1warp", "2warps-partial", "n8"])
def test_tf32_tensor_cores(monkeypatch, tiles):
    """R-MM-5/R-MM-7: tfloat32 operands (x.astype(ct.tfloat32)) with a float32 accumulator
    take mma.sync.m16n8k8.tf32 (on a GPU; under the simulator on ptx_sim.py's model): within
    the tensor-core bound of 8-deep steps of the interpreter, race-free."""
    if sim():
        monkeypatch.setenv("CUTILE_NUMBA_TENSOR_CORES", "sim")
    TM, TN, TK, T, M, N, K = tiles
    rng = np.random.default_rng(M + N + K)
    a, b = _data(rng, (M, K), np.float32), _data(rng, (K, N), np.float32)
    c = poison((M, N), np.float32)
    with racecheck() as races:
        ref, got = run_both(mm_tf32, (-(-M // TM), -(-N // TN)), [a, b, c, TM, TN, TK],
                            mma_acc="f32", threads=T)
    assert not races, races.describe()
    bound = mma_f32_bound(a, b, TK, tensor_cores=True, mma_k=8)
    err = np.abs(ref[2].astype(np.float64) - got[2].astype(np.float64))
    assert np.all(err <= bound), f"max err {err.max()} bound {bound.max()}"


@pytest.mark.parametrize("din,tiles", [
    (np.int8, (16, 8, 32, 32, 16, 8, 32)), (np.uint8, (16, 16, 32, 32, 20, 12, 70)),
    (np.int8, (32, 32, 32, 64, 40, 40, 60)),
], ids=["s8-1warp-n8", "u8-1warp-partial", "s8-2warps-partial"])
def test_int8_tensor_cores(monkeypatch, din, tiles):
    """R-MM-7: int8/uint8 operands with an int32 accumulator take mma.sync.m16n8k32 (B staged
    transposed; on a GPU, or on ptx_sim.py's model under the simulator): bit-exact, equal to
    the NumPy product wrapped to int32, race-free."""
    if sim():
        monkeypatch.setenv("CUTILE_NUMBA_TENSOR_CORES", "sim")
    TM, TN, TK, T, M, N, K = tiles
    rng = np.random.default_rng(M * N + K)
    a, b = _data(rng, (M, K), din), _data(rng, (K, N), din)
    c = poison((M, N), np.int32)
    with racecheck() as races:
        ref, got = run_both(mm_kloop, (-(-M // TM), -(-N // TN)),
                            [a, b, c, TM, TN, TK, ct.int32], mma_acc="f32", threads=T)
    assert not races, races.describe()
    want = (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32)
    assert_same(want, got[2], what=f"{np.dtype(din).name} tensor-core mma")
    assert_same(ref[2], got[2], what=f"{np.dtype(din).name} tensor-core mma vs interpreter")


def test_tf32_operands_rounded_as_interpreter():
    rng = np.random.default_rng(5)
    a, b = _data(rng, (20, 24), np.float32), _data(rng, (24, 12), np.float32)
    c = poison((20, 12), np.float32)
    ref, got = run_both(mm_tf32, (2, 1), [a, b, c, 16, 16, 8], mma_acc="exact")
    assert_same(ref[2], got[2], what="tf32 mma (exact accumulation)")


@ct.kernel
def batched(a, b, c):
    x = ct.load(a, (0, 0, 0), (2, 8, 4))
    y = ct.load(b, (0, 0, 0), (2, 4, 8))
    ct.store(c, (0, 0, 0), ct.matmul(x, y))


def test_batched_matmul_3d():
    rng = np.random.default_rng(2)
    a, b = _data(rng, (2, 8, 4), np.float32), _data(rng, (2, 4, 8), np.float32)
    c = poison((2, 8, 8), np.float32)
    ref, got = run_both(batched, (1,), [a, b, c], mma_acc="exact")
    assert_same(ref[2], got[2], what="batched matmul")


# -- control flow ----------------------------------------------------------------------------
@ct.kernel
def control(a, out, n, lim, T: Constant[int]):
    bid = ct.bid(0)
    acc = ct.load(a, (bid,), (T,), padding_mode=ct.PaddingMode.ZERO)
    for i in range(n):                          # runtime bound
        if i % 3 == 1:
            continue
        acc = acc * 0.5 + i
        if ct.sum(acc) > lim:                   # block-uniform condition from a reduction
            break
    j = 0
    while True:
        j += 1
        acc = acc - 1.0
        if j >= bid + 1:
            break
    if bid % 2 == 0:
        acc = ct.maximum(acc, 0.0)
    else:
        acc = ct.where(acc > 0, acc, -acc)
    ct.store(out, (bid,), acc)
    if bid == 1:
        return
    ct.store(out, (bid,), acc + j)


@pytest.mark.parametrize("shard", shards())
@settings(max_examples=examples(15))
@given(st.integers(0, 9), st.floats(-50, 50, width=32), st.integers(0, 2 ** 16))
def test_loops_runtime_bounds_and_branches_on_bid(shard, n, lim, seed):
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(100) * 4).astype(np.float32)
    out = poison((128,), np.float32)
    ref, got = run_both(control, (4,), [a, out, n, np.float32(lim), 32])
    assert_same(ref[1], got[1], what="control flow")


@ct.kernel
def nested(a, out, T: Constant[int]):
    s = ct.zeros((T,), dtype=ct.int32)
    for i in range(ct.bid(0), 6, 2):
        for j in range(i):
            if (i + j) % 2 == 0:
                s = s + ct.load(a, (j % 2,), (T,))
            else:
                s = s - 1
    ct.store(out, (ct.bid(0),), s)


def test_nested_loops_and_loop_carried_tiles():
    a = np.arange(32, dtype=np.int32)
    out = poison((48,), np.int32)
    ref, got = run_both(nested, (3,), [a, out, 16])
    assert_same(ref[1], got[1], what="nested loops")


@ct.kernel
def persistent(a, out, T: Constant[int]):
    # a persistent loop over tiles with a loop-carried reduction result
    total = ct.zeros((1,), dtype=ct.float32)
    for t in range(ct.bid(0), ct.num_tiles(a, 0, (T,)), ct.num_blocks(0)):
        x = ct.load(a, (t,), (T,), padding_mode=ct.PaddingMode.ZERO)
        total = total + ct.sum(x, keepdims=True)
    ct.store(out, (ct.bid(0),), total)


def test_persistent_loop_with_reduction():
    rng = np.random.default_rng(4)
    a = rng.standard_normal(200).astype(np.float32)
    out = poison((3,), np.float32)
    ref, got = run_both(persistent, (3,), [a, out, 32])
    assert_same(ref[1], got[1], what="persistent loop")


def _takes_wgmma(kernel, args, T: int) -> bool:
    """Whether the kernel's generated source (as the launch generates it here: the
    environment's switches) plans its mma on wgmma (the launch's compiled kernel may come
    from the process's cache, so its constructor is no witness)."""
    return any("wgmma" in p for p in _plans(kernel, args, T))


def _plans(kernel, args, T: int) -> list:
    from cutile.numba_backend.compile import generate
    ir = kernel.compile(kernel.specialize(tuple(args)))
    return generate(ir, T, "f32").plans


WGMMA_CASES = [  # (TM, TN, TK, threads, M, N, K), input dtype, kernel
    ((64, 64, 32, 128, 64, 64, 96), np.float16, "kloop"),         # pipelined, 3 iterations
    ((64, 32, 16, 128, 70, 30, 40), ml_dtypes.bfloat16, "kloop"),  # partial tiles, sw32 A
    ((64, 16, 16, 128, 64, 16, 20), np.float16, "kloop"),          # unaligned rows: element copy
    ((128, 16, 64, 128, 128, 16, 128), np.float16, "kloop"),       # 2 x m64 per warpgroup
    ((128, 32, 16, 256, 128, 32, 48), ml_dtypes.bfloat16, "kloop"),  # 2 warpgroups along M
    ((64, 128, 32, 128, 64, 128, 64), np.float16, "kloop"),        # B in two 64-column panels
    ((64, 32, 32, 128, 64, 40, 72), np.float16, "bt"),             # B^T K-major (a @ b.T)
    ((64, 32, 32, 128, 70, 32, 64), np.float16, "bmm"),            # batched, (1,TM,TN) store
    # float8: k32 steps, A by cp.async (16 to a chunk), B staged transposed from registers
    ((64, 64, 64, 128, 64, 64, 192), ml_dtypes.float8_e4m3fn, "kloop"),
    ((64, 32, 32, 128, 70, 30, 72), ml_dtypes.float8_e5m2, "kloop"),   # partial, sw32 rows
    ((64, 32, 128, 128, 64, 32, 256), ml_dtypes.float8_e4m3fn, "bt"),  # both by cp.async,
    # pipelined, two 128-byte k panels
    ((64, 32, 64, 128, 70, 40, 64), ml_dtypes.float8_e4m3fn, "once"),  # no K loop: B's bytes
    # copied transposed from global memory
    ((64, 256, 32, 128, 64, 200, 64), ml_dtypes.float8_e5m2, "kloop"),  # N = 256: promoted
    # in two m64n128 groups (B's descriptor 128 rows on)
    ((128, 256, 64, 256, 100, 200, 320), np.float16, "kloop"),  # alone on its SM: 4 stages
    # of 48 KiB (mma_plan.WHOLE_SM_PIPELINE_SMEM), 5 iterations: the ring wraps
]


@ct.kernel
def mm_once(a, b, c, TM: Constant[int], TN: Constant[int], TK: Constant[int]):
    """One mma of two loaded tiles, no K loop (nothing to pipeline)."""
    x = ct.load(a, (ct.bid(0), 0), (TM, TK), padding_mode=ct.PaddingMode.ZERO)
    y = ct.load(b, (0, ct.bid(1)), (TK, TN), padding_mode=ct.PaddingMode.ZERO)
    ct.store(c, (ct.bid(0), ct.bid(1)), ct.mma(x, y, ct.zeros((TM, TN), ct.float32)))


@pytest.mark.skipif("not sim()", reason="on a GPU the real instructions run (test_matmul.py "
                    "and benchmarks/gpu.py take wgmma on an sm_90 device)")
@pytest.mark.parametrize("case,din,form", WGMMA_CASES,
                         ids=["pipelined-f16", "partial-bf16", "unaligned-f16", "mi2-f16",
                              "2warpgroups-bf16", "2panels-f16", "bt-f16", "batched-f16",
                              "e4m3", "partial-e5m2", "bt-e4m3", "once-e4m3",
                              "n256-e5m2", "whole-sm-f16"])
def test_wgmma_path_on_instruction_models(monkeypatch, case, din, form):
    """R-MM-7: the generated wgmma kernel (CUTILE_NUMBA_WGMMA=sim: ptx_sim.py's models read
    the operands through the descriptors by the hardware's layout and address-swizzle rules)
    agrees with the interpreter within mma_f32_bound: the panel staging by cp.async (chunks,
    full tiles, the element-wise fallback), the 1024-byte aligned buffers, the descriptors
    and k16 steps, the accumulator's fragment layout across the K loop, the warpgroups along
    M; no shared-memory race, the wgmma's operand reads included (racecheck)."""
    monkeypatch.setenv("CUTILE_NUMBA_TENSOR_CORES", "sim")
    monkeypatch.setenv("CUTILE_NUMBA_WGMMA", "sim")
    monkeypatch.setenv("CUTILE_NUMBA_CP_ASYNC", "1")
    TM, TN, TK, T, M, N, K = case
    rng = np.random.default_rng(M * N + K)
    batch = (2,) if form == "bmm" else ()
    a = _data(rng, batch + (M, K), din)
    b = _data(rng, (N, K) if form == "bt" else batch + (K, N), din)
    c = poison(batch + (M, N), np.float32)
    grid = (-(-M // TM), -(-N // TN)) + batch
    args = [a, b, c, TM, TN, TK] + ([ct.float32] if form == "kloop" else [])
    kern = {"bt": mm_bt_kloop, "bmm": bmm_kloop, "once": mm_once}.get(form, mm_kloop)
    assert _takes_wgmma(kern, args, T)
    if form == "kloop" and np.dtype(din).itemsize == 1:      # B's bytes land, then transposed
        assert all("B transposed in shared memory" in p for p in _plans(kern, args, T))
    if (TM, TN, TK, T) == (128, 256, 64, 256):     # alone on its SM: 4 stages of 48 KiB
        assert all("4-stage pipelined" in p for p in _plans(kern, args, T))
    with racecheck() as races:
        ref, got = run_both(kern, grid, args, mma_acc="f32", threads=T)
    assert not races, races.describe()
    f8 = np.dtype(din).itemsize == 1
    bound = mma_f32_bound(a, b.T if form == "bt" else b, TK, tensor_cores=True,
                          mma_k=32 if f8 else 16)
    err = np.abs(ref[2].astype(np.float64) - got[2].astype(np.float64))
    assert np.all(err <= bound), f"max err {err.max()} bound {bound.max()}"


def _hopper() -> bool:
    from cutile.numba_backend.device_limits import device_compute_capability
    return device_compute_capability() == (9, 0)


F8_GPU_CASES = [  # (TM, TN, TK, M, N, K), dtype, kernel
    ((128, 128, 64, 256, 256, 1024), ml_dtypes.float8_e4m3fn, "kloop"),  # B from registers
    ((64, 64, 32, 100, 72, 200), ml_dtypes.float8_e5m2, "kloop"),        # partial tiles
    ((128, 64, 128, 256, 128, 512), ml_dtypes.float8_e4m3fn, "bt"),      # pipelined a @ b.T
]


def _launch_plans(kernel, args, T: int) -> list:
    """``_plans`` with the launch's facts (full tiles, TMA-ready arrays: the arrays of
    ``args``), as the launch itself plans: the TMA K loop (ws_plan.py) needs them."""
    from cutile.numba_backend.compile import full_tiles, generate
    ir = kernel.compile(kernel.specialize(tuple(args)))
    return generate(ir, T, "f32", full=full_tiles(ir, T, "f32", list(args))).plans


TMA_CASES = [  # (TM, TN, TK, threads, M, N, K), dtype, kernel, TMA-ready arrays
    ((64, 64, 32, 128, 100, 88, 72), np.float16, "kloop", True),   # partial tiles, 3 wraps
    ((64, 32, 16, 128, 70, 24, 40), ml_dtypes.bfloat16, "kloop", True),  # 32/64-byte swizzle
    ((64, 128, 32, 128, 64, 136, 64), np.float16, "kloop", True),  # B in two 64-col panels
    ((128, 32, 32, 256, 136, 32, 96), np.float16, "kloop", True),  # 2 consumer warpgroups
    ((64, 32, 32, 128, 70, 40, 72), np.float16, "bt", True),       # B^T K-major (a @ b.T)
    ((64, 32, 32, 128, 70, 32, 64), np.float16, "bmm", True),      # 3-D maps, batch coord
    ((64, 32, 16, 128, 64, 30, 20), np.float16, "kloop", False),   # rows not 16-byte aligned
]
TMA_IDS = ["partial-f16", "sw32-bf16", "2panels-f16", "2warpgroups-f16", "bt-f16",
           "batched-f16", "unaligned-f16"]


def _tma_case(monkeypatch, case, din, form, ready, seed=None):
    """(kernel, grid, args, T) of a ``TMA_CASES`` entry, its plan checked: the TMA ring where
    the arrays allow it (``CUTILE_NUMBA_TMA=all``: any tile), the cp.async loop otherwise."""
    monkeypatch.setenv("CUTILE_NUMBA_TMA", "all")
    TM, TN, TK, T, M, N, K = case
    rng = np.random.default_rng(M * N + K if seed is None else seed)
    batch = (2,) if form == "bmm" else ()
    a = _data(rng, batch + (M, K), din)
    b = _data(rng, (N, K) if form == "bt" else batch + (K, N), din)
    c = poison(batch + (M, N), np.float32)
    args = [a, b, c, TM, TN, TK] + ([ct.float32] if form == "kloop" else [])
    kern = {"bt": mm_bt_kloop, "bmm": bmm_kloop}.get(form, mm_kloop)
    plans = _launch_plans(kern, args, T)
    assert all(("operands by TMA" in p) == ready for p in plans), plans
    # the 2-D result tile through shared memory by a TMA store (the batched form's is 3-D)
    stored = ready and form != "bmm"
    assert all(("result stored by TMA" in p) == stored for p in plans), plans
    return kern, (-(-M // TM), -(-N // TN)) + batch, args, T


def _check_tma_case(kern, grid, args, T, din, form):
    ref, got = run_both(kern, grid, args, mma_acc="f32", threads=T)
    a, b = args[0], args[1]
    bound = mma_f32_bound(a, b.T if form == "bt" else b, args[5], tensor_cores=True)
    err = np.abs(ref[2].astype(np.float64) - got[2].astype(np.float64))
    assert np.all(err <= bound), f"max err {err.max()} bound {bound.max()}"


@pytest.mark.skipif("not sim()", reason="on a GPU the real instructions run "
                    "(test_tma_ring_on_hopper)")
@pytest.mark.parametrize("case,din,form,ready", TMA_CASES[:2] + TMA_CASES[4:6],
                         ids=[TMA_IDS[i] for i in (0, 1, 4, 5)])
def test_tma_ring_on_instruction_models(monkeypatch, case, din, form, ready):
    """R-MM-7: the warp-specialised TMA K loop (ws_plan.py: a producer warpgroup's TMA
    boxes into an mbarrier ring, the consumers' wgmmas releasing slots) on tma_sim.py's
    models (boxes zero-filled outside the array, written at the map's swizzled addresses,
    bytes completed on the barrier) agrees with the interpreter within mma_f32_bound: the
    panel boxes, the 128/64/32-byte swizzles, 3-D maps, the ring wrapping, the deferred
    release."""
    monkeypatch.setenv("CUTILE_NUMBA_TENSOR_CORES", "sim")
    monkeypatch.setenv("CUTILE_NUMBA_WGMMA", "sim")
    monkeypatch.setenv("CUTILE_NUMBA_CP_ASYNC", "1")
    kern, grid, args, T = _tma_case(monkeypatch, case, din, form, ready)
    _check_tma_case(kern, grid, args, T, din, form)


@pytest.mark.skipif("sim() or not _hopper()", reason="Hopper's TMA and wgmma (sm_90); the "
                    "simulator runs test_tma_ring_on_instruction_models")
@pytest.mark.parametrize("case,din,form,ready", TMA_CASES, ids=TMA_IDS)
def test_tma_ring_on_hopper(monkeypatch, case, din, form, ready):
    """R-MM-7: the warp-specialised TMA K loop on the GPU agrees with the interpreter within
    mma_f32_bound, every tile form and array layout of ``TMA_CASES`` (arrays TMA cannot
    address keep the cp.async loop)."""
    kern, grid, args, T = _tma_case(monkeypatch, case, din, form, ready)
    _check_tma_case(kern, grid, args, T, din, form)


@st.composite
def tma_case(draw):
    TM = draw(st.sampled_from([64, 128]))
    TN = draw(st.sampled_from([16, 32, 64, 128, 256] if TM == 64 else [16, 32, 64, 128]))
    TK = draw(st.sampled_from([16, 32, 64]))
    T = draw(st.sampled_from([128, 256] if TM == 128 else [128]))
    form = draw(st.sampled_from(["kloop", "bt", "bmm"]))
    din = draw(st.sampled_from([np.float16, ml_dtypes.bfloat16]))
    # rows of a multiple of 8 elements (16 bytes: TMA-ready), partial tiles everywhere
    M = draw(st.integers(1, TM + TM // 2))
    N = 8 * draw(st.integers(1, (TN + TN // 2) // 8))
    K = 8 * draw(st.integers(1, (3 * TK) // 8))
    return (TM, TN, TK, T, M, N, K), din, form, draw(st.integers(0, 2 ** 16))


@pytest.mark.parametrize("shard", shards())
@settings(max_examples=examples(2), deadline=None)
@given(tma_case())
def test_tma_ring_random_tiles(shard, case):
    """R-MM-7: random tiles (M 64/128, N 16..256, K 16..64 per block; one or two consumer
    warpgroups), partial tiles in every dimension, float16/bfloat16, ``a @ b``, ``a @ b.T``
    and the batched form (3-D maps): the warp-specialised TMA ring (``CUTILE_NUMBA_TMA=all``)
    within mma_f32_bound of the interpreter, on the GPU (Hopper) or the instruction models."""
    if not sim() and not _hopper():
        pytest.skip("Hopper's TMA and wgmma (sm_90); elsewhere the simulator runs this test")
    (TM, TN, TK, T, M, N, K), din, form, seed = case
    with pytest.MonkeyPatch.context() as mp:
        if sim():
            for k, v in (("CUTILE_NUMBA_TENSOR_CORES", "sim"), ("CUTILE_NUMBA_WGMMA", "sim"),
                         ("CUTILE_NUMBA_CP_ASYNC", "1")):
                mp.setenv(k, v)
        from cutile.numba_backend import wgmma
        gm = T // 128                       # warpgroups along M, each MI m64 blocks
        acc = TM // (64 * gm) * TN // 2     # accumulator registers a consumer thread holds
        assume(TM % (64 * gm) == 0 and acc <= wgmma.MAX_ACC_REGS
               and acc + wgmma.EXTRA_REGS <= wgmma.register_cap(T + 128, 1))
        kern, grid, args, T = _tma_case(mp, (TM, TN, TK, T, M, N, K), din, form, True, seed)
        _check_tma_case(kern, grid, args, T, din, form)


WIDE_GPU_CASES = [  # (TM, TN, TK, M, N, K), dtype, stages: blocks alone on their SM
    ((128, 256, 64, 300, 520, 1000), np.float16, 4),
    ((256, 128, 64, 520, 304, 704), ml_dtypes.bfloat16, 4),
    ((128, 256, 128, 260, 304, 904), np.float16, 2),    # 96 KiB stages: cp.async either way
]


@pytest.mark.skipif("sim() or not _hopper()", reason="Hopper's wgmma (sm_90); the simulator "
                    "runs test_wgmma_path_on_instruction_models' whole-sm case")
@pytest.mark.parametrize("case,din,stages", WIDE_GPU_CASES,
                         ids=["128x256x64-f16", "256x128x64-bf16", "128x256x128-f16"])
@pytest.mark.parametrize("tma", ["0", "1"], ids=["cp.async", "tma"])
def test_whole_sm_pipeline_on_hopper(monkeypatch, case, din, stages, tma):
    """R-MM-7: a wgmma block that registers keep alone on its SM pipelines its K loop over
    the SM's shared memory (``mma_plan.MmaPlanner.pipeline_smem``: 4 stages of 48 KiB, 2 of
    96 KiB), by cp.async or (the default there) by the warp-specialised TMA ring, and agrees
    with the interpreter within mma_f32_bound on partial tiles."""
    monkeypatch.setenv("CUTILE_NUMBA_TMA", tma)
    TM, TN, TK, M, N, K = case
    rng = np.random.default_rng(M + N + K)
    a, b = _data(rng, (M, K), din), _data(rng, (K, N), din)
    c = poison((M, N), np.float32)
    args = [a, b, c, TM, TN, TK, ct.float32]
    assert _takes_wgmma(mm_kloop, args, 256)
    ring = tma == "1" and stages >= 3                    # ws_plan.MIN_SLOTS
    want = f"{stages}-slot mbarrier ring" if ring else f"{stages}-stage pipelined"
    assert all(want in p for p in _launch_plans(mm_kloop, args, 256))
    ref, got = run_both(mm_kloop, (-(-M // TM), -(-N // TN)), args, mma_acc="f32", threads=256)
    bound = mma_f32_bound(a, b, TK, tensor_cores=True)
    err = np.abs(ref[2].astype(np.float64) - got[2].astype(np.float64))
    assert np.all(err <= bound), f"max err {err.max()} bound {bound.max()}"


@pytest.mark.skipif("sim() or not _hopper()", reason="Hopper's float8 wgmma (sm_90); the "
                    "simulator runs test_wgmma_path_on_instruction_models' e4m3/e5m2 cases")
@pytest.mark.parametrize("case,din,form", F8_GPU_CASES, ids=["e4m3", "partial-e5m2", "bt-e4m3"])
def test_float8_wgmma_on_hopper(case, din, form):
    """R-MM-7: float8 mma into float32 takes wgmma m64nNk32 on an sm_90 device and agrees with
    the interpreter within the hardware's accumulation bound (harness.F8_WGMMA_REL)."""
    TM, TN, TK, M, N, K = case
    rng = np.random.default_rng(M + N + K)
    a = (rng.standard_normal((M, K)) * 2).astype(din)
    b = (rng.standard_normal((N, K) if form == "bt" else (K, N)) * 2).astype(din)
    c = poison((M, N), np.float32)
    args = [a, b, c, TM, TN, TK] + ([ct.float32] if form == "kloop" else [])
    kern = mm_bt_kloop if form == "bt" else mm_kloop
    assert _takes_wgmma(kern, args, 128)
    ref, got = run_both(kern, (-(-M // TM), -(-N // TN)), args, mma_acc="f32", threads=128)
    bound = mma_f8_wgmma_bound(a, b.T if form == "bt" else b)
    err = np.abs(ref[2].astype(np.float64) - got[2].astype(np.float64))
    assert np.all(err <= bound), f"max err/S {(err / bound).max() * 2.0 ** -9}"


@pytest.mark.skipif("not sim()", reason="on a GPU the real instructions run (test_matmul.py)")
def test_second_k_loop_stages_into_the_first_ones_retired_buffers(monkeypatch):
    """R-MM-7: two pipelined wgmma K loops one after the other; the second one's staging
    takes the buffers the first one retired (smem.py), its first copies after a barrier that
    orders them behind the first loop's last operand reads (racecheck: without that barrier
    12224 races)."""
    monkeypatch.setenv("CUTILE_NUMBA_TENSOR_CORES", "sim")
    monkeypatch.setenv("CUTILE_NUMBA_WGMMA", "sim")
    monkeypatch.setenv("CUTILE_NUMBA_CP_ASYNC", "1")
    rng = np.random.default_rng(5)
    a, b = _data(rng, (64, 64), np.float16), _data(rng, (64, 64), np.float16)
    args = [a, b, poison((64, 64), np.float32), poison((64, 64), np.float32), 64, 64, 32]
    from cutile.numba_backend.compile import generate
    ir = mm_two_loops.compile(mm_two_loops.specialize(tuple(args)))
    g = generate(ir, 128, "f32")
    assert len({p for p in g.plans if "wgmma" in p}) == 2 and len(g.smem.buffers) == 2
    with racecheck() as races:
        ref, got = run_both(mm_two_loops, (1, 1), args, mma_acc="f32", threads=128)
    assert not races, races.describe()
    for out, bb in ((2, b), (3, b.T)):
        bound = mma_f32_bound(a, bb, 32, tensor_cores=True)
        err = np.abs(ref[out].astype(np.float64) - got[out].astype(np.float64))
        assert np.all(err <= bound), f"max err {err.max()} bound {bound.max()}"


@pytest.mark.skipif("not sim()", reason="on a GPU the real instructions run "
                    "(CUTILE_NUMBA_WGMMA=defer benchmarks/gpu.py --only mm_f16)")
def test_wgmma_deferred_wait_on_instruction_models(monkeypatch):
    """R-MM-7: CUTILE_NUMBA_WGMMA=defer (one K step's wgmmas in flight across the back edge,
    stages + 1 operand slots): 7 iterations wrap the 5 slots; race-free with the wgmma's
    reads logged at its issue, within mma_f32_bound."""
    monkeypatch.setenv("CUTILE_NUMBA_TENSOR_CORES", "sim")
    monkeypatch.setenv("CUTILE_NUMBA_WGMMA", "sim")
    monkeypatch.setenv("CUTILE_NUMBA_CP_ASYNC", "1")
    from cutile import config
    monkeypatch.setattr(config, "numba_wgmma_deferred", lambda: True)
    rng = np.random.default_rng(5)
    M, N, K, TM, TN, TK = 64, 32, 7 * 32, 64, 32, 32
    a, b = _data(rng, (M, K), np.float16), _data(rng, (K, N), np.float16)
    c = poison((M, N), np.float32)
    from cutile.numba_backend.compile import generate
    ir = mm_kloop.compile(mm_kloop.specialize((a, b, c, TM, TN, TK, ct.float32)))
    assert "wgmma_wait1_" in generate(ir, 128, "f32").source
    with racecheck() as races:
        ref, got = run_both(mm_kloop, (1, 1), [a, b, c, TM, TN, TK, ct.float32],
                            mma_acc="f32", threads=128)
    assert not races, races.describe()
    err = np.abs(ref[2].astype(np.float64) - got[2].astype(np.float64))
    assert np.all(err <= mma_f32_bound(a, b, TK, tensor_cores=True)), err.max()


@pytest.mark.skipif("not sim()", reason="on a GPU the real instructions run "
                    "(benchmarks/gpu.py --only attention)")
def test_attention_wgmma_on_instruction_models(monkeypatch):
    """R-MM-7: attention forward with both mmas on the wgmma models at one warpgroup: the
    query tile staged from registers into panels once, K^T read K-major, P from registers;
    against softmax(Q K^T * scale) V in float64, race-free."""
    monkeypatch.setenv("CUTILE_NUMBA_TENSOR_CORES", "sim")
    monkeypatch.setenv("CUTILE_NUMBA_WGMMA", "sim")
    monkeypatch.setenv("CUTILE_NUMBA_CP_ASYNC", "1")
    _attention_on_models(1, 128, 16, 64, 128, 13)


@ct.kernel
def mm_nan_b(a, b, c, TM: Constant[int], TN: Constant[int], TK: Constant[int]):
    # B NaN-padded: not copied by cp.async (zero padding only), staged from registers
    acc = ct.full((TM, TN), 0.25, dtype=ct.float32)
    for k in range(ct.num_tiles(a, 1, (TM, TK))):
        x = ct.load(a, (ct.bid(0), k), (TM, TK), padding_mode=ct.PaddingMode.ZERO)
        y = ct.load(b, (k, ct.bid(1)), (TK, TN), padding_mode=ct.PaddingMode.NAN)
        acc = ct.mma(x, y, acc)
    ct.store(c, (ct.bid(0), ct.bid(1)), acc)


@st.composite
def wg_case(draw):
    TM = draw(st.sampled_from([64, 128]))
    TN = draw(st.sampled_from([16, 32, 64, 128]))
    TK = draw(st.sampled_from([16, 32, 64]))
    T = draw(st.sampled_from([128, 256] if TM == 128 else [128]))
    regs = draw(st.booleans())                  # B through registers (NaN padding)
    din = draw(st.sampled_from([np.float16, ml_dtypes.bfloat16]))
    # (sizes kept small: each block is 128-256 simulator threads)
    M = draw(st.integers(1, TM + TM // 2))
    N = draw(st.integers(1, TN + TN // 2))
    # K partial only with zero padding (NaN-padded B rows would meet A's zero columns)
    K = TK * draw(st.integers(1, 2)) if regs else draw(st.integers(1, 2 * TK))
    return TM, TN, TK, T, M, N, K, regs, din, draw(st.integers(0, 2 ** 16))


@pytest.mark.skipif(not sim(), reason="on a GPU the real instructions run (the GPU runs "
                    "of test_matmul.py and this file's other mma tests take wgmma on sm_90)")
@pytest.mark.parametrize("shard", shards())
@settings(max_examples=examples(4))
@given(wg_case())
def test_wgmma_random_tiles_on_instruction_models(shard, case):
    """R-MM-7: random tile shapes (M 64/128 per block, N 16..128, K 16..64), one or two
    warpgroups, partial tiles in every dimension, float16/bfloat16, B staged by cp.async or
    from registers: the wgmma path on ptx_sim.py's models within mma_f32_bound of the
    interpreter."""
    TM, TN, TK, T, M, N, K, regs, din, seed = case
    with pytest.MonkeyPatch.context() as mp:
        for k, v in (("CUTILE_NUMBA_TENSOR_CORES", "sim"), ("CUTILE_NUMBA_WGMMA", "sim"),
                     ("CUTILE_NUMBA_CP_ASYNC", "1")):
            mp.setenv(k, v)
        _wgmma_random_case(TM, TN, TK, T, M, N, K, regs, din, seed)


def _wgmma_random_case(TM, TN, TK, T, M, N, K, regs, din, seed):
    rng = np.random.default_rng(seed)
    a, b = _data(rng, (M, K), din), _data(rng, (K, N), din)
    c = poison((M, N), np.float32)
    grid = (-(-M // TM), -(-N // TN))
    kern, args = (mm_nan_b, [a, b, c, TM, TN, TK]) if regs else \
        (mm_kloop, [a, b, c, TM, TN, TK, ct.float32])
    assert _takes_wgmma(kern, args, T)
    ref, got = run_both(kern, grid, args, mma_acc="f32", threads=T)
    bound = mma_f32_bound(a, b, TK, tensor_cores=True)
    if regs:                # the 0.25 start value joins the sums: the same relative bound on it
        bound = bound + 0.25 * mma_f32_bound(np.ones((1, K)), np.ones((K, 1)), TK,
                                             tensor_cores=True) / K
    err = np.abs(ref[2].astype(np.float64) - got[2].astype(np.float64))
    assert np.all(err <= bound), f"max err {err.max()} bound {bound.max()}"


@pytest.mark.skipif("not sim()", reason="on a GPU the real instructions run "
                    "(CUTILE_NUMBA_STORE_EXCHANGE=1 benchmarks/gpu.py --only mm_f16)")
def test_store_exchange_on_instruction_models(monkeypatch):
    """R-MM-7: with CUTILE_NUMBA_STORE_EXCHANGE=1 the wgmma accumulator is exchanged into the
    flat layout through the retired staging buffer before its (partial-tile) store: the same
    results as the interpreter within mma_f32_bound, no shared-memory race."""
    monkeypatch.setenv("CUTILE_NUMBA_TENSOR_CORES", "sim")
    monkeypatch.setenv("CUTILE_NUMBA_WGMMA", "sim")
    monkeypatch.setenv("CUTILE_NUMBA_CP_ASYNC", "1")
    monkeypatch.setenv("CUTILE_NUMBA_STORE_EXCHANGE", "1")
    rng = np.random.default_rng(9)
    a, b = _data(rng, (100, 64), np.float16), _data(rng, (64, 70), np.float16)
    args = [a, b, poison((100, 70), np.float16), 64, 64, 32]
    from cutile.numba_backend.compile import generate
    ir = mm_narrow.compile(mm_narrow.specialize(tuple(args)))
    src = generate(ir, 128, "f32").source
    assert "sm0[" in src[src.index("cp_async_wait_all()"):]
    with racecheck() as races:
        ref, got = run_both(mm_narrow, (2, 2), args, mma_acc="f32", threads=128)
    assert not races, races.describe()
    want = ref[2].astype(np.float64)
    err = np.abs(want - got[2].astype(np.float64))      # + one float16 rounding each
    assert np.all(err <= mma_f32_bound(a, b, 32, tensor_cores=True) + 2.0 ** -10 * np.abs(want))

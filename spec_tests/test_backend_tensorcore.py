"""The tensor-core plan's layout maths against NumPy models of the PTX instructions (CPU only:
the simulator runs no inline PTX, so these are the CI checks of the GPU path, R-MM-7).

Models, from the PTX ISA (warp of 32 lanes, ``g = lane >> 2``, ``t = lane & 3``):

- ``mma.sync.m16n8k16`` (16-bit operands, float32 C/D): A 16x16 row-major, register ``i``
  of lane holds the pair ``A[g + 8*(i & 1), 2t + 8*(i >> 1) + (0, 1)]``; B 16x8 "col",
  register ``i`` holds ``B[2t + 8*i + (0, 1), g]``; C/D element ``c`` is
  ``C[g + 8*(c >> 1), 2t + (c & 1)]``;
- ``ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].b16``: lanes ``8m .. 8m+7`` give the 16-byte
  rows of matrix ``m`` (16-byte aligned shared addresses); register ``m`` of lane holds row
  ``g``, columns ``2t, 2t+1`` of matrix ``m`` (``.trans``: of its transpose).

Each test stages a tile of distinct values the way ``lower/matmul_tc.py`` does, evaluates the
generated per-thread index expressions for every lane of every warp, runs the models and checks
that every element of A, B and C lands where the instruction expects it.
"""

from __future__ import annotations

import itertools
import os
import re

import numpy as np
import pytest
from backend_kernels import mm_kloop, mm_tf32_kloop

import cutile as ct
from cutile import Constant
from cutile import dtypes as dt
from cutile.numba_backend import layout as L
from cutile.numba_backend import tensorcore as tc


@pytest.fixture(autouse=True)
def _mma_sync(monkeypatch):
    """These tests are about the mma.sync path: on an sm_90 GPU the generator would take
    Hopper's wgmma instead (spec_tests/test_backend_wgmma.py checks that one)."""
    monkeypatch.setenv("CUTILE_NUMBA_WGMMA", "0")

# (M, N, K, threads): one warp up to eight, one to 4x8 mma tiles per warp, N = 8 (x2 loads)
PLANS = [(16, 8, 16, 32), (16, 16, 16, 32), (32, 32, 32, 64), (64, 64, 32, 128),
         (128, 128, 32, 256), (128, 256, 64, 256), (64, 32, 64, 64), (32, 64, 128, 128),
         (128, 256, 128, 256), (16, 64, 16, 128), (256, 128, 16, 256)]


class _T:
    def __init__(self, shape, dtype):
        self.shape, self.dtype = shape, dtype


class _V:
    def __init__(self, shape, dtype):
        self.type = _T(shape, dtype)


class _Op:
    """The operand types ``tensorcore.plan`` reads from an ``Mma``."""

    def __init__(self, M, N, K, dtype=dt.float16, acc=dt.float32):
        self.x, self.y, self.acc = _V((M, K), dtype), _V((K, N), dtype), _V((M, N), acc)


def _plan(M, N, K, T) -> tc.TCPlan:
    p = tc.plan(_Op(M, N, K), T)
    assert p is not None, (M, N, K, T)
    return p


def _stage(tile: np.ndarray) -> np.ndarray:
    """Shared-memory image of ``tile`` stored row-major with the chunk swizzle."""
    R, C = tile.shape
    r, c = np.meshgrid(np.arange(R), np.arange(C), indexing="ij")
    buf = np.full(R * C, -1, np.int64)
    buf[tc.swizzle(r, c, C)] = tile
    return buf


def _hoisted(plan: tc.TCPlan, tid: int) -> dict:
    """The plan's per-thread values, evaluated as the generated kernel does."""
    ns = {"tid": tid}
    for name, expr in plan.hoisted("p_").items():
        ns[name] = eval(expr, {}, ns)
    return ns


def _ldmatrix(buf: np.ndarray, addrs: list, n: int, trans: bool) -> np.ndarray:
    """``regs[lane, m, 2]``: the model of ldmatrix .xN over a warp's element addresses."""
    mats = []
    for m in range(n):
        rows = []
        for r in range(8):
            a = addrs[8 * m + r]
            assert a % 8 == 0, f"ldmatrix row address {a} is not 16-byte aligned"
            rows.append(buf[a:a + 8])
        mat = np.array(rows)
        mats.append(mat.T if trans else mat)
    out = np.zeros((32, n, 2), np.int64)
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for m in range(n):
            out[lane, m] = mats[m][g, 2 * t:2 * t + 2]
    return out


def _a_expected(A16: np.ndarray) -> np.ndarray:
    out = np.zeros((32, 4, 2), np.int64)
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for i in range(4):
            out[lane, i] = A16[g + 8 * (i & 1), 2 * t + 8 * (i >> 1) + np.arange(2)]
    return out


def _b_expected(B16: np.ndarray) -> np.ndarray:
    out = np.zeros((32, 2, 2), np.int64)
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for i in range(2):
            out[lane, i] = B16[2 * t + 8 * i + np.arange(2), g]
    return out


def _warp(plan: tc.TCPlan, w: int) -> tuple[int, int]:
    lwn = L.log2(plan.WN)
    return (w >> lwn) & (plan.WM - 1), w & (plan.WN - 1)


@pytest.mark.parametrize("ncols", [8, 16, 32, 64, 128, 256, 512])
def test_swizzle_permutes_chunks_and_is_conflict_free(ncols):
    """The swizzle is a bijection that keeps 16-byte chunks whole, and the eight 16-byte rows
    of any ldmatrix phase (8 consecutive rows, one logical chunk) hit 8 distinct bank groups."""
    R = 64
    r, c = np.meshgrid(np.arange(R), np.arange(ncols), indexing="ij")
    s = tc.swizzle(r, c, ncols)
    assert sorted(s.ravel().tolist()) == list(range(R * ncols))
    assert np.all(s % 8 == c % 8) and np.all(s // ncols == r)
    for r0 in range(0, R, 8):
        for ch in range(max(ncols // 8, 1)):
            groups = {(int(tc.swizzle(r0 + i, 8 * ch, ncols)) * 2 // 16) % 8 for i in range(8)}
            assert len(groups) == 8, (ncols, r0, ch, groups)


@pytest.mark.parametrize("ncols", [16, 32, 128])
def test_swizzle_expr_and_gf2_split_match_swizzle(ncols):
    """``swizzle_expr`` evaluates to ``swizzle``, and the staging's split (thread part XOR
    register part, lower/staging.stage) equals it for flat and blocked layouts."""
    for row in range(0, 64, 3):
        for col in range(0, ncols, 5):
            e = tc.swizzle_expr("r", "c", ncols)
            assert eval(e, {}, {"r": row, "c": col}) == tc.swizzle(row, col, ncols)
    for lay in (L.flat((64, ncols), 128), L.flat((64, ncols), 32),
                L.blocked((64, ncols), 64, 8, 8)):
        tab = lay.table
        for t in range(lay.T):
            rt_, ct_ = lay.thread_coord(0, np.int64(t)), lay.thread_coord(1, np.int64(t))
            base = tc.swizzle(rt_, ct_, ncols)
            for k in range(lay.nregs):
                ro, co = lay.reg_offsets(k)
                assert base ^ tc.swizzle(ro, co, ncols) == tc.swizzle(*tab[t, k], ncols)


@pytest.mark.parametrize("M,N,K,T", PLANS)
def test_accumulator_layout_is_the_mma_c_fragment(M, N, K, T):
    """Register ``plan.reg(mi, ni, c)`` of every lane holds the C element the instruction
    writes for mma tile (mi, ni) of the lane's warp; every element has one holder."""
    plan = _plan(M, N, K, T)
    lay = plan.layout()
    tab = lay.table
    assert lay.nregs == 4 * plan.MI * plan.NI and lay.replica_mask == 0
    seen = np.zeros((M, N), np.int64)
    WMs, WNs = M // plan.WM, N // plan.WN
    for tid in range(T):
        wm, wn = _warp(plan, tid >> 5)
        g, t = (tid & 31) >> 2, tid & 3
        for mi in range(plan.MI):
            for ni in range(plan.NI):
                for c in range(4):
                    row, col = tab[tid, plan.reg(mi, ni, c)]
                    assert (row, col) == (wm * WMs + 16 * mi + g + 8 * (c >> 1),
                                          wn * WNs + 8 * ni + 2 * t + (c & 1))
                    seen[row, col] += 1
    assert np.all(seen == 1)


@pytest.mark.parametrize("M,N,K,T", PLANS)
def test_ldmatrix_fragments_of_a_and_b(M, N, K, T):
    """ldmatrix .x4 at ``a_index`` gives each lane its A fragment of tile ``mi`` at k step
    ``kk``; .x4.trans (.x2.trans when NI == 1) at ``b_index`` its B fragments of tiles
    ``ni`` (and ``ni + 1``); every 16-byte row address is aligned."""
    plan = _plan(M, N, K, T)
    A = np.arange(M * K, dtype=np.int64).reshape(M, K)
    B = 10 ** 6 + np.arange(K * N, dtype=np.int64).reshape(K, N)
    sa, sb = _stage(A), _stage(B)
    WMs, WNs = M // plan.WM, N // plan.WN
    for w in range(T // 32):
        wm, wn = _warp(plan, w)
        hs = [_hoisted(plan, 32 * w + lane) for lane in range(32)]
        for kk in range(K // 16):
            for mi in range(plan.MI):
                addrs = [eval(plan.a_index("p_", mi, kk), {}, h) for h in hs]
                got = _ldmatrix(sa, addrs, 4, False)
                r0 = wm * WMs + 16 * mi
                want = _a_expected(A[r0:r0 + 16, 16 * kk:16 * kk + 16])
                np.testing.assert_array_equal(got, want, err_msg=f"A w{w} mi{mi} kk{kk}")
            step = 1 if plan.NI == 1 else 2
            for ni in range(0, plan.NI, step):
                addrs = [eval(plan.b_index("p_", ni, kk), {}, h) for h in hs]
                n = 2 if plan.NI == 1 else 4
                got = _ldmatrix(sb, addrs, n, True)
                for j in range(n // 2):
                    c0 = wn * WNs + 8 * (ni + j)
                    want = _b_expected(B[16 * kk:16 * kk + 16, c0:c0 + 8])
                    np.testing.assert_array_equal(got[:, 2 * j:2 * j + 2], want,
                                                  err_msg=f"B w{w} ni{ni + j} kk{kk}")


def _mma_model(a_regs, b_regs, c_regs):
    """D = A @ B + C of one m16n8k16 from the lanes' fragments (the instruction's model)."""
    A = np.zeros((16, 16), np.int64)
    B = np.zeros((16, 8), np.int64)
    C = np.zeros((16, 8), np.int64)
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for i in range(4):
            A[g + 8 * (i & 1), 2 * t + 8 * (i >> 1) + np.arange(2)] = a_regs[lane, i]
        for i in range(2):
            B[2 * t + 8 * i + np.arange(2), g] = b_regs[lane, i]
        for c in range(4):
            C[g + 8 * (c >> 1), 2 * t + (c & 1)] = c_regs[lane, c]
    D = A @ B + C
    out = np.zeros((32, 4), np.int64)
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for c in range(4):
            out[lane, c] = D[g + 8 * (c >> 1), 2 * t + (c & 1)]
    return out


@pytest.mark.parametrize("M,N,K,T", PLANS[:6])
def test_whole_call_computes_a_times_b(M, N, K, T):
    """One mma call as lowered (stage, ldmatrix, mma per tile and k step, accumulator kept in
    ``plan.layout()``), run on the models with small integers: exactly ``A @ B + C0``."""
    plan = _plan(M, N, K, T)
    rng = np.random.default_rng(M + N + K + T)
    A = rng.integers(-8, 8, (M, K))
    B = rng.integers(-8, 8, (K, N))
    C0 = rng.integers(-100, 100, (M, N))
    sa, sb = _stage(A), _stage(B)
    lay = plan.layout()
    tab = lay.table
    regs = C0[tab[..., 0], tab[..., 1]]                         # [tid, reg]
    for w in range(T // 32):
        hs = [_hoisted(plan, 32 * w + lane) for lane in range(32)]
        lanes = slice(32 * w, 32 * w + 32)
        for kk in range(K // 16):
            af = [_ldmatrix(sa, [eval(plan.a_index("p_", mi, kk), {}, h) for h in hs], 4, False)
                  for mi in range(plan.MI)]
            bf = []
            for ni in range(0, plan.NI, 1 if plan.NI == 1 else 2):
                n = 2 if plan.NI == 1 else 4
                got = _ldmatrix(sb, [eval(plan.b_index("p_", ni, kk), {}, h) for h in hs], n,
                                True)
                bf += [got[:, 2 * j:2 * j + 2] for j in range(n // 2)]
            for mi in range(plan.MI):
                for ni in range(plan.NI):
                    idx = [plan.reg(mi, ni, c) for c in range(4)]
                    regs[lanes, idx] = _mma_model(af[mi], bf[ni], regs[lanes][:, idx])
    D = np.zeros((M, N), np.int64)
    D[tab[..., 0], tab[..., 1]] = regs
    np.testing.assert_array_equal(D, A @ B + C0)


def test_plan_applies_to_the_mma_sync_dtypes_and_accumulators():
    """f16/bf16/tf32 with a float32 accumulator, int8/uint8 with int32; float32 operands stay
    exact FFMA (R-MM-7)."""
    assert tc.plan(_Op(64, 64, 32), 128).kind == "f16"
    assert tc.plan(_Op(64, 64, 32, dt.bfloat16), 128).kind == "bf16"
    assert tc.plan(_Op(64, 64, 32, dt.tfloat32), 128).kind == "tf32"
    assert tc.plan(_Op(64, 64, 32, dt.int8, dt.int32), 128).kind == "s8"
    assert tc.plan(_Op(64, 64, 32, dt.uint8, dt.int32), 128).kind == "u8"
    assert tc.plan(_Op(64, 64, 16, dt.int8, dt.int32), 128) is None     # K below 32
    assert tc.plan(_Op(64, 64, 32, dt.float32), 128) is None
    assert tc.plan(_Op(64, 64, 32, dt.float16, dt.float16), 128) is None
    assert tc.plan(_Op(64, 64, 8), 128) is None                 # K below one mma step
    assert tc.plan(_Op(16, 16, 16), 16) is None                 # less than a warp


def test_row_reduced_mma_results_put_whole_rows_in_one_warp(monkeypatch):
    """A kernel that reduces an mma result along its rows (attention's softmax) gets warps
    split along M only, so its row reductions are warp shuffles (no barrier), and the query
    tile, invariant in the K loop, is staged once (its own buffer, first iteration)."""
    from backend_kernels import attention_fwd

    from cutile.numba_backend import rt
    from cutile.numba_backend.compile import generate
    monkeypatch.setattr(rt, "simulator", lambda: False)      # generate for a GPU
    assert (tc.plan(_Op(64, 64, 64), 128, rows_in_warps=True).WM,
            tc.plan(_Op(64, 64, 64), 128).WM) == (4, 2)
    # 32 rows cannot give 4 warps 16 rows each: the square-as-possible plan
    assert tc.plan(_Op(32, 64, 64), 128, rows_in_warps=True) == tc.plan(_Op(32, 64, 64), 128)
    q = np.zeros((2, 128, 64), np.float16)
    ir = attention_fwd.compile(attention_fwd.specialize((q, q, q, q, 0.125, 64, 64, 64)))
    g = generate(ir, 128, "f32", tensor_cores=True)
    assert g.assign.rows_in_warps() and "4x1 warps" in "; ".join(g.plans)
    lines = g.source[g.source.index("for _i"):].splitlines()
    body = [lines[0]] + [ln for ln in itertools.takewhile(
        lambda ln: ln.startswith(" " * 8), lines[1:])]          # the K loop only
    first = [i for i, ln in enumerate(body) if re.fullmatch(r"\s+if v\d+ == v\d+:", ln)]
    assert len(first) == 1                       # the query tile, staged in iteration 0 only
    assert re.fullmatch(r"\s+sm\w+\[.*\] = v\d+_0", body[first[0] + 1])
    # softmax statistics: no cross-warp exchange, so the loop's barriers are the two mmas'
    # (write-after-read before staging K or V, read-after-write after), none for reductions
    assert "\n".join(body).count("cuda.syncthreads()") == 4


# -- operands staged straight from global memory (cp.async, lower/staging.stage_direct) ------
def _tc_source(kernel, args, T):
    """Generated source with tensor cores (cp.async staging as CUTILE_NUMBA_CP_ASYNC says)."""
    from cutile.numba_backend.compile import generate
    return generate(kernel.compile(kernel.specialize(args)), T, "f32", tensor_cores=True).source


@ct.kernel
def _mm_reused(a, b, c, TM: Constant[int], TN: Constant[int], TK: Constant[int]):
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    for k in range(ct.num_tiles(a, 1, (TM, TK))):
        x = ct.load(a, (ct.bid(0), k), (TM, TK), padding_mode=ct.PaddingMode.ZERO)
        y = ct.load(b, (k, ct.bid(1)), (TK, TN), padding_mode=ct.PaddingMode.NAN)
        acc = ct.mma(x, y, acc) + ct.sum(x.astype(ct.float32))
    ct.store(c, (ct.bid(0), ct.bid(1)), acc)


@pytest.fixture
def cp_async(monkeypatch):
    monkeypatch.setenv("CUTILE_NUMBA_CP_ASYNC", "1")


def test_plain_operand_loads_are_staged_by_cp_async(cp_async):
    """R-MM-7 tensor-core path: the K loop's zero-padded operand loads are copied to shared
    memory by 16-byte cp.async (an element-wise copy where rows are not 16-byte aligned)."""
    m = np.zeros((128, 128), np.float16)
    src = _tc_source(mm_kloop, (m, m, np.zeros((128, 128), np.float32), 64, 64, 32,
                                ct.float32), 128)
    # 2 chunks per thread and operand: 3 prologue stages + the loop's next one
    assert src.count("cp_async16(") == 4 * 4 and "cp_async_wait_all()" in src
    assert src.count("staged into shared memory by its mma") == 2
    assert "strides[1] == 2" in src and "addr_of(" in src and "ldsm32_x4(" in src


def test_cp_async_staging_is_the_default_and_can_be_turned_off(monkeypatch):
    """Default (CUTILE_NUMBA_CP_ASYNC unset): cp.async staging and 32-bit ldmatrix addresses;
    CUTILE_NUMBA_CP_ASYNC=0: operands loaded into registers, 64-bit ldmatrix addresses."""
    m = np.zeros((128, 128), np.float16)
    args = (m, m, np.zeros((128, 128), np.float32), 64, 64, 32, ct.float32)
    monkeypatch.delenv("CUTILE_NUMBA_CP_ASYNC", raising=False)
    src = _tc_source(mm_kloop, args, 128)
    assert "cp_async16(" in src and "ldsm32_x4(" in src
    monkeypatch.setenv("CUTILE_NUMBA_CP_ASYNC", "0")
    src = _tc_source(mm_kloop, args, 128)
    assert "cp_async16(" not in src and "ldsm_x4(" in src and "ldsm32" not in src


def test_loads_used_elsewhere_or_nan_padded_go_through_registers(cp_async):
    """A load whose tile is also used elsewhere, or whose padding is not zero, is staged from
    registers as before (no cp.async for it)."""
    m = np.zeros((128, 128), np.float16)
    src = _tc_source(_mm_reused, (m, m, np.zeros((128, 128), np.float32), 64, 64, 32), 128)
    assert "cp_async16(" not in src and "ldsm32_x4(" in src


def test_tensor_core_kernels_compile_to_mma_ldmatrix_and_cp_async(monkeypatch):
    """The generated tensor-core kernels go through Numba and NVVM for sm_90 (no GPU needed):
    float16 and bfloat16 mma.sync.m16n8k16, ldmatrix .x4 / .x4.trans, and with
    CUTILE_NUMBA_CP_ASYNC=1 cp.async copies and 32-bit ldmatrix addresses; tfloat32
    m16n8k8 and int8/uint8 m16n8k32 (ptxas assembles them when it is installed)."""
    import ml_dtypes
    from diff import ptxcheck
    if ptxcheck.toolkit() is None:
        pytest.skip("no CUDA toolkit (libNVVM) to compile the generated kernel")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    c = np.zeros((64, 64), np.float32)
    jobs = []
    for d, cp in ((np.float16, "0"), (ml_dtypes.bfloat16, "0"), (np.float16, "1")):
        monkeypatch.setenv("CUTILE_NUMBA_CP_ASYNC", cp)
        m = np.zeros((64, 64), d)
        ir = mm_kloop.compile(mm_kloop.specialize((m, m, c, 32, 32, 32, ct.float32)))
        jobs.append(ptxcheck.job_for(ir, 64, "f32", tensor_cores=True))
    monkeypatch.delenv("CUTILE_NUMBA_CP_ASYNC")
    m32 = np.zeros((64, 64), np.float32)
    ir = mm_tf32_kloop.compile(mm_tf32_kloop.specialize((m32, m32, c, 32, 32, 32)))
    jobs.append(ptxcheck.job_for(ir, 64, "f32", tensor_cores=True))
    for d in (np.int8, np.uint8):
        m8 = np.zeros((64, 64), d)
        ir = mm_kloop.compile(mm_kloop.specialize((m8, m8, np.zeros((64, 64), np.int32), 32,
                                                   32, 32, ct.int32)))
        jobs.append(ptxcheck.job_for(ir, 64, "f32", tensor_cores=True))
    f16, bf16, cpa, tf32, s8, u8 = ptxcheck.run_in_subprocess(jobs, root)
    for r in (f16, bf16, cpa, tf32, s8, u8):
        assert r["ok"], r.get("error")
    assert tf32["ptx"].count("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32") >= 8
    assert "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32" in s8["ptx"]
    assert "mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32" in u8["ptx"]
    if ptxcheck.toolkit()["ptxas"]:
        assert all(r["regs"] is not None for r in (f16, bf16, cpa, tf32, s8, u8))
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in f16["ptx"]
    assert "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in bf16["ptx"]
    for r in (f16, bf16):
        assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16" in r["ptx"]
        assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in r["ptx"]
        assert "cp.async" not in r["ptx"]
    assert cpa["ptx"].count("cp.async.cg.shared.global") >= 2
    assert "cp.async.wait_all" in cpa["ptx"]


def test_k_loop_is_pipelined_in_stages_chosen_from_shared_memory(cp_async):
    """With cp.async staging the K loop's mma is software-pipelined: the loop's prologue
    issues the copies of the first S - 1 iterations (one commit group each), each iteration
    waits until at most S - 2 groups fly, synchronises once, issues iteration + S - 1 into
    the slot the previous iteration computed from and computes from its own.  S: as many
    stages of the operand tiles as fit 96 KiB, at most 4 (kernel.inspect's plan says it)."""
    from cutile.numba_backend.compile import generate

    def gen(M, tiles, T):
        m = np.zeros((M, M), np.float16)
        ir = mm_kloop.compile(mm_kloop.specialize((m, m, np.zeros((M, M), np.float32))
                                                  + tiles + (ct.float32,)))
        return generate(ir, T, "f32", tensor_cores=True)

    g = gen(128, (64, 64, 32), 128)                 # 8 KiB per stage: 4 stages
    head, loop = g.source.split("    for _i", 1)
    assert head.count("cp_async16(") == 3 * 4 and head.count("cp_async_commit()") == 3
    assert loop.count("cp_async16(") == 4 and loop.count("cuda.syncthreads()") == 1
    assert "cp_async_wait_group2()" in loop and "+ 3) & 3" in loop
    assert "\n    cp_async_wait_all()" in loop                 # drained after the loop
    assert "4-stage pipelined K loop" in g.plans[0]
    g = gen(256, (128, 128, 64), 256)               # 32 KiB per stage: 3 stages
    assert "cp_async_wait_group1()" in g.source and "+ 2) % 3" in g.source
    assert "3-stage pipelined K loop" in g.plans[0] and g.smem.dynamic
    g = gen(512, (128, 256, 64), 256)               # 48 KiB per stage: 2
    assert "cp_async_wait_group0()" in g.source and "2-stage pipelined K loop" in g.plans[0]
    g = gen(512, (128, 256, 128), 256)              # two stages would not fit PIPELINE_SMEM
    assert "pipelined" not in g.plans[0] and "cp_async_wait_group" not in g.source


def test_full_tiles_are_copied_without_per_chunk_bounds(monkeypatch):
    """The host's full-tile facts (fulltile.py): a cp.async-staged operand whose array has
    dimensions that are multiples of the tile's (and 16-byte aligned rows) is copied with one
    in-or-out test per tile; another shape gets the checked copy (a separate kernel)."""
    from cutile.numba_backend import fulltile
    from cutile.numba_backend.compile import generate
    monkeypatch.setenv("CUTILE_NUMBA_TENSOR_CORES", "sim")
    m = np.zeros((128, 128), np.float16)
    c = np.zeros((128, 128), np.float32)
    ir = mm_kloop.compile(mm_kloop.specialize((m, m, c, 64, 64, 32, ct.float32)))
    reqs = fulltile.requirements(ir, 128, "f32")
    assert reqs == ((0, 64, 32), (1, 32, 64))
    assert fulltile.facts(reqs, [m, m, c]) == frozenset(reqs)
    odd = np.zeros((100, 128), np.float16)                 # 100 rows: a partial tile of A
    assert fulltile.facts(reqs, [odd, m, c]) == {(1, 32, 64)}
    assert fulltile.facts(reqs, [m, np.zeros((128, 96), np.float16), c]) == {(0, 64, 32)}
    from cutile.device_arrays import DeviceArrayRef

    def dev(ptr, strides):                                  # a CUDA array as the launch sees it
        return DeviceArrayRef(None, ptr, (128, 128), strides, np.dtype(np.float16))
    assert fulltile.facts(reqs, [dev(1 << 20, (256, 2)), m, c]) == frozenset(reqs)
    assert fulltile.facts(reqs, [dev((1 << 20) + 8, (256, 2)), m, c]) == {(1, 32, 64)}
    assert fulltile.facts(reqs, [dev(1 << 20, (264, 2)), m, c]) == {(1, 32, 64)}
    assert fulltile.facts(reqs, [dev(1 << 20, (512, 4)), m, c]) == {(1, 32, 64)}
    full = generate(ir, 128, "f32", tensor_cores=True, full=frozenset(reqs)).source
    checked = generate(ir, 128, "f32", tensor_cores=True).source
    assert "_cpok" not in full and "_tin" in full and full.count("cp_async16(") == 16
    assert "_tin" not in checked and "_cpok" in checked
    one = generate(ir, 128, "f32", tensor_cores=True, full=frozenset({(1, 32, 64)})).source
    assert "_cpok" in one and "_tin" in one
    monkeypatch.setenv("CUTILE_NUMBA_CP_ASYNC", "0")
    assert fulltile.requirements(ir, 128, "f32") == ()


@pytest.mark.parametrize("M,N,K,T", [(16, 8, 8, 32), (16, 16, 8, 32), (32, 64, 32, 128),
                                     (128, 128, 32, 256), (64, 32, 16, 64), (16, 256, 64, 128)])
def test_tf32_fragments_of_a_and_b(M, N, K, T):
    """tfloat32 (m16n8k8): A, B staged as float32 with 4-element chunks; ldmatrix .x4 (on the
    16-bit view: lane (g, t) gets element t of row g of each 8x4 matrix) at ``a_index`` gives
    a_i = A[g + 8 (i & 1), t + 4 (i >> 1)] of tile ``mi`` at k step ``kk``; the scalar loads
    at ``b_scalar_index`` give b_h = B[t + 4 h, g] of tile ``ni`` (PTX ISA fragments)."""
    plan = tc.plan(_Op(M, N, K, dt.tfloat32), T)
    assert plan is not None and plan.kind == "tf32" and plan.mk == 8
    A = np.arange(M * K, dtype=np.int64).reshape(M, K)
    B = 10 ** 6 + np.arange(K * N, dtype=np.int64).reshape(K, N)

    def stage(tile):
        R, C = tile.shape
        r, c = np.meshgrid(np.arange(R), np.arange(C), indexing="ij")
        buf = np.full(R * C, -1, np.int64)
        buf[tc.swizzle(r, c, C, 4)] = tile
        assert (buf >= 0).all()                                  # a bijection
        return buf

    sa, sb = stage(A), stage(B)
    WMs, WNs = M // plan.WM, N // plan.WN
    for w in range(T // 32):
        wm, wn = _warp(plan, w)
        hs = [_hoisted(plan, 32 * w + lane) for lane in range(32)]
        for kk in range(K // 8):
            for mi in range(plan.MI):
                addrs = [eval(plan.a_index("p_", mi, kk), {}, h) for h in hs]
                mats = []
                for m in range(4):
                    assert all(addrs[8 * m + r] % 4 == 0 for r in range(8))
                    mats.append(np.array([sa[addrs[8 * m + r]:addrs[8 * m + r] + 4]
                                          for r in range(8)]))
                for lane in range(32):
                    g, t = lane >> 2, lane & 3
                    for i in range(4):
                        want = A[wm * WMs + 16 * mi + g + 8 * (i & 1), 8 * kk + t + 4 * (i >> 1)]
                        assert mats[i][g, t] == want, (w, mi, kk, lane, i)
            for ni in range(plan.NI):
                for lane, h in enumerate(hs):
                    g, t = lane >> 2, lane & 3
                    for hh in range(2):
                        got = sb[eval(plan.b_scalar_index("p_", ni, kk, hh), {}, h)]
                        assert got == B[8 * kk + t + 4 * hh, wn * WNs + 8 * ni + g], \
                            (w, ni, kk, lane, hh)


@pytest.mark.parametrize("M,N,K,T", [(16, 8, 32, 32), (16, 16, 32, 32), (32, 64, 64, 128),
                                     (128, 128, 64, 256), (64, 32, 128, 64)])
def test_int8_fragments_of_a_and_b(M, N, K, T):
    """int8/uint8 (m16n8k32): A staged row-major and B transposed (N x K), 16 elements to a
    chunk; ldmatrix .x4 (16-bit view: lane (g, t) gets bytes 4t..4t+3 of row g of each 8x16
    matrix) gives a_i = A[g + 8 (i & 1), 4t + 16 (i >> 1) + 0..3] at ``a_index`` and, at
    ``bt_index``, b_i = B[4t + 16 i + 0..3, g] of tiles ni, ni + 1 (PTX ISA fragments)."""
    plan = tc.plan(_Op(M, N, K, dt.int8, dt.int32), T)
    assert plan is not None and plan.kind == "s8" and plan.mk == 32
    assert tc.plan(_Op(M, N, K, dt.int8, dt.float32), T) is None      # int32 accumulator only
    A = np.arange(M * K, dtype=np.int64).reshape(M, K)
    B = 10 ** 6 + np.arange(K * N, dtype=np.int64).reshape(K, N)

    def stage(tile):
        R, C = tile.shape
        r, c = np.meshgrid(np.arange(R), np.arange(C), indexing="ij")
        buf = np.full(R * C, -1, np.int64)
        buf[tc.swizzle(r, c, C, 16)] = tile
        assert (buf >= 0).all()
        return buf

    def ldsm(buf, addrs, n):
        """mats[m][g, 4t:4t+4]: the four bytes of register m of lane (g, t)."""
        for a in addrs[:8 * n]:
            assert a % 16 == 0, f"row address {a} not 16-byte aligned"
        return [np.array([buf[addrs[8 * m + r]:addrs[8 * m + r] + 16] for r in range(8)])
                for m in range(n)]

    sa, sbt = stage(A), stage(B.T.copy())
    WMs, WNs = M // plan.WM, N // plan.WN
    for w in range(T // 32):
        wm, wn = _warp(plan, w)
        hs = [_hoisted(plan, 32 * w + lane) for lane in range(32)]
        for kk in range(K // 32):
            for mi in range(plan.MI):
                mats = ldsm(sa, [eval(plan.a_index("p_", mi, kk), {}, h) for h in hs], 4)
                for lane in range(32):
                    g, t = lane >> 2, lane & 3
                    for i in range(4):
                        r, c = wm * WMs + 16 * mi + g + 8 * (i & 1), 32 * kk + 4 * t + 16 * (i >> 1)
                        assert list(mats[i][g, 4 * t:4 * t + 4]) == list(A[r, c:c + 4])
            for ni in range(0, plan.NI, 2):
                n = 4 if ni + 1 < plan.NI else 2
                mats = ldsm(sbt, [eval(plan.bt_index("p_", ni, kk), {}, h) for h in hs], n)
                for m in range(n):
                    for lane in range(32):
                        g, t = lane >> 2, lane & 3
                        k0, col = 32 * kk + 4 * t + 16 * (m & 1), wn * WNs + 8 * (ni + m // 2) + g
                        assert list(mats[m][g, 4 * t:4 * t + 4]) == list(B[k0:k0 + 4, col])

"""Hopper's wgmma path of the Numba backend (``numba_backend/wgmma.py``, R-MM-7), checked on
the CPU against independent models of what the hardware reads (PTX ISA, "Asynchronous
Warpgroup Level Matrix" sections):

- the accumulator fragment of ``wgmma.m64nNk16`` with float32 D: warp ``w`` of a warpgroup
  holds rows ``16w .. 16w+15``; lane ``l`` value ``j`` at row ``16w + l/4 + 8*((j%4)/2)``,
  column ``8*(j/4) + 2*(l%4) + j%2``;
- the 128/64/32-byte swizzles as the hardware applies them, to *byte addresses* of a
  1024-byte aligned tile: bits [4:4+s) ^= bits [7:7+s) for s = 3/2/1;
- the descriptor fields (start address >> 4 in bits 0-13, leading and stride byte offsets
  >> 4 in 16-29 and 32-45, swizzle mode in 62-63: 1 = 128 B, 2 = 64 B, 3 = 32 B) and the
  assignment of the offsets that ``tools/gpu/wgmma_probe.py --parts layouts`` measured exact
  on an H200 (MN-major B: LBO = stride between 64-column panels, SBO = stride between 8-row
  groups; the swapped assignment gave wrong products).

The generated kernels are translated by the direct path and assembled for sm_90a by ptxas
where a CUDA toolkit is installed; their numbers need the GPU (``benchmarks/gpu.py``, the
GPU runs of test_matmul.py and the differential suite).
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import tempfile

import numpy as np
import pytest
from backend_kernels import attention_fwd, bmm_kloop, mm_bt_kloop, mm_kloop, mm_narrow

import cutile as ct
from cutile.numba_backend import rt, smem, wgmma
from cutile.numba_backend import tensorcore as tc
from cutile.numba_backend.wgmma import WGPlan


def _plan(M, N, K, T, kind="f16", bt=False):
    return WGPlan(M, N, K, T, 4 * (T // 128), 1, kind, bt=bt, GM=T // 128)


PLANS = [(64, 64, 32, 128), (128, 128, 32, 128), (128, 128, 64, 256), (256, 64, 16, 256),
         (128, 256, 64, 128), (64, 16, 128, 128)]


@pytest.mark.parametrize("M,N,K,T", PLANS)
def test_accumulator_layout_is_the_wgmma_fragment(M, N, K, T):
    plan = _plan(M, N, K, T)
    tab = plan.layout().table
    n2 = N // 2
    seen = np.zeros((M, N), np.int64)
    for tid in range(T):
        g, w, lane = tid // 128, (tid // 32) % 4, tid % 32
        for mi in range(plan.MI):
            for j in range(n2):
                row, col = tab[tid, mi * n2 + j]
                assert (row, col) == (64 * (plan.MI * g + mi) + 16 * w + lane // 4
                                      + 8 * ((j % 4) // 2), 8 * (j // 4) + 2 * (lane % 4)
                                      + j % 2)
                seen[row, col] += 1
    assert np.all(seen == 1)
    # whole rows in one warp: row reductions need no shared memory (rows_in_warps)
    warp_of_row = {}
    for tid in range(T):
        for k in range(plan.acc_regs):
            assert warp_of_row.setdefault(int(tab[tid, k, 0]), tid // 32) == tid // 32


def _hw_byte(row, col, rows, cols, esize=2):
    """Byte address (from a 1024-byte aligned base) the hardware reads for element (row,
    col) of a tile stored as column panels of ``min(cols * esize, 128)`` bytes: the plain
    offset, then the address-bit swizzle of that panel width."""
    pw = min(cols, 128 // esize)
    plain = (col // pw) * rows * pw * esize + row * pw * esize + (col % pw) * esize
    s = {128: 3, 64: 2, 32: 1}[pw * esize]
    return plain ^ (((plain >> 7) & ((1 << s) - 1)) << 4)


@pytest.mark.parametrize("rows,cols", [(64, 16), (64, 32), (64, 64), (64, 128), (16, 256),
                                       (128, 64), (32, 128), (16, 32)])
def test_panel_staging_is_the_address_swizzle_the_hardware_applies(rows, cols):
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    idx = tc.swizzle(r, c, cols, 8, rows)
    assert np.array_equal(2 * idx, _hw_byte(r, c, rows, cols))
    expr = tc.swizzle_expr("rr", "cc", cols, 8, rows)
    for rr, cc in zip(r.ravel()[::7], c.ravel()[::7]):
        assert eval(expr) == idx[rr, cc]


def _fields(d):
    return ((d >> 16) & 0x3FFF) << 4, ((d >> 32) & 0x3FFF) << 4, (d >> 49) & 7, d >> 62


@pytest.mark.parametrize("M,N,K,T", PLANS)
def test_descriptors_address_the_staged_tiles(M, N, K, T):
    """Offsets and swizzle mode of both descriptors, and every k16 step's start address:
    the byte address of the step's first element (unswizzled: rows of the first 8-row group
    start on a swizzle atom row, where the XOR is 0)."""
    for bt in (False, True):
        plan = _plan(M, N, K, T, bt=bt)
        pa = min(K, 64)
        lbo, sbo, base, mode = _fields(plan.a_hi())
        assert (sbo, base, mode) == (8 * pa * 2, 0, {128: 1, 64: 2, 32: 3}[2 * pa])
        lbo, sbo, base, mode = _fields(plan.b_hi())
        if bt:                                   # B^T (N x K), K-major like A
            assert (sbo, base, mode) == (8 * pa * 2, 0, {128: 1, 64: 2, 32: 3}[2 * pa])
        else:                                    # B (K x N), MN-major: panels along N
            pb = min(N, 64)
            assert (lbo, sbo, mode) == (K * pb * 2, 8 * pb * 2, {128: 1, 64: 2, 32: 3}[2 * pb])
        for kk in range(K // 16):
            for mi in range(plan.MI):
                assert plan.a_step(mi, kk) == _hw_byte(64 * mi, 16 * kk, M, K)
            want = _hw_byte(0, 16 * kk, N, K) if bt else _hw_byte(16 * kk, 0, K, N)
            assert plan.b_step(kk) == want
        if plan.GM > 1:
            assert 2 * plan.a_group_offset() == _hw_byte(64 * plan.MI, 0, M, K)


@pytest.mark.parametrize("M,N,K,T", [(64, 64, 32, 128), (128, 128, 64, 128),
                                     (128, 64, 128, 256), (64, 32, 256, 128)])
def test_float8_descriptors_are_k_major_with_k32_steps(M, N, K, T):
    """float8 (1-byte elements, m64nNk32): A and B both K-major (B staged N x K), panels of
    128 k wide (128 bytes), each k32 step 32 bytes along the row or into the next panel."""
    for kind in ("e4m3", "e5m2"):
        plan = _plan(M, N, K, T, kind=kind)
        assert plan.b_transposed and plan.mk == 32 and plan.esize == 1
        assert plan.intrinsic() == f"wgmma_{kind}_n{N}"          # no transpose immediates
        pa = min(K, 128)
        for hi in (plan.a_hi(), plan.b_hi()):
            lbo, sbo, base, mode = _fields(hi)
            assert (sbo, base, mode) == (8 * pa, 0, {128: 1, 64: 2, 32: 3}[pa])
        for kk in range(K // 32):
            for mi in range(plan.MI):
                assert plan.a_step(mi, kk) == _hw_byte(64 * mi, 32 * kk, M, K, esize=1)
            assert plan.b_step(kk) == _hw_byte(0, 32 * kk, N, K, esize=1)


class _Op:
    def __init__(self, xd, yd, ad, M, N, K):
        T = lambda s, d: type("T", (), {"dtype": d, "shape": s})  # noqa: E731
        self.x, self.y, self.acc = (type("V", (), {"type": T(s, d)}) for s, d in
                                    (((M, K), xd), ((K, N), yd), ((M, N), ad)))


def test_plan_applies_to_whole_warpgroups_and_16_bit_floats_and_float8_only():
    d = ct.dtypes
    f16, bf16, f32 = d.float16, d.bfloat16, d.float32
    e4, e5 = d.float8_e4m3fn, d.float8_e5m2
    assert wgmma.plan(_Op(e4, e4, f32, 128, 128, 64), 128).kind == "e4m3"
    assert wgmma.plan(_Op(e5, e5, f32, 64, 64, 32), 128).kind == "e5m2"
    assert wgmma.plan(_Op(e4, e4, f32, 64, 64, 48), 128) is None        # K not a k32 multiple
    assert wgmma.plan(_Op(e4, e5, f32, 64, 64, 64), 128) is None        # mixed float8 kinds
    assert wgmma.plan(_Op(d.tfloat32, d.tfloat32, f32, 64, 64, 32), 128) is None
    assert wgmma.plan(_Op(f16, f16, f32, 128, 128, 32), 128).MI == 2
    assert wgmma.plan(_Op(bf16, bf16, f32, 128, 128, 32), 256).GM == 2
    assert wgmma.plan(_Op(f16, f16, f32, 64, 64, 32), 64) is None       # half a warpgroup
    assert wgmma.plan(_Op(f16, f16, f32, 64, 64, 32), 256) is None      # M < 64 per group
    assert wgmma.plan(_Op(f16, f16, f16, 64, 64, 32), 128) is None      # float16 accumulator
    assert wgmma.plan(_Op(d.int8, d.int8, d.int32, 64, 64, 32), 128) is None
    assert wgmma.plan(_Op(f16, f16, f32, 64, 8, 32), 128) is None       # N < 16
    assert wgmma.plan(_Op(f16, f16, f32, 128, 512, 32), 128) is None    # N > 256
    assert wgmma.plan(_Op(f16, f16, f32, 256, 256, 32), 128) is None    # 256 accumulators
    # the launch bound's register cap: ptxas refuses wgmma below accumulators + ~26
    assert wgmma.register_cap(256, 3) == 80 and wgmma.register_cap(256, 2) == 128
    assert wgmma.register_cap(128, None) == 255
    assert wgmma.plan(_Op(f16, f16, f32, 128, 128, 32), 256, reg_cap=80) is None
    assert wgmma.plan(_Op(f16, f16, f32, 128, 128, 32), 256, reg_cap=128) is not None


def test_dynamic_buffers_of_wgmma_operands_start_on_1024_byte_boundaries():
    p = smem.SmemPlan(aligned=True)
    a = p.buffer(("s", 1), 0, "u8", 1000)
    b = p.buffer(("s", 2), 0, "f16", 40000, align1024=True)
    c = p.buffer(("s", 3), 0, "f16", 8, align16=True)
    assert p.dynamic
    offs = p.offsets()
    assert offs[b] % 1024 == 0 and offs[c] % 16 == 0 and offs[a] == 0
    assert p.dynamic_bytes == 1024 + offs[c] + 16          # slack for the run-time rounding
    decl = "\n".join(p.declarations())
    assert "_dyn_pad = i64((u32(1024) - (smem_addr32(_dyn_u8, 0) & u32(1023)))" in decl
    assert f"{b} = _dyn_f16[(_dyn_pad >> 1) + {offs[b] // 2}:" in decl
    q = smem.SmemPlan(aligned=True)
    s = q.buffer(("t", 1), 0, "f16", 4096, align1024=True)
    assert not q.dynamic and f"{s} = cuda.shared.array(4096, f16, alignment=1024)" in \
        "\n".join(q.declarations())


def _gen(kernel, args, T, monkeypatch, **env):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    from cutile.numba_backend.compile import generate
    monkeypatch.setattr(rt, "simulator", lambda: False)
    ir = kernel.compile(kernel.specialize(args))
    return ir, generate(ir, T, "f32", tensor_cores=True, wgmma=True)


def _mm_args(M, N, K, tiles, d=np.float16):
    z = np.zeros
    return (z((M, K), d), z((K, N), d), z((M, N), np.float32), *tiles, ct.float32)


def test_batched_matmul_exchanges_its_accumulator_in_a_staging_buffer(monkeypatch):
    """The (TM, TN) -> (1, TM, TN) reshape of the stored accumulator goes through shared
    memory (the store is then coalesced), in A's staging buffer, dead after the K loop
    (``SmemPlan.retire``): the batched matmul has the 2-D matmul's two buffers.  (A buffer
    of its own cost 32 KiB and a block per SM on an H200: 99328 B, 2 blocks, 493 TFLOP/s;
    the fragment layout stored as it lies, 3 blocks: 439.)"""
    z = np.zeros
    args = (z((2, 256, 256), np.float16), z((2, 256, 256), np.float16),
            z((2, 256, 256), np.float16), 128, 128, 32)
    _, g = _gen(bmm_kloop, args, 128, monkeypatch, CUTILE_NUMBA_CP_ASYNC="1")
    _, g2 = _gen(mm_kloop, _mm_args(256, 256, 256, (128, 128, 32)), 128, monkeypatch,
                 CUTILE_NUMBA_CP_ASYNC="1")
    assert "wgmma" in g.plans[0]
    decl = re.compile(r"^    sm\d+ = .*$", re.M)
    assert decl.findall(g.source) == decl.findall(g2.source)
    assert len(decl.findall(g.source)) == 2
    tail = g.source[g.source.index("cp_async_wait_all()"):]
    assert re.search(r"cuda.syncthreads\(\)\n(\s+#.*\n)?\s+sm0\[", tail)  # after the reads


def test_pipelined_matmul_takes_wgmma_with_fences_in_order(monkeypatch):
    ir, g = _gen(mm_kloop, _mm_args(256, 256, 256, (128, 128, 32)), 128, monkeypatch,
                 CUTILE_NUMBA_CP_ASYNC="1")
    src = g.source
    assert "wgmma m64n128k16.f16 128x128x32: 1 warpgroup(s) along M, 2 x m64" in g.plans[0]
    loop = src[src.index("for _i"):]
    # the landed copies are fenced to the async proxy before the barrier publishing them
    assert re.search(r"cp_async_wait_group\d\(\)\n\s+fence_proxy_async\(\)\n\s+"
                     r"cuda\.syncthreads\(\)", loop)
    fence = loop.index("= wgmma_fence128(")
    mmas = [m.start() for m in re.finditer(r"= wgmma_f16_n128_t\(", loop)]
    assert len(mmas) == 4 and fence < mmas[0]          # 2 k16 steps x 2 m64 blocks
    assert mmas[-1] < loop.index("wgmma_commit()") < loop.index("= wgmma_wait128(")
    assert "wgmma_wait1_" not in src                   # not deferred by default


@pytest.mark.parametrize("tiles,T,stages", [
    ((128, 256, 64), 256, 4),    # registers keep the block alone on its SM: 4 x 48 KiB
    ((256, 128, 64), 256, 4),
    ((128, 128, 32), 128, 4),    # three blocks share an SM: PIPELINE_SMEM (4 x 16 KiB)
    ((128, 128, 64), 128, 3),    # two blocks by shared memory (3 x 32 KiB), as measured best
    ((128, 256, 128), 256, 2),   # 96 KiB a stage: pipelined at all only on the whole SM
])
def test_pipeline_depth_follows_blocks_per_sm(monkeypatch, tiles, T, stages):
    """``MmaPlanner.stages``: a wgmma block whose accumulators leave no registers for a
    second block takes up to ``WHOLE_SM_PIPELINE_SMEM`` for its stages; others keep
    ``PIPELINE_SMEM`` (more stages there would cost blocks per SM)."""
    _, g = _gen(mm_kloop, _mm_args(512, 512, 512, tiles), T, monkeypatch,
                CUTILE_NUMBA_CP_ASYNC="1")
    assert f"{stages}-stage pipelined" in g.plans[0], g.plans[0]
    assert g.smem.total_bytes < 227 * 1024


def test_whole_sm_pipeline_respects_the_shared_memory_limit(monkeypatch):
    """``CUTILE_NUMBA_SMEM_LIMIT`` (less shared memory per block) bounds the deeper pipeline
    too: 128 KiB leave 96 KiB for stages of 48 KiB, two."""
    _, g = _gen(mm_kloop, _mm_args(512, 512, 512, (128, 256, 64)), 256, monkeypatch,
                CUTILE_NUMBA_CP_ASYNC="1", CUTILE_NUMBA_SMEM_LIMIT=str(128 * 1024))
    assert "2-stage pipelined" in g.plans[0], g.plans[0]


def test_deferred_wait_leaves_one_step_in_flight_and_waits_after_the_loop(monkeypatch):
    _, g = _gen(mm_kloop, _mm_args(256, 256, 256, (128, 128, 32)), 128, monkeypatch,
                CUTILE_NUMBA_CP_ASYNC="1", CUTILE_NUMBA_WGMMA="defer")
    src = g.source
    loop_at = src.index("for _i")
    body_end = src.index("cp_async_wait_all()", loop_at)     # after the loop
    assert "wgmma_wait1_128(" in src[loop_at:body_end]
    assert re.search(r"= \(\(i64\(\w+\) - i64\(\w+\)\) // i64\(\w+\)\) % 5", src)  # 4 + 1
    assert "= wgmma_wait128(" in src[body_end:]
    assert "wgmma wait deferred one iteration" in g.plans[0]


def test_deferred_wait_is_not_taken_when_the_accumulator_is_read_in_the_loop(monkeypatch):
    from test_backend_tensorcore import _mm_reused
    z = np.zeros
    args = (z((256, 256), np.float16), z((256, 256), np.float16), z((256, 256), np.float32),
            128, 128, 32)
    _, g = _gen(_mm_reused, args, 128, monkeypatch, CUTILE_NUMBA_CP_ASYNC="1",
                CUTILE_NUMBA_WGMMA="defer")
    assert "wgmma_wait1_" not in g.source and "wgmma" in g.source


def test_register_operands_and_transposed_b_take_wgmma(monkeypatch):
    """Attention: the query tile staged once (registers -> panels), K^T read K-major
    (``bt``), P from registers; ``a @ b.T`` with a cp.async-staged B^T."""
    q = np.zeros((2, 256, 64), np.float16)
    _, g = _gen(attention_fwd, (q, q, q, q, 0.125, 64, 64, 64), 128, monkeypatch)
    assert len({p for p in g.plans if "wgmma" in p}) == 2
    assert "wgmma_f16_n64(" in g.source and "wgmma_f16_n64_t(" in g.source
    a = np.zeros((128, 96), np.float16)
    _, g = _gen(mm_bt_kloop, (a, np.zeros((72, 96), np.float16), np.zeros((128, 72),
                np.float32), 64, 64, 32), 128, monkeypatch)
    assert "B^T K-major" in g.plans[0]


def _assemble_sm90a(tk, ptx: str) -> tuple[int, str]:
    """(exit status, output) of ``ptxas -arch=sm_90a -v`` on ``ptx``."""
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "k.ptx")
        with open(p, "w") as f:
            f.write(ptx)
        r = subprocess.run([tk["ptxas"], "-arch=sm_90a", "-v", p, "-o", p + ".o"],
                           capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def _ptxas():
    from diff import ptxcheck
    tk = ptxcheck.toolkit()
    return tk if tk and tk["ptxas"] else None


@pytest.mark.skipif(_ptxas() is None, reason="no CUDA toolkit with libNVVM and ptxas (set "
                    "CUDA_HOME) to build and assemble the kernels for sm_90a")
def test_direct_path_assembles_wgmma_kernels_for_sm90a(monkeypatch):
    """The direct path's NVVM IR of float16/bfloat16 matmuls (full and partial tiles) and
    attention, compiled for compute_90a and assembled by ptxas for sm_90a: no errors, no
    spills in the matmuls, the wgmmas present and none serialised by ptxas (C7515).  (The
    attention kernel at 4 blocks per SM, 128 registers, spills about 200 bytes: measured
    152 TFLOP/s on an H200 all the same; fewer blocks per SM are yet to be measured.)"""
    from diff import ptxcheck
    from test_backend_direct import _numba_args

    from cutile.numba_backend import direct
    from cutile.numba_backend.nvvm import emit, nvvmc
    from cutile.numba_backend.threads import launch_bounds
    tk = _ptxas()
    monkeypatch.setenv("CUTILE_NUMBA_CP_ASYNC", "1")
    monkeypatch.setattr(rt, "simulator", lambda: False)
    import ml_dtypes
    q = np.zeros((2, 256, 64), np.float16)
    cases = [(mm_kloop, _mm_args(256, 256, 256, (128, 128, 32)), 128, 4, True),
             (mm_kloop, _mm_args(200, 136, 90, (64, 64, 32), ml_dtypes.bfloat16), 128, 2,
              True),
             (attention_fwd, (q, q, q, q, 0.125, 64, 64, 64), 128, 8, False),
             # float8 a @ b.T: both by cp.async, pipelined, 2 warpgroups x 2 k32, promoted
             # (a float8 B staged from registers reads the decode tables: Numba's path, below)
             (mm_bt_kloop, _mm_args(256, 256, 256, (128, 128, 64), ml_dtypes.float8_e5m2)[:3]
              + (128, 128, 64), 256, 2, True)]
    for kernel, args, T, n_wgmma, no_spill in cases:
        ir = kernel.compile(kernel.specialize(args))
        job = ptxcheck.job_for(ir, T, tensor_cores=True)
        from cutile.numba_backend.compile import generate
        job["source"] = generate(ir, T, "f32", tensor_cores=True, wgmma=True).source
        b = list(launch_bounds(ir, T) or ())
        ll = emit.translate(job["source"], job["fn"], direct.param_types(_numba_args(job)),
                            *b[:2])
        ptx = nvvmc.to_ptx(ll, tk["libdevice"], (9, 0, "a"))
        assert ".target sm_90a" in ptx and ptx.count("wgmma.mma_async") == n_wgmma
        rc, log = _assemble_sm90a(tk, ptx)
        assert rc == 0, log
        assert "C7515" not in log, log
        assert "0 bytes spill stores" in log or not no_spill, log


@pytest.mark.skipif(_ptxas() is None, reason="no CUDA toolkit with libNVVM and ptxas (set "
                    "CUDA_HOME) to build and assemble the kernels for sm_90a")
def test_numba_path_builds_the_same_wgmma_kernel(monkeypatch):
    """A kernel the direct path does not cover compiles through Numba: the wgmma family's
    generated intrinsics (``ptx._from_asm``) type and lower there too, and the PTX assembles
    for sm_90a (numba-cuda targets sm_90a itself on the GPU; offline its ``.target`` line is
    edited, as ``tools/gpu/wgmma_probe.py --offline`` does)."""
    from diff import ptxcheck

    from cutile.numba_backend.compile import generate
    tk = _ptxas()
    monkeypatch.setenv("CUTILE_NUMBA_CP_ASYNC", "1")
    monkeypatch.setattr(rt, "simulator", lambda: False)
    import ml_dtypes
    jobs = []
    f8 = _mm_args(256, 256, 256, (128, 128, 64), ml_dtypes.float8_e4m3fn)
    for kern, args, T in ((mm_kloop, _mm_args(256, 256, 256, (128, 128, 32)), 128),
                          (mm_kloop, f8, 256), (mm_bt_kloop, f8[:3] + f8[3:6], 256)):
        # float8 (k32, promoted, 2 warpgroups): B copied transposed byte by byte; a @ b.T
        ir = kern.compile(kern.specialize(args))
        job = ptxcheck.job_for(ir, T, tensor_cores=True)
        job["source"] = generate(ir, T, "f32", tensor_cores=True, wgmma=True).source
        jobs.append(job)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for r, k in zip(ptxcheck.run_in_subprocess(jobs, root),
                    ("f16.f16", "e4m3.e4m3", "e4m3.e4m3")):
        assert r["ok"], r.get("error")
        ptx = re.sub(r"^\.target sm_90\b", ".target sm_90a", r["ptx"], flags=re.M)
        n = 4 if k == "f16.f16" else 2
        assert ptx.count(f"f32.{k}") == n and "fence.proxy.async.shared::cta" in ptx
        rc, log = _assemble_sm90a(tk, ptx)
        assert rc == 0 and "C7515" not in log, log


def test_mma_sync_plans_are_unchanged_when_wgmma_is_off(monkeypatch):
    """wgmma off (or a device that is not sm_90: here none at all) gives the mma.sync kernel,
    with no trace of the wgmma layouts; on, the same kernel takes wgmma."""
    from cutile.numba_backend import codegen
    from cutile.numba_backend.compile import generate
    ir, on = _gen(mm_kloop, _mm_args(256, 256, 256, (128, 128, 32)), 128, monkeypatch,
                  CUTILE_NUMBA_CP_ASYNC="1")
    assert "wgmma" in on.plans[0]
    off = generate(ir, 128, "f32", tensor_cores=True, wgmma=False)
    assert "mma.sync" in off.plans[0] and "wgmma" not in off.source
    assert "alignment=1024" not in off.source and "_dyn_pad" not in off.source
    monkeypatch.setattr(codegen, "device_compute_capability", lambda: (8, 0))
    assert generate(ir, 128, "f32", tensor_cores=True).source == off.source


def test_threads_give_a_wgmma_matmul_one_warpgroup_per_128_rows(monkeypatch):
    from cutile.numba_backend import threads
    monkeypatch.setattr(rt, "simulator", lambda: False)
    monkeypatch.delenv("CUTILE_NUMBA_THREADS", raising=False)
    # float32 accumulation, the default (the GPU runs of the spec tests set ``exact``)
    monkeypatch.setenv("CUTILE_NUMBA_MMA_ACC", "f32")
    ir = mm_kloop.compile(mm_kloop.specialize(_mm_args(256, 256, 256, (128, 128, 32))))
    monkeypatch.setattr(threads, "device_compute_capability", lambda: (9, 0))
    assert threads._choose_threads(ir) == 128
    monkeypatch.setenv("CUTILE_NUMBA_WGMMA", "0")
    assert threads._choose_threads(ir) == 256
    monkeypatch.delenv("CUTILE_NUMBA_WGMMA")
    monkeypatch.setattr(threads, "device_compute_capability", lambda: (8, 0))
    assert threads._choose_threads(ir) == 256


def test_float8_takes_one_warpgroup_per_64_rows_and_promotes_each_call(monkeypatch):
    """float8 wgmma (``WGPlan.promotes``): per 64-row block the k32 steps sum into fresh
    registers (the first with scale-d 0), waited for, then added to the accumulator by
    float32 adds; a 128-row tile gets two warpgroups (one block each: the fresh sums fit
    beside the accumulators), and no deferred wait (the sums are read at once)."""
    import ml_dtypes

    from cutile.numba_backend import threads
    args = _mm_args(256, 256, 256, (128, 128, 64), ml_dtypes.float8_e4m3fn)
    monkeypatch.setattr(rt, "simulator", lambda: False)
    monkeypatch.delenv("CUTILE_NUMBA_THREADS", raising=False)
    monkeypatch.setenv("CUTILE_NUMBA_MMA_ACC", "f32")
    monkeypatch.setattr(threads, "device_compute_capability", lambda: (9, 0))
    ir = mm_kloop.compile(mm_kloop.specialize(args))
    assert threads._choose_threads(ir) == 256
    _, g = _gen(mm_kloop, args, 256, monkeypatch, CUTILE_NUMBA_CP_ASYNC="1")
    src = g.source
    calls = re.findall(r"= (wgmma_e4m3_n128)\([^,]+, [^,]+, i32\((\d)\)", src)
    assert calls == [("wgmma_e4m3_n128", "0"), ("wgmma_e4m3_n128", "1")], calls
    assert "wgmma_fence64(" + ", ".join(["f32(0.0)"] * 64) + ")" in src
    assert len(re.findall(r"= f32\(\w+ \+ _?pr\w*\)", src)) == 64
    assert "wgmma_wait1_" not in src
    # B (K x N as loaded) lands by cp.async as it lies and is transposed in shared memory
    # into the K-major buffer the wgmma reads: no float32 decode and byte re-encode (that
    # form, the encoder a device function, ran 3x slower on the H200); the K loop pipelined
    assert re.search(r"sm\w*\[_di\d+ \^ 2\] = sm\w*\[_si\d+ \^ \d+\]", src)
    assert "mf_bits" not in src and "B transposed in shared memory" in g.plans[0]
    assert "4-stage pipelined" in g.plans[0]
    # N = 256: 128 accumulators and 64 fresh sums (two m64n128 groups, the second's B
    # descriptor 128 rows on): 224 registers with the 32 extra, not under a cap of 200
    d = ct.dtypes
    e4 = d.float8_e4m3fn
    p = wgmma.plan(_Op(e4, e4, d.float32, 64, 256, 64), 128)
    assert p.promote_n == 128 and p.regs_needed == 192
    assert p.b_half_offset(1) == _hw_byte(128, 0, 256, 64, esize=1)
    assert wgmma.plan(_Op(e4, e4, d.float32, 64, 256, 64), 128, reg_cap=200) is None
    assert wgmma.plan(_Op(d.float16, d.float16, d.float32, 64, 256, 64), 128,
                      reg_cap=200) is not None
    big = _mm_args(256, 256, 256, (128, 256, 64), ml_dtypes.float8_e4m3fn)
    assert threads._choose_threads(mm_kloop.compile(mm_kloop.specialize(big))) == 256
    _, g = _gen(mm_kloop, big, 256, monkeypatch, CUTILE_NUMBA_CP_ASYNC="1")
    assert "m64n256k32" in g.plans[0]
    assert len(re.findall(r"= wgmma_e4m3_n128\(", g.source)) == 2 * 2    # 2 groups x 2 k32


def test_plan_replace_keeps_the_warpgroups():
    p = dataclasses.replace(_plan(128, 128, 32, 256), bt=True)
    assert isinstance(p, WGPlan) and p.GM == 2 and p.intrinsic() == "wgmma_f16_n128"


def test_a_retired_buffer_is_taken_by_a_later_site_of_its_type_that_fits():
    p = smem.SmemPlan(aligned=True)
    a = p.buffer("stage", 0, "f16", 4096, align1024=True)
    b = p.buffer("stage", 1, "u8", 4096, align1024=True)
    p.retire([a, b])
    assert p.buffer("xchg", 0, "f32", 16) not in (a, b)       # another element type
    assert p.buffer("xchg2", 0, "f16", 8192) not in (a, b)    # too big
    assert p.buffer("xchg3", 0, "f16", 4096) == a             # taken once
    assert p.buffer("xchg4", 0, "f16", 16) not in (a, b)
    assert p.buffer("xchg3", 0, "f16", 4096) == a             # its site keeps it
    assert len(set(p.sites.values())) == len(p.buffers) == 5


@pytest.mark.parametrize("shape,cast", [((128, 128), "f16"), ((64, 32), "f32"), ((4, 8, 64), "u8"),
                                        ((16, 16), "f64"), ((128,), "f16")])
def test_exchange_swizzle_is_a_permutation_within_each_row(shape, cast):
    from cutile.numba_backend.codegen import exchange_swizzle, swizzled
    sw = exchange_swizzle(shape, cast)
    n = int(np.prod(shape))
    f = np.arange(n)
    g = f if sw is None else np.array([swizzled(int(x), sw) for x in f])
    assert sorted(g) == list(f) and np.all(g // shape[-1] == f // shape[-1])
    if sw is not None:       # linear over GF(2): XOR of disjoint bit parts distributes
        a, b = 3 * shape[-1] * (len(shape) > 1), 5
        assert swizzled(a ^ b, sw) == swizzled(a, sw) ^ swizzled(b, sw)


def test_exchange_of_the_wgmma_fragment_writes_without_bank_conflicts():
    """The batched matmul's epilogue writes the m64n128 fragment (float16) into a 128 x 128
    exchange: each store instruction of a warp (one register index, 32 lanes) touches 32
    different 4-byte banks or shares a word; unswizzled it hit 4 banks 8 times."""
    from cutile.numba_backend.codegen import exchange_swizzle, swizzled
    lay = _plan(128, 128, 32, 128).layout()
    sw = exchange_swizzle((128, 128), "f16")
    tab = lay.table
    for j in range(lay.nregs):
        for w in range(4):
            rows, cols = tab[32 * w:32 * w + 32, j].T
            words = {swizzled(int(r) * 128 + int(c), sw) * 2 // 4 for r, c in zip(rows, cols)}
            assert len({x % 32 for x in words}) == len(words) == 32, (j, w)


def test_store_exchange_is_opt_in_and_uses_a_retired_buffer(monkeypatch):
    """CUTILE_NUMBA_STORE_EXCHANGE=1: the matmul's float16 result goes to the flat layout
    through A's retired staging buffer (a barrier after the K loop's reads, one after the
    writes) before its store; off (the default), the fragment is stored as it lies.  (A
    float32 result has no retired float16 buffer to take: stored as it lies.)"""
    z = np.zeros
    args = (z((256, 256), np.float16), z((256, 256), np.float16), z((256, 256), np.float16),
            128, 128, 32)
    _, off = _gen(mm_narrow, args, 128, monkeypatch, CUTILE_NUMBA_CP_ASYNC="1")
    _, on = _gen(mm_narrow, args, 128, monkeypatch, CUTILE_NUMBA_CP_ASYNC="1",
                 CUTILE_NUMBA_STORE_EXCHANGE="1")
    tail_off = off.source[off.source.index("cp_async_wait_all()"):]
    tail_on = on.source[on.source.index("cp_async_wait_all()"):]
    assert "sm0[" not in tail_off and "syncthreads" not in tail_off
    assert re.search(r"cuda.syncthreads\(\)\n\s+sm0\[", tail_on)
    assert tail_on.count("cuda.syncthreads()") == 2 and len(on.smem.buffers) == 2

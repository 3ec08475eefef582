"""The warp-specialised TMA K loop of the Numba backend (``numba_backend/ws_plan.py``,
``lower/matmul_ws.py``, ``tma.py``), checked on the CPU: where the plan takes it (the launch's
facts, the tile, the switches), the kernel's shape (a producer warpgroup beside the kernel's
threads, named barriers for the consumers, the ring's barriers), which arrays TMA can address,
and that ptxas assembles the kernel for sm_90a without serialising its wgmmas.  The
instruction models run it end to end in ``diff/test_diff_matmul_control.py``
(``test_tma_ring_on_instruction_models``), the GPU in ``test_tma_ring_on_hopper``.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
from backend_kernels import bmm_kloop, mm_kloop

import cutile as ct
from cutile.numba_backend import rt, tma, ws_plan

BOTH = frozenset({("tma", 0), ("tma", 1)})
ALL3 = BOTH | {("tma", 2)}                  # the result's array too: the TMA store epilogue


def _gen(kernel, args, T, monkeypatch, full=BOTH, **env):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    from cutile.numba_backend.compile import generate
    monkeypatch.setattr(rt, "simulator", lambda: False)
    ir = kernel.compile(kernel.specialize(args))
    return ir, generate(ir, T, "f32", tensor_cores=True, wgmma=True, full=full)


def _mm(M, N, K, tiles, d=np.float16):
    z = np.zeros
    return (z((M, K), d), z((K, N), d), z((M, N), np.float32), *tiles, ct.float32)


@ct.function
def k_loop(a, b, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    """``mm_kloop``'s K loop (inlined into the kernels below that vary what surrounds it)."""
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    for k in range(ct.num_tiles(a, 1, (TM, TK))):
        x = ct.load(a, (ct.bid(0), k), (TM, TK), padding_mode=ct.PaddingMode.ZERO)
        y = ct.load(b, (k, ct.bid(1)), (TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(x, y, acc)
    return acc


def _ring(g) -> bool:
    return any("operands by TMA" in p for p in g.plans)


def test_wide_tiles_take_the_tma_ring_where_the_launch_allows(monkeypatch):
    """The default (``CUTILE_NUMBA_TMA=1``): a 128x256x64 block alone on its SM with both
    arrays TMA-ready takes the ring (4 slots, one producer warpgroup: 384 threads); without
    the facts for either array, or switched off, the cp.async loop stays."""
    args = _mm(4096, 4096, 4096, (128, 256, 64))
    _, g = _gen(mm_kloop, args, 256, monkeypatch)
    assert _ring(g) and g.block_threads == 384 and g.ws.stages == 4
    assert "4-slot mbarrier ring, producer warpgroup, wgmma wait deferred" in g.plans[0]
    for full in (frozenset(), frozenset({("tma", 0)}), frozenset({("tma", 1)})):
        _, g = _gen(mm_kloop, args, 256, monkeypatch, full=full)
        assert not _ring(g) and g.block_threads == 256 and "tmaps" not in g.source
    _, g = _gen(mm_kloop, args, 256, monkeypatch, CUTILE_NUMBA_TMA="0")
    assert not _ring(g)


@pytest.mark.parametrize("tiles,T,default", [((128, 128, 32), 128, False),
                                             ((256, 128, 64), 256, True),
                                             ((128, 256, 128), 256, False)])
def test_the_default_ring_needs_a_block_alone_on_its_sm_and_three_slots(monkeypatch, tiles,
                                                                         T, default):
    """128x128 blocks share an SM (the producer's registers would leave one: 518 against
    528 TFLOP/s on an H200, kernel time); 128x256x128 has two 96 KiB slots (473 against 492).
    ``CUTILE_NUMBA_TMA=all`` takes the ring on each."""
    args = _mm(4096, 4096, 4096, tiles)
    assert _ring(_gen(mm_kloop, args, T, monkeypatch)[1]) == default
    assert _ring(_gen(mm_kloop, args, T, monkeypatch, CUTILE_NUMBA_TMA="all")[1])


def test_kernel_shape_producer_branch_and_named_barriers(monkeypatch):
    """Thread 0 initialises a full and an empty barrier per slot (one arrival; one per
    consumer warp), the whole block meets once, the loop's bounds are computed before the
    parts; the consumers' branch first, the producer's (thread T) second; the batched
    matmul's epilogue exchange syncs its 128 consumers by a named barrier, never the whole
    block; 3-D boxes with the batch coordinate outermost."""
    args = (np.zeros((2, 256, 256), np.float16), np.zeros((2, 256, 256), np.float16),
            np.zeros((2, 256, 256), np.float16), 64, 64, 32)
    _, g = _gen(bmm_kloop, args, 128, monkeypatch, CUTILE_NUMBA_TMA="all")
    src = g.source
    assert _ring(g) and g.block_threads == 256
    lines = [ln.strip() for ln in src.splitlines()]
    assert lines.count("cuda.syncthreads()") == 1
    assert "bar_sync_named(i32(1), i32(128))" in lines
    assert "mbar_init(smem_addr32(sm0, 0), u32(1))" in src
    assert re.search(r"mbar_init\(smem_addr32\(sm0, \d\), u32\(4\)\)", src)  # 4 consumer warps
    split, producer = lines.index("if tid < 128:"), lines.index("elif tid == 128:")
    assert lines.index("cuda.syncthreads()") < split < producer
    assert src.count("tma_load_3d(") == 2 and "tma_load_2d" not in src
    assert all(ln.startswith("tma_load_3d(") for ln in lines if "tma_load" in ln)
    assert all(lines.index(ln) > producer for ln in lines if ln.startswith("tma_load"))
    assert all(lines.index(ln) < producer for ln in lines if ln.startswith("bar_sync_named"))


def test_boxes_are_the_swizzle_panels(monkeypatch):
    """One box per 128-byte column panel: A (128 x 64) one box, B (64 x 256) four, each at
    its panel's offset in the slot; the maps' swizzle is the panel's row bytes (a 32-wide
    K tile: 64-byte rows)."""
    from cutile.numba_backend.lower.matmul_ws import map_specs, stage_bytes
    _, g = _gen(mm_kloop, _mm(4096, 4096, 4096, (128, 256, 64)), 256, monkeypatch)
    assert g.source.count("tma_load_2d(") == 5
    for p in range(1, 4):
        assert f"_ps2 * 16384 + {p * 4096})" in g.source
    assert map_specs(g.ws) == (tma.MapSpec(0, (64, 128), 128, 2), tma.MapSpec(1, (64, 64), 128, 2))
    assert stage_bytes(g.ws) == (128 * 64 + 64 * 256) * 2
    _, g = _gen(mm_kloop, _mm(4096, 4096, 4096, (64, 32, 32)), 128, monkeypatch,
                CUTILE_NUMBA_TMA="all")
    assert map_specs(g.ws) == (tma.MapSpec(0, (32, 64), 64, 2), tma.MapSpec(1, (32, 32), 64, 2))
    # rows of 16 bytes are not swizzled (tensorcore.swizzle), 32 bytes the 32-byte swizzle
    from cutile import dtypes as d
    from cutile.numba_backend.lower.matmul_ws import map_spec
    assert map_spec((64, 4), d.float32, 2, 2) == tma.MapSpec(2, (4, 64), 0, 4)
    assert map_spec((64, 8), d.float16, 3, 0) == tma.MapSpec(0, (8, 64, 1), 0, 2)
    assert map_spec((64, 16), d.bfloat16, 2, 1) == tma.MapSpec(1, (16, 64), 32, 2)
    assert map_spec((128, 256), d.float32, 2, 2) == tma.MapSpec(2, (32, 128), 128, 4)


def test_kernels_the_producer_cannot_follow_keep_cp_async(monkeypatch):
    """A return before the loop (the producer would wait for releases forever), a loop bound
    read from memory, float8 (promoted sums, B transposed), a block whose producer would leave
    the wgmmas too few registers: the cp.async loop."""

    @ct.kernel
    def early_return(a, b, c, n, TM: ct.Constant[int], TN: ct.Constant[int],
                     TK: ct.Constant[int]):
        if n < 0:
            return
        ct.store(c, (ct.bid(0), ct.bid(1)), k_loop(a, b, TM, TN, TK))

    @ct.kernel
    def bound_from_memory(a, b, c, nk, TM: ct.Constant[int], TN: ct.Constant[int],
                          TK: ct.Constant[int]):
        acc = ct.zeros((TM, TN), dtype=ct.float32)
        for k in range(ct.load(nk, (0,), (1,)).item()):
            x = ct.load(a, (ct.bid(0), k), (TM, TK), padding_mode=ct.PaddingMode.ZERO)
            y = ct.load(b, (k, ct.bid(1)), (TK, TN), padding_mode=ct.PaddingMode.ZERO)
            acc = ct.mma(x, y, acc)
        ct.store(c, (ct.bid(0), ct.bid(1)), acc)

    a, b, c = _mm(4096, 4096, 4096, (64, 64, 32))[:3]
    _, g = _gen(early_return, (a, b, c, 1, 64, 64, 32), 128, monkeypatch,
                CUTILE_NUMBA_TMA="all")
    assert not _ring(g) and "4-stage pipelined" in g.plans[0]
    _, g = _gen(bound_from_memory, (a, b, c, np.zeros(1, np.int32), 64, 64, 32), 128,
                monkeypatch, CUTILE_NUMBA_TMA="all")
    assert not _ring(g) and "4-stage pipelined" in g.plans[0]
    import ml_dtypes
    _, g = _gen(mm_kloop, _mm(4096, 4096, 4096, (128, 128, 64), ml_dtypes.float8_e4m3fn),
                256, monkeypatch, CUTILE_NUMBA_TMA="all")
    assert not _ring(g) and any("wgmma" in p for p in g.plans)
    # 256x256 at 512 threads: 128 accumulators a thread, which 640 threads' 96 registers
    # cannot hold beside the wgmmas' own (wgmma.EXTRA_REGS)
    _, g = _gen(mm_kloop, _mm(4096, 4096, 4096, (256, 256, 32)), 512, monkeypatch,
                CUTILE_NUMBA_TMA="all")
    assert not _ring(g) and any("wgmma" in p for p in g.plans)


@pytest.mark.parametrize("shape,strides,addr,item,ok", [
    ((300, 520), (1040, 2), 0, 2, True),
    ((300, 70), (140, 2), 0, 2, False),         # rows not a multiple of 16 bytes
    ((300, 520), (2080, 4), 0, 2, False),       # every other element
    ((300, 520), (1040, 2), 8, 2, False),       # base not 16-byte aligned
    ((0, 520), (1040, 2), 0, 2, False),         # empty
    ((2, 3, 4, 5, 6, 8), (5760, 1920, 480, 96, 16, 2), 0, 2, False),    # rank 6
    ((2, 300, 520), (312000, 1040, 2), 256, 2, True),
    ((300, 12), (48, 4), 0, 4, True),           # float32 rows of 48 bytes
    ((300, 32), (32, 1), 0, 1, False),          # bytes: not a TMA element here
])
def test_which_arrays_tma_can_address(shape, strides, addr, item, ok):
    assert tma.ready(shape, strides, addr, item) == ok


def test_launch_facts_name_the_tma_ready_operands(monkeypatch):
    """``full_tiles`` adds ``("tma", i)`` for each array parameter whose launch array TMA can
    address (host arrays travel as C-contiguous copies; 2- and 4-byte elements), none with
    the switch off."""
    from cutile.numba_backend.compile import full_tiles
    monkeypatch.setattr(rt, "simulator", lambda: False)
    from cutile.numba_backend import fulltile, mma_plan
    monkeypatch.setattr(mma_plan, "tensor_cores_usable", lambda acc: True)
    monkeypatch.setattr(fulltile, "tensor_cores_usable", lambda acc: True)
    args = list(_mm(300, 520, 1000, (128, 256, 64)))
    ir = mm_kloop.compile(mm_kloop.specialize(tuple(args)))
    assert {f for f in full_tiles(ir, 256, "f32", args) if f[0] == "tma"} == ALL3
    args[0] = np.zeros((300, 1001), np.float16)[:, :1000]     # a view: its copy is aligned
    assert {f for f in full_tiles(ir, 256, "f32", args) if f[0] == "tma"} == ALL3
    args[0] = np.zeros((300, 1003), np.float16)
    ir = mm_kloop.compile(mm_kloop.specialize(tuple(args)))
    assert {f for f in full_tiles(ir, 256, "f32", args) if f[0] == "tma"} == ALL3 - {("tma", 0)}
    monkeypatch.setenv("CUTILE_NUMBA_TMA", "0")
    assert not {f for f in full_tiles(ir, 256, "f32", args) if f[0] == "tma"}
    assert ws_plan.mode() == "0"


def _ptxas():
    from diff import ptxcheck
    tk = ptxcheck.toolkit()
    return tk if tk and tk["ptxas"] else None


@pytest.mark.skipif(_ptxas() is None, reason="no CUDA toolkit with libNVVM and ptxas (set "
                    "CUDA_HOME) to build and assemble the kernels for sm_90a")
@pytest.mark.parametrize("kernel,args,T,n_tma", [
    (mm_kloop, _mm(4096, 4096, 4096, (128, 256, 64)), 256, 5),
    (bmm_kloop, (np.zeros((2, 256, 256), np.float16),) * 2
     + (np.zeros((2, 256, 256), np.float16), 64, 64, 32), 128, 2)])
def test_direct_path_assembles_the_tma_ring_for_sm90a(monkeypatch, kernel, args, T, n_tma):
    """The ring's kernel through the direct path, compiled for compute_90a and assembled by
    ptxas for sm_90a: the TMA loads, mbarrier waits and wgmmas present, no spills, no wgmma
    serialised (C7515/C7520), the producer's threads in the launch bound."""
    from diff import ptxcheck
    from test_backend_direct import _numba_args
    from test_backend_wgmma import _assemble_sm90a

    from cutile.numba_backend import codegen, direct, mma_plan
    from cutile.numba_backend.nvvm import emit, nvvmc
    tk = _ptxas()
    monkeypatch.setenv("CUTILE_NUMBA_CP_ASYNC", "1")
    monkeypatch.setenv("CUTILE_NUMBA_TMA", "all")
    monkeypatch.setattr(rt, "simulator", lambda: False)
    monkeypatch.setattr(codegen, "wgmma_usable", lambda *a: True)
    monkeypatch.setattr(mma_plan, "wgmma_usable", lambda *a: True)
    ir = kernel.compile(kernel.specialize(args))
    job = ptxcheck.job_for(ir, T, tensor_cores=True, full=ALL3)
    # a launch bound above 256 threads (threads.launch_bounds): the producer counts
    assert (job["bounds"] or [T + 128])[0] == T + 128 and job["args"][-1] == ["scalar", "int64"]
    ll = emit.translate(job["source"], job["fn"], direct.param_types(_numba_args(job)),
                        *job["bounds"][:2])
    ptx = nvvmc.to_ptx(ll, tk["libdevice"], (9, 0, "a"))
    assert ptx.count("cp.async.bulk.tensor") >= n_tma and "mbarrier.try_wait.parity" in ptx
    assert "wgmma.mma_async" in ptx
    rc, log = _assemble_sm90a(tk, ptx)
    assert rc == 0, log
    assert "C7515" not in log and "C7520" not in log, log
    assert "0 bytes spill stores" in log, log


@pytest.mark.skipif(_ptxas() is None, reason="no CUDA toolkit with libNVVM and ptxas (set "
                    "CUDA_HOME) to build and assemble the kernels for sm_90a")
def test_numba_path_builds_the_tma_ring(monkeypatch):
    """Through Numba (a kernel the direct path does not cover): the ring's intrinsics
    (``ptx._from_asm``: mbarriers, TMA, named barrier) type and lower, and the PTX assembles
    for sm_90a."""
    from diff import ptxcheck
    from test_backend_wgmma import _assemble_sm90a

    from cutile.numba_backend import codegen, mma_plan
    tk = _ptxas()
    monkeypatch.setenv("CUTILE_NUMBA_CP_ASYNC", "1")
    monkeypatch.setattr(rt, "simulator", lambda: False)
    monkeypatch.setattr(codegen, "wgmma_usable", lambda *a: True)
    monkeypatch.setattr(mma_plan, "wgmma_usable", lambda *a: True)
    args = _mm(4096, 4096, 4096, (128, 256, 64))
    ir = mm_kloop.compile(mm_kloop.specialize(args))
    job = ptxcheck.job_for(ir, 256, tensor_cores=True, full=ALL3)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    (r,) = ptxcheck.run_in_subprocess([job], root)
    assert r["ok"], r.get("error")
    ptx = re.sub(r"^\.target sm_90\b", ".target sm_90a", r["ptx"], flags=re.M)
    # 5 boxes a stage (LLVM may unroll the loop), 8 in the epilogue's store
    n = ptx.count("cp.async.bulk.tensor.2d.shared::cluster.global")
    assert n >= 5 and n % 5 == 0 and "mbarrier.init" in ptx
    assert ptx.count("cp.async.bulk.tensor.2d.global.shared::cta") == 8
    rc, log = _assemble_sm90a(tk, ptx)
    assert rc == 0 and "C7515" not in log, log


def test_epilogue_stores_through_shared_memory_by_tma(monkeypatch):
    """With the result's array TMA-ready: every consumer writes its accumulator registers
    into a float32 tile over the dead B ring (a view at the same offset: no shared memory of
    its own), after a consumer barrier (the ring's last wgmma reads) and before another
    (the writes published, fenced for the async proxy); thread 0 issues one 128-byte panel
    box per 32 columns and waits for their shared reads.  ``CUTILE_NUMBA_TMA_STORE=0`` or an
    array TMA cannot address: the fragment stored as it lies."""
    from cutile.numba_backend.lower.matmul_ws import map_specs
    args = _mm(4096, 4096, 4096, (128, 256, 64))
    _, g = _gen(mm_kloop, args, 256, monkeypatch, full=ALL3)
    assert "result stored by TMA through shared memory" in g.plans[0]
    src, lines = g.source, [ln.strip() for ln in g.source.splitlines()]
    view = g.smem.views
    assert len(view) == 1 and g.smem.offsets()[next(iter(view))] == \
        g.smem.offsets()[next(iter(view.values()))]
    assert g.smem.dynamic_bytes < 200 * 1024          # the view adds nothing
    first = lines.index("tma_store_2d(tmaps + 256, " + lines[
        [i for i, ln in enumerate(lines) if ln.startswith("tma_store_2d")][0]].split(", ", 1)[1])
    fence = max(i for i, ln in enumerate(lines) if ln == "fence_proxy_async()")
    assert lines[fence + 1] == "bar_sync_named(i32(1), i32(256))" and fence < first
    assert src.count("tma_store_2d(") == 8 and "bulk_wait_read0()" in src
    assert map_specs(g.ws)[2] == tma.MapSpec(2, (32, 128), 128, 4)
    _, g = _gen(mm_kloop, args, 256, monkeypatch, full=ALL3, CUTILE_NUMBA_TMA_STORE="0")
    assert "tma_store" not in g.source and _ring(g)
    _, g = _gen(mm_kloop, args, 256, monkeypatch, full=BOTH)
    assert "tma_store" not in g.source and _ring(g) and not g.smem.views


def test_ring_barriers_share_no_buffer_in_the_shared_buffer_form(monkeypatch):
    """The generator's shared-buffer form (``smem.py``: one buffer per element type and
    slot) keeps the ring's mbarriers and slots in slots of their own: nothing else may write
    them while the producer and consumers use them."""
    from cutile.numba_backend.codegen import Gen
    from cutile.numba_backend.lower.matmul_ws import ring_barriers
    monkeypatch.setattr(rt, "simulator", lambda: False)
    args = (np.zeros((2, 256, 256), np.float16), np.zeros((2, 256, 256), np.float16),
            np.zeros((2, 256, 256), np.float16), 64, 64, 32)
    monkeypatch.setenv("CUTILE_NUMBA_TMA", "all")
    ir = bmm_kloop.compile(bmm_kloop.specialize(args))
    g = Gen(ir, 128, mma_acc="f32", shared_smem=True, tensor_cores=True, full=BOTH,
            wgmma=True)
    g.generate()
    bars = ring_barriers(g, g.ws)
    assert g.ws is not None and re.fullmatch(r"sm_u64_1\d\d\d", bars)
    users = [k for k, n in g.smem.sites.items() if n == bars]
    assert len(users) == 1, users


@ct.kernel
def mm_then_load(a, b, c, d, TM: ct.Constant[int], TN: ct.Constant[int],
                 TK: ct.Constant[int]):
    ct.store(c, (ct.bid(0), ct.bid(1)), k_loop(a, b, TM, TN, TK))
    ct.store(d, (ct.bid(0), ct.bid(1)), ct.load(c, (ct.bid(0), ct.bid(1)), (TM, TN)))


def test_no_tma_store_when_memory_is_accessed_after_it(monkeypatch):
    """A TMA store's writes land after the block moved on: where the kernel reads (or
    writes) memory after the store, it stays a plain store (R-EXEC-5: the load of ``c`` must
    see it); the ring itself is unaffected."""
    a, b, c = _mm(4096, 4096, 4096, (128, 256, 64))[:3]
    args = (a, b, c, c.copy(), 128, 256, 64)
    full = ALL3 | {("tma", 3)}
    _, g = _gen(mm_then_load, args, 256, monkeypatch, full=full)
    assert _ring(g) and "tma_store" not in g.source

"""Numba backend, generated code: barrier placement, layouts, resources, options, errors.

These tests only generate source (no launch), so they run with or without the simulator."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
from backend_kernels import mm_kloop as matmul
from diff.harness import check_no_divergent_barrier  # spec_tests/ is on sys.path

import cutile as ct
from cutile import Constant
from cutile.errors import TileUnsupportedFeatureError
from cutile.executors import backend

GOLDEN = os.path.join(os.path.dirname(__file__), "diff", "golden")


def gen(kernel, args, T=32, mma_acc="f32"):
    from cutile.numba_backend.compile import generate
    ir = kernel.compile(kernel.specialize(tuple(args)))
    g = generate(ir, T, mma_acc)
    check_no_divergent_barrier(g.source)
    return g


def barriers(src: str) -> int:
    return src.count("cuda.syncthreads()")


# -- kernels ------------------------------------------------------------------------------------
@ct.kernel
def vadd(a, b, c, TILE: Constant[int]):
    bid = ct.bid(0)
    x = ct.load(a, (bid,), (TILE,))
    y = ct.load(b, (bid,), (TILE,))
    ct.store(c, (bid,), x + y)


@ct.kernel
def two_reductions(a, o1, o2, T: Constant[int]):
    x = ct.load(a, (0, 0), (T, T))
    ct.store(o1, (0,), ct.sum(x, axis=1))
    ct.store(o2, (0,), ct.max(x, axis=1))


@ct.kernel
def reduce_in_loop(a, o, n, T: Constant[int]):
    s = ct.zeros((T,), dtype=ct.float32)
    for i in range(n):
        x = ct.load(a, (i, 0), (T, T), padding_mode=ct.PaddingMode.ZERO)
        s = s + ct.sum(x, axis=1)
    ct.store(o, (0,), s)


@ct.kernel
def row_bcast(a, r, o, M: Constant[int], N: Constant[int]):
    x = ct.load(a, (0, 0), (M, N))
    y = ct.load(r, (0,), (N,))
    ct.store(o, (0, 0), x * y)


@ct.kernel
def big_transpose(a, o, T: Constant[int]):
    ct.store(o, (0, 0), ct.transpose(ct.load(a, (0, 0), (T, T))))


F32 = np.zeros((64, 64), np.float32)


# -- barrier placement ----------------------------------------------------------------------------
def test_elementwise_kernel_has_no_barrier_and_no_shared_memory():
    g = gen(vadd, (F32[0], F32[1], F32[2], 64))
    assert barriers(g.source) == 0
    assert g.smem.total_bytes == 0


def test_matmul_k_loop_has_raw_and_war_barriers_only(monkeypatch):
    monkeypatch.setenv("CUTILE_NUMBA_FFMA", "0")     # the seed's schedule (not ffma.py's)
    g = gen(matmul, (F32, F32, F32, 16, 16, 8, ct.float32))
    src = g.source
    body = src[src.index("for _i"):]
    assert barriers(src) == 2 == barriers(body)      # seed 003: RAW after staging, WAR before
    lines = [ln.strip() for ln in body.splitlines()]
    first = lines.index("cuda.syncthreads()")
    assert any(ln.startswith("sm") and "] = " in ln for ln in lines[first + 1:first + 4]), \
        "the write-after-read barrier must directly precede the next staging writes"
    assert "libdevice.fmaf(" in src


@pytest.fixture(params=[False, True], ids=["gpu", "simulator"])
def target(request, monkeypatch):
    """Generate for a GPU (warp shuffles) or for the simulator (which has none), whichever
    this process runs under: the generator asks ``rt.simulator()``."""
    from cutile.numba_backend import rt
    monkeypatch.setattr(rt, "simulator", lambda: request.param)
    return "simulator" if request.param else "gpu"


def test_independent_exchanges_need_no_war_barrier(target):
    g = gen(two_reductions, (F32, F32[0], F32[1], 16))
    # 16 columns over lanes 0-3 of one warp: 4 tree steps across threads.  On a GPU each is
    # a shuffle of each of the thread's 8 rows; under the simulator an exchange (write, RAW
    # barrier, read) in two alternating buffers, so no WAR barrier within or between the
    # reductions
    if target == "gpu":
        assert barriers(g.source) == 0 and g.source.count("cuda.shfl_xor_sync(") == 2 * 4 * 8
    else:
        assert barriers(g.source) == 2 * 4 and "shfl" not in g.source


def test_reduction_in_loop_needs_no_war_barrier_on_the_back_edge(target):
    g = gen(reduce_in_loop, (F32, F32[0], 3, 16))
    body = g.source[g.source.index("for _i"):]
    # simulator: the last step reads buffer 1, the first step of the next iteration writes
    # buffer 0: the alternation leaves no write-after-read hazard across the back edge
    assert barriers(body) == (0 if target == "gpu" else 4)


@ct.kernel
def rows_in_warps(a, o, M: Constant[int], N: Constant[int]):
    x = ct.load(a, (0, 0), (M, N))
    ct.store(o, (0, 0), x - ct.max(x, axis=1, keepdims=True))


def test_cross_warp_tree_steps_share_one_barrier(target):
    # 1 x 4096 over 256 threads: 4 register steps, 3 steps across warps (thread bits 7, 6, 5:
    # one exchange, one barrier, 8 reads), 5 within a warp (shuffles on a GPU); the result is
    # replicated in every thread, so broadcasting it back is free.  The simulator has no
    # shuffles: its 8 thread bits go in two exchanges of 4 bits (16 reads each)
    g = gen(rows_in_warps, (np.zeros((1, 4096), np.float32),) * 2 + (1, 4096), T=256)
    cross = 1 if target == "gpu" else 2
    assert barriers(g.source) == cross
    assert g.source.count("cuda.shfl_xor_sync(") == (5 if target == "gpu" else 0)


@ct.kernel
def row_sum_and_max(a, o, p, N: Constant[int]):
    x = ct.load(a, (0, 0), (1, N))
    ct.store(o, (0, 0), ct.sum(x, axis=1, keepdims=True))
    ct.store(p, (0, 0), ct.max(x, axis=1, keepdims=True))


def test_shuffle_steps_order_the_pair_only_where_the_combine_needs_it(monkeypatch):
    # 1 x 32 over one warp on a GPU: 5 shuffle steps per reduction.  IEEE (and integer)
    # addition is commutative bit for bit, so the sum combines (own, partner) as they come;
    # max is not (max(-0.0, +0.0) keeps the left operand), so each of its steps selects the
    # lower half by the thread's bit first
    from cutile.numba_backend import rt
    monkeypatch.setattr(rt, "simulator", lambda: False)
    src = gen(row_sum_and_max, (F32, F32, F32, 32)).source
    body = src.split("# Reduce(sum)")[1].split("# Store")[0]
    assert body.count("cuda.shfl_xor_sync(") == 5 and "(tid >> " not in body
    body = src.split("# Reduce(max)")[1].split("# Store")[0]
    assert body.count("cuda.shfl_xor_sync(") == 5 and body.count("(tid >> ") == 5


def test_row_broadcast_is_a_register_rename():
    g = gen(row_bcast, (F32, F32[0], F32, 4, 64))
    assert barriers(g.source) == 0 and g.smem.total_bytes == 0


def test_transpose_goes_through_shared_memory():
    g = gen(big_transpose, (F32, F32, 16))
    assert barriers(g.source) == 1 and g.smem.total_bytes == 16 * 16 * 4


# -- source quality -------------------------------------------------------------------------------
def test_source_is_deterministic_and_commented_with_ops_and_lines():
    a = gen(matmul, (F32, F32, F32, 16, 16, 8, ct.float32)).source
    b = gen(matmul, (F32, F32, F32, 16, 16, 8, ct.float32)).source
    assert a == b
    import inspect
    lines, first = inspect.getsourcelines(matmul.function)
    mma_line = first + next(i for i, ln in enumerate(lines) if "ct.mma(" in ln)
    load_line = first + next(i for i, ln in enumerate(lines) if "ct.load(a" in ln)
    assert f"# Mma @ backend_kernels.py:{mma_line}" in a
    assert f"# Load @ backend_kernels.py:{load_line}" in a


def test_golden_vector_add():
    src = gen(vadd, (F32[0], F32[1], F32[2], 64)).source
    path = os.path.join(GOLDEN, "vadd_T32.py.txt")
    if os.environ.get("CUTILE_UPDATE_GOLDEN"):
        os.makedirs(GOLDEN, exist_ok=True)
        with open(path, "w") as f:
            f.write(src)
    with open(path) as f:
        assert src == f.read(), "generated source changed; CUTILE_UPDATE_GOLDEN=1 to accept"


_WHOLE_TILE = re.compile(r"if \(0 <= (_t\d+)\) & \(\1 \+ \d+ <= _n\d+\)"
                         r"( & \(0 <= (_t\d+)\) & \(\3 \+ \d+ <= _n\d+\))*:$")


def _enclosing_if(lines, i):
    """The nearest ``if``/``else`` header enclosing line ``i`` (by indentation)."""
    ind = len(lines[i]) - len(lines[i].lstrip())
    for j in range(i - 1, -1, -1):
        s = lines[j].strip()
        jind = len(lines[j]) - len(lines[j].lstrip())
        if jind < ind and (s.startswith("if ") or s == "else:"):
            return j
        if jind < ind:
            return None
    return None


@pytest.mark.parametrize("ffma", ["0", "sim"])
def test_every_global_access_is_bounds_checked(ffma, monkeypatch):
    # each access has its own check, or sits in the branch of a whole-tile test (the tile's
    # base and extent inside the array on every dim: every element is then in bounds).  With
    # ffma.py's schedule the operands are staged by cp.async (bytes past the array are
    # zero-filled, ``cp_async16``'s own count) or element-wise with a clamped index
    from cutile.numba_backend import rt
    monkeypatch.setenv("CUTILE_NUMBA_FFMA", ffma)
    monkeypatch.setattr(rt, "simulator", lambda: True)   # the same source on a GPU and in CI
    mm = gen(matmul, (F32, F32, F32, 16, 16, 8, ct.float32))
    from cutile.numba_backend.compile import generate
    ir = two_reductions.compile(two_reductions.specialize((F32, F32[0], F32[1], 64)))
    ws = generate(ir, 32, smem_limit=0)              # exchanges in the global workspace
    assert ws.smem.scratch_bytes and re.findall(r"\bgs_\w+\[", ws.source) == [
        f"gs_{c}[" for c in ws.smem.scratch_casts]  # only to take this block's row
    fast = 0
    for g in (gen(vadd, (F32[0], F32[1], F32[2], 64)), mm, ws):
        lines = g.source.splitlines()
        for i, ln in enumerate(lines):
            s = ln.strip()
            if not re.search(r"\ba\d+\[", s):
                continue
            j = _enclosing_if(lines, i)
            if j is not None and _WHOLE_TILE.match(lines[j].strip()):
                fast += 1
                assert re.match(r"(v\d+(_\d+)? = )?a\d+\[u64\(", s), ln
                continue
            if re.match(r"a\d+\[.*\] = ", s):                 # a store: guarded by its check
                assert lines[i - 1].strip().startswith("if (0 <= "), ln
            else:                                          # a load: index clamped by its check
                ok = re.search(r"cuda\.selp\((_e\d+), a\d+\[u64\(cuda\.selp\(\1, ", s) or \
                    re.search(r"= a\d+\[u64\(cuda\.selp\((_inb\d+), .*\] if \1 else ", s)
                assert ok, ln
    assert fast                    # the whole-tile branches exist (and were checked above)


def test_whole_tile_branch_is_taken_for_inner_tiles_only():
    # vector add over 100 elements in tiles of 64 at 32 threads: tile 0 is whole (fast
    # branch), tile 1 is partial (checked branch, padding and discarded stores); both agree
    # with the interpreter, and nothing is written past the end
    a = np.arange(100, dtype=np.float32)
    b = np.ones(100, np.float32)
    out = {}
    for be in ("interp", "numba"):
        c = np.full(100, -7.0, np.float32)
        with backend(be, threads=32):
            ct.launch(None, (2,), vadd, (a, b, c, 64))
        out[be] = c
    np.testing.assert_array_equal(out["numba"], out["interp"])
    np.testing.assert_array_equal(out["interp"], a + 1)


# -- resources, occupancy, options --------------------------------------------------------------
def test_occupancy_formula_matches_the_seed_example():
    from cutile.numba_backend.inspect import occupancy
    a100 = {"max_threads_per_sm": 2048, "max_blocks_per_sm": 32, "smem_per_sm": 164 * 1024,
            "regs_per_sm": 65536, "reg_alloc_unit": 256, "warp_size": 32}
    occ, blocks, lim = occupancy(256, 32 * 1024, None, a100)
    assert (blocks, lim) == (5, "shared memory") and occ == pytest.approx(0.625)
    occ, blocks, lim = occupancy(256, 2 * 16 * 16 * 4, 32, a100)        # tiled matmul
    assert lim == "threads" and occ == 1.0
    occ, blocks, lim = occupancy(256, 0, 128, a100)                    # register-bound
    assert (blocks, lim) == (2, "registers") and occ == 0.25


def test_inspect_reports_source_threads_shared_memory_and_occupancy():
    from cutile.executors import inspect
    info = inspect(matmul, (F32, F32, F32, 16, 16, 8, ct.float32), grid=(4, 4), threads=64)
    assert info.threads == 64
    assert info.shared_bytes == (8 * 17 + 8 * 16) * 4
    assert "def cutile_mm_kloop(" in info.source
    assert 0 < info.occupancy <= 1 and info.blocks_per_sm >= 1
    assert "occupancy" in info.summary()


def test_staging_beyond_shared_memory_goes_to_the_global_workspace():
    """256 KiB of transpose staging is above the opt-in limit (227 KiB on an H100, the
    simulator's): it was refused; now the buffer is a slice of this block's row of a global
    workspace array, an extra parameter the launcher allocates (smem.py)."""
    from cutile.numba_backend.compile import compile_kernel
    a = np.zeros((256, 256), np.float32)
    ir = big_transpose.compile(big_transpose.specialize((a, a, 256)))
    ck = compile_kernel(ir, 1024)
    assert ck.scratch == [("f32", 256 * 256)] and ck.smem_bytes == 0
    assert "gs_f32):" in ck.source.splitlines()[0]
    assert "    sm0 = _gs_f32[0:65536]" in ck.source.splitlines()


@ct.kernel
def max_all_axes(x, out, B: Constant[int], N: Constant[int]):
    ct.store(out, (0, 0), ct.max(ct.load(x, (0, 0), (B, N)), axis=None, keepdims=True))


def test_nvidia_reduction_tile_plans_the_workspace(monkeypatch):
    """Issue 22: NVIDIA's max over all axes of a 512 x 128 float16 tile needed 262144 bytes
    of shared memory at the GPU's 512 threads (two alternating 128 KiB exchange buffers) and
    was refused; now one buffer moves to the workspace and the other stays in dynamic shared
    memory, within the limit, and the kernel is bounded to 128 registers per thread."""
    from cutile.numba_backend import rt
    from cutile.numba_backend.compile import generate
    from cutile.numba_backend.smem import H100_OPTIN_LIMIT
    from cutile.numba_backend.threads import choose_threads, launch_bounds
    monkeypatch.setattr(rt, "simulator", lambda: False)      # the GPU's plan, on the CPU
    x = np.zeros((512, 128), np.float16)
    ir = max_all_axes.compile(max_all_axes.specialize((x, np.zeros((1, 1), np.float16),
                                                       512, 128)))
    T = choose_threads(ir)
    g = generate(ir, T, smem_limit=H100_OPTIN_LIMIT)
    assert T == 512 and g.smem.scratch_bytes == 65536 * 2
    assert g.smem.total_bytes == 65536 * 2 <= H100_OPTIN_LIMIT and g.smem.dynamic
    assert launch_bounds(ir, T) == (512,)
    check_no_divergent_barrier(g.source)
    small = generate(ir, T, smem_limit=512 * 1024)                 # a device that holds it
    assert small.smem.scratch_bytes == 0 and "gs_" not in small.source


def test_launch_bounds_cap_registers_above_256_threads():
    """65536 registers per block: above 256 threads ptxas must keep to 65536 / T (spilling)
    or the launch fails with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES; at most 256 it chooses."""
    from cutile.numba_backend.threads import launch_bounds
    x = np.zeros((512, 128), np.float16)
    ir = max_all_axes.compile(max_all_axes.specialize((x, np.zeros((1, 1), np.float16),
                                                       512, 128)))
    assert launch_bounds(ir, 512) == (512,) and launch_bounds(ir, 1024) == (1024,)
    assert launch_bounds(ir, 256) is None
    small = vadd.compile(vadd.specialize((F32[0], F32[1], F32[2], 64)))
    assert launch_bounds(small, 512) == (512, 4)        # min_blocks' full occupancy stays


def test_mma_staging_beyond_shared_memory_is_a_clear_error():
    """Tensor-core operand staging is read by ldmatrix / cp.async from shared memory only:
    it cannot move to the workspace, and a plan whose staging exceeds the limit is refused
    naming the buffers."""
    from cutile.numba_backend.compile import generate
    m = np.zeros((128, 128), np.float16)
    ir = matmul.compile(matmul.specialize((m, m, np.zeros((128, 128), np.float32), 128, 128,
                                           64, ct.float32)))
    g = generate(ir, 256, "f32", tensor_cores=True, smem_limit=16 * 1024)
    assert g.smem.scratch_bytes == 0 and g.smem.total_bytes > 16 * 1024
    with pytest.raises(TileUnsupportedFeatureError, match=r"mma operand staging.*limit of "
                                                          r"16384 bytes"):
        g.smem.check(16 * 1024, ir.name)


def test_plan_above_48k_uses_dynamic_shared_memory():
    """Above the 48 KiB static limit every buffer is a 16-byte aligned slice of the dynamic
    allocation; inspect reports static and dynamic bytes."""
    from cutile.executors import inspect
    a = np.zeros((128, 128), np.float32)
    info = inspect(big_transpose, (a, a, 128), grid=(1,), threads=128)
    assert info.dynamic_shared_bytes == 128 * 128 * 4 and info.static_shared_bytes == 0
    assert "cuda.shared.array(0, dyn_f32" in info.source and "dynamic" in info.summary()
    small = inspect(big_transpose, (F32, F32, 32), grid=(1,), threads=32)
    assert small.dynamic_shared_bytes == 0 and small.static_shared_bytes == 32 * 32 * 4


def test_dynamic_shared_memory_kernel_runs():
    """A 64 KiB transpose (float64 128x64) runs with dynamic shared memory on the backend."""
    a = np.random.default_rng(0).standard_normal((128, 64))
    o = np.zeros((64, 128))
    with ct.executors.backend("numba", threads=32):
        ct.launch(None, (1,), big_transpose_f64, (a, o))
    np.testing.assert_array_equal(o, a.T)


@ct.kernel
def big_transpose_f64(a, o):
    ct.store(o, (0, 0), ct.transpose(ct.load(a, (0, 0), (128, 64))))


def test_thread_count_knobs(monkeypatch):
    from cutile.numba_backend.threads import choose_threads
    ir = vadd.compile(vadd.specialize((F32[0], F32[1], F32[2], 64)))
    monkeypatch.setenv("CUTILE_NUMBA_THREADS", "128")
    assert choose_threads(ir) == 128
    assert choose_threads(ir, 16) == 16                   # per-launch beats the environment
    monkeypatch.setenv("CUTILE_NUMBA_THREADS", "100")
    with pytest.raises(ValueError, match="power of two"):
        choose_threads(ir)


def test_gpu_thread_heuristic_for_mma_kernels(monkeypatch):
    """On a GPU: one thread per 64 accumulator elements (128x128 matmul: 256), twice that
    for kernels with several mmas (64x64 attention: 128, where 64 threads spill)."""
    from backend_kernels import attention_fwd, mm_kloop

    from cutile.numba_backend import rt, threads
    monkeypatch.setattr(rt, "_simulator", False)
    monkeypatch.delenv("CUTILE_NUMBA_THREADS", raising=False)
    m = np.zeros((256, 256), np.float16)
    ir = mm_kloop.compile(mm_kloop.specialize((m, m, m.astype(np.float32), 128, 128, 32,
                                               ct.float32)))
    assert threads._choose_threads(ir) == 256
    q = np.zeros((2, 128, 64), np.float16)
    ir = attention_fwd.compile(attention_fwd.specialize((q, q, q, q, 0.125, 64, 64, 64)))
    assert threads._choose_threads(ir) == 128


def test_gpu_thread_heuristic_for_row_kernels(monkeypatch):
    """Without mma: one thread per 8 elements of the largest tile, per 16 from 4096 on, up to
    512 (a 1 x 4096 row softmax and layer norm moved 0.96 of the copy bandwidth at 256 threads
    on an H100, 0.96 / 0.69 at 512)."""
    from cutile.numba_backend import rt, threads
    monkeypatch.setattr(rt, "_simulator", False)
    monkeypatch.delenv("CUTILE_NUMBA_THREADS", raising=False)
    for n, want in ((4096, 256), (8192, 512), (16384, 512), (2048, 256), (1024, 128),
                    (64, 32)):
        a = np.zeros((1, n), np.float32)
        ir = rows_in_warps.compile(rows_in_warps.specialize((a, a, 1, n)))
        assert threads._choose_threads(ir) == want, n


def test_register_bound_from_occupancy(monkeypatch):
    """launch_bounds' blocks per SM: the kernel's occupancy hint, else CUTILE_NUMBA_MIN_BLOCKS,
    else 512 threads per SM for kernels with several mmas (attention), full occupancy for
    mma-free kernels with at most 8 elements of a tile per thread, 1024 threads per SM (64
    registers) for those with 9-16 at 256 threads or more and two or more such loads, none
    otherwise."""
    from backend_kernels import attention_fwd, mm_kloop

    from cutile.numba_backend import threads
    monkeypatch.delenv("CUTILE_NUMBA_MIN_BLOCKS", raising=False)
    q = np.zeros((2, 128, 64), np.float16)
    att = attention_fwd.compile(attention_fwd.specialize((q, q, q, q, 0.125, 64, 64, 64)))
    m = np.zeros((256, 256), np.float16)
    mm = mm_kloop.compile(mm_kloop.specialize((m, m, m.astype(np.float32), 128, 128, 32,
                                               ct.float32)))
    assert threads.min_blocks(att, 128) == 4 and threads.min_blocks(mm, 256) is None
    monkeypatch.setenv("CUTILE_NUMBA_MIN_BLOCKS", "2")
    assert threads.min_blocks(mm, 256) == 2 and threads.min_blocks(att, 128) == 2
    monkeypatch.setenv("CUTILE_NUMBA_MIN_BLOCKS", "0")
    with pytest.raises(ValueError, match="CUTILE_NUMBA_MIN_BLOCKS"):
        threads.min_blocks(mm, 256)
    hinted = mm_kloop.replace_hints(occupancy=3)
    ir = hinted.compile(hinted.specialize((m, m, m.astype(np.float32), 128, 128, 32,
                                           ct.float32)))
    assert threads.min_blocks(ir, 256) == 3                # the hint beats the environment
    monkeypatch.delenv("CUTILE_NUMBA_MIN_BLOCKS")
    v = vadd.compile(vadd.specialize((np.zeros(4096, np.float32),) * 3 + (1024,)))
    assert threads.min_blocks(v, 128) == 16                # 8 elements per thread
    assert threads.min_blocks(v, 64) is None               # 16 per thread: ptxas chooses
    w = vadd.compile(vadd.specialize((np.zeros(8192, np.float32),) * 3 + (4096,)))
    assert threads.min_blocks(w, 256) == 4                 # 2 loads, 16 per thread: 64 regs
    assert threads.min_blocks(w, 128) is None              # 32 per thread: ptxas chooses
    r = rows_in_warps.compile(rows_in_warps.specialize((np.zeros((1, 4096), np.float32),) * 2
                                                       + (1, 4096)))
    assert threads.min_blocks(r, 256) is None              # one load (softmax-like)


def test_kernel_inspect_method():
    info = vadd.inspect(F32[0], F32[1], F32[2], 64, grid=(2,), threads=32)
    assert info.threads == 32 and "def cutile_vadd" in info.source


def test_per_kernel_thread_hint(monkeypatch):
    from cutile.numba_backend.threads import choose_threads
    monkeypatch.setenv("CUTILE_NUMBA_THREADS", "128")
    hinted = vadd.replace_hints(numba_threads=ct.ByTarget(default=64))
    ir = hinted.compile(hinted.specialize((F32[0], F32[1], F32[2], 64)))
    assert ir.options["numba_threads"] is not None
    assert choose_threads(ir) == 64                       # the kernel's hint beats the env
    assert choose_threads(ir, 16) == 16                   # a per-launch option beats both
    with pytest.raises(ValueError, match="numba_threads"):
        vadd.replace_hints(numba_threads=48)


def test_backend_selection(monkeypatch):
    from cutile import executors
    monkeypatch.setenv("CUTILE_BACKEND", "interp")
    assert executors.selected() == "interp"
    with executors.backend("numba", threads=64):
        assert executors.selected() == "numba"
    monkeypatch.setenv("CUTILE_BACKEND", "auto")
    monkeypatch.setattr(executors, "_gpu_usable", False)
    assert executors.selected() == "interp"
    with pytest.raises(ValueError):
        executors.set_backend("cuda")


def test_generated_error_maps_to_ir_op():
    from cutile.numba_backend.compile import compile_kernel
    from cutile.numba_backend.launch import _wrap_error
    ir = matmul.compile(matmul.specialize((F32, F32, F32, 16, 16, 8, ct.float32)))
    ck = compile_kernel(ir, 32, "f32")
    n = next(i for i, ln in enumerate(ck.source.splitlines(), 1) if "libdevice.fmaf" in ln)
    err = _wrap_error(ck, RuntimeError(f'File "{ck.filename}", line {n}, boom'))
    assert "Mma @ backend_kernels.py" in str(err) and "fmaf" in str(err)


class _FakeDeviceArray:
    """Anything with ``__cuda_array_interface__`` (CuPy, PyTorch): never copied by launch()."""

    def __init__(self, shape, typestr):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (0, False),
                                         "strides": None, "version": 3}


def test_cuda_array_interface_arguments_are_device_arrays():
    a, b, c = (_FakeDeviceArray((64,), "<f4") for _ in range(3))
    spec = vadd.specialize((a, b, c, 64))
    assert [p.kind for p in spec.params[:3]] == ["array"] * 3
    assert spec.leaves[0].obj is a and spec.leaves[0].shape == (64,)   # described, not copied
    ir = vadd.compile(spec)
    assert ir.params[0].type.dtype is ct.float32 and ir.params[0].type.ndim == 1


@ct.kernel
def search_loop(out, n):
    j = 0
    while True:
        j += 1
        if j * j > n:
            break
    ct.store(out, (0,), j)


def test_loop_terminates_under_numbas_frontend():
    """R-CF-9.  Numba 0.68 (CPU and CUDA alike) compiles ``while True:`` whose ``break`` branch
    assigns a variable the fall-through also assigns into a loop that never exits; the H100
    hung on test_control_flow's break/continue kernel.  The backend emits ``while go:``
    instead.  The generated loop (pure scalar code) is compiled here by Numba's CPU frontend,
    which shares the bytecode analysis with numba-cuda, in a subprocess that must finish."""
    import subprocess
    import sys
    src = gen(search_loop, (np.zeros(1, np.int32), 37)).source
    assert "while True" not in src
    lines = src.splitlines()
    body = lines[lines.index("    lead = tid == 0") + 1:]
    body = body[:next(i for i, ln in enumerate(body) if "# Store" in ln)]
    result = re.search(r"a0\[.*\] = (\w+)", src).group(1)
    prog = "\n".join([
        "from numba import njit, int32 as i32, int64 as i64",
        "@njit",
        "def f(s1):",
        *body,
        f"    return {result}",
        "print(f(37), f(0))",
    ])
    run = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr + "\n" + prog
    assert run.stdout.split() == ["7", "1"]


# -- R-EXEC-5: program order of global accesses to one array (barriers.py, global_order.py) --
@ct.kernel
def in_place_scale(a, T: Constant[int]):
    x = ct.load(a, (ct.bid(0),), (T,))
    ct.store(a, (ct.bid(0),), x * 2)


@ct.kernel
def histogram_loop(data, h, n, T: Constant[int]):
    for k in range(n):
        d = ct.load(data, (k,), (T,), padding_mode=ct.PaddingMode.ZERO)
        ct.atomic_add(h, d, ct.full((T,), 1, ct.int32))


@ct.kernel
def mixed_atomics(h, T: Constant[int]):
    i = ct.arange(T, dtype=ct.int32) % 4
    ct.atomic_add(h, i, ct.full((T,), 1, ct.int32))
    ct.atomic_max(h, i, ct.full((T,), 1, ct.int32))


def test_write_after_read_of_one_array_gets_a_barrier():
    """R-EXEC-5: the store may hit elements another thread loaded; distinct arrays need none."""
    assert barriers(gen(in_place_scale, (F32[0], 64)).source) == 1
    assert barriers(gen(vadd, (F32[0], F32[1], F32[2], 64)).source) == 0


def test_commutative_atomics_with_unused_results_need_no_barrier():
    """A histogram's loop of atomic_add: the final memory is the same in any order."""
    I32 = np.zeros(64, np.int32)
    src = gen(histogram_loop, (I32, I32, 3, 32)).source
    assert barriers(src[src.index("for _i"):]) == 0
    assert barriers(gen(mixed_atomics, (I32, 32)).source) == 1    # add then max: ordered


# -- memory orders: fences and barriers (R-LOAD-7, R-STORE-4, R-ATOM-7/8) -------------------
@ct.kernel
def _flag_publish(data, flag, out, T: Constant[int]):
    if ct.bid(0) == 0:
        ct.store(data, (0,), ct.full((T,), 7, ct.int32))
        ct.store(flag, (0,), ct.full((1,), 1, ct.int32), memory_order=ct.MemoryOrder.RELEASE,
                 memory_scope=ct.MemoryScope.DEVICE)
    else:
        while ct.load(flag, (0,), (1,), memory_order=ct.MemoryOrder.ACQUIRE,
                      memory_scope=ct.MemoryScope.DEVICE).item() == 0:
            pass
        ct.store(out, (ct.bid(0),), ct.load(data, (0,), (T,)))


def _lines(src: str) -> list[str]:
    return [ln.strip() for ln in src.splitlines()]


def test_release_store_and_acquire_load_fence_and_meet():
    """A RELEASE store: every thread fences, then a barrier, then the flag store (the whole
    block's data is published, not one thread's); an ACQUIRE load: fence before (a compiler
    barrier: a spin loop reads memory again each time), fence and barrier after."""
    src = gen(_flag_publish, (np.zeros(4, np.int32), np.zeros(1, np.int32),
                              np.zeros(12, np.int32), 4)).source
    ln = _lines(src)
    store = next(i for i, s in enumerate(ln) if s.startswith("a1[") and "=" in s)
    before = ln[:store]
    fence = max(i for i, s in enumerate(before) if s == "cuda.threadfence()")
    assert "cuda.syncthreads()" in before[fence:], "barrier between the fence and the release"
    load = next(i for i, s in enumerate(ln) if "a1[" in s and s.split("=", 1)[0].strip()
                .startswith("_acq"))
    assert ln[load - 1] == "cuda.threadfence()" or "cuda.threadfence()" in ln[load - 6:load]
    after = ln[load:load + 8]
    assert "cuda.threadfence()" in after and "cuda.syncthreads()" in after


@ct.kernel
def _release_xchg(data, lock, T: Constant[int]):
    ct.store(data, (ct.bid(0),), ct.full((T,), 1, ct.int32))
    ct.atomic_xchg(lock, 0, 0, memory_order=ct.MemoryOrder.RELEASE)


def test_release_atomic_waits_for_the_whole_block():
    """R-ATOM-8 on the GPU: before a RELEASE atomic, done by one thread, the block fences and
    meets, so the other threads' stores are published by it too."""
    src = gen(_release_xchg, (np.zeros(64, np.int32), np.zeros(1, np.int32), 32)).source
    ln = _lines(src)
    xchg = next(i for i, s in enumerate(ln) if "cuda.atomic.exch" in s)
    head = ln[:xchg]
    fence = max(i for i, s in enumerate(head) if s == "cuda.threadfence()")
    assert "cuda.syncthreads()" in head[fence:]


@ct.kernel
def math_kernel(a, b, h, o, p, r):
    x = ct.load(a, (0,), (32,))
    y = ct.load(b, (0,), (32,))
    ct.store(o, (0,), ct.sin(x) + ct.pow(x, y) + ct.tanh(x))
    ct.store(p, (0,), ct.exp(x, rounding_mode=ct.RoundingMode.APPROX))
    ct.store(r, (0,), ct.log2(ct.load(h, (0,), (32,))))


def test_float32_math_is_libdevices_float32_function_R_MATH_10():
    """float32 transcendentals are libdevice's float32 functions, the ones torch and the real
    cuTile compute on the GPU (NVIDIA's test_unary_elementwise compares bit for bit with
    torch): evaluating the float64 function and rounding once (the interpreter's definition)
    lost 44 of those tests on an H200 and costs float64 throughput in softmax/attention."""
    h = np.zeros(32, np.float16)
    src = gen(math_kernel, (F32[0], F32[1], h, F32[2], F32[3], h.copy())).source
    for fn in ("sin", "pow", "tanh", "log2"):
        assert f"libdevice.{fn}f(" in src, fn
        assert f"f32(libdevice.{fn}(f64(" not in src, fn
    assert "libdevice.expf(" in src and "libdevice.exp(" not in src


@ct.kernel
def new_axes_k(x, y, T0: Constant[int], T1: Constant[int]):
    t = ct.load(x, (ct.bid(0), ct.bid(1)), (T0, T1))
    ct.store(y, (ct.bid(0), 0, 0, ct.bid(1)), t[:, None, None, :])


def test_gpu_kernels_above_256_threads_bound_their_threads(monkeypatch):
    """launch_bounds names the block size of a GPU kernel of more than 256 threads, so ptxas
    keeps a thread within 65536 / T registers: NVIDIA's test_new_axis_indexing (a 128 x 128
    float32 tile, 512 threads, t[:, None, None, :]) took 134 registers without it and could
    not launch
    (test_backend_ptx.py compiles it); with min_blocks the bound also names blocks per SM."""
    from backend_kernels import attention_fwd

    from cutile.numba_backend import threads
    monkeypatch.delenv("CUTILE_NUMBA_MIN_BLOCKS", raising=False)
    x = np.zeros((128, 128), np.float32)
    ir = new_axes_k.compile(new_axes_k.specialize((x, x.reshape(128, 1, 1, 128), 128, 128)))
    assert threads.launch_bounds(ir, 512) == (512,)
    assert threads.launch_bounds(ir, 256) is None       # ptxas' own cap (255) already fits
    q = np.zeros((2, 128, 64), np.float16)
    att = attention_fwd.compile(attention_fwd.specialize((q, q, q, q, 0.125, 64, 64, 64)))
    assert threads.launch_bounds(att, 128) == (128, 4)

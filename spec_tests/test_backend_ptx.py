"""Generated kernels through the real Numba CUDA compiler (typing + NVVM -> PTX for sm_90),
without a GPU: what the simulator cannot check.

- every kernel types and compiles (a Numba typing error in generated code is a backend bug);
- FMA contraction: ``fma.rn`` appears exactly where the IR has ``Fma``/``Mma``, never for a
  separately rounded ``mul`` followed by ``add``;
- ptxas register counts are reported (for the record).

Skipped when no CUDA toolkit with libNVVM is installed."""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest
from backend_kernels import mm_kloop as matmul
from diff import ptxcheck  # spec_tests/ is on sys.path

import cutile as ct
from cutile import Constant

pytestmark = pytest.mark.skipif(ptxcheck.toolkit() is None, reason="no CUDA toolkit (libNVVM)")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@ct.kernel
def fused(a, b, c, o, T: Constant[int]):
    x = ct.load(a, (ct.bid(0),), (T,))
    y = ct.load(b, (ct.bid(0),), (T,))
    z = ct.load(c, (ct.bid(0),), (T,))
    ct.store(o, (ct.bid(0),), x * y + z)


@ct.kernel
def unfused(a, b, c, o, T: Constant[int]):
    x = ct.load(a, (ct.bid(0),), (T,))
    y = ct.load(b, (ct.bid(0),), (T,))
    z = ct.load(c, (ct.bid(0),), (T,))
    p = x * y                       # used twice: not fused, two roundings
    ct.store(o, (ct.bid(0),), (p + z) * p)


@ct.kernel
def imatmul(a, b, c, T: Constant[int]):
    x = ct.load(a, (0, 0), (T, T))
    y = ct.load(b, (0, 0), (T, T))
    ct.store(c, (0, 0), ct.mma(x, y, ct.zeros((T, T), dtype=ct.int32)))


@ct.kernel
def softmax(x, y, TN: Constant[int]):
    t = ct.load(x, (ct.bid(0), 0), (1, TN), padding_mode=ct.PaddingMode.NEG_INF)
    m = ct.max(t, axis=1, keepdims=True)
    e = ct.exp(t - m)
    ct.store(y, (ct.bid(0), 0), e / ct.sum(e, axis=1, keepdims=True))


@ct.kernel
def mixed(a, h, i8, u64, bo, out, T: Constant[int]):
    x = ct.load(a, (0,), (T,))
    hh = ct.load(h, (0,), (T,))
    ii = ct.load(i8, (0,), (T,))
    uu = ct.load(u64, (0,), (T,))
    bb = ct.load(bo, (0,), (T,))
    r = ct.sqrt(ct.abs(x)) + hh.astype(ct.float32) * 0.5 + ii // 3 + (uu % 7).astype(ct.float32)
    r = ct.where(bb, r, ct.floor(r)) + ct.argmax(x).astype(ct.float32) + ct.sum(hh)
    r = r + ct.minimum(x, hh.astype(ct.float32)) + (ii << 2).astype(ct.float32)
    r = r + x.astype(ct.tfloat32).astype(ct.float32) + ct.rsqrt(ct.abs(x) + 1)
    g = ct.gather(a, ct.arange(T, dtype=ct.int32) * 2 - 3, padding_value=1.0)
    ct.scatter(out, ct.arange(T, dtype=ct.int64), r + g + ct.transpose(
        ct.reshape(x, (2, T // 2))).reshape((T,)))
    i = 0
    while True:
        i += 1
        if i > ct.bid(0):
            break




@ct.kernel
def narrow(a, b, o, T: Constant[int]):
    x = ct.load(a, (0,), (T,))                     # bfloat16: uint16 storage, float32 values
    y = ct.load(b, (0,), (T,))                     # float32
    r = (x * x + x).astype(ct.float32) + ct.sum(x).astype(ct.float32)
    r = r + ct.add(y, y, rounding_mode=ct.RoundingMode.RZ)
    r = r + ct.sqrt(ct.abs(y), rounding_mode=ct.RoundingMode.RP)
    r = r + y.astype(ct.float64).astype(ct.float32, rounding_mode=ct.RoundingMode.RM)
    r = r + y.astype(ct.float16, rounding_mode=ct.RoundingMode.RZ).astype(ct.float32)
    ct.store(o, (0,), r.astype(ct.bfloat16))


@ct.kernel
def new_axes(x, y, T0: Constant[int], T1: Constant[int]):
    t = ct.load(x, (ct.bid(0), ct.bid(1)), (T0, T1))
    ct.store(y, (ct.bid(0), 0, 0, ct.bid(1)), t[:, None, None, :])


@ct.kernel
def math_ops(a, b, h, o, r, T: Constant[int]):
    x = ct.load(a, (0,), (T,))
    y = ct.load(b, (0,), (T,))
    ct.store(o, (0,), ct.sin(x) + ct.pow(x, y) + ct.tanh(x) + ct.atan2(x, y)
             + ct.exp(x, rounding_mode=ct.RoundingMode.APPROX))
    hh = ct.load(h, (0,), (T,))
    ct.store(r, (0,), ct.pack_to_bytes(ct.log2(hh)))


def test_generated_kernels_compile_with_numba_and_contract_only_fma():
    f32 = np.zeros(256, np.float32)
    m32 = np.zeros((64, 64), np.float32)
    m16 = np.zeros((64, 64), np.float16)
    m8 = np.zeros((32, 32), np.int8)
    cases = {
        "fused": (fused, (f32, f32, f32, f32, 128), 128, "f32"),
        "unfused": (unfused, (f32, f32, f32, f32, 128), 128, "f32"),
        "matmul_f32": (matmul, (m32, m32, m32, 64, 64, 16, ct.float32), 64, "f32"),
        "matmul_f16": (matmul, (m16, m16, m32, 64, 64, 16, ct.float32), 64, "f32"),
        "matmul_exact": (matmul, (m32, m32, m32, 32, 32, 8, ct.float32), 64, "exact"),
        "imatmul": (imatmul, (m8, m8, np.zeros((32, 32), np.int32), 16), 32, "f32"),
        "narrow": (narrow, (np.zeros(64, ml_dtypes.bfloat16), f32, np.zeros(64, ml_dtypes.bfloat16),
                            64), 32, "f32"),
        "softmax": (softmax, (m32, m32, 64), 32, "f32"),
        "mixed": (mixed, (f32, np.zeros(64, np.float16), np.zeros(64, np.int8),
                          np.zeros(64, np.uint64), np.zeros(64, np.bool_), f32, 64), 32, "f32"),
        # 512 threads, as a GPU picks for a 128 x 128 tile: without launch_bounds ptxas gave
        # 134 registers, more than a 512-thread block may have (65536 / 512): no launch
        "new_axes": (new_axes, (np.zeros((128, 128), np.float32),
                                np.zeros((128, 1, 1, 128), np.float32), 128, 128), 512, "f32"),
        "math": (math_ops, (f32, f32, np.zeros(64, np.float16), f32, np.zeros(128, np.uint8),
                            64), 32, "f32"),
    }
    jobs, names = [], []
    for name, (k, args, T, acc) in cases.items():
        ir = k.compile(k.specialize(args))
        jobs.append(ptxcheck.job_for(ir, T, acc))
        names.append(name)
    res = dict(zip(names, ptxcheck.run_in_subprocess(jobs, ROOT)))
    for name, r in res.items():
        assert r["ok"], f"{name}: {r.get('error')}"
        T = cases[name][2]
        assert r["regs"] is None or r["regs"] * T <= 65536, (name, r["regs"], T)

    def fmas(name):
        return sum("fma.rn.f32" in ln for ln in res[name]["ptx"].splitlines())

    assert fmas("fused") >= 1                          # x*y + z is one Fma op
    assert fmas("unfused") == 0                        # mul then add: two roundings
    assert fmas("matmul_f32") >= 64                    # register-blocked FMAs (8x8 per step)
    for name in ("matmul_f32", "matmul_f16"):
        assert res[name]["regs"] is None or res[name]["regs"] <= 255
    # the direct path (numba_backend/direct.py) contracts exactly where Numba's does
    from cutile.numba_backend.nvvm import emit, nvvmc
    from cutile.numba_backend.nvvm import types as NT
    tk, compared = ptxcheck.toolkit(), 0
    for name, job in zip(names, jobs):
        try:
            ll = emit.translate(job["source"], job["fn"],
                                [NT.from_job_arg(a) for a in job["args"]],
                                *(job["bounds"] or [None])[:2])
        except NT.Unsupported:
            continue                    # compiled by Numba on a GPU: checked above
        ptx = nvvmc.to_ptx(ll, tk["libdevice"], (9, 0))
        for op in ("fma.rn.f32", "fma.rn.f64", "fma.rn.f16"):
            theirs = sum(op in ln for ln in res[name]["ptx"].splitlines())
            assert sum(op in ln for ln in ptx.splitlines()) == theirs, (name, op)
        compared += 1
    assert compared >= 8, compared


@ct.kernel
def debug_ops(a, T: Constant[int]):
    x = ct.load(a, (ct.bid(0), 0), (T, T))
    ct.printf("b%d %.3f %#x %u\n", ct.bid(0), x, x.astype(ct.int32), x > 0)
    print(f"{x:8.2e}", ct.bid(0))
    ct.assert_(x == x, "NaN input")
    ct.store(a, (ct.bid(0), 0), x + 1)


def test_print_and_assert_compile_to_vprintf_and_the_assert_record():
    """R-PRINT-1..3, R-ASSERT-2 on the GPU path: the vprintf intrinsic types and compiles
    (at most 32 values per vprintf call), and the assert_ record is taken by compare-and-swap
    on its int64 parameter."""
    ir = debug_ops.compile(debug_ops.specialize((np.zeros((8, 8), np.float32), 8)))
    (r,) = ptxcheck.run_in_subprocess([ptxcheck.job_for(ir, 32)], ROOT)
    assert r["ok"], r.get("error")
    calls = sum(ln.strip() == "vprintf," for ln in r["ptx"].splitlines())
    assert calls == 7 + 3               # 193 values in chunks of 32, then 65 values
    assert "atom.global.cas.b64" in r["ptx"]
    assert "bar.red.and" in r["ptx"]    # the block-wide AND of the condition


@ct.kernel
def atomic_add16(x, i, u, out, T: Constant[int]):
    ct.store(out, (0,), ct.atomic_add(x, ct.load(i, (0,), (T,)), ct.load(u, (0,), (T,))))


@ct.kernel
def view_add16(x, u, T: Constant[int]):
    x.tiled_view((T, T)).atomic_store_add((0, 0), ct.load(u, (0, 0), (T, T)))


def test_16bit_atomic_add_is_one_ptx_instruction():
    """R-ATOM-3/4 on the GPU: float16/bfloat16 atomic add (index tile, 1-D; tiled view, 2-D)
    become ``atom.add.noftz.f16/.bf16`` on the element's address, and ptxas accepts them for
    sm_90 (the simulator runs the Python stand-ins of numba_backend/atom16.py instead)."""
    jobs, want = [], []
    for d, ptx_type in ((np.float16, "f16"), (ml_dtypes.bfloat16, "bf16")):
        a = np.zeros(32, d)
        ir = atomic_add16.compile(atomic_add16.specialize((a, np.zeros(32, np.int32), a,
                                                           a.copy(), 32)))
        jobs.append(ptxcheck.job_for(ir, 32))
        m = np.zeros((8, 8), d)
        jobs.append(ptxcheck.job_for(view_add16.compile(view_add16.specialize((m, m, 8))), 32))
        want += [(ptx_type, 1), (ptx_type, 2)]          # 32 lanes: 1 and 2 atomics a thread
    for r, (ptx_type, n) in zip(ptxcheck.run_in_subprocess(jobs, ROOT), want):
        assert r["ok"], r.get("error")
        lines = [ln for ln in r["ptx"].splitlines() if "atom." in ln]
        assert len(lines) == n and all(f"atom.add.noftz.{ptx_type} " in ln for ln in lines), lines
        if ptxcheck.toolkit()["ptxas"]:
            assert r["regs"] is not None                # ptxas assembled it


@ct.kernel
def foreign(x, y, i, T: Constant[int]):
    half = x.shape[0] // 2
    tail = x.slice(axis=0, start=half, stop=x.shape[0])
    p = ct.where(ct.bid(0) == 0, x.foreign_pointer, tail.foreign_pointer)
    v = ct.Array.from_foreign(p, (half, T), tail.strides)
    t = ct.load(v, (0, 0), shape=(T, T))
    ct.store(y, (0, 0), t + v.strides[0].astype(y.dtype))
    ct.atomic_add(v, (ct.load(i, (0,), (T,)), ct.load(i, (0,), (T,))),
                  ct.load(y, (0, 0), (1, T)).reshape((T,)))
    raw = v.get_raw_memory().load_offset(ct.arange(T, dtype=ct.int32))
    ct.store(y, (1, 0), raw.reshape((1, T)))
    s = ct.Array.from_foreign(y.foreign_pointer, (), ())
    ct.scatter(s, (), ct.gather(s, ()) + 1)


def test_foreign_pointer_intrinsics_compile():
    """§7 on the GPU: ``array_address`` (ptrtoint of the array's data pointer) and
    ``array_at`` (an array structure populated from an address, runtime shape and strides;
    0-D too; RawArrayMemory's flat view) type and compile for sm_90, for a native and a
    bit-pattern (bfloat16) element type, and ptxas assembles them (the simulator runs
    numba_backend/pointer_rt.py's stand-ins instead)."""
    jobs = []
    for d in (np.float32, ml_dtypes.bfloat16):
        m = np.zeros((32, 16), d)
        args = (m, np.zeros((16, 16), d), np.zeros(16, np.int32), 16)
        jobs.append(ptxcheck.job_for(foreign.compile(foreign.specialize(args)), 32))
    for r, atom in zip(ptxcheck.run_in_subprocess(jobs, ROOT), ("add.f32", "add.noftz.bf16")):
        assert r["ok"], r.get("error")
        assert any("atom." in ln and atom in ln for ln in r["ptx"].splitlines())
        if ptxcheck.toolkit()["ptxas"]:
            assert r["regs"] is not None                # ptxas assembled it


@ct.kernel
def reduce_rows(x, out, B: Constant[int], N: Constant[int]):
    ct.store(out, (0,), ct.max(ct.load(x, (0, 0), (B, N)), axis=1))


def test_global_workspace_compiles():
    """smem.py's global workspace on the GPU path: the 2-D workspace parameter, this block's
    row and the buffers sliced from it type and compile for sm_90 (the simulator is more
    lenient), its accesses are loads and stores through generic addresses ordered by
    bar.sync, and no shared memory is left."""
    ir = reduce_rows.compile(reduce_rows.specialize((np.zeros((8, 64), np.float16),
                                                     np.zeros(8, np.float16), 8, 64)))
    (r,) = ptxcheck.run_in_subprocess([ptxcheck.job_for(ir, 64, smem_limit=0)], ROOT)
    assert r["ok"], r.get("error")
    ptx = r["ptx"]
    assert "st.u16" in ptx and "bar.sync" in ptx and ".shared" not in ptx


@ct.kernel
def pack_f16(x, out, back, T: Constant[int]):
    t = ct.load(x, (0,), (T,))
    b = ct.pack_to_bytes(t)
    ct.store(out, (0,), b)
    ct.store(back, (0,), ct.unpack_from_bytes(b, ct.float16))


def test_float16_bit_reinterpretation_compiles():
    """bits.py's float16 <-> uint16 intrinsics type and lower for sm_90 (numba-cuda holds a
    float16 value as an i16, so a bitcast to half made NVIDIA's float16 pack/unpack tests fail
    to compile on an H200: "Storing half to ptr of i16"); the simulator runs NumPy views
    instead and never saw it."""
    x = np.zeros(16, np.float16)
    ir = pack_f16.compile(pack_f16.specialize((x, np.zeros(32, np.uint8), x.copy(), 16)))
    (r,) = ptxcheck.run_in_subprocess([ptxcheck.job_for(ir, 32)], ROOT)
    assert r["ok"], r.get("error")


@ct.kernel
def wrapped_index(x, counts, out, T: Constant[int]):
    i = ct.load(x, (0,), (T,))
    j = i * 2 + 1 - ct.bid(0)                 # wraps for large i (R-MATH-4)
    ct.atomic_add(counts, j, ct.ones((T,), dtype=ct.int32))
    ct.scatter(out, j, i)
    f = (i.astype(ct.float32) * 1e30).astype(ct.int64)    # out of range: R-UB-6
    ct.scatter(out, f, i)
    ct.scatter(out, i.astype(ct.float16).astype(ct.int8), i)


def test_signed_integer_arithmetic_wraps_in_nvvm():
    """R-MATH-4: integer add/sub/mul wrap, so the LLVM IR Numba hands NVVM carries no ``nsw``
    ("no signed wrap") on them (numba_backend/intwrap.py).  With it NVVM folded an atomic's
    bounds check ``0 <= 2 * x`` into ``0 <= x``, and an atomic_add through a wrapped negative
    index faulted on an H200 (test_diff_gpu_regressions.py).  The only ``nsw`` left is Numba's
    own element count of an array (``1 * shape``), computed inside its array model.  Float ->
    int conversions are no ``fptosi`` either (poison out of range; conversions.float_to_int)."""
    x = np.zeros(16, np.int64)
    ir = wrapped_index.compile(wrapped_index.specialize(
        (x, np.zeros(23, np.int32), x.copy(), 16)))
    job = dict(ptxcheck.job_for(ir, 32), llvm=True)
    (r,) = ptxcheck.run_in_subprocess([job], ROOT)
    assert r["ok"], r.get("error")
    import re
    arith = [ln.strip() for ln in r["llvm"].splitlines()
             if re.search(r"= (add|sub|mul|shl) ", ln)]
    flagged = [ln for ln in arith if " nsw " in ln and not re.search(r"mul nsw i64 1, ", ln)]
    assert len(arith) > 20 and not flagged, flagged[:5]
    # float -> int through libdevice's saturating cvt.rzi, not fptosi (poison out of range)
    assert not re.search(r"= fpto[su]i ", r["llvm"]), "fptosi/fptoui in the kernel"


@ct.kernel
def branch_u64(x, f, o, n: int, T: Constant[int]):
    if n == 0:
        r = ct.load(x, (0,), (T,))
    else:
        r = ct.load(f, (0,), (T,)).astype(ct.uint64)
    ct.store(o, (0,), r)


def test_float_to_uint64_keeps_its_type():
    """A float -> uint64 conversion is a uint64 in generated code (libdevice declares
    ``float2ull_rz`` as returning int64): else Numba unifies the variable with a uint64 from
    the other branch into float64 and a loaded 0xdffeaa36d89136ab came back as
    ...87968 (random programs on the H200; test_diff_gpu_regressions.py)."""
    x = np.zeros(16, np.uint64)
    ir = branch_u64.compile(branch_u64.specialize((x, np.zeros(16, np.float32), x, 0, 16)))
    job = dict(ptxcheck.job_for(ir, 32), llvm=True)
    (r,) = ptxcheck.run_in_subprocess([job], ROOT)
    assert r["ok"], r.get("error")
    import re
    assert not re.search(r"= [su]itofp i64 .* to double", r["llvm"]), "uint64 went via float64"


@ct.kernel
def zero_d_lock(lock, count, olds):
    while ct.atomic_cas(lock, (), 0, 1, memory_order=ct.MemoryOrder.ACQUIRE) == 1:
        pass
    ct.atomic_xchg(lock, (), 0, memory_order=ct.MemoryOrder.RELEASE)
    ct.scatter(olds, ct.bid(0), ct.atomic_add(count, (), 1))


def test_atomics_on_0d_arrays_compile():
    """R-ATOM-1: atomics on a 0-D array go through its one-element view
    (``a.reshape((1,))``); Numba-CUDA has no lowering for ``a[None]``, which the simulator
    accepted (values: test_diff_atomic.py).  Integer atomics only: a float xchg's bit view
    (``.view``) compiles a device function that needs a driver, which this offline check has
    not."""
    args = (np.array(0, np.int32), np.array(10, np.int64), np.zeros(6, np.int64))
    ir = zero_d_lock.compile(zero_d_lock.specialize(args))
    job = ptxcheck.job_for(ir, 32)
    for a in job["args"]:
        if a[0] == "array" and a[2] == 0:
            a[3:] = ["C"]                   # params.layout: a 0-D array is always "C"
    (r,) = ptxcheck.run_in_subprocess([job], ROOT)
    assert r["ok"], r.get("error")
    import re
    found = set(re.findall(r"\batom(?:\.global)?\.(cas\.b32|exch\.b32|add\.u64)", r["ptx"]))
    assert found == {"cas.b32", "exch.b32", "add.u64"}, found

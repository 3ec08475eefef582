"""GPU check of the tensor-core mma and dynamic-shared-memory paths of the Numba backend.

    python tools/gpu/tc_check.py [--bench | --bench-only [--tiles 128x128x32,...]]
                                 [--only f16,bf16,tf32,s8]

1. correctness: float16/bfloat16/tfloat32 matmuls (float32 accumulator) at several tile
   shapes, full and partial tiles, against NumPy in float64 within the tensor-core R-MM-7
   bound (docs/backend.md), int8 (int32 accumulator) bit-exact, and, for the 128x256x128
   float16 tile (96 KiB of staging: dynamic shared memory), against the interpreter;
2. resources from ``kernel.inspect`` (plan, registers, static/dynamic shared memory, occupancy);
3. ``--bench``: TFLOP/s at 4096^3 next to PyTorch (cuBLAS; TF32 allowed for the tfloat32 row).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [ROOT, os.path.join(ROOT, "spec_tests")]

import ml_dtypes  # noqa: E402
from backend_kernels import mm_kloop, mm_tf32_kloop  # noqa: E402
from diff.harness import mma_f32_bound  # noqa: E402

import cutile as ct  # noqa: E402
from cutile.executors import backend, inspect  # noqa: E402

DT = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "tf32": np.float32, "s8": np.int8}


def tc_bound(a, b, TK):
    """R-MM-7 bound of the tensor-core path (docs/backend.md)."""
    return mma_f32_bound(a, b, TK, tensor_cores=True)


def _kernel_args(tag, a, b, c, TM, TN, TK):
    if tag == "tf32":
        return mm_tf32_kloop, (a, b, c, TM, TN, TK)
    return mm_kloop, (a, b, c, TM, TN, TK, ct.int32 if tag == "s8" else ct.float32)


def _tf32(x):
    """float32 rounded to tfloat32, nearest-even (the operands' conversion)."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0xFFF + ((u >> 13) & 1)) & ~np.uint64(0x1FFF)
    return u.astype(np.uint32).view(np.float32)


def check(tag, M, N, K, TM, TN, TK, threads=None, interp=False):
    rng = np.random.default_rng(M * 7 + N * 3 + K)
    if tag == "s8":
        a = rng.integers(-128, 128, (M, K)).astype(np.int8)
        b = rng.integers(-128, 128, (K, N)).astype(np.int8)
    else:
        a = rng.standard_normal((M, K)).astype(DT[tag])
        b = rng.standard_normal((K, N)).astype(DT[tag])
    c = np.full((M, N), np.nan, np.float32) if tag != "s8" else np.full((M, N), -7, np.int32)
    grid = (-(-M // TM), -(-N // TN))
    kern, kargs = _kernel_args(tag, a, b, c, TM, TN, TK)
    t0 = time.time()
    with backend("numba", threads=threads):
        ct.launch(None, grid, kern, kargs)
    dt_ = time.time() - t0
    if tag == "tf32":
        a, b = _tf32(a), _tf32(b)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    err = np.abs(c.astype(np.float64) - ref)
    bnd = tc_bound(a, b, TK) if tag != "s8" else np.zeros_like(ref)
    if tag == "tf32":
        bnd = mma_f32_bound(a, b, TK, tensor_cores=True, mma_k=8)
    ok = bool(np.all(err <= bnd))
    line = (f"{tag} {M}x{N}x{K} tiles {TM}x{TN}x{TK}: max err {np.nanmax(err):.3g} "
            f"(bound {bnd.max():.3g}) {'OK' if ok else 'FAIL'}; first launch {dt_:.1f}s")
    if interp:
        ci = np.full((M, N), np.nan, np.float32)
        with backend("interp"):
            ct.launch(None, grid, *_kernel_args(tag, a, b, ci, TM, TN, TK))
        e2 = np.abs(c.astype(np.float64) - ci.astype(np.float64))
        ok2 = bool(np.all(e2 <= bnd + np.abs(ci) * 2.0 ** -23))
        line += f"; vs interpreter max diff {e2.max():.3g} {'OK' if ok2 else 'FAIL'}"
        ok = ok and ok2
    info = inspect(kern, kargs, grid=grid, threads=threads)
    print(line)
    print(f"    [inspect] {info.summary()}")
    sys.stdout.flush()
    return ok


def bench(tag, S, TM, TN, TK, threads=None):
    import torch
    tdt = {"f16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32}[tag]
    A = torch.randn(S, S, device="cuda", dtype=tdt)
    B = torch.randn(S, S, device="cuda", dtype=tdt)
    C = torch.empty(S, S, device="cuda", dtype=torch.float32)
    grid = (S // TM, S // TN)
    st = torch.cuda.current_stream()
    torch.backends.cuda.matmul.allow_tf32 = tag == "tf32"       # cuBLAS TF32 for tf32 only
    kern, kargs = _kernel_args(tag, A, B, C, TM, TN, TK)

    def ours():
        with backend("numba", threads=threads):
            ct.launch(st, grid, kern, kargs)

    def theirs():
        torch.matmul(A, B)

    def timeit(fn):
        fn()
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(10):
            fn()
        e.record()
        e.synchronize()
        return s.elapsed_time(e) / 10 * 1e-3

    t0 = time.time()
    ours()
    torch.cuda.synchronize()
    first = time.time() - t0
    torch.backends.cuda.matmul.allow_tf32 = False
    ref = A.double() @ B.double()
    err = (C.double() - ref).abs().max().item()
    to, tt = timeit(ours), timeit(theirs)
    fl = 2 * S ** 3 / 1e12
    print(f"bench {tag} {S}^3 tiles {TM}x{TN}x{TK}: numba {fl / to:.1f} TFLOP/s, torch "
          f"{fl / tt:.1f} TFLOP/s, ratio {tt / to:.2f}; max err {err:.3g}; first {first:.1f}s")
    try:
        print(f"    [inspect] {inspect(kern, kargs, grid=grid, threads=threads).summary()}")
    except Exception as e:                                    # a report, never fatal
        print(f"    [inspect] failed: {type(e).__name__}: {e}")
    sys.stdout.flush()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--bench-only", action="store_true", help="skip the correctness checks")
    ap.add_argument("--tiles", default="128x128x32",
                    help="bench tile shapes, comma-separated (e.g. 128x128x32,128x128x64)")
    ap.add_argument("--only", default="f16,bf16,tf32,s8")
    args = ap.parse_args(argv)
    ok = True
    if args.bench_only:
        for tag in args.only.split(","):
            for tiles in args.tiles.split(","):
                if tag != "s8":
                    bench(tag, 4096, *(int(x) for x in tiles.split("x")))
        return 0
    for tag in args.only.split(","):
        if tag == "s8":         # m16n8k32: K tiles of 32 and more
            ok &= check(tag, 100, 72, 80, 16, 16, 32, threads=32)
            ok &= check(tag, 256, 256, 256, 128, 128, 64)
            continue
        ok &= check(tag, 100, 72, 80, 16, 16, 16, threads=32)      # partial tiles, 1 warp
        ok &= check(tag, 300, 200, 130, 64, 64, 32)                 # partial tiles, a unaligned
        ok &= check(tag, 256, 256, 256, 128, 128, 32)              # full tiles: fast path
        ok &= check(tag, 384, 256, 512, 128, 128, 64)               # full, 3 stages
    print("correctness:", "ALL OK" if ok else "FAILURES")
    sys.stdout.flush()
    if args.bench:
        for tag in args.only.split(","):
            if tag != "s8":
                bench(tag, 4096, 128, 128, 32)
        bench("f16", 4096, 128, 128, 64)
    ok &= check("f16", 256, 512, 256, 128, 256, 128, interp=True)   # dynamic shared memory
    print("correctness incl. 128x256x128:", "ALL OK" if ok else "FAILURES")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

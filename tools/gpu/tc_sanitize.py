"""One small launch of each tensor-core and FFMA kernel form, for compute-sanitizer on the H100.

    compute-sanitizer --tool racecheck python tools/gpu/tc_sanitize.py
    compute-sanitizer --tool memcheck python tools/gpu/tc_sanitize.py

Forms: float16 matmul with full tiles (cp.async full-tile copies, 4-stage pipeline, dynamic
shared memory), with partial tiles (checked copies), with unaligned rows (element-wise copy),
bfloat16 ``a @ b.T`` (transposed B), tfloat32 and int8 (register staging), a batched float16
matmul (its (1, TM, TN) store exchanged through a retired staging buffer), float8 e4m3
(wgmma k32 on Hopper: B lands by cp.async and is transposed in shared memory) and e5m2
``a @ b.T`` (both operands by cp.async, pipelined), the warp-specialised TMA ring (a wide
float16 tile, a batched bfloat16 one), and the benchmark's
attention forward; float32 matmul on the FFMA schedule (cp.async staging, vector shared loads)
with full, partial and unaligned tiles; a row softmax whose last tiles are partial (the
whole-tile and checked branches of loads and stores).  Each result is checked against NumPy;
the sanitizer reports the hazards.
"""

from __future__ import annotations

import math
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [ROOT, os.path.join(ROOT, "spec_tests")]

import ml_dtypes  # noqa: E402
from backend_kernels import attention_fwd, bmm_kloop, mm_bt_kloop, mm_kloop, mm_tf32_kloop  # noqa: E402

import cutile as ct  # noqa: E402
from cutile.executors import backend, inspect  # noqa: E402


@ct.kernel
def row_softmax(x, y, TN: ct.Constant[int]):
    # softmax of each TN-column block of each row; blocks past the row's end are partial
    # (NEG_INF padding reads, discarded stores)
    t = ct.load(x, (ct.bid(0), ct.bid(1)), (1, TN), padding_mode=ct.PaddingMode.NEG_INF)
    e = ct.exp(t - ct.max(t, axis=1, keepdims=True))
    ct.store(y, (ct.bid(0), ct.bid(1)), e / ct.sum(e, axis=1, keepdims=True))


def launch(kernel, grid, args, threads=None):
    with backend("numba", threads=threads):
        ct.launch(None, grid, kernel, args)
    # which form ran (wgmma or mma.sync on an H100/H200, FFMA...): the sanitizers' coverage
    print("   ", inspect(kernel, args, grid=grid, threads=threads).summary())


def main() -> int:
    rng = np.random.default_rng(1)
    ok = True

    def report(name, got, want, tol):
        nonlocal ok
        err = float(np.max(np.abs(got.astype(np.float64) - want)))
        good = err <= tol
        ok &= good
        print(f"{name}: max err {err:.3g} {'OK' if good else 'FAIL'}")

    for name, (M, N, K), tiles in (("f16 full tiles", (256, 256, 256), (128, 128, 32)),
                                   ("f16 partial tiles", (200, 136, 90), (64, 64, 32)),
                                   ("f16 unaligned rows", (64, 64, 36), (64, 64, 32)),
                                   ("f32 full tiles", (256, 256, 256), (128, 128, 32)),
                                   ("f32 partial tiles", (200, 136, 90), (64, 64, 32)),
                                   ("f32 unaligned rows", (64, 64, 34), (64, 64, 32))):
        dt = np.float32 if name.startswith("f32") else np.float16
        a = rng.standard_normal((M, K)).astype(dt)
        b = rng.standard_normal((K, N)).astype(dt)
        c = np.full((M, N), np.nan, np.float32)
        TM, TN, TK = tiles
        launch(mm_kloop, (-(-M // TM), -(-N // TN)), (a, b, c, TM, TN, TK, ct.float32))
        report(name, c, a.astype(np.float64) @ b.astype(np.float64), 1e-2)
    a = rng.standard_normal((128, 96)).astype(ml_dtypes.bfloat16)
    bt = rng.standard_normal((72, 96)).astype(ml_dtypes.bfloat16)
    c = np.full((128, 72), np.nan, np.float32)
    launch(mm_bt_kloop, (2, 2), (a, bt, c, 64, 64, 32))
    report("bf16 a @ b.T", c, a.astype(np.float64) @ bt.astype(np.float64).T, 1e-2)
    a = rng.standard_normal((128, 64)).astype(np.float32)
    b = rng.standard_normal((64, 128)).astype(np.float32)
    c = np.full((128, 128), np.nan, np.float32)
    launch(mm_tf32_kloop, (2, 2), (a, b, c, 64, 64, 32))
    report("tf32", c, a.astype(np.float64) @ b.astype(np.float64), 5e-2)
    a8 = rng.integers(-128, 128, (128, 128)).astype(np.int8)
    b8 = rng.integers(-128, 128, (128, 128)).astype(np.int8)
    c8 = np.zeros((128, 128), np.int32)
    launch(mm_kloop, (2, 2), (a8, b8, c8, 64, 64, 64, ct.int32))
    report("int8", c8, a8.astype(np.int64) @ b8.astype(np.int64), 0)
    a = rng.standard_normal((2, 256, 128)).astype(np.float16)
    b = rng.standard_normal((2, 128, 256)).astype(np.float16)
    c = np.full((2, 256, 256), np.nan, np.float16)
    launch(bmm_kloop, (2, 2, 2), (a, b, c, 128, 128, 32))
    report("f16 batched (epilogue exchange in the retired staging)", c,
           a.astype(np.float64) @ b.astype(np.float64), 0.1)
    a = rng.standard_normal((128, 128)).astype(ml_dtypes.float8_e4m3fn)
    b = rng.standard_normal((128, 128)).astype(ml_dtypes.float8_e4m3fn)
    c = np.full((128, 128), np.nan, np.float32)
    launch(mm_kloop, (1, 1), (a, b, c, 128, 128, 64, ct.float32))
    # (Hopper's float8 wgmma keeps ~14 bits per k32 step: |err| ~ 2**-14 * |a| @ |b|)
    report("float8 e4m3 (B by cp.async, transposed in shared memory, pipelined)", c,
           a.astype(np.float64) @ b.astype(np.float64), 0.05)
    bt = rng.standard_normal((136, 200)).astype(ml_dtypes.float8_e5m2)
    a = rng.standard_normal((100, 200)).astype(ml_dtypes.float8_e5m2)
    c = np.full((100, 136), np.nan, np.float32)
    launch(mm_bt_kloop, (2, 3), (a, bt, c, 64, 64, 64))
    report("float8 e5m2 a @ b.T, partial tiles (cp.async, pipelined)", c,
           a.astype(np.float64) @ bt.astype(np.float64).T, 0.05)
    H, S, D = 2, 256, 64
    q, k, v = (rng.standard_normal((H, S, D)).astype(np.float16) for _ in range(3))
    o = np.full((H, S, D), np.nan, np.float16)
    launch(attention_fwd, (S // 64, H), (q, k, v, o, 1 / math.sqrt(D), 64, 64, D))
    s = np.einsum("hmd,hnd->hmn", q.astype(np.float64), k.astype(np.float64)) / math.sqrt(D)
    p = np.exp(s - s.max(-1, keepdims=True))
    report("attention", o, (p / p.sum(-1, keepdims=True)) @ v.astype(np.float64), 1e-2)
    # the warp-specialised TMA ring (ws_plan.py): a 128x256x64 block alone on its SM (the
    # default takes it), partial tiles; a batched bfloat16 one with 3-D maps (CUTILE_NUMBA_TMA
    # =all: any tile)
    a = rng.standard_normal((300, 520)).astype(np.float16)
    b = rng.standard_normal((520, 264)).astype(np.float16)
    c = np.full((300, 264), np.nan, np.float32)
    launch(mm_kloop, (3, 2), (a, b, c, 128, 256, 64, ct.float32), threads=256)
    report("f16 TMA ring 128x256x64, partial tiles", c,
           a.astype(np.float64) @ b.astype(np.float64), 1e-2)
    os.environ["CUTILE_NUMBA_TMA"] = "all"
    a = rng.standard_normal((2, 200, 128)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((2, 128, 136)).astype(ml_dtypes.bfloat16)
    c = np.full((2, 200, 136), np.nan, np.float32)
    launch(bmm_kloop, (4, 3, 2), (a, b, c, 64, 64, 32))
    del os.environ["CUTILE_NUMBA_TMA"]
    report("bf16 batched TMA ring (3-D maps), partial tiles", c,
           a.astype(np.float64) @ b.astype(np.float64), 1e-2)
    x = rng.standard_normal((300, 1000)).astype(np.float32)
    y = np.full((300, 1000), np.nan, np.float32)
    launch(row_softmax, (300, 2), (x, y, 512))
    e = np.exp(x.astype(np.float64).reshape(300, 1000))
    want = np.concatenate([e[:, :512] / e[:, :512].sum(1, keepdims=True),
                           e[:, 512:] / e[:, 512:].sum(1, keepdims=True)], axis=1)
    report("softmax, partial tiles", y, want, 1e-5)
    print("ALL OK" if ok else "FAILURES")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

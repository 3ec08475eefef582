"""The vectorised FFMA schedule of float32 mma (``numba_backend/ffma.py``): bit-identical to
the seeds' scalar schedule (same ``fmaf`` per element, k in order), on partial tiles, with
cp.async staging (pipelined, full tiles, unaligned rows), staging from registers
(transposed or non-zero-padded operands), and without a K loop; race-free."""

from __future__ import annotations

import numpy as np
import pytest
from backend_kernels import mm_bt_kloop, mm_kloop

import cutile as ct
from cutile import Constant

from .harness import mma_f32_bound, poison, run_both, sim
from .racecheck import racecheck


@ct.kernel
def mm_once(a, b, c, TM: Constant[int], TN: Constant[int], TK: Constant[int]):
    """One mma without a K loop, accumulator from memory (NaN-padded A: staged from
    registers)."""
    x = ct.load(a, (ct.bid(0), 0), (TM, TK), padding_mode=ct.PaddingMode.ZERO)
    y = ct.load(b, (0, ct.bid(1)), (TK, TN), padding_mode=ct.PaddingMode.ZERO)
    acc = ct.load(c, (ct.bid(0), ct.bid(1)), (TM, TN), padding_mode=ct.PaddingMode.ZERO)
    ct.store(c, (ct.bid(0), ct.bid(1)), ct.mma(x, y, acc) * 2.0)


def _run(monkeypatch, ffma, kernel, grid, args, T):
    monkeypatch.setenv("CUTILE_NUMBA_FFMA", ffma)
    with racecheck() as races:
        ref, got = run_both(kernel, grid, list(args), mma_acc="f32", threads=T)
    assert not races, races.describe()
    return ref, got


CASES = [  # (kernel, TM, TN, TK, T, M, N, K)
    ("kloop", 16, 16, 16, 32, 37, 21, 40),      # partial tiles, 3 K iterations, checked copies
    ("kloop", 16, 16, 16, 32, 32, 32, 64),      # full tiles: one in-or-out test per tile
    ("kloop", 16, 16, 16, 32, 24, 16, 20),      # rows not 16-byte aligned: element-wise copy
    ("kloop", 32, 16, 8, 64, 40, 24, 30),       # K tile 8: fully unrolled products
    ("kloop", 16, 32, 64, 32, 20, 40, 70),      # rolled k loop of the products
    ("bt", 16, 16, 16, 32, 37, 21, 40),         # transposed B: staged from registers
    ("once", 16, 16, 16, 32, 20, 27, 11),       # no K loop, accumulator loaded
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}x{c[2]}x{c[3]}-T{c[4]}-"
                                               f"{c[5]}x{c[6]}x{c[7]}" for c in CASES])
def test_ffma_schedule_is_bit_identical_to_the_scalar_one(monkeypatch, case):
    """R-MM-7: float32 mma by ffma.py's schedule (CUTILE_NUMBA_FFMA=sim under the simulator:
    ptx_sim.py's cp.async and vector shared loads) gives the same bits as the seeds' schedule
    (CUTILE_NUMBA_FFMA=0) and agrees with the interpreter within mma_f32_bound."""
    name, TM, TN, TK, T, M, N, K = case
    rng = np.random.default_rng(M * N + K)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    grid = (-(-M // TM), -(-N // TN))
    if name == "bt":
        kernel, bb = mm_bt_kloop, np.ascontiguousarray(b.T)
        args = (a, bb, None, TM, TN, TK)
    elif name == "once":
        kernel, bb = mm_once, b
        args = (a, b, None, TM, TN, TK)
    else:
        kernel, bb = mm_kloop, b
        args = (a, b, None, TM, TN, TK, ct.float32)
    c0 = (rng.standard_normal((M, N)).astype(np.float32) if name == "once"
          else poison((M, N), np.float32))
    fast = "sim" if sim() else "1"
    outs = {}
    for ffma in (fast, "0"):
        run_args = (args[0], args[1], c0.copy()) + args[3:]
        ref, got = _run(monkeypatch, ffma, kernel, grid, run_args, T)
        outs[ffma] = got[2]
        if ffma == fast:                 # the FFMA plan was chosen
            from cutile.numba_backend.compile import generate
            ir = kernel.compile(kernel.specialize(run_args))
            assert any(p.startswith("FFMA") for p in generate(ir, T, "f32").plans)
    new, old = outs[fast], outs["0"]
    assert np.array_equal(new.view(np.uint32), old.view(np.uint32))
    exp_b = bb.T if name == "bt" else bb
    bound = mma_f32_bound(a, exp_b, TK, tensor_cores=False) * (2 if name == "once" else 1)
    err = np.abs(ref[2].astype(np.float64) - new.astype(np.float64))
    assert np.all(err <= bound), f"max err {err.max()} bound {bound.max()}"

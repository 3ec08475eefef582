"""The vectorised FFMA plan of float32 mma (``numba_backend/ffma.py``): when it is chosen, its
accumulator layout, and every shared-memory index its products read, checked on the CPU
against the swizzled staging (the whole kernels run in spec_tests/diff/test_diff_ffma.py)."""

from __future__ import annotations

import numpy as np
import pytest
from backend_kernels import mm_kloop

import cutile as ct
from cutile.numba_backend import ffma
from cutile.numba_backend.tensorcore import swizzle


class _T:                       # the types an Mma's operands carry, as ffma.plan reads them
    def __init__(self, shape, dtype):
        self.type = type("TT", (), {"shape": shape, "dtype": dtype})()


class _Op:
    def __init__(self, xs, ys, xd=ct.float32, yd=ct.float32, ad=ct.float32):
        self.x, self.y = _T(xs, xd), _T(ys, yd)
        self.acc = _T((xs[-2], ys[-1]), ad)


def test_plan_applies_to_2d_float32_tiles_that_give_every_thread_4_columns():
    p = ffma.plan(_Op((128, 32), (32, 128)), 256)
    assert (p.TY, p.TX, p.RM, p.RN) == (16, 16, 8, 8)
    assert ffma.plan(_Op((16, 16), (16, 16)), 32) is not None
    assert ffma.plan(_Op((128, 32), (32, 128), ct.float16, ct.float16), 256) is None
    assert ffma.plan(_Op((128, 32), (32, 128), ad=ct.float16), 256) is None
    assert ffma.plan(_Op((2, 64, 32), (2, 32, 64)), 256) is None          # batched
    assert ffma.plan(_Op((64, 2), (2, 64)), 64) is None                    # K not a chunk
    assert ffma.plan(_Op((4, 8), (8, 4)), 32) is None                      # too few elements


@pytest.mark.parametrize("M,N,K,T", [(128, 128, 32, 256), (16, 16, 16, 32), (32, 16, 8, 64),
                                     (64, 256, 16, 128), (16, 32, 64, 32)])
def test_layout_and_shared_indices_read_the_right_elements(M, N, K, T):
    """For every thread: the accumulator layout gives rows ty + i*TY and 4-column groups, and
    the generated index expressions (hoisted bases, ``join`` of the constant parts, both the
    unrolled and the rolled-loop form) address A[row, k..k+KV) and B[k, 4 columns) in the
    swizzled buffers, at vector-aligned positions."""
    p = ffma.plan(_Op((M, K), (K, N)), T)
    lay = p.layout()
    pre = p.prefix()
    rows, cols = np.arange(M)[:, None], np.arange(K)[None, :]
    bufa = np.empty(M * K, np.int64)
    bufa[swizzle(rows, cols, K, 4)] = rows * K + cols                  # A staged, swizzled
    rk, cn = np.arange(K)[:, None], np.arange(N)[None, :]
    bufb = np.empty(K * N, np.int64)
    bufb[swizzle(rk, cn, N, 4)] = rk * N + cn
    sh, sm = p.b_swz()
    for tid in range(T):
        env = {"tid": tid}
        for name, expr in p.hoisted(pre).items():
            env[name] = eval(expr, {}, env)
        a, b = env[f"{pre}a"], env[f"{pre}b"]
        tab = lay.table[tid]                                     # [reg, (row, col)]
        for i in range(p.RM):
            row = tab[i * p.RN, 0]
            for k0 in range(0, K, p.KV):
                for idx in (eval(ffma.join("a", p.a_mask(), p.a_const(i, k0)), {}, {"a": a}),
                            eval(ffma.join("ak", p.a_mask() | (K - 1), p.a_const(i, 0)), {},
                                 {"ak": a ^ k0})):
                    assert idx % p.KV == 0
                    assert list(bufa[idx:idx + p.KV]) == [row * K + k0 + d for d in range(p.KV)]
        for c in range(p.RN // 4):
            colv = [tab[4 * c + d, 1] for d in range(4)]
            assert colv == list(range(colv[0], colv[0] + 4)) and colv[0] % 4 == 0
            for k in range(K):
                bk = b ^ (((k >> sh) & sm) << 2)
                for idx in (eval(ffma.join("b", p.b_mask(), p.b_const(k, c)), {}, {"b": b}),
                            eval(ffma.join("bk", p.b_mask() | (sm << 2), p.b_const(0, c)),
                                 {}, {"bk": bk}) + k * N):
                    assert idx % 4 == 0
                    assert list(bufb[idx:idx + 4]) == [k * N + x for x in colv]


def test_float32_kloop_takes_the_plan_with_cp_async_and_vector_loads(monkeypatch):
    """The benchmark's float32 matmul (128x128x32, 256 threads): cp.async-staged operands,
    a 3-stage pipelined K loop, ld.shared.v2 of A and .v4 of B; CUTILE_NUMBA_FFMA=0 (and the
    exact accumulation mode) keep the scalar schedule."""
    from cutile.numba_backend.compile import generate
    m = np.zeros((256, 256), np.float32)
    ir = mm_kloop.compile(mm_kloop.specialize((m, m, m.copy(), 128, 128, 32, ct.float32)))
    monkeypatch.setenv("CUTILE_NUMBA_FFMA", "sim")
    g = generate(ir, 256, "f32")
    assert set(g.plans) == {"FFMA 128x128x32: 16x16 threads, 8x8 per thread, A by 2-wide and B "
                            "by 4-wide shared loads, operands by cp.async, 3-stage pipelined K "
                            "loop"}
    assert "lds_v2(" in g.source and "lds_v4(" in g.source and "cp_async16(" in g.source
    assert g.smem.dynamic
    assert "lds_v" not in generate(ir, 256, "exact").source
    monkeypatch.setenv("CUTILE_NUMBA_FFMA", "0")
    src = generate(ir, 256, "f32").source
    assert "lds_v" not in src and "cp_async16(" not in src

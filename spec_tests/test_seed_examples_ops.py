"""The tile-operation examples of seed notes 002 (tile ops) and 003 (tiled matmul), run as
written in the seeds' Python snippets (R-BCAST-1, R-PROMO-4, R-MM-1..3, R-RED-2, R-SHAPE-4/5,
R-SEL-1)."""

from __future__ import annotations

import numpy as np
import pytest

import cutile as ct


def flag(ok):
    """A (1,) int32 tile holding 1 when the compile-time condition ``ok`` holds."""
    return ct.full((1,), 1 if ok else 0, dtype=ct.int32)


# -- broadcasting and promotion (seed 002 "Broadcasting 規則", "Arithmetic Operators") --------
def test_seed_broadcast_rank_promotion():  # R-BCAST-1
    @ct.kernel
    def k(Z, F):
        x = ct.full((8, 2), 3, dtype=ct.int32)      # 8x2 (rank 2)
        y = ct.full((4, 1, 2), 5, dtype=ct.int32)   # 4x1x2 (rank 3)
        z = x + y                                   # -> 4x8x2
        ct.store(F, index=(0,), tile=flag(z.shape == (4, 8, 2) and z.dtype == ct.int32))
        ct.store(Z, index=(0, 0, 0), tile=z)

    z, f = np.zeros((4, 8, 2), np.int32), np.zeros(1, np.int32)
    ct.launch(None, (1,), k, (z, f))
    assert f[0] == 1 and (z == 8).all()


def test_seed_scalar_tile_promotion():  # R-PROMO-4
    @ct.kernel
    def k(A, B, F):
        x = ct.full((8,), 3, dtype=ct.int32)
        a = x + 2        # int32: the int literal matches the int32 tile
        b = x + 2.5      # float32: the result is promoted to hold both
        ct.store(F, index=(0,), tile=flag(a.dtype == ct.int32 and b.dtype == ct.float32))
        ct.store(A, index=(0,), tile=a)
        ct.store(B, index=(0,), tile=b)

    a, b, f = np.zeros(8, np.int32), np.zeros(8, np.float32), np.zeros(1, np.int32)
    ct.launch(None, (1,), k, (a, b, f))
    assert f[0] == 1 and (a == 5).all() and (b == 5.5).all()


def test_seed_axpy_kernel():  # R-PROMO-4: 2.0 is a loose float constant
    TILE = 16

    @ct.kernel
    def k(a, b, c):
        bid = ct.bid(0)
        x = ct.load(a, index=(bid,), shape=(TILE,))
        y = ct.load(b, index=(bid,), shape=(TILE,))
        z = 2.0 * x + y
        ct.store(c, index=(bid,), tile=z)

    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(64).astype(np.float32), rng.standard_normal(64).astype(np.float32)
    c = np.zeros(64, np.float32)
    ct.launch(None, (4,), k, (a, b, c))
    np.testing.assert_allclose(c, 2 * a.astype(np.float64) + b, rtol=1e-6)


# -- matrix multiply (seed 002 "Matrix Multiply", GEMM idiom with partial tiles) ---------------
@ct.kernel
def seed_gemm(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    bx, by = ct.bid(0), ct.bid(1)
    num_k = ct.num_tiles(A, axis=1, shape=(tm, tk))           # = ceil(K / tk)
    acc = ct.full((tm, tn), 0, dtype=ct.float32)              # FP32 accumulator
    for k in range(num_k):
        a = ct.load(A, index=(bx, k), shape=(tm, tk),
                    padding_mode=ct.PaddingMode.ZERO)          # partial K tile: zero-pad
        b = ct.load(B, index=(k, by), shape=(tk, tn),
                    padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)                               # acc += a @ b
    ct.store(C, index=(bx, by), tile=acc.astype(C.dtype))     # cast + store (OOB discarded)


@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-5), (np.float16, 1e-3)])
def test_seed_gemm_partial_tiles(dtype, tol):  # R-MM-3, R-MM-7, R-LOAD/R-STORE edges
    m, n, k, tm, tn, tk = 45, 37, 70, 32, 32, 32              # none a multiple of its tile
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)
    c = np.zeros((m, n), dtype)
    ct.launch(None, (-(-m // tm), -(-n // tn)), seed_gemm, (a, b, c, tm, tn, tk))
    exact = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.astype(np.float64), exact, rtol=tol, atol=tol * 8)


def test_seed_matmul_and_mma_forms():  # R-MM-1: a @ b and mma(a, b, acc) = a @ b + acc
    @ct.kernel
    def k(A, B, P, Q):
        a = ct.load(A, index=(0, 0), shape=(4, 8))
        b = ct.load(B, index=(0, 0), shape=(8, 4))
        ct.store(P, index=(0, 0), tile=a @ b)
        ct.store(Q, index=(0, 0), tile=ct.mma(a, b, ct.full((4, 4), 1.0, dtype=ct.float32)))

    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    b = np.arange(32, dtype=np.float32).reshape(8, 4) - 8
    p, q = np.zeros((4, 4), np.float32), np.zeros((4, 4), np.float32)
    ct.launch(None, (1,), k, (a, b, p, q))
    np.testing.assert_array_equal(p, a @ b)
    np.testing.assert_array_equal(q, a @ b + 1)


# -- seed 003: tiled matrix multiplication over phases -----------------------------------------
@ct.kernel
def seed_tiled_matmul(M, N, P, TILE_WIDTH: ct.Constant[int]):
    by, bx = ct.bid(0), ct.bid(1)                             # P tile (Row block, Col block)
    pvalue = ct.zeros((TILE_WIDTH, TILE_WIDTH), dtype=ct.float32)
    for ph in range(ct.num_tiles(M, axis=1, shape=(TILE_WIDTH, TILE_WIDTH))):  # Width/TILE
        mds = ct.load(M, index=(by, ph), shape=(TILE_WIDTH, TILE_WIDTH))
        nds = ct.load(N, index=(ph, bx), shape=(TILE_WIDTH, TILE_WIDTH))
        pvalue = ct.mma(mds, nds, pvalue)
    ct.store(P, index=(by, bx), tile=pvalue)


def test_seed_tiled_square_matmul():  # seed 003 (Width a multiple of TILE_WIDTH), R-MM-3
    width, tile = 64, 16
    rng = np.random.default_rng(2)
    m = rng.integers(-4, 5, (width, width)).astype(np.float32)
    n = rng.integers(-4, 5, (width, width)).astype(np.float32)
    p = np.zeros((width, width), np.float32)
    ct.launch(None, (width // tile, width // tile), seed_tiled_matmul, (m, n, p, tile))
    np.testing.assert_array_equal(p, m @ n)                   # small integers: exact


# -- reductions (seed 002 "Reductions and Scans") ----------------------------------------------
def test_seed_reductions():  # R-RED-1, R-RED-2
    @ct.kernel
    def k(S, SK, T, U, F):
        x = ct.arange(8, dtype=ct.int32).reshape((2, 4))     # [[0,1,2,3],[4,5,6,7]]
        s = ct.sum(x, axis=1)                                  # shape (2,): [6, 22]
        s_k = ct.sum(x, axis=1, keepdims=True)                 # shape (2,1): [[6],[22]]
        t = ct.sum(x)                                          # 0-D: 28
        x3 = ct.arange(8, dtype=ct.int32).reshape((2, 2, 2))
        u = ct.sum(x3, (1, 2))                                 # [6, 22]
        ok = s.shape == (2,) and s_k.shape == (2, 1) and t.shape == () and u.shape == (2,)
        ct.store(F, index=(0,), tile=flag(ok and t.dtype == ct.int32))
        ct.store(S, index=(0,), tile=s)
        ct.store(SK, index=(0, 0), tile=s_k)
        ct.store(T, index=(0,), tile=ct.reshape(t, (1,)))
        ct.store(U, index=(0,), tile=u)

    s, sk, t, u = (np.zeros(2, np.int32), np.zeros((2, 1), np.int32), np.zeros(1, np.int32),
                   np.zeros(2, np.int32))
    f = np.zeros(1, np.int32)
    ct.launch(None, (1,), k, (s, sk, t, u, f))
    assert f[0] == 1
    assert s.tolist() == [6, 22] and sk.tolist() == [[6], [22]] and t[0] == 28
    assert u.tolist() == [6, 22]


# -- transpose / permute (seed 002 "Transpose and Permutation") --------------------------------
def test_seed_transpose_permute():  # R-SHAPE-4, R-SHAPE-5
    @ct.kernel
    def k(TY, TW, F):
        tx = ct.arange(8, dtype=ct.int32).reshape((2, 4))
        ty = ct.transpose(tx)                                  # shape (4, 2)
        tz = ct.arange(8, dtype=ct.int32).reshape((2, 2, 2))
        tw = ct.permute(tz, (2, 0, 1))                         # axes (0,1,2) -> (2,0,1)
        ct.store(F, index=(0,), tile=flag(ty.shape == (4, 2) and tw.shape == (2, 2, 2)))
        ct.store(TY, index=(0, 0), tile=ty)
        ct.store(TW, index=(0, 0, 0), tile=tw)

    ty, tw, f = np.zeros((4, 2), np.int32), np.zeros((2, 2, 2), np.int32), np.zeros(1, np.int32)
    ct.launch(None, (1,), k, (ty, tw, f))
    assert f[0] == 1
    np.testing.assert_array_equal(ty, np.arange(8).reshape(2, 4).T)
    assert tw.tolist() == [[[0, 2], [4, 6]], [[1, 3], [5, 7]]]


# -- selection (seed 002 "Element-wise Selection") ---------------------------------------------
def test_seed_where():  # R-SEL-1
    @ct.kernel
    def k(R):
        cond = ct.arange(4, dtype=ct.int32) < 2                # [T, T, F, F]
        x_true = ct.full((4,), 1.0, dtype=ct.float32)
        x_false = ct.full((4,), -1.0, dtype=ct.float32)
        ct.store(R, index=(0,), tile=ct.where(cond, x_true, x_false))

    r = np.zeros(4, np.float32)
    ct.launch(None, (1,), k, (r,))
    assert r.tolist() == [1, 1, -1, -1]

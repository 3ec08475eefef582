"""Matrix multiply through whole kernels (§15 R-MM-1..5, R-MM-7): shapes, batching, 1-D
operands, the dtype table, errors, tf32, K-loops over partial tiles and persistent loops.

Reference ("definition", numerics.matmul): products formed exactly in float64, summed in
float64 in ascending k from +0.0, acc added, one rounding to the accumulator dtype.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from tile_harness import same  # noqa: E402

import cutile as ct

BF16 = np.dtype(ml_dtypes.bfloat16)
E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
E5M2 = np.dtype(ml_dtypes.float8_e5m2)
F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)


# -- harness ------------------------------------------------------------------------------------
def _z(shape):
    return (0,) * max(len(shape), 1)


def make(fn, shapes, oshape):
    """One-block kernel: Y = fn(*loaded inputs); F[0] = 1 iff dtype(Y) and ``oshape`` match."""
    flat = oshape == ()
    zo = _z(oshape)
    s0, z0 = shapes[0], _z(shapes[0])
    s1, z1 = shapes[1], _z(shapes[1])

    def check_store(y, Y, F):
        ok = y.dtype == Y.dtype and y.shape == oshape
        ct.store(F, index=(0,), tile=ct.full((1,), 1 if ok else 0, dtype=ct.int32))
        if flat:
            y = ct.reshape(y, (1,))
        ct.store(Y, index=zo, tile=y)

    if len(shapes) == 2:
        @ct.kernel
        def k2(X0, X1, Y, F):
            check_store(fn(ct.load(X0, index=z0, shape=s0), ct.load(X1, index=z1, shape=s1)),
                        Y, F)

        return k2
    s2, z2 = shapes[2], _z(shapes[2])

    @ct.kernel
    def k3(X0, X1, X2, Y, F):
        check_store(fn(ct.load(X0, index=z0, shape=s0), ct.load(X1, index=z1, shape=s1),
                       ct.load(X2, index=z2, shape=s2)), Y, F)

    return k3


def run(fn, *xs, out_shape, out_dtype):
    xs = tuple(np.ascontiguousarray(x) for x in xs)
    y = np.zeros(out_shape or (1,), out_dtype)
    f = np.zeros(1, np.int32)
    ct.launch(None, (1,), make(fn, [x.shape for x in xs], tuple(out_shape)), xs + (y, f))
    assert f[0] == 1, "result dtype or shape differs from the expected one"
    return y.reshape(out_shape)


def fails(fn, *xs, match):
    with pytest.raises(ct.TileTypeError, match=match):
        run(fn, *xs, out_shape=(), out_dtype=np.float32)


def definition(x, y, acc):
    """R-MM-3 reference: x @ y + acc per numerics.matmul's documented definition.  A float16
    accumulator is updated per K chunk (16 for 2-byte inputs, 32 for float8), as the GPU's
    tensor cores do (docs/decisions.md)."""
    if acc.dtype == F16:
        chunk = 16 if np.dtype(x.dtype).itemsize == 2 else 32
        for k0 in range(0, x.shape[-1], chunk):
            acc = definition32(x[..., k0:k0 + chunk], y[..., k0:k0 + chunk, :], acc)
        return acc
    return definition32(x, y, acc)


def definition32(x, y, acc):
    """One chunk: exact products summed in k order in float64, plus acc, one rounding."""
    x64, y64 = np.asarray(x, np.float64), np.asarray(y, np.float64)
    x64, y64 = np.broadcast_arrays(x64[..., :, :, None], y64[..., None, :, :])
    s = np.zeros(x64.shape[:-3] + (x64.shape[-3], y64.shape[-1]))
    for k in range(x64.shape[-2]):
        s = s + x64[..., :, k, :] * y64[..., :, k, :]
    s = s + np.asarray(acc, np.float64)
    return s.astype(acc.dtype)  # float64 -> float32/float16 casts round once (RN)


def to_tf32(x):
    """Round float32 values to tfloat32 (10 explicit mantissa bits, nearest-even)."""
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0xFFF + ((b >> 13) & 1)) & ~np.uint64(0x1FFF)
    return b.astype(np.uint32).view(np.float32)


def rand(shape, dtype, seed=0, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


def mm(x, y):
    return x @ y


def ctmm(x, y):
    return ct.matmul(x, y)


def mma(x, y, acc):
    return ct.mma(x, y, acc)


# -- R-MM-1 shapes -----------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [mm, ctmm])
def test_matmul_2d_float32_definition(fn):  # R-MM-1, R-MM-4, R-MM-7
    x, y = rand((8, 16), F32, 1), rand((16, 4), F32, 2)
    got = run(fn, x, y, out_shape=(8, 4), out_dtype=F32)
    assert same(got, definition(x, y, np.zeros((8, 4), F32)))
    np.testing.assert_allclose(got, x.astype(F64) @ y, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("xs, ys, out", [((2, 2, 4), (4, 2), (2, 2, 2)),
                                         ((4, 8), (2, 8, 4), (2, 4, 4)),
                                         ((2, 4, 8), (2, 8, 2), (2, 4, 2)),
                                         ((1, 4, 8), (2, 8, 2), (2, 4, 2)),
                                         ((2, 4, 8), (1, 8, 2), (2, 4, 2))])
def test_batched_broadcast(xs, ys, out):  # R-MM-1, R-BCAST-3
    x = np.random.default_rng(3).integers(-8, 8, xs).astype(F32)
    y = np.random.default_rng(4).integers(-8, 8, ys).astype(F32)
    got = run(mm, x, y, out_shape=out, out_dtype=F32)
    np.testing.assert_array_equal(got, np.matmul(x, y))   # small integers: exact


@pytest.mark.parametrize("xs, ys, out", [((8,), (8,), ()), ((8,), (8, 4), (4,)),
                                         ((4, 8), (8,), (4,)), ((8,), (2, 8, 4), (2, 4)),
                                         ((2, 4, 8), (8,), (2, 4))])
def test_one_d_operands(xs, ys, out):  # R-MM-1
    x = np.random.default_rng(5).integers(-8, 8, xs).astype(F32)
    y = np.random.default_rng(6).integers(-8, 8, ys).astype(F32)
    got = run(ctmm, x, y, out_shape=out, out_dtype=F32)
    np.testing.assert_array_equal(got, np.matmul(x, y))


def test_shape_errors():  # R-MM-1, R-MM-3
    x = np.zeros((4, 8), F32)

    def mma_1d(a, b):
        return ct.mma(ct.reshape(a, (32,)), b, ct.zeros((4,), dtype=ct.float32))

    def mma_acc_shape(a, b):
        return ct.mma(a, b, ct.zeros((4, 8), dtype=ct.float32))

    def mma_acc_broadcast(a, b):
        return ct.mma(a, b, ct.zeros((1, 4), dtype=ct.float32))

    def batch_mismatch(a, b):
        return ct.reshape(a, (2, 2, 8)) @ ct.reshape(b, (4, 8, 1))

    def rank4(a, b):
        return ct.reshape(a, (1, 2, 2, 8)) @ ct.reshape(b, (1, 1, 8, 4))

    def scalar(a, b):
        return ct.matmul(a, 2.0)

    fails(mm, x, np.zeros((4, 4), F32), match="Incompatible shapes for matrix mul")
    fails(mma, x, np.zeros((4, 4), F32), np.zeros((4, 4), F32),
          match="Incompatible shapes for matrix mul")
    fails(mma_1d, x, np.zeros((32, 4), F32), match="to be at least 2D")
    fails(mma_acc_shape, x, np.zeros((8, 4), F32), match=r"Expect acc shape to be \(4, 4\)")
    fails(mma_acc_broadcast, x, np.zeros((8, 4), F32), match="Expect acc shape to be")
    fails(batch_mismatch, x, np.zeros((8, 4), F32), match="Incompatible shapes")
    fails(rank4, x, np.zeros((8, 4), F32), match="rank")
    fails(scalar, x, np.zeros((8, 4), F32), match="Expected a tile")


# -- R-MM-2 / R-MM-3 mma dtype table -----------------------------------------------------------
MMA_OK = [(F16, F16), (F16, F32), (BF16, F32), (F32, F32), (F64, F64), (E4M3, F16),
          (E4M3, F32), (E5M2, F16), (E5M2, F32)]


@pytest.mark.parametrize("xd, accd", MMA_OK, ids=lambda d: str(d))
def test_mma_dtype_table(xd, accd):  # R-MM-2, R-MM-3, R-MM-7
    x, y = rand((4, 16), xd, 7), rand((16, 8), xd, 8)
    acc = rand((4, 8), accd, 9)
    got = run(mma, x, y, acc, out_shape=(4, 8), out_dtype=accd)
    assert same(got, definition(x, y, acc))
    tol = {F16: 1e-3, F32: 1e-5, F64: 1e-12}[accd]
    exact = x.astype(F64) @ y.astype(F64) + acc.astype(F64)
    np.testing.assert_allclose(got.astype(F64), exact, rtol=tol, atol=tol * 16)


def test_mma_int8_exact_and_mixed():  # R-MM-2: int8/uint8 (mixed allowed) -> int32, exact
    x = np.full((4, 64), -128, np.int8)
    y = np.full((64, 4), -128, np.int8)
    acc = np.full((4, 4), 5, np.int32)
    got = run(mma, x, y, acc, out_shape=(4, 4), out_dtype=np.int32)
    np.testing.assert_array_equal(got, np.full((4, 4), 64 * 16384 + 5))
    u = np.full((64, 4), 255, np.uint8)
    got = run(mma, x, u, acc, out_shape=(4, 4), out_dtype=np.int32)
    np.testing.assert_array_equal(got, np.full((4, 4), -128 * 255 * 64 + 5))
    rng = np.random.default_rng(10)
    a = rng.integers(-128, 128, (8, 32)).astype(np.int8)
    b = rng.integers(0, 256, (32, 8)).astype(np.uint8)
    c = rng.integers(-2**31, 2**31, (8, 8)).astype(np.int32)
    got = run(mma, a, b, c, out_shape=(8, 8), out_dtype=np.int32)
    exp = ((a.astype(np.int64) @ b.astype(np.int64) + c) & 0xFFFFFFFF).astype(np.uint32)
    np.testing.assert_array_equal(got.view(np.uint32), exp)       # acc wraps in int32


MMA_BAD_DTYPE = [
    (F16, F32, F32, "x and y must have the same dtype"),
    (np.int8, np.int16, np.int32, "x and y must have the same dtype"),
    (np.int16, np.int16, np.int32, "Unsupported input dtype"),
    (np.int32, np.int32, np.int32, "Unsupported input dtype"),
    (np.uint16, np.uint16, np.int32, "Unsupported input dtype"),
    (BF16, BF16, F16, "Unsupported acc dtype"),
    (BF16, BF16, BF16, "Unsupported acc dtype"),
    (F32, F32, F16, "Unsupported acc dtype"),
    (F32, F32, F64, "Unsupported acc dtype"),
    (F64, F64, F32, "Unsupported acc dtype"),
    (np.int8, np.int8, np.int64, "Unsupported acc dtype"),
    (F16, F16, BF16, "Unsupported acc dtype"),
]


@pytest.mark.parametrize("xd, yd, accd, msg", MMA_BAD_DTYPE)
def test_mma_dtype_errors(xd, yd, accd, msg):  # R-MM-2
    fails(mma, np.zeros((4, 8), xd), np.zeros((8, 4), yd), np.zeros((4, 4), accd), match=msg)


def test_use_fast_acc():  # R-MM-3
    def fast(a, b, c):
        return ct.mma(a, b, c, use_fast_acc=True)

    x, y = rand((4, 16), E4M3, 11), rand((16, 4), E4M3, 12)
    acc = np.zeros((4, 4), F32)
    assert same(run(fast, x, y, acc, out_shape=(4, 4), out_dtype=F32), definition(x, y, acc))
    fails(fast, np.zeros((4, 8), F16), np.zeros((8, 4), F16), np.zeros((4, 4), F32),
          match="use_fast_acc is only supported for fp8")


# -- R-MM-4 matmul dtypes ----------------------------------------------------------------------
def test_matmul_int8_returns_int8_wrapping():  # R-MM-4
    x, y = np.full((4, 64), 1, np.int8), np.full((64, 4), 3, np.int8)
    got = run(mm, x, y, out_shape=(4, 4), out_dtype=np.int8)
    np.testing.assert_array_equal(got, np.full((4, 4), np.int8(-64)))   # 192 wraps
    u = np.full((4, 64), 2, np.uint8)
    got = run(mm, u, u.T.copy(), out_shape=(4, 4), out_dtype=np.uint8)
    np.testing.assert_array_equal(got, np.full((4, 4), 0, np.uint8))    # 256 wraps


def test_matmul_float16_accumulates_in_float16():  # R-MM-4: acc f16, one rounding per mma
    row = np.array([2048] + [1] * 15, F16)
    x, y = np.tile(row, (4, 1)), np.ones((16, 4), F16)
    got = run(mm, x, y, out_shape=(4, 4), out_dtype=F16)
    # exact 2063 rounds once to 2064 (a step-by-step float16 sum would stay at 2048)
    np.testing.assert_array_equal(got, np.full((4, 4), 2064, F16))

    def via_mma(a, b):
        return ct.mma(a, b, ct.zeros((4, 4), dtype=ct.float16))

    xr, yr = rand((4, 16), F16, 13), rand((16, 4), F16, 14)
    assert same(run(mm, xr, yr, out_shape=(4, 4), out_dtype=F16),
                run(via_mma, xr, yr, out_shape=(4, 4), out_dtype=F16))


def test_matmul_promotes_then_accumulates():  # R-MM-4
    x, y16 = rand((4, 8), F32, 15), rand((8, 4), F16, 16)
    got = run(mm, x, y16, out_shape=(4, 4), out_dtype=F32)        # f32 @ f16 -> f32
    assert same(got, definition(x, y16.astype(F32), np.zeros((4, 4), F32)))
    b1, b2 = rand((4, 8), BF16, 17), rand((8, 4), BF16, 18)
    got = run(mm, b1, b2, out_shape=(4, 4), out_dtype=BF16)        # bf16 @ bf16 -> bf16
    assert same(got, definition(b1, b2, np.zeros((4, 4), F32)).astype(BF16))
    d1, d2 = rand((4, 8), F64, 19), rand((8, 4), F64, 20)
    assert same(run(mm, d1, d2, out_shape=(4, 4), out_dtype=F64),
                definition(d1, d2, np.zeros((4, 4), F64)))
    b = np.array([[True, False], [True, True]])
    got = run(mm, b, np.eye(2, dtype=np.int8), out_shape=(2, 2), out_dtype=np.int8)
    np.testing.assert_array_equal(got, b.astype(np.int8))         # bool promotes to int8


@pytest.mark.parametrize("xd, yd, msg", [(np.uint8, np.int8, "Implicit promotion"),
                                         (F16, BF16, "Implicit promotion"),
                                         (np.int16, np.int16, "Unsupported input dtype"),
                                         (np.int32, np.int8, "Unsupported input dtype"),
                                         (np.int64, np.int64, "Unsupported input dtype"),
                                         (np.bool_, np.bool_, "Unsupported input dtype")])
def test_matmul_dtype_errors(xd, yd, msg):  # R-MM-4
    fails(mm, np.zeros((4, 8), xd), np.zeros((8, 4), yd), match=msg)


# -- R-MM-5 tf32 -------------------------------------------------------------------------------
def test_tf32_rounds_operands():  # R-MM-5
    def tf(a, b, c):
        return ct.mma(a.astype(ct.tfloat32), b.astype(ct.tfloat32), c)

    def tf_matmul(a, b):
        return ct.matmul(a.astype(ct.tfloat32), b.astype(ct.tfloat32)).astype(ct.float32)

    x, y = rand((8, 32), F32, 21), rand((32, 8), F32, 22)
    acc = np.zeros((8, 8), F32)
    got = run(tf, x, y, acc, out_shape=(8, 8), out_dtype=F32)
    assert same(got, definition(to_tf32(x), to_tf32(y), acc))
    assert not same(got, definition(x, y, acc))            # operands really were rounded
    np.testing.assert_allclose(got, x.astype(F64) @ y, rtol=1e-2, atol=1e-2)
    got = run(tf_matmul, x, y, out_shape=(8, 8), out_dtype=F32)
    assert same(got, to_tf32(definition(to_tf32(x), to_tf32(y), acc)))  # result is tf32


# -- K loops over partial tiles (seed 002) and persistent loops --------------------------------
@ct.kernel
def gemm_kloop(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.full((tm, tn), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        a = ct.load(A, index=(bx, k), shape=(tm, tk), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, index=(k, by), shape=(tk, tn), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bx, by), tile=acc.astype(C.dtype))


def kloop_reference(a, b, tk):
    """Bitwise reference of gemm_kloop: one definition step per K tile, acc rounded to f32."""
    acc = np.zeros((a.shape[0], b.shape[1]), F32)
    for k0 in range(0, a.shape[1], tk):
        acc = definition(a[:, k0:k0 + tk].astype(F32), b[k0:k0 + tk].astype(F32), acc)
    return acc


@pytest.mark.parametrize("m, n, k, tm, tn, tk", [(50, 70, 45, 16, 32, 16),
                                                 (33, 17, 100, 32, 16, 32),
                                                 (64, 64, 64, 32, 32, 16),
                                                 (5, 3, 7, 8, 4, 4)])
def test_kloop_partial_tiles_float32(m, n, k, tm, tn, tk):  # seed 002, R-MM-3, R-MM-7
    rng = np.random.default_rng(m * n + k)
    a, b = rng.standard_normal((m, k)).astype(F32), rng.standard_normal((k, n)).astype(F32)
    c = np.full((m, n), -1, F32)
    grid = (-(-m // tm), -(-n // tn))
    ct.launch(None, grid, gemm_kloop, (a, b, c, tm, tn, tk))
    np.testing.assert_allclose(c, a.astype(F64) @ b, rtol=1e-5, atol=1e-5)
    assert same(c, kloop_reference(a, b, tk))


@pytest.mark.parametrize("dt_in, tol", [(F16, 1e-3), (BF16, 1e-2)])
def test_kloop_half_inputs_float32_acc(dt_in, tol):  # seed 002 GEMM idiom, R-MM-7
    rng = np.random.default_rng(23)
    m, n, k = 40, 24, 72
    a, b = rng.standard_normal((m, k)).astype(dt_in), rng.standard_normal((k, n)).astype(dt_in)
    c = np.zeros((m, n), dt_in)
    ct.launch(None, (3, 2), gemm_kloop, (a, b, c, 16, 16, 32))
    exact = a.astype(F64) @ b.astype(F64)
    np.testing.assert_allclose(c.astype(F64), exact, rtol=tol, atol=tol * 8)
    assert same(c, kloop_reference(a, b, 32).astype(dt_in))


def test_kloop_float16_acc_rounds_between_steps():  # R-MM-2/3: acc dtype is the accumulator
    @ct.kernel
    def k16(A, B, C):
        acc = ct.zeros((4, 4), dtype=ct.float16)
        for k in range(2):
            a = ct.load(A, index=(0, k), shape=(4, 16))
            b = ct.load(B, index=(k, 0), shape=(16, 4))
            acc = ct.mma(a, b, acc)
        ct.store(C, index=(0, 0), tile=acc)

    row = np.array([2048] + [1] * 15 + [1] * 15 + [0], F16)
    a, b = np.tile(row, (4, 1)), np.ones((32, 4), F16)
    c = np.zeros((4, 4), F16)
    ct.launch(None, (1,), k16, (a, b, c))
    # step 1: 2063 -> 2064 (f16); step 2: 2064 + 15 = 2079 -> 2080; f32 acc would give 2078
    np.testing.assert_array_equal(c, np.full((4, 4), 2080, F16))


@ct.kernel
def gemm_persistent(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int],
                    tk: ct.Constant[int], group: ct.Constant[int]):
    num_m = ct.num_tiles(A, axis=0, shape=(tm, tk))
    num_n = ct.num_tiles(B, axis=1, shape=(tk, tn))
    num_k = ct.num_tiles(A, axis=1, shape=(tm, tk))
    total = num_m * num_n
    for tile_id in range(ct.bid(0), total, ct.num_blocks(0)):
        # grouped ("swizzled") order: `group` rows of tiles are walked column by column
        per_group = group * num_n
        first_m = (tile_id // per_group) * group
        rows = min(num_m - first_m, group)
        bx = first_m + (tile_id % per_group) % rows
        by = (tile_id % per_group) // rows
        acc = ct.zeros((tm, tn), dtype=ct.float32)
        for k in range(num_k):
            a = ct.load(A, index=(bx, k), shape=(tm, tk), padding_mode=ct.PaddingMode.ZERO)
            b = ct.load(B, index=(k, by), shape=(tk, tn), padding_mode=ct.PaddingMode.ZERO)
            acc = ct.mma(a, b, acc)
        ct.store(C, index=(bx, by), tile=acc.astype(C.dtype))


@pytest.mark.parametrize("blocks, group", [(3, 2), (1, 1), (7, 3), (64, 8)])
def test_persistent_swizzled_gemm(blocks, group):  # R-MM-3, R-EXEC (grid-stride loop)
    rng = np.random.default_rng(blocks)
    m, n, k = 70, 50, 40
    a, b = rng.standard_normal((m, k)).astype(F32), rng.standard_normal((k, n)).astype(F32)
    c = np.full((m, n), np.nan, F32)
    ct.launch(None, (blocks,), gemm_persistent, (a, b, c, 16, 16, 16, group))
    np.testing.assert_allclose(c, a.astype(F64) @ b, rtol=1e-5, atol=1e-5)
    assert same(c, kloop_reference(a, b, 16))


def test_matmul_inside_kernel_with_transpose():  # R-MM-1 with R-SHAPE-5 operands
    def f(a, b):
        return ct.transpose(a) @ b

    x, y = rand((16, 8), F32, 24), rand((16, 4), F32, 25)
    assert same(run(f, x, y, out_shape=(8, 4), out_dtype=F32),
                definition(x.T, y, np.zeros((8, 4), F32)))


# -- interpreter numerics: the fast BLAS path gives the definition's bits ------------------------
def _adversarial_cases():
    rng = np.random.default_rng(26)
    ints = rng.integers(-40, 40, (2, 8, 32)).astype(F16)
    yield ints, rng.integers(-40, 40, (2, 32, 8)).astype(F16), np.full((2, 8, 8), 2048, F16)
    half = np.tile(np.array([2048] + [1] * 31, F16), (8, 1))        # exact ties in f16
    yield half, np.ones((32, 8), F16), np.zeros((8, 8), F16)
    wide = (rng.standard_normal((8, 32)) * 2.0 ** rng.integers(-30, 30, (8, 32))).astype(F32)
    yield wide, rng.standard_normal((32, 8)).astype(F32), np.zeros((8, 8), F32)
    cancel = rng.standard_normal((8, 16)).astype(F32)
    yield (np.concatenate([cancel, cancel], 1), np.concatenate([np.ones((16, 8), F32),
           -np.ones((16, 8), F32)]), np.full((8, 8), -0.0, F32))            # exact zeros
    special = rng.standard_normal((8, 16)).astype(F32)
    special[1, 3], special[2, 0], special[5, 7] = np.inf, np.nan, -np.inf
    other = rng.standard_normal((16, 8)).astype(F32)
    other[3, 2] = 0.0
    yield special, other, rng.standard_normal((8, 8)).astype(F32)
    acc_inf = np.zeros((8, 8), F32)
    acc_inf[0, 0], acc_inf[1, 1] = np.inf, np.nan
    yield rng.standard_normal((8, 16)).astype(F32), rng.standard_normal((16, 8)).astype(F32), \
        acc_inf
    big = np.full((4, 16), 60000, F16)
    yield big, np.full((16, 4), 60000, F16), np.zeros((4, 4), F32)     # f16 products >> f16 max
    e4 = rand((8, 32), E4M3, 27)
    yield e4, rand((32, 8), E4M3, 28), rand((8, 8), F16, 29)
    # The one-bound path (matmul_numerics._bound_matmul): f32 sums landing exactly on a midpoint of
    # the float32 grid (2**24 + 1: ties to even), with sums just off it by 2**-20
    tie = rng.integers(0, 1 << 20, (4, 16, 8)).astype(F32)
    tie[:, 0, :4] = [2.0 ** 23, 2.0 ** 23, 1.0, 0.0]
    tie[1:, 0, 3] = [2.0 ** -20, -(2.0 ** -20), 0.5]
    ty = rng.integers(0, 2, (4, 8, 16)).astype(F32)
    ty[:, :4, 0] = 1.0
    yield tie, ty, np.zeros((4, 16, 16), F32)
    # subnormal inputs and results, and a cancelling accumulator (results of any size near 0)
    sub = (rng.standard_normal((3, 16, 32)) * 2.0 ** -70).astype(F32)
    suby = (rng.standard_normal((3, 32, 16)) * 2.0 ** -70).astype(F32)
    with np.errstate(all="ignore"):
        yield sub, suby, (-(sub.astype(F64) @ suby.astype(F64))).astype(F32)
    xs, ys = rand((4, 32, 32), F32, 30), rand((4, 32, 32), F32, 31)
    yield xs, ys, (-(xs.astype(F64) @ ys.astype(F64))).astype(F32)        # most lanes near 0
    # zeros of both signs with a nonzero bound elsewhere; bf16 inputs; f16 acc in one chunk
    zs = rand((8, 16), F32, 32)
    zs[:4] = -0.0
    yield zs, -np.abs(rand((16, 8), F32, 33)), np.where(np.eye(8, dtype=bool), 1, -0.0).astype(F32)
    yield np.full((4, 8), -0.0, F32), np.ones((8, 4), F32), np.full((4, 4), -0.0, F32)
    yield rand((2, 16, 32), BF16, 34), rand((2, 32, 16), BF16, 35), rand((2, 16, 16), F32, 36)
    yield rand((16, 16), F16, 37), rand((16, 16), F16, 38), rand((16, 16), F16, 39, 100.0)
    yield rand((64, 64, 32), F32, 40), rand((64, 32, 64), F32, 41), rand((64, 64, 64), F32, 42)


@pytest.mark.parametrize("case", range(16))
def test_fast_matmul_matches_definition(case):  # R-MM-2/3: documented numerics, bitwise
    from cutile.interp import numerics as N

    x, y, acc = list(_adversarial_cases())[case]
    with np.errstate(all="ignore"):
        got = N.matmul(x, y, acc, ct.float16 if acc.dtype == F16 else ct.float32)
        exp = definition(x, y, acc)
    assert same(got, exp)


def _factored_patterns(u, v):
    """(ix, iy) pairings of U distinct x tiles with V distinct y tiles: batch order with
    x fastest (the one-GEMM layout), y fastest, shuffled, and more products than pairs."""
    j = np.arange(u * v)
    perm = np.random.default_rng(u * 7 + v).permutation(u * v)
    yield j % u, j // u
    yield j // v, j % v
    yield (j % u)[perm], (j // u)[perm]
    yield np.r_[j % u, 0, u - 1], np.r_[j // u, v - 1, 0]


@pytest.mark.parametrize("case", range(16))
def test_factored_matmul_matches_definition(case):  # R-MM-2/3: the batched mma's GEMM path
    """``matmul_factored`` (the batched mma over the distinct tiles of a batch, one GEMM)
    gives ``matmul``'s bits for the gathered operands, or declines (None)."""
    from cutile.interp import matmul_numerics as MN

    x, y, acc = list(_adversarial_cases())[case]
    xs, ys = x.reshape((-1,) + x.shape[-2:])[:2], y.reshape((-1,) + y.shape[-2:])[:2]
    xs = np.concatenate([xs, xs[:1, ::-1]])         # two or three distinct tiles each
    ys = np.concatenate([ys[:1, :, ::-1], ys])
    accs = acc.reshape((-1,) + acc.shape[-2:])
    dtype = ct.float16 if acc.dtype == F16 else ct.float32
    for ix, iy in _factored_patterns(len(xs), len(ys)):
        c = np.ascontiguousarray(accs[np.arange(len(ix)) % len(accs)])
        with np.errstate(all="ignore"):
            got = MN.matmul_factored(xs, ix, ys, iy, c, dtype)
            exp = definition(xs[ix], ys[iy], c)
        assert got is None or same(got, exp)


def test_factored_matmul_takes_its_path():  # the batched mma's GEMM path is really used
    from cutile.interp import matmul_numerics as MN

    xs, ys = rand((3, 16, 32), F32, 50), rand((4, 32, 8), F32, 51)
    for ix, iy in _factored_patterns(3, 4):
        c = rand((len(ix), 16, 8), F32, 52)
        got = MN.matmul_factored(xs, ix, ys, iy, c, ct.float32)
        assert got is not None and same(got, definition(xs[ix], ys[iy], c))
    j = np.arange(6)
    assert MN.matmul_factored(xs, j % 3, ys, j % 4, c[:6], ct.float32) is None  # 12 pairs > 6


def _chain_steps():
    """(name, (x, y) K steps of an ``acc = mma(x, y, acc)`` chain): mixed signs over many
    steps (the noted bound, a sum of K amax bmax, grows far past |acc|), K = 4096 steps,
    results cancelling
    to near 0, subnormal inputs, sums on float32 midpoints (ties) and just off them, and
    float16 into a float16 accumulator near its largest value (no bound is noted there)."""
    rng = np.random.default_rng(60)
    yield "mixed", [(rand((3, 8, 32), F32, 61 + s), rand((3, 32, 8), F32, 91 + s))
                    for s in range(24)]
    x = rand((2, 8, 16), F32, 62)
    yield "cancel", [(x, np.ones((2, 16, 8), F32)), (x, -np.ones((2, 16, 8), F32))] * 6
    yield "subnormal", [((rng.standard_normal((2, 8, 16)) * 2.0 ** -75).astype(F32),
                         (rng.standard_normal((2, 16, 8)) * 2.0 ** -75).astype(F32))
                        for _ in range(6)]
    tie = rng.integers(0, 1 << 20, (4, 16, 8)).astype(F32)
    tie[:, 0, :4] = [2.0 ** 23, 2.0 ** 23, 1.0, 0.0]
    tie[1:, 0, 3] = [2.0 ** -20, -(2.0 ** -20), 0.5]
    ty = rng.integers(0, 2, (4, 8, 16)).astype(F32)
    ty[:, :4, 0] = 1.0
    yield "ties", [(tie, ty), (tie * 0.5, ty), (-tie, ty)] * 3
    yield "long K", [(rand((2, 8, 4096), F32, 63 + s), rand((2, 4096, 8), F32, 64))
                     for s in range(3)]
    big = np.full((2, 4, 16), 14, F16)
    yield "f16", [(big, np.full((2, 16, 4), 16, F16))] * 20     # 3584 per step, then inf


@pytest.mark.parametrize("case", ["mixed", "cancel", "subnormal", "ties", "long K", "f16"])
@pytest.mark.parametrize("factored", [False, True])
def test_matmul_chain_matches_definition(case, factored):  # R-MM-2/3 over a K loop
    """An accumulator chain (``acc = mma(x, y, acc)``, the K loop) through ``matmul`` and the
    batched ``matmul_factored``: each step's acc is the previous result, whose |value|
    bound the fast path noted (``_note_bound``) instead of a pass over acc; bitwise the
    definition at every step, and the noted bound really bounds the result."""
    from cutile.interp import matmul_numerics as MN

    steps = dict(_chain_steps())[case]
    f16 = steps[0][0].dtype == F16
    dtype = ct.float16 if f16 else ct.float32
    acc = exp = np.zeros(steps[0][0].shape[:-1] + steps[0][1].shape[-1:], F16 if f16 else F32)
    with np.errstate(all="ignore"):
        for x, y in steps:
            if factored:                # every product shares y's first tile: one GEMM
                y = np.broadcast_to(y[:1], y.shape)
                got = MN.matmul_factored(x, np.arange(len(x)), y[:1], np.zeros(len(x), int),
                                         acc, dtype)
                got = MN.matmul(x, y, acc, dtype) if got is None else got
            else:
                got = MN.matmul(x, y, acc, dtype)
            exp = definition(x, y, exp)
            assert same(got, exp)
            noted = MN._acc_absmax(got)
            assert np.isnan(noted) or noted >= np.abs(got.astype(np.float64)).max()
            acc = got


def test_recycled_results_are_never_shared():  # the result pool's reuse is unobservable
    from cutile.interp import matmul_numerics as MN

    x, y, c = rand((4, 16, 32), F32, 70), rand((4, 32, 16), F32, 71), rand((4, 16, 16), F32, 72)
    first = MN.matmul(x, y, c, ct.float32)
    keep, view = first.copy(), first[1:]
    del first
    results = [MN.matmul(x * s, y, c, ct.float32) for s in (2, 3, 5, 7, 9)]
    assert same(view, keep[1:])                    # a view keeps its base out of the pool
    assert len({id(r) for r in results}) == len(results)
    for s, r in zip((2, 3, 5, 7, 9), results):
        assert same(r, definition(x * s, y, c))
    a = MN._recycled((3, 5), F32)
    held = id(a)
    b = MN._recycled((3, 5), F32)
    assert id(b) != held
    del a
    a = MN._recycled((3, 5), F32)
    assert id(a) == held                           # only the pool held it: reused
    MN._note_bound(b, 1.0)
    b.fill(7.0)                                    # (a caller's array is never noted so)
    bid = id(b)
    del b
    again = MN._recycled((3, 5), F32)
    assert id(again) == bid and MN._acc_absmax(again) != 1.0   # the note went with reuse


@pytest.mark.parametrize("count", [0, 1, 3, 8, 9, 40, 200])
def test_few_true_finds_every_flag(count):  # the near-tie search of _certified_round
    from cutile.interp import matmul_numerics as MN

    flags = np.zeros(4096, bool)
    where = np.sort(np.random.default_rng(count).choice(4096, count, replace=False))
    flags[where] = True
    got = MN._few_true(flags, 100)
    assert (got is None) if count > 100 else np.array_equal(got, where)

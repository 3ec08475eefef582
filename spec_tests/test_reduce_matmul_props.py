"""Hypothesis properties of reductions (R-RED-1..6) and matmul K-loops (R-MM-3, R-MM-7).

Integer results are bit-exact against NumPy (wrap-around sums/products do not depend on
order); float sums/products are bit-exact against the documented pairwise tree; matmul K-loops
are bit-exact against the documented per-step definition and within R-MM-7 tolerances of the
exact product.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import cutile as ct

BF16 = np.dtype(ml_dtypes.bfloat16)
F64 = np.dtype(np.float64)


from tile_harness import bits, run, tree_ref  # noqa: E402,F401

shapes = st.lists(st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=3).map(tuple)


@st.composite
def axis_choice(draw, ndim):
    """(axis argument, normalised axes): None, an int (maybe negative) or a tuple."""
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none":
        return None, tuple(range(ndim))
    if kind == "int":
        a = draw(st.integers(-ndim, ndim - 1))
        return a, (a % ndim,)
    axes = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
    signed = tuple(a - ndim if draw(st.booleans()) else a for a in axes)
    return signed, tuple(sorted(axes))


def out_shape(shape, axes, keepdims):
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


INT_DTYPES = [np.int8, np.uint8, np.int16, np.int32, np.uint32, np.int64]


@given(shape=shapes, dtype=st.sampled_from(INT_DTYPES),
       fn=st.sampled_from(["sum", "prod", "max", "min"]), keepdims=st.booleans(), data=st.data())
def test_prop_int_reductions_exact(shape, dtype, fn, keepdims, data):  # R-RED-1..3
    axis, axes = data.draw(axis_choice(len(shape)))
    info = np.iinfo(dtype)
    seed = data.draw(st.integers(0, 2**32 - 1))
    x = np.random.default_rng(seed).integers(info.min, info.max, shape, dtype=dtype,
                                             endpoint=True)
    red = getattr(ct, fn)

    def f(t):
        return red(t, axis=axis, keepdims=keepdims)

    npf = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}[fn]
    kw = {"dtype": dtype} if fn in ("sum", "prod") else {}
    exp = np.asarray(npf(x, axis=axes, keepdims=keepdims, **kw)).astype(dtype)
    got = run(f, x, out_shape(shape, axes, keepdims), dtype)
    np.testing.assert_array_equal(got, exp.reshape(got.shape))


@given(shape=shapes, dtype=st.sampled_from([np.float32, np.float16, BF16, np.float64]),
       fn=st.sampled_from(["sum", "prod", "max", "min"]), keepdims=st.booleans(), data=st.data())
def test_prop_float_reductions_documented_order(shape, dtype, fn, keepdims, data):  # R-RED-3..5
    axis, axes = data.draw(axis_choice(len(shape)))
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    scale = 2.0 ** rng.integers(-8, 8, shape) if fn != "prod" else 1.0
    x = (rng.standard_normal(shape) * scale).astype(dtype)
    red = getattr(ct, fn)

    def f(t):
        return red(t, axis, keepdims=keepdims)

    got = run(f, x, out_shape(shape, axes, keepdims), dtype)
    if fn in ("sum", "prod"):
        exp = tree_ref(x, axes, np.add if fn == "sum" else np.multiply)
        np.testing.assert_array_equal(bits(got), bits(exp.reshape(got.shape)))
    else:
        npf = np.max if fn == "max" else np.min
        exp = npf(x.astype(F64), axis=axes, keepdims=keepdims)
        np.testing.assert_array_equal(got.astype(F64), exp.reshape(got.shape))


@given(shape=shapes, dtype=st.sampled_from([np.int8, np.int32, np.float32, np.float16]),
       fn=st.sampled_from(["argmax", "argmin"]), keepdims=st.booleans(), data=st.data())
def test_prop_arg_reductions(shape, dtype, fn, keepdims, data):  # R-RED-6
    use_axis = data.draw(st.booleans())
    axis = data.draw(st.integers(-len(shape), len(shape) - 1)) if use_axis else None
    seed = data.draw(st.integers(0, 2**32 - 1))
    x = np.random.default_rng(seed).integers(-3, 4, shape).astype(dtype)   # many ties
    red = getattr(ct, fn)

    def f(t):
        return red(t, axis=axis, keepdims=keepdims)

    npf = np.argmax if fn == "argmax" else np.argmin
    if axis is None:
        exp = np.asarray(npf(x)).reshape((1,) * len(shape) if keepdims else ())
    else:
        exp = npf(x, axis=axis, keepdims=keepdims)
    got = run(f, x, exp.shape, np.int32)
    np.testing.assert_array_equal(got, exp)


# -- matmul K loops on ragged sizes -------------------------------------------------------------
@ct.kernel
def gemm(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.zeros((tm, tn), dtype=ct.float32)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        a = ct.load(A, index=(bx, k), shape=(tm, tk), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, index=(k, by), shape=(tk, tn), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bx, by), tile=acc)


@ct.kernel
def gemm_i8(A, B, C, tm: ct.Constant[int], tn: ct.Constant[int], tk: ct.Constant[int]):
    bx, by = ct.bid(0), ct.bid(1)
    acc = ct.zeros((tm, tn), dtype=ct.int32)
    for k in range(ct.num_tiles(A, axis=1, shape=(tm, tk))):
        a = ct.load(A, index=(bx, k), shape=(tm, tk), padding_mode=ct.PaddingMode.ZERO)
        b = ct.load(B, index=(k, by), shape=(tk, tn), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(a, b, acc)
    ct.store(C, index=(bx, by), tile=acc)


def step_reference(a, b, tk):
    """Per K tile: exact products summed in float64 (k ascending), + acc, rounded to f32."""
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    a64, b64 = a.astype(F64), b.astype(F64)
    for k0 in range(0, a.shape[1], tk):
        s = np.zeros(acc.shape)
        for k in range(k0, min(k0 + tk, a.shape[1])):
            s = s + a64[:, k:k + 1] * b64[k:k + 1, :]
        acc = (s + acc.astype(F64)).astype(np.float32)
    return acc


tiles = st.sampled_from([8, 16, 32])


@given(m=st.integers(1, 80), n=st.integers(1, 80), k=st.integers(1, 96), tm=tiles, tn=tiles,
       tk=tiles, dtype=st.sampled_from([np.float32, np.float16, BF16]),
       seed=st.integers(0, 2**32 - 1))
def test_prop_matmul_kloop_ragged(m, n, k, tm, tn, tk, dtype, seed):  # R-MM-3, R-MM-7
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    c = np.full((m, n), np.nan, np.float32)
    ct.launch(None, (-(-m // tm), -(-n // tn)), gemm, (a, b, c, tm, tn, tk))
    exact = a.astype(F64) @ b.astype(F64)
    np.testing.assert_allclose(c, exact, rtol=1e-5, atol=1e-5 * np.sqrt(k))
    np.testing.assert_array_equal(bits(c), bits(step_reference(a, b, tk)))


@given(m=st.integers(1, 40), n=st.integers(1, 40), k=st.integers(1, 200), tm=tiles, tn=tiles,
       tk=tiles, seed=st.integers(0, 2**32 - 1), unsigned=st.booleans())
def test_prop_matmul_int8_exact(m, n, k, tm, tn, tk, seed, unsigned):  # R-MM-2: exact ints
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, (m, k)).astype(np.int8)
    b = (rng.integers(0, 256, (k, n)).astype(np.uint8) if unsigned
         else rng.integers(-128, 128, (k, n)).astype(np.int8))
    c = np.zeros((m, n), np.int32)
    ct.launch(None, (-(-m // tm), -(-n // tn)), gemm_i8, (a, b, c, tm, tn, tk))
    np.testing.assert_array_equal(c, a.astype(np.int64) @ b.astype(np.int64))

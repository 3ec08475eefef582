"""Reductions through whole kernels (§13, R-RED-1..7): axes, keepdims, dtypes, NaN vectors,
arg-reductions, rounding modes, flush-to-zero and the documented pairwise combine order."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import cutile as ct
from cutile.interp import numerics as N

BF16 = np.dtype(ml_dtypes.bfloat16)
F8 = np.dtype(ml_dtypes.float8_e4m3fn)
RM = ct.RoundingMode


from tile_harness import bits, make1, run, same, tree_ref  # noqa: E402,F401

ARANGE24 = np.arange(24, dtype=np.int32)


# -- R-RED-1 / R-RED-2: axes and keepdims -------------------------------------------------------
@pytest.mark.parametrize("axis", [None, 0, 1, 2, -1, -3, (2, 1), (-1, -2), (0, 2), (0, 1, 2),
                                  (1,)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_sum_axes_keepdims(axis, keepdims):  # R-RED-1, R-RED-2
    x = np.random.default_rng(1).integers(-50, 50, (2, 4, 8)).astype(np.int32)

    def f(t):
        return ct.sum(t, axis, keepdims=keepdims)

    exp = np.sum(x, axis=axis, keepdims=keepdims, dtype=np.int32)
    got = run(f, x, exp.shape, np.int32)
    np.testing.assert_array_equal(got, exp)


def test_keepdims_default_false_and_positional_axis():  # R-RED-2
    x = np.arange(8, dtype=np.int32).reshape(2, 4)

    def pos(t):
        return ct.sum(t, 1)

    def kw(t):
        return ct.sum(t, axis=1, keepdims=False)

    def all_kd(t):
        return ct.sum(t, keepdims=True)

    np.testing.assert_array_equal(run(pos, x, (2,), np.int32), [6, 22])
    np.testing.assert_array_equal(run(kw, x, (2,), np.int32), [6, 22])
    np.testing.assert_array_equal(run(all_kd, x, (1, 1), np.int32), [[28]])


@pytest.mark.parametrize("fn", ["prod", "max", "min"])
@pytest.mark.parametrize("axis", [None, 1, (0, 2), -2])
def test_prod_max_min_axes(fn, axis):  # R-RED-1, R-RED-3 (integers are bit-exact)
    x = np.random.default_rng(2).integers(-3, 4, (2, 4, 4)).astype(np.int16)
    red = getattr(ct, fn)

    def f(t):
        return red(t, axis=axis)

    npf = {"prod": np.prod, "max": np.max, "min": np.min}[fn]
    kw = {"dtype": np.int16} if fn == "prod" else {}
    exp = np.asarray(npf(x, axis=axis, **kw))
    got = run(f, x, exp.shape, np.int16)
    np.testing.assert_array_equal(got, exp)


def _launch_err(fn, x):
    k = make1(fn, x.shape, ())
    ct.launch(None, (1,), k, (x, np.zeros(1, np.int32), np.zeros(1, np.int32)))


def test_axis_errors():  # R-RED-1
    x = np.zeros((2, 4, 8), np.int32)

    def rep(t):
        return ct.sum(t, (1, 1))

    def rep_neg(t):
        return ct.sum(t, (1, -2))

    def out_of_range(t):
        return ct.max(t, 3)

    def arg_tuple(t):
        return ct.argmax(t, (0, 1))

    def runtime_axis(t):
        return ct.sum(t, ct.bid(0))

    with pytest.raises(ct.TileTypeError, match="Repeated reduction axis 1"):
        _launch_err(rep, x)
    with pytest.raises(ct.TileTypeError, match="Repeated reduction axis 1"):
        _launch_err(rep_neg, x)
    with pytest.raises(ct.TileTypeError, match="out of range"):
        _launch_err(out_of_range, x)
    with pytest.raises(ct.TileTypeError, match="integer constant or None"):
        _launch_err(arg_tuple, x)
    with pytest.raises(ct.TileTypeError, match="Expected an integer constant"):
        _launch_err(runtime_axis, x)


def test_keepdims_must_be_constant_bool():  # R-RED-2
    x = np.zeros((4,), np.int32)

    def runtime(t):
        return ct.sum(t, 0, keepdims=ct.bid(0) == 0)

    def integer(t):
        return ct.sum(t, 0, keepdims=1)

    for f in (runtime, integer):
        with pytest.raises(ct.TileTypeError, match="Expected a boolean constant"):
            _launch_err(f, x)


# -- R-RED-3: result dtypes ---------------------------------------------------------------------
def test_int8_sum_wraps_without_widening():  # R-RED-3
    x = np.full(64, 4, np.int8)

    def f(t):
        return ct.sum(t)

    assert run(f, x, (), np.int8) == 0        # 256 wraps to 0 in int8
    y = np.arange(-64, 64, dtype=np.int8).reshape(2, 64)
    got = run(f, y, (), np.int8)
    assert got == np.sum(y, dtype=np.int8)


def test_prod_wraps_unsigned():  # R-RED-3
    x = np.full((4, 4), 3, np.uint8)

    def f(t):
        return ct.prod(t, axis=1)

    np.testing.assert_array_equal(run(f, x, (4,), np.uint8), np.full(4, 81, np.uint8))

    def g(t):
        return ct.prod(t)

    assert run(g, x, (), np.uint8) == np.prod(x, dtype=np.uint8)


def test_float16_sum_stays_float16():  # R-RED-3, R-RED-4
    h = np.array([2048, 1, 1, 1], np.float16)

    def f(t):
        return ct.sum(t)

    got = run(f, h, (), np.float16)
    # half sums accumulate in float32 (as cuda.tile 1.7 does): 2051 rounds to 2052 in f16
    assert got == np.float16(2052) == tree_ref(h, (0,), np.add)[0]


@pytest.mark.parametrize("fn", ["sum", "prod", "max", "min"])
def test_bool_reductions_are_int32(fn):  # R-RED-3
    x = np.array([[True, False, True, True], [False, False, False, False]])
    red = getattr(ct, fn)

    def f(t):
        return red(t, axis=1)

    exp = {"sum": [3, 0], "prod": [0, 0], "max": [1, 0], "min": [0, 0]}[fn]
    np.testing.assert_array_equal(run(f, x, (2,), np.int32), exp)


def test_bfloat16_and_float64_keep_dtype():  # R-RED-3
    xb = np.array([1.5, 2.25, -4, 8], BF16)
    xd = np.array([1e300, 1e300, -1e300, 1.0])

    def s(t):
        return ct.sum(t)

    def m(t):
        return ct.max(t)

    assert same(run(s, xb, (), BF16), tree_ref(xb.astype(np.float32), (0,), np.add)[0]
                .astype(BF16))
    assert run(m, xb, (), BF16) == 8
    assert run(s, xd, (), np.float64) == (1e300 + 1e300) + (-1e300 + 1.0)


@pytest.mark.parametrize("fn", ["sum", "prod", "max", "min", "argmax", "argmin"])
def test_restricted_float_rejected(fn):  # R-RED-3, R-DTYPE-3
    x = np.zeros(8, F8)
    red = getattr(ct, fn)

    def f(t):
        return red(t)

    with pytest.raises(ct.TileTypeError,
                       match="Non-arithmetic dtype float8_e4m3fn is unsupported for reduction"):
        _launch_err(f, x)


def test_tfloat32_rejected():  # R-RED-3
    x = np.zeros(8, np.float32)

    def f(t):
        return ct.sum(t.astype(ct.tfloat32))

    with pytest.raises(ct.TileTypeError, match="Non-arithmetic dtype tfloat32"):
        _launch_err(f, x)


# -- R-RED-4: identities (only visible where an axis is padded; interpreter level) -------------
def test_identities_pad_non_power_of_two_axes():  # R-RED-4
    i8 = np.array([-128, -128, -128], np.int8)
    assert N.reduce("max", i8, (0,), ct.int8).tolist() == [-128]
    u8 = np.array([255, 255, 255], np.uint8)
    assert N.reduce("min", u8, (0,), ct.uint8).tolist() == [255]
    f = np.array([-np.inf] * 3, np.float32)
    assert N.reduce("max", f, (0,), ct.float32).tolist() == [-np.inf]
    assert N.reduce("min", -f, (0,), ct.float32).tolist() == [np.inf]
    assert N.reduce("sum", np.array([1, 2, 3], np.int32), (0,), ct.int32).tolist() == [6]
    assert N.reduce("prod", np.array([2, 3, 5], np.int32), (0,), ct.int32).tolist() == [30]
    assert N._identity("max", ct.int16) == -32768 and N._identity("min", ct.uint32) == 2**32 - 1


def test_length_one_axis_is_identity_op():  # R-RED-4
    x = np.array([[1.5], [-0.0], [np.nan], [3.0]], np.float32)

    def f(t):
        return ct.sum(t, axis=1)

    assert same(run(f, x, (4,), np.float32), x[:, 0])


# -- R-RED-5: NaN handling of max/min -----------------------------------------------------------
NAN_ROWS = np.array([[3, np.inf, np.nan, 1.5, 5, -2, 2, 6], [np.nan] * 8], np.float32)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.float64])
@pytest.mark.parametrize("propagate", [False, True])
def test_max_min_nan_vectors(dtype, propagate):  # R-RED-5
    x = NAN_ROWS.astype(dtype)

    def mx(t):
        return ct.max(t, axis=1, propagate_nan=propagate)

    def mn(t):
        return ct.min(t, axis=1, propagate_nan=propagate)

    gmax, gmin = run(mx, x, (2,), dtype), run(mn, x, (2,), dtype)
    if propagate:
        assert np.isnan(gmax.astype(np.float64)).all() and np.isnan(gmin.astype(np.float64)).all()
    else:
        assert gmax[0] == np.inf and gmin[0] == -2
        assert np.isnan(float(gmax[1])) and np.isnan(float(gmin[1]))


def test_propagate_nan_must_be_constant():  # R-RED-5
    x = np.zeros(4, np.float32)

    def f(t):
        return ct.max(t, propagate_nan=ct.bid(0) == 0)

    with pytest.raises(ct.TileTypeError, match="boolean constant"):
        _launch_err(f, x)


# -- R-RED-6: argmax / argmin -------------------------------------------------------------------
def test_argmax_ties_first_index():  # R-RED-6
    x = np.array([0, 0, 0, 0, 1, 1, 1, 1], np.int32)

    def amax(t):
        return ct.argmax(t)

    def amin(t):
        return ct.argmin(t, 0)

    assert run(amax, x, (), np.int32) == 4
    assert run(amin, x, (), np.int32) == 0
    assert run(amax, x[::-1].copy(), (), np.int32) == 0


@pytest.mark.parametrize("propagate", [False, True])
def test_arg_nan_vectors(propagate):  # R-RED-6
    v = np.array([np.nan, np.nan, 7, 1, np.nan, 8, np.nan, 0.5], np.float32)

    def amax(t):
        return ct.argmax(t, propagate_nan=propagate)

    def amin(t):
        return ct.argmin(t, propagate_nan=propagate)

    assert run(amax, v, (), np.int32) == (0 if propagate else 5)
    assert run(amin, v, (), np.int32) == (0 if propagate else 7)
    allnan = np.full(8, np.nan, np.float32)
    assert run(amax, allnan, (), np.int32) == 0


@pytest.mark.parametrize("keepdims", [False, True])
def test_arg_axis_none_flat_index_and_keepdims(keepdims):  # R-RED-6
    m = np.array([[1, 9, 9, 0], [7, 2, 9, -5]], np.int8)

    def amax(t):
        return ct.argmax(t, keepdims=keepdims)

    def amin(t):
        return ct.argmin(t, keepdims=keepdims)

    shape = (1, 1) if keepdims else ()
    assert run(amax, m, shape, np.int32).reshape(()) == 1     # first 9, row-major
    assert run(amin, m, shape, np.int32).reshape(()) == 7


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_arg_along_axis(axis, keepdims):  # R-RED-6
    x = np.random.default_rng(3).integers(-4, 4, (2, 4, 8)).astype(np.int32)

    def amax(t):
        return ct.argmax(t, axis, keepdims=keepdims)

    def amin(t):
        return ct.argmin(t, axis=axis, keepdims=keepdims)

    emax = np.argmax(x, axis=axis, keepdims=keepdims).astype(np.int32)
    emin = np.argmin(x, axis=axis, keepdims=keepdims).astype(np.int32)
    np.testing.assert_array_equal(run(amax, x, emax.shape, np.int32), emax)
    np.testing.assert_array_equal(run(amin, x, emin.shape, np.int32), emin)


def test_arg_bool_and_float16():  # R-RED-3, R-RED-6
    b = np.array([False, False, True, True])
    h = np.array([1, -0.0, 0.0, -3], np.float16)

    def amax(t):
        return ct.argmax(t)

    def amin(t):
        return ct.argmin(t)

    assert run(amax, b, (), np.int32) == 2
    assert run(amin, h, (), np.int32) == 3
    assert run(amin, h[:3].repeat(1)[[1, 2, 0, 0]].copy(), (), np.int32) == 0  # -0 ties +0


# -- R-RED-7: rounding_mode and flush_to_zero --------------------------------------------------
def _sum_with(mode):
    def f(t):
        return ct.sum(t, rounding_mode=mode)

    return f


def _prod_with(mode):
    def f(t):
        return ct.prod(t, rounding_mode=mode)

    return f


@pytest.mark.parametrize("mode, up", [(RM.RN, True), (RM.RZ, False), (RM.RM, False),
                                      (RM.RP, True), (None, True)])
def test_sum_rounding_modes(mode, up):  # R-RED-7
    x = np.array([1.0, 3 * 2.0**-25], np.float32)   # exact 1 + 0.75 ulp
    got = run(_sum_with(mode), x, (), np.float32)
    assert got == (np.float32(1 + 2.0**-23) if up else np.float32(1.0))
    neg = run(_sum_with(mode), -x, (), np.float32)   # mirrored: RM rounds away, RZ/RP toward 0
    away = mode in (RM.RN, RM.RM, None)
    assert neg == (np.float32(-1 - 2.0**-23) if away else np.float32(-1.0))


@pytest.mark.parametrize("mode, exp", [(RM.RN, 1 + 2.0**-22), (RM.RZ, 1 + 2.0**-22),
                                       (RM.RP, 1 + 2.0**-22 + 2.0**-23)])
def test_prod_rounding_modes(mode, exp):  # R-RED-7
    x = np.array([1 + 2.0**-23, 1 + 2.0**-23], np.float32)  # exact 1 + 2^-22 + 2^-46
    assert run(_prod_with(mode), x, (), np.float32) == np.float32(exp)


@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float64])
def test_rounding_mode_other_floats(dtype):  # R-RED-7
    x = np.array([1, 2, 3, 4], dtype)
    assert run(_sum_with(RM.RZ), x, (), dtype) == 10


@pytest.mark.parametrize("mode", [RM.FULL, RM.APPROX, RM.RZI, RM.RA])
def test_rounding_mode_unsupported(mode):  # R-RED-7
    with pytest.raises(ct.TileTypeError, match=r"Rounding mode .* is not supported"):
        _launch_err(_sum_with(mode), np.zeros(4, np.float32))


def test_rounding_mode_int_rejected():  # R-RED-7
    msg = "Rounding mode can only be used for unrestricted float types"
    with pytest.raises(ct.TileTypeError, match=msg):
        _launch_err(_sum_with(RM.RZ), np.zeros(4, np.int32))
    with pytest.raises(ct.TileTypeError, match=msg):
        _launch_err(_prod_with(RM.RN), np.zeros(4, np.bool_))


def test_rounding_mode_none_on_int_is_fine():  # R-RED-7: None is the default
    assert run(_sum_with(None), np.arange(4, dtype=np.int32), (), np.int32) == 6


def test_flush_to_zero():  # R-RED-7
    sub = np.float32(2.0**-130)
    x = np.array([sub, sub, sub, sub], np.float32)

    def plain(t):
        return ct.sum(t)

    def ftz(t):
        return ct.sum(t, flush_to_zero=True)

    def ftz_max(t):
        return ct.max(t, flush_to_zero=True)

    def ftz_one(t):
        return ct.min(t, axis=1, flush_to_zero=True)

    assert run(plain, x, (), np.float32) == 4 * sub
    assert same(run(ftz, x, (), np.float32), np.float32(0.0))
    assert same(run(ftz_max, np.array([-1, -sub], np.float32), (), np.float32), np.float32(-0.0))
    assert same(run(ftz_one, -x.reshape(4, 1), (4,), np.float32), np.full(4, -0.0, np.float32))


@pytest.mark.parametrize("dtype", [np.float16, np.float64, np.int32, BF16])
def test_flush_to_zero_only_float32(dtype):  # R-RED-7
    def f(t):
        return ct.sum(t, flush_to_zero=True)

    with pytest.raises(ct.TileTypeError, match="Flush to zero can only be used for float32 type"):
        _launch_err(f, np.zeros(4, dtype))


def test_unknown_keyword_rejected():  # R-RED-7 signatures, R-PY-14
    def f(t):
        return ct.max(t, rounding_mode=RM.RZ)

    def g(t):
        return ct.argmax(t, 0, False)

    with pytest.raises(ct.TileTypeError, match=r"max\(\): .*rounding_mode"):
        _launch_err(f, np.zeros(4, np.float32))
    with pytest.raises(ct.TileTypeError, match=r"argmax\(\): "):   # keepdims is keyword-only
        _launch_err(g, np.zeros(4, np.float32))


# -- combine order (numerics.reduce docstring) --------------------------------------------------
def test_documented_pairwise_order_float32():  # R-RED-4: order is unspecified; ours is pinned
    x = np.array([2.0**24, 1.0, -(2.0**24), 1.0, 3.0, 2.0**-30, 0.5, -3.0], np.float32)

    def f(t):
        return ct.sum(t)

    got = run(f, x, (), np.float32)
    exp = tree_ref(x, (0,), np.add)[0]
    seq = np.float32(0)
    for v in x:
        seq = np.float32(seq + v)
    assert same(got, exp) and got != seq      # order matters for these inputs


def test_documented_order_last_axis_first():  # order: axes in descending order
    y = np.array([[1.0, 2.0**24], [1.0, -(2.0**24)]], np.float32)

    def both(t):
        return ct.sum(t, (0, 1))

    def both_rev(t):
        return ct.sum(t, (1, 0))

    # axis 1 first: [2^24, -2^24 + 1] then 2^24 + (1 - 2^24) = 1; axis 0 first would give 0
    assert run(both, y, (), np.float32) == run(both_rev, y, (), np.float32) == 1.0
    assert tree_ref(y, (0, 1), np.add).reshape(()) == 1.0


def _sum_over(axes):
    def f(t):
        return ct.sum(t, axes)

    return f


def test_documented_order_random_float32():  # R-RED-4: tree order on random data, bitwise
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((4, 8, 16)) * 2.0 ** rng.integers(-20, 20, (4, 8, 16)))
    x = x.astype(np.float32)
    for axes in [(2,), (0, 2), (1,), (0, 1, 2)]:
        exp = tree_ref(x, axes, np.add)
        exp = exp.reshape([d for i, d in enumerate(x.shape) if i not in axes])
        assert same(run(_sum_over(axes), x, exp.shape, np.float32), exp), axes

    def p(t):
        return ct.prod(t, 1)

    exp = tree_ref(x, (1,), np.multiply)[:, 0, :]
    assert same(run(p, x, exp.shape, np.float32), exp)


def test_scalar_reduction_is_identity():  # R-RED-1: a 0-D tile has no axes
    def f(t):
        return ct.sum(ct.reshape(t, ()))

    def g(t):
        return ct.argmax(ct.reshape(t, ()))

    assert run(f, np.array([5], np.int8), (), np.int8) == 5
    assert run(g, np.array([5], np.int8), (), np.int32) == 0


# -- R-RED-8 / R-RED-9: reduce with a user combiner ----------------------------------------------
def test_reduce_user_combiner_axes_keepdims():  # R-RED-8, R-RED-2
    x = np.random.default_rng(11).integers(-50, 50, (2, 4, 8)).astype(np.int32)
    for axis in (0, 1, 2, -1):
        got = run(lambda t, ax=axis: ct.reduce(t, ax, lambda a, b: ct.maximum(a, b), -2 ** 31),
                  x, np.max(x, axis).shape)
        np.testing.assert_array_equal(got, np.max(x, axis))
    got = run(lambda t: ct.reduce(t, 1, lambda a, b: a + b, 0, keepdims=True), x, (2, 1, 8))
    np.testing.assert_array_equal(got, np.sum(x, 1, keepdims=True))


def test_reduce_operator_and_ct_function():  # R-RED-8 (func kinds)
    import operator

    @ct.function
    def mul(a, b):
        return a * b

    x = np.arange(1, 9, dtype=np.int64)
    assert run(lambda t: ct.reduce(t, 0, operator.add, 0), x, ()) == 36
    assert run(lambda t: ct.reduce(t, 0, mul, 1), x, ()) == 40320


def test_reduce_order_is_the_sum_tree():  # R-RED-8 (cutile: pairwise tree, lower half left)
    x = np.array([1, 2, 3, 4, 5, 6, 7, 8], np.int64)
    got = run(lambda t: ct.reduce(t, 0, lambda a, b: a * 10 + b, 0), x, ())
    ref = tree_ref(x, (0,), lambda a, b: a * 10 + b)
    assert got == ref.item()
    f = np.array([1e8, 1.0, -1e8, 1.0, 3.0, 1e-3, 7e7, -0.5], np.float32)
    got = run(lambda t: ct.reduce(t, 0, lambda a, b: a + b, 0.0), f, ())
    assert same(got, tree_ref(f, (0,), np.add).reshape(()))


def test_reduce_tuple_argmax():  # R-RED-8: tuple operands and results
    x = np.array([[3, 9, 2, 9], [-1, -5, -1, 0]], np.float32)

    def f(t):
        idx = ct.broadcast_to(ct.arange(4, dtype=ct.int32), (2, 4))
        v, i = ct.reduce((t, idx), 1,
                         lambda a, i, b, j: (ct.where(b > a, b, a),
                                             ct.where((b > a) | ((b == a) & (j < i)), j, i)),
                         (-np.inf, 0))
        return i * 100 + ct.astype(v, ct.int32)

    np.testing.assert_array_equal(run(f, x, (2,), np.int32), [109, 300])


def test_reduce_results_cast_back_and_dtype_errors():  # R-RED-8
    x = np.arange(8, dtype=np.int8)
    got = run(lambda t: ct.reduce(t, 0, lambda a, b: a + b, 0), x, ())
    assert got.dtype == np.int8 and got == 28
    with pytest.raises(ct.TileTypeError, match="returned a tile of unexpected dtype"):
        run(lambda t: ct.reduce(t, 0, lambda a, b: ct.astype(a, ct.int32) + b, 0), x, ())


def test_reduce_argument_errors():  # R-RED-1, R-RED-8
    x = np.arange(8, dtype=np.int32)
    with pytest.raises(ct.TileTypeError, match="Expected an integer constant"):
        run(lambda t: ct.reduce(t, None, lambda a, b: a + b, 0), x, ())
    with pytest.raises(ct.TileTypeError, match="Number of identity values"):
        run(lambda t: ct.reduce((t, t), 0, lambda a, b, c, d: (a + c, b + d), 0), x, ())
    with pytest.raises(ct.TileTypeError, match="not broadcastable to a common shape"):
        run(lambda t: ct.reduce((t, ct.zeros((4,), ct.int32)), 0,
                                lambda a, b, c, d: (a + c, b + d), (0, 0)), x, ())


def test_reduce_body_restrictions():  # R-RED-9
    x = np.arange(8, dtype=np.int32)

    def loop(a, b):
        for i in range(ct.astype(a, ct.int32)):
            b = b + 1
        return b

    def branch(a, b):
        if a > b:
            return a
        return b

    def nested(a, b):
        return a + ct.sum(ct.full((2,), b, ct.int32))

    with pytest.raises(ct.TileSyntaxError, match="Loops inside reduction body"):
        run(lambda t: ct.reduce(t, 0, loop, 0), x, ())
    with pytest.raises(ct.TileSyntaxError, match="Branching inside reduction body"):
        run(lambda t: ct.reduce(t, 0, branch, 0), x, ())
    with pytest.raises(ct.TileSyntaxError, match="Nested scan/reduction"):
        run(lambda t: ct.reduce(t, 0, nested, 0), x, ())
    with pytest.raises(ct.TileSyntaxError, match="Branching inside scan body"):
        run(lambda t: ct.scan(t, 0, branch, 0), x, (8,))


def test_combiner_branch_refused_before_its_arms_compile():  # R-RED-9
    """A runtime branch in a combiner is refused as such, even when an arm has its own
    error (here an attribute a 0-d tile lacks): cuda.tile 1.7 reports the branch."""
    x = np.arange(8, dtype=np.int32)

    def branch(a, b):
        if ct.bid(0) == 0:
            return a + b.no_such_attribute()
        else:
            return a + b

    for op, where in ((ct.scan, "scan"), (ct.reduce, "reduction")):
        with pytest.raises(ct.TileSyntaxError, match=f"Branching inside {where} body is not "
                                                     "supported"):
            run(lambda t, op=op: op(t, 0, branch, 0), x, (8,) if op is ct.scan else ())


def test_reduce_body_memory_effect_rejected():  # R-RED-9
    @ct.kernel
    def k(X, Y):
        t = ct.load(X, (0,), (8,))
        r = ct.reduce(t, 0, lambda a, b: a + ct.load(X, (0,), (1,)).item(), 0)
        ct.store(Y, (0,), ct.reshape(r, (1,)))

    with pytest.raises(ct.TileSyntaxError, match="memory effects are not supported inside "
                                                 "reduction body"):
        ct.launch(None, (1,), k, (np.zeros(8, np.int32), np.zeros(1, np.int32)))


def test_reduce_captured_runtime_value_and_constant_if():  # R-RED-9
    x = np.arange(1, 9, dtype=np.int32)
    use_mod = True

    def f(t):
        m = ct.extract(t, (6,), ()) + 3            # 10, a runtime value

        def comb(a, b):
            if use_mod:                          # compile-time constant: fine
                return (a * b) % m
            return a * b

        return ct.reduce(t, 0, comb, 1)

    assert run(f, x, ()) == tree_ref(x, (0,), lambda a, b: (a * b) % 10).item()

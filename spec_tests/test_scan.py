"""Scans through whole kernels (§14, R-SCAN-1..3): cumsum/cumprod along each axis, reversed,
dtypes without widening, the documented sequential combination order, rounding/ftz, and
``scan`` with lambda, ``@ct.function`` and tuple combiners (body rules of R-RED-9)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from tile_harness import run, same

import cutile as ct

X24 = np.arange(8, dtype=np.int32).reshape(2, 4)


def seq_scan(x, axis, op, reverse=False):
    """The documented order, re-implemented: out[i] = out[i-1] op x[i] (reversed:
    out[i] = x[i] op out[i+1]), each step rounded to x's dtype."""
    a = np.moveaxis(np.array(x), axis, 0).copy()
    order = range(a.shape[0] - 2, -1, -1) if reverse else range(1, a.shape[0])
    with np.errstate(all="ignore"):
        for i in order:
            a[i] = op(a[i], a[i + 1]) if reverse else op(a[i - 1], a[i])
    return np.moveaxis(a, 0, axis)


def test_cumsum_spec_examples():  # R-SCAN-1
    np.testing.assert_array_equal(run(lambda t: ct.cumsum(t, 1), X24, (2, 4)),
                                  [[0, 1, 3, 6], [4, 9, 15, 22]])
    np.testing.assert_array_equal(run(lambda t: ct.cumsum(t, 1, reverse=True), X24, (2, 4)),
                                  [[6, 6, 5, 3], [22, 18, 13, 7]])
    np.testing.assert_array_equal(run(lambda t: ct.cumprod(t * 0 + 2, -1), X24, (2, 4)),
                                  [[2, 4, 8, 16]] * 2)


def test_cumsum_default_axis_is_zero():  # R-SCAN-1
    np.testing.assert_array_equal(run(lambda t: ct.cumsum(t), X24, (2, 4)),
                                  np.cumsum(X24, axis=0))


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("fn", ["cumsum", "cumprod"])
def test_each_axis_3d(axis, reverse, fn):  # R-SCAN-1
    x = np.random.default_rng(axis + 7).integers(-3, 4, (2, 4, 8)).astype(np.int32)
    npf = np.cumsum if fn == "cumsum" else np.cumprod
    ref = np.flip(npf(np.flip(x, axis), axis=axis), axis) if reverse else npf(x, axis=axis)
    op = getattr(ct, fn)
    got = run(lambda t: op(t, axis, reverse=reverse), x, x.shape)
    np.testing.assert_array_equal(got, ref.astype(np.int32))


def test_integer_wraps_without_widening():  # R-SCAN-2
    x = np.full(8, 100, np.int8)
    got = run(lambda t: ct.cumsum(t), x, (8,))
    np.testing.assert_array_equal(got, (np.arange(1, 9) * 100).astype(np.int8))


def test_bool_scans_as_int32():  # R-SCAN-2
    x = np.array([1, 0, 1, 1], np.int32)
    np.testing.assert_array_equal(run(lambda t: ct.cumsum(t > 0), x, (4,), np.int32),
                                  [1, 1, 2, 3])


def test_restricted_dtype_rejected():  # R-SCAN-2
    with pytest.raises(ct.TileTypeError, match="Non-arithmetic dtype float8_e4m3fn"):
        run(lambda t: ct.cumsum(t.astype(ct.float8_e4m3fn)), np.zeros(4, np.float32), (4,))


def test_float32_order_is_sequential():  # R-SCAN-1 (cutile: documented order)
    x = np.array([1e8, 1.0, -1e8, 1.0, 3.0, 1e-3, 7e7, -0.5], np.float32)
    got = run(lambda t: ct.cumsum(t), x, (8,))
    assert same(got, seq_scan(x, 0, np.add))
    got = run(lambda t: ct.cumsum(t, reverse=True), x, (8,))
    assert same(got, seq_scan(x, 0, np.add, reverse=True))


def test_half_precision_accumulates_in_float32():  # R-SCAN-2 (cutile: as sum, R-RED-3)
    x = np.array([2048, 1, 1, 1, 1, 1, 1, 1], np.float16)
    got = run(lambda t: ct.cumsum(t), x, (8,))
    ref = np.cumsum(x.astype(np.float32)).astype(np.float16)   # exact in float32 here
    assert same(got, ref)
    bf = x.astype(ml_dtypes.bfloat16)
    assert same(run(lambda t: ct.cumsum(t), bf, (8,)),
                np.cumsum(bf.astype(np.float32)).astype(ml_dtypes.bfloat16))


def test_rounding_mode_and_ftz():  # R-SCAN-2 (R-RED-7 rules)
    x = np.array([1.0, 2 ** -24, 2 ** -24, 2 ** -24], np.float32)
    rz = run(lambda t: ct.cumsum(t, rounding_mode=ct.RoundingMode.RZ), x, (4,))
    rp = run(lambda t: ct.cumsum(t, rounding_mode=ct.RoundingMode.RP), x, (4,))
    assert list(rz) == [1.0] * 4
    assert rp[1] == np.nextafter(np.float32(1), np.float32(2))
    tiny = np.array([1e-40, 1e-40, 1.0, 1e-40], np.float32)
    got = run(lambda t: ct.cumsum(t, flush_to_zero=True), tiny, (4,))
    assert list(got) == [0.0, 0.0, 1.0, 1.0]
    with pytest.raises(ct.TileTypeError, match="Flush to zero can only be used for float32"):
        run(lambda t: ct.cumsum(t, flush_to_zero=True), x.astype(np.float64), (4,))


def test_axis_must_be_constant_int():  # R-SCAN-1
    with pytest.raises(ct.TileTypeError, match="Expected an integer constant, but given value "
                                               "has type None"):
        run(lambda t: ct.cumsum(t, None), X24, (2, 4))
    with pytest.raises(ct.TileTypeError, match="out of range"):
        run(lambda t: ct.cumsum(t, 2), X24, (2, 4))


# -- R-SCAN-3: scan with a user combiner ----------------------------------------------------------
@ct.function
def _affine(a, b):
    return a * 2 + b


def test_scan_lambda_function_and_op():  # R-SCAN-3
    x = np.arange(8, dtype=np.int32).reshape(2, 4)
    np.testing.assert_array_equal(run(lambda t: ct.scan(t, 1, lambda a, b: a + b, 0), x, (2, 4)),
                                  np.cumsum(x, 1))
    np.testing.assert_array_equal(run(lambda t: ct.scan(t, 1, _affine, 0), x, (2, 4)),
                                  seq_scan(x, 1, lambda a, b: a * 2 + b))
    np.testing.assert_array_equal(run(lambda t: ct.scan(t, 0, ct.maximum, 0, reverse=True),
                                      x[:, ::-1].copy(), (2, 4)),
                                  np.maximum.accumulate(x[::-1, ::-1], 0)[::-1])


def test_scan_is_ordered_not_commutative():  # R-SCAN-3 (cutile: func(out[i-1], x[i]))
    x = np.array([1, 2, 3, 4], np.int32)
    got = run(lambda t: ct.scan(t, 0, lambda a, b: a * 10 + b, 0), x, (4,))
    np.testing.assert_array_equal(got, [1, 12, 123, 1234])
    rev = run(lambda t: ct.scan(t, 0, lambda a, b: a * 10 + b, 0, reverse=True), x, (4,))
    # out[i] = func(x[i], out[i+1])
    np.testing.assert_array_equal(rev, [1 * 10 + 54, 2 * 10 + 34, 3 * 10 + 4, 4])


def test_scan_tuple_combiner():  # R-SCAN-3: a running (max, argmax) pair
    x = np.array([3, 1, 7, 7, 2, 9, 0, 9], np.float32)

    def f(t):
        idx = ct.arange(8, dtype=ct.int32)
        m, i = ct.scan((t, idx), 0, lambda a, i, b, j: (ct.where(b > a, b, a),
                                                        ct.where(b > a, j, i)), (0.0, 0))
        return i

    np.testing.assert_array_equal(run(f, x, (8,), np.int32), [0, 0, 2, 2, 2, 5, 5, 5])


def test_scan_tuple_broadcasts_inputs_and_casts_results():  # R-SCAN-3 (R-RED-8 conventions)
    x = np.arange(8, dtype=np.int16).reshape(2, 4)

    def f(t):
        s, c = ct.scan((t, ct.int16(1)), 1, lambda a, n, b, m: (a + b, n + m), (0, 0))
        return s * 100 + c

    np.testing.assert_array_equal(run(f, x, (2, 4)), np.cumsum(x, 1) * 100 + np.arange(1, 5))


def test_scan_captured_runtime_value():  # R-RED-9: captured runtime values are allowed
    x = np.arange(1, 9, dtype=np.int32)

    def f(t):
        m = ct.extract(t, (6,), ()) + 3            # 10, a runtime value
        return ct.scan(t, 0, lambda a, b: (a * b) % m, 1)

    np.testing.assert_array_equal(run(f, x, (8,)), seq_scan(x, 0, lambda a, b: (a * b) % 10))


@pytest.mark.parametrize("fn,match", [
    (lambda a, b: (a, b), "must return tiles"),
    (lambda a, b: a + 1.5, "returned a tile of unexpected dtype float32"),
    (lambda a, b: ct.full((2,), 1, ct.int32), "must return a 0-d tile"),
], ids=["tuple", "wider", "not-0d"])
def test_scan_body_result_errors(fn, match):  # R-RED-8 conventions for scan
    with pytest.raises((ct.TileTypeError, ct.TileSyntaxError), match=match):
        run(lambda t: ct.scan(t, 0, fn, 0), np.zeros(4, np.int32), (4,))


def test_scan_identity_count():  # R-RED-8 conventions for scan
    with pytest.raises(ct.TileTypeError, match="Number of identity values"):
        run(lambda t: ct.scan((t, t), 0, lambda a, b, c, d: (a, b), (0,)), np.zeros(4, np.int32),
            (4,))

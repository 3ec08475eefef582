"""R-DTYPE-1/3/5, R-CONST-4, R-ASTYPE-2 for float8_e5m3fnu: unsigned, 5 exponent bits (bias
15), 3 mantissa bits, subnormals, no infinities, NaN = 0xFF (cuda.tile 1.7's float spec).
cutile stores its values as bytes (``cutile.dtypes.E5M3_NP``); expected values here come from
the format's definition, computed independently with Python integers and floats."""

from __future__ import annotations

import math
import os

import ml_dtypes
import numpy as np
import pytest
from spec_executor import test_backend

import cutile as ct
from cutile import dtypes as dt

E = dt.E5M3_NP


def value_of(byte: int) -> float:
    """The format's definition, by hand."""
    if byte == 0xFF:
        return math.nan
    field, mant = byte >> 3, byte & 7
    if field == 0:
        return mant * 2.0 ** -17
    return (1 + mant / 8) * 2.0 ** (field - 15)


FINITE = np.array([value_of(b) for b in range(255)])


def nearest_even(x: float) -> float:
    """Round a non-negative finite x to the nearest finite value, ties to the even code,
    saturating above the largest (the GPU's .satfinite)."""
    if x >= FINITE[-1]:
        return FINITE[-1]
    i = int(np.searchsorted(FINITE, x))
    if FINITE[i] == x:
        return x
    lo, hi = FINITE[i - 1], FINITE[i]
    if x - lo != hi - x:
        return lo if x - lo < hi - x else hi
    return lo if (i - 1) % 2 == 0 else hi


def test_decode_encode_every_code_R_DTYPE_5():
    codes = np.arange(256, dtype=np.uint8)
    got = dt.e5m3_decode(codes)
    want = np.array([value_of(int(b)) for b in codes])
    np.testing.assert_array_equal(got, want)
    assert FINITE[-1] == 114688.0 and FINITE[1] == 2.0 ** -17
    back = dt.e5m3_encode(want[:255], satfinite=False).view(np.uint8)
    np.testing.assert_array_equal(back, codes[:255])


@ct.kernel
def to_e5m3(x, y, z):
    e = ct.load(x, (0,), (32,)).astype(ct.float8_e5m3fnu)
    ct.store(y, (0,), e)
    ct.store(z, (0,), ct.load(y, (0,), (32,)).astype(ct.float32))


def test_astype_rounds_to_nearest_even_and_saturates_R_ASTYPE_2():
    rng = np.random.default_rng(5)
    x = (np.abs(rng.standard_normal(32)) * 2.0 ** rng.integers(-19, 18, 32)).astype(np.float32)
    x[:6] = [0.0, 100.0, 118784.0, 1e9, np.inf, 2.0 ** -18]     # tie, overflow, tiny tie
    x[6:9] = [-1.0, -np.inf, np.nan]                            # below the range, NaN
    y, z = np.zeros(32, E), np.zeros(32, np.float32)
    ct.launch(None, (1,), to_e5m3, (x, y, z))
    want = np.array([math.nan if math.isnan(v) else 0.0 if v < 0 else nearest_even(float(v))
                     for v in x], np.float32)
    np.testing.assert_array_equal(z, want)
    assert z[1] == 96.0 and z[2] == 114688.0 and z[3] == z[4] == 114688.0 and z[5] == 0.0
    assert y.view(np.uint8)[8] == 0xFF


@ct.kernel
def consts(out):
    a = ct.full((4,), 0.3, dtype=ct.float8_e5m3fnu)
    b = ct.float8_e5m3fnu(1000.0)
    ct.store(out, (0,), a.astype(ct.float32) + ct.astype(b, ct.float32))


def test_constants_round_at_compile_time_R_CONST_4():
    out = np.zeros(4, np.float32)
    ct.launch(None, (1,), consts, (out,))
    np.testing.assert_array_equal(out, np.full(4, 0.3125 + 1024.0, np.float32))


@ct.kernel
def neg_const(out):
    ct.store(out, (0,), ct.astype(ct.float8_e5m3fnu(-1.0), ct.float32))


def test_negative_constant_is_a_value_error_R_CONST_4():
    with pytest.raises(ct.TileValueError, match=r"Negative values cannot be represented in an "
                       r"unsigned float format \(-1.0 as float8_e5m3fnu\)"):
        ct.launch(None, (1,), neg_const, (np.zeros(1, np.float32),))


@ct.kernel
def copy_pad(x, y, z):
    t = ct.load(x, (0,), (8,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, (0,), t)
    ct.printf("%.4f\n", ct.load(x, (0,), (4,)))
    u = ct.load(x, (0,), (8,), padding_mode=ct.PaddingMode.POS_INF).astype(ct.float32)
    ct.store(z, (0,), u)


def test_load_store_padding_and_print_R_DTYPE_3(capsys):
    x = dt.e5m3_encode(np.array([1.0, 0.5, 2.0 ** -17, 114688.0, 3.0, 7.0]), satfinite=False)
    y = np.zeros(8, E)
    z = np.zeros(8, np.float32)
    ct.launch(None, (1,), copy_pad, (x, y, z))
    np.testing.assert_array_equal(y.view(np.uint8)[:6], x.view(np.uint8))
    assert y.view(np.uint8)[6:].tolist() == [0, 0]
    assert np.isnan(z[6:]).all()          # no infinity: POS_INF padding reads as NaN
    out = capsys.readouterr().out
    if test_backend() == "interp" or os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        # on a real GPU device printf writes to file descriptor 1, past sys.stdout
        # (tools/oracle/print_probe.py compares that text with the real cuTile's)
        assert out == "[1.0000, 0.5000, 0.0000, 114688.0000]\n"


@ct.kernel
def scaled(x, xs, y, ys, z):
    acc = ct.load(z, (0, 0), (2, 2))
    acc = ct.mma_scaled(ct.load(x, (0, 0), (2, 32)), ct.load(xs, (0, 0), (2, 2)),
                        ct.load(y, (0, 0), (32, 2)), ct.load(ys, (0, 0), (2, 2)), acc)
    ct.store(z, (0, 0), acc)


@pytest.mark.skipif(test_backend() != "interp",
                    reason="mma_scaled needs sm_100+ block-scaled MMA: the backend refuses it")
def test_e5m3_scales_of_mma_scaled_R_MM_6():
    f4 = ml_dtypes.float4_e2m1fn
    x, y = np.ones((2, 32), f4), np.ones((32, 2), f4)
    xs = dt.e5m3_encode(np.array([[0.5, 3.0], [1.0, 0.0]]), satfinite=False)
    ys = dt.e5m3_encode(np.array([[2.0, 1.0], [1.0, 0.25]]), satfinite=False)
    z = np.zeros((2, 2), np.float32)
    ct.launch(None, (1,), scaled, (x, xs, y, ys, z))
    want = np.array([[16 * (0.5 * 2 + 3 * 1), 16 * (0.5 * 1 + 3 * 0.25)],
                     [16 * (1 * 2 + 0 * 1), 16 * (1 * 1 + 0 * 0.25)]], np.float32)
    np.testing.assert_array_equal(z, want)

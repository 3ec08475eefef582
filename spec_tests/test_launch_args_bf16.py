"""Scalar kernel arguments of ml_dtypes' bfloat16 and float8 (R-LAUNCH-3: scalars specialise
on their dtype); spec_tests/diff runs the same kernels on the Numba backend."""

from __future__ import annotations

import ml_dtypes
import numpy as np

import cutile as ct

BF16 = np.dtype(ml_dtypes.bfloat16)


@ct.kernel
def scale(a, s, o, T: ct.Constant[int]):
    ct.store(o, (0,), ct.load(a, (0,), (T,)) * s)


def test_bfloat16_scalar_argument_keeps_its_dtype():
    a = np.arange(8).astype(BF16)
    o = np.zeros(8, BF16)
    ct.launch(None, (1,), scale, (a, ml_dtypes.bfloat16(1.5), o, 8))
    np.testing.assert_array_equal(o.astype(np.float32), np.arange(8) * 1.5)
    spec = scale.specialize((a, ml_dtypes.bfloat16(1.5), o, 8))
    assert spec.params[1].dtype is ct.bfloat16


@ct.kernel
def widen(s, o, T: ct.Constant[int]):
    ct.store(o, (0,), ct.full((T,), 0.0, ct.float32) + s.astype(ct.float32))


def test_float8_scalar_argument():
    o = np.zeros(4, np.float32)
    ct.launch(None, (1,), widen, (ml_dtypes.float8_e4m3fn(1.5), o, 4))
    np.testing.assert_array_equal(o, 1.5)
    assert widen.specialize((ml_dtypes.float8_e4m3fn(1.5), o, 4)).params[0].dtype is \
        ct.float8_e4m3fn

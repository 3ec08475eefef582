"""Factories (R-FACT-*, §11) and dtype conversion with astype (R-ASTYPE-*, §12.1)."""

from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from spec_executor import interp_only_ub

import cutile as ct

RM = ct.RoundingMode
BF16 = ml_dtypes.bfloat16


def _run(kernel, *args, grid=(1,)):
    ct.launch(None, grid, kernel, args)


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}")


# -- R-FACT-1/2/3: full, zeros, ones -------------------------------------------------------------
@ct.kernel
def k_full(out, flag, s, CASE: ct.Constant[str], EXP: ct.Constant):
    if CASE == "int_of_1.5":
        t = ct.full((8,), 1.5, ct.int32)
    elif CASE == "bool_of_1.5":
        t = ct.full((8,), 1.5, dtype=ct.bool_)
    elif CASE == "bool_of_0.0":
        t = ct.full((8,), 0.0, ct.bool_)
    elif CASE == "wrap":
        t = ct.full(8, 300, ct.int8)
    elif CASE == "wrap_neg":
        t = ct.full((8,), -1, ct.uint8)
    elif CASE == "trunc_neg":
        t = ct.full((8,), -2.9, ct.int16)
    elif CASE == "f16":
        t = ct.full((8,), 0.1, ct.float16)
    elif CASE == "bf16":
        t = ct.full((8,), 0.1, ct.bfloat16)
    elif CASE == "runtime":
        t = ct.full((8,), s, ct.int8)
    elif CASE == "runtime_f16":
        t = ct.full((8,), s, ct.float16)
    elif CASE == "zeros":
        t = ct.zeros((8,), ct.float64)
    elif CASE == "ones":
        t = ct.ones((8,), dtype=ct.uint16)
    elif CASE == "ones_bool":
        t = ct.ones((8,), ct.bool_)
    elif CASE == "2d":
        t = ct.full((2, 4), 7, ct.int32).reshape((8,))
    elif CASE == "0d":
        t = ct.full((), 7, ct.int32) + ct.zeros((8,), ct.int32)
    elif CASE == "np_dtype":
        t = ct.full((8,), 3, np.int16)
    elif CASE == "strict_fill":
        t = ct.full((8,), ct.int8(-3), ct.uint32)
    ct.store(flag, index=(0,), tile=ct.full((1,), t.dtype == EXP and t.shape == (8,),
                                             ct.int32))
    ct.store(out, index=(0,), tile=t)


FULL = [
    ("int_of_1.5", ct.int32, 0, [1] * 8), ("bool_of_1.5", ct.bool_, 0, [True] * 8),
    ("bool_of_0.0", ct.bool_, 0, [False] * 8), ("wrap", ct.int8, 0, [44] * 8),
    ("wrap_neg", ct.uint8, 0, [255] * 8), ("trunc_neg", ct.int16, 0, [-2] * 8),
    ("f16", ct.float16, 0, [np.float16(0.1)] * 8), ("bf16", ct.bfloat16, 0, [BF16(0.1)] * 8),
    ("runtime", ct.int8, -2.9, [-2] * 8), ("runtime_f16", ct.float16, 0.1,
                                           [np.float16(np.float32(0.1))] * 8),
    ("zeros", ct.float64, 0, [0.0] * 8), ("ones", ct.uint16, 0, [1] * 8),
    ("ones_bool", ct.bool_, 0, [True] * 8), ("2d", ct.int32, 0, [7] * 8),
    ("0d", ct.int32, 0, [7] * 8), ("np_dtype", ct.int16, 0, [3] * 8),
    ("strict_fill", ct.uint32, 0, [2 ** 32 - 3] * 8),
]


@pytest.mark.parametrize("case,exp,s,ref", FULL, ids=[f[0] for f in FULL])
def test_full_zeros_ones(case, exp, s, ref):
    # R-FACT-2 (strict-constant conversion of a constant fill: wrap / truncate / truthiness /
    # round; a runtime fill converts with astype), R-FACT-3, R-DTYPE-4 (NumPy dtype objects)
    out = np.zeros(8, exp.np_dtype)
    flag = np.zeros(1, np.int32)
    _run(k_full, out, flag, s, case, exp)
    assert flag[0] == 1
    np.testing.assert_array_equal(out, np.array(ref).astype(exp.np_dtype))


@ct.kernel
def k_full_err(out, CASE: ct.Constant[str]):
    if CASE == "not_pow2":
        t = ct.full((2, 3), 0, ct.int32)
    elif CASE == "zero":
        t = ct.full((0, 0), 0, ct.int32)
    elif CASE == "neg":
        t = ct.zeros((-4,), ct.int32)
    elif CASE == "string":
        t = ct.full((4,), "x", ct.int32)
    elif CASE == "tuple":
        t = ct.full((4,), (1, 2), ct.int32)
    elif CASE == "tile":
        t = ct.full((4,), ct.arange(4, dtype=ct.int32), ct.int32)
    elif CASE == "no_dtype":
        t = ct.full((4,), 1, "int32")
    elif CASE == "runtime_shape":
        t = ct.full((ct.bid(0),), 1, ct.int32)
    elif CASE == "ones_not_pow2":
        t = ct.ones((6,), ct.int32)
    ct.store(out, index=(0,), tile=t)


@pytest.mark.parametrize("case,msg", [
    ("not_pow2", r"Dimension #1 of shape \(2, 3\) is not a power of two"),
    ("zero", "is not positive"), ("neg", "is not positive"),
    ("string", "Expected a scalar"), ("tuple", "Expected a scalar"), ("tile", "Expected a scalar"),
    ("no_dtype", "Expected a dtype"), ("runtime_shape", ""),
    ("ones_not_pow2", "is not a power of two"),
])
def test_full_errors(case, msg):
    # R-FACT-1 / R-FACT-2 / R-DTYPE-4
    with pytest.raises(ct.TileTypeError, match=msg or None):
        _run(k_full_err, np.zeros(8, np.int32), case)


# -- R-FACT-4: arange ------------------------------------------------------------------------------
@ct.kernel
def k_arange(out, flag, s, CASE: ct.Constant[str], EXP: ct.Constant):
    if CASE == "basic":
        t = ct.arange(8, dtype=ct.int32)
    elif CASE == "start2":
        t = ct.arange(8, start=2, dtype=ct.int32)
    elif CASE == "step2":
        t = ct.arange(8, start=2, step=2, dtype=ct.int32)
    elif CASE == "down":
        t = ct.arange(8, start=7, step=-1, dtype=ct.int32)
    elif CASE == "float_step_int":
        t = ct.arange(8, dtype=ct.int32, step=1.9, start=2.7)
    elif CASE == "f16":
        t = ct.arange(8, dtype=ct.float16, start=0.5, step=0.25)
    elif CASE == "f32":
        t = ct.arange(8, dtype=ct.float32)
    elif CASE == "u8_wrap":
        t = ct.arange(8, dtype=ct.uint8, start=250)
    elif CASE == "i8_wrap":
        t = ct.arange(8, dtype=ct.int8, start=124)
    elif CASE == "runtime_start":
        t = ct.arange(8, dtype=ct.int64, start=s, step=s)
    elif CASE == "runtime_float_step":
        t = ct.arange(8, dtype=ct.int32, step=s + 0.5)
    ct.store(flag, index=(0,), tile=ct.full((1,), t.dtype == EXP and t.shape == (8,),
                                             ct.int32))
    ct.store(out, index=(0,), tile=t)


ARANGE = [
    ("basic", ct.int32, 0, np.arange(8)), ("start2", ct.int32, 0, np.arange(2, 10)),
    ("step2", ct.int32, 0, np.arange(2, 18, 2)), ("down", ct.int32, 0, np.arange(7, -1, -1)),
    ("float_step_int", ct.int32, 0, np.arange(2, 10)),  # start 2.7 -> 2, step 1.9 -> 1
    ("f16", ct.float16, 0, np.arange(8) * 0.25 + 0.5), ("f32", ct.float32, 0, np.arange(8)),
    ("u8_wrap", ct.uint8, 0, (np.arange(8) + 250) % 256),
    ("i8_wrap", ct.int8, 0, (np.arange(8) + 124 + 128) % 256 - 128),
    ("runtime_start", ct.int64, 3, np.arange(8) * 3 + 3),
    ("runtime_float_step", ct.int32, 2, np.arange(8) * 2),   # 2.5 -> astype int32 -> 2
]


@pytest.mark.parametrize("case,exp,s,ref", ARANGE, ids=[a[0] for a in ARANGE])
def test_arange(case, exp, s, ref):
    # R-FACT-4: start + i*step computed in dtype; start/step converted with astype first
    out = np.zeros(8, exp.np_dtype)
    flag = np.zeros(1, np.int32)
    _run(k_arange, out, flag, s, case, exp)
    assert flag[0] == 1
    np.testing.assert_array_equal(out, ref.astype(exp.np_dtype))


@ct.kernel
def k_arange_err(out, CASE: ct.Constant[str]):
    if CASE == "size6":
        t = ct.arange(6, dtype=ct.int32)
    elif CASE == "size0":
        t = ct.arange(0, dtype=ct.int32)
    elif CASE == "positional_dtype":
        t = ct.arange(8, ct.int32)
    elif CASE == "no_dtype":
        t = ct.arange(8)
    elif CASE == "runtime_size":
        t = ct.arange(ct.bid(0), dtype=ct.int32)
    ct.store(out, index=(0,), tile=t)


@pytest.mark.parametrize("case,msg", [("size6", "Result tile shape must be power of 2"),
                                      ("size0", "Result tile shape must be power of 2"),
                                      ("positional_dtype", "arange\\(\\)"),
                                      ("no_dtype", "arange\\(\\)"), ("runtime_size", "")])
def test_arange_errors(case, msg):
    # R-FACT-4 / R-DISC-8 (dtype is keyword-only and required)
    with pytest.raises(ct.TileTypeError, match=msg or None):
        _run(k_arange_err, np.zeros(8, np.int32), case)


# -- R-FACT-5: astile ------------------------------------------------------------
@ct.kernel
def k_astile(out, flag, s, CASE: ct.Constant[str], EXP: ct.Constant):
    if CASE == "2x2":
        t = ct.astile(((1, 2), (3, 4)), dtype=ct.int32).reshape((4,))
    elif CASE == "bool0":
        t = ct.astile((0.0, 2.5, -1, 0, True, False, 0.0, 3), dtype=ct.bool_).reshape((8,))
        t = t.reshape((2, 4)).reshape((8,))
    elif CASE == "scalar":
        t = ct.astile(2.5, dtype=ct.float16) + ct.zeros((4,), ct.float16)
    elif CASE == "runtime":
        t = ct.astile((s, s + 1, 7, s * 2), dtype=ct.int8)
    elif CASE == "wrap":
        t = ct.astile((300, -1, 1.9, -1.9), dtype=ct.uint8)
    ct.store(flag, index=(0,), tile=ct.full((1,), t.dtype == EXP, ct.int32))
    ct.store(out, index=(0,), tile=t)


ASTILE = [
    ("2x2", ct.int32, 0, [1, 2, 3, 4]),
    ("bool0", ct.bool_, 0, [False, True, True, False, True, False, False, True]),
    ("scalar", ct.float16, 0, [2.5] * 4), ("runtime", ct.int8, 5, [5, 6, 7, 10]),
    ("wrap", ct.uint8, 0, [44, 255, 1, 255]),
]


@pytest.mark.parametrize("case,exp,s,ref", ASTILE, ids=[a[0] for a in ASTILE])
def test_astile(case, exp, s, ref):
    # R-FACT-5: nested tuples give the nesting shape; constants convert per R-CONST-4
    # (astile((0.0,), bool_) == [False], astile((2.5,), bool_) == [True]); runtime elements
    # convert like astype
    n = len(ref)
    out = np.zeros(n, exp.np_dtype)
    flag = np.zeros(1, np.int32)
    _run(k_astile, out, flag, s, case, exp)
    assert flag[0] == 1
    np.testing.assert_array_equal(out, np.array(ref).astype(exp.np_dtype))


@ct.kernel
def k_astile_err(out, CASE: ct.Constant[str]):
    if CASE == "empty":
        t = ct.astile((), dtype=ct.int32)
    elif CASE == "tile_leaf":
        t = ct.astile((1, ct.arange(4, dtype=ct.int32)), dtype=ct.int32)
    elif CASE == "ragged":
        t = ct.astile(((1, 2), (3,)), dtype=ct.int32)
    elif CASE == "ragged2":
        t = ct.astile(((1, 2), 3), dtype=ct.int32)
    elif CASE == "ndtile":
        t = ct.astile(ct.arange(4, dtype=ct.int32), dtype=ct.int32)
    elif CASE == "len3":
        t = ct.astile((1, 2, 3), dtype=ct.int32)
    ct.store(out, index=(0,), tile=t)


@pytest.mark.parametrize("case,msg", [
    ("empty", "Tuple length 0 at value is not a power of 2"),
    ("tile_leaf", r"Expected scalar elements at value\[1\]"),
    ("ragged", "Tuple has non-uniform inner shapes at value"),
    ("ragged2", "non-uniform inner shapes|Expected"),
    ("ndtile", r"Expected a scalar or \(possibly nested\) tuple of scalars"),
    ("len3", "Tuple length 3 at value is not a power of 2"),
])
def test_astile_errors(case, msg):
    # R-FACT-5
    with pytest.raises(ct.TileTypeError, match=msg):
        _run(k_astile_err, np.zeros(8, np.int32), case)


# -- R-ASTYPE-1: conversions ------------------------------------------------------------
def make_astype(dst, mode=None):
    @ct.kernel
    def k(a, out, flag):
        x = ct.load(a, index=(0,), shape=(8,))
        r = x.astype(dst, rounding_mode=mode)
        ct.store(flag, index=(0,), tile=ct.full((1,), r.dtype == dst, ct.int32))
        ct.store(out, index=(0,), tile=r)
    return k


def astype(a, dst, mode=None):
    out = np.zeros(8, dst.np_dtype)
    flag = np.zeros(1, np.int32)
    _run(make_astype(dst, mode), a, out, flag)
    assert flag[0] == 1
    return out


def _wrap(v, bitsz, signed):
    v %= 2 ** bitsz
    return v - 2 ** bitsz if signed and v >= 2 ** (bitsz - 1) else v


INTS = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]
CT = {np.dtype(d): getattr(ct, np.dtype(d).name) for d in INTS}


@pytest.mark.parametrize("src", INTS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("dst", INTS, ids=lambda d: np.dtype(d).name)
def test_astype_int_to_int_wraps(src, dst):
    # R-ASTYPE-1: two's-complement truncation, sign-/zero-extension by source signedness
    info = np.iinfo(src)
    a = np.array([info.min, info.max, 0, 1, info.max // 3, info.min // 5, 100, 127], src)
    out = astype(a, CT[np.dtype(dst)])
    d = np.iinfo(dst)
    ref = [_wrap(int(v), d.bits, d.min < 0) for v in a.tolist()]
    np.testing.assert_array_equal(out, np.array(ref, dst))


@pytest.mark.parametrize("src", [np.int8, np.uint64, np.float32, np.float16, BF16, np.float64])
def test_astype_to_bool_and_back(src):
    # R-ASTYPE-1: numeric -> bool is x != 0 (NaN -> True, cutile); bool -> numeric is 0/1
    if np.dtype(src).kind == "f":
        a = np.array([0.0, -0.0, 1.5, -2.0, np.nan, np.inf, 1e-30, 0.0]).astype(src)
    else:
        a = np.array([0, 1, 2, 255, 0, 7, 128, 0]).astype(src)
    out = astype(a, ct.bool_)
    ref = [bool(v != 0) or bool(np.isnan(float(v))) for v in a.astype(np.float64)]
    np.testing.assert_array_equal(out, ref)
    ctd = ct.bfloat16 if src is BF16 else getattr(ct, np.dtype(src).name)
    back = astype(out, ctd)
    np.testing.assert_array_equal(back.astype(np.float64), np.array(ref, np.float64))


def _rn_int_to_float(v: int, dtype):
    """Correctly rounded int -> float via Fraction-free exact Python ints."""
    return np.array(float(Fraction(v)), np.float64).astype(dtype) if abs(v) < 2 ** 53 else None


@pytest.mark.parametrize("src,dst,vals,ref", [
    (np.int32, ct.float32, [2 ** 24 + 1, 2 ** 24 + 3, -(2 ** 24) - 1, 7, 0, -1, 2 ** 31 - 1, 5],
     [2 ** 24, 2 ** 24 + 4, -(2 ** 24), 7, 0, -1, 2 ** 31, 5]),
    (np.int64, ct.float64, [2 ** 53 + 1, 2 ** 53 + 3, -(2 ** 53) - 1, 2 ** 63 - 1, 0, 1, -1, 3],
     [2 ** 53, 2 ** 53 + 4, -(2 ** 53), 2 ** 63, 0, 1, -1, 3]),
    # int64 -> float32 must round once (not via float64): 2**40 + 2**16 + 1 is above the tie
    (np.int64, ct.float32, [2 ** 40 + 2 ** 16 + 1, 2 ** 40 + 2 ** 16, 2 ** 40 + 3 * 2 ** 16, 1,
                            -(2 ** 40) - 2 ** 16 - 1, 0, 2, 3],
     [2 ** 40 + 2 ** 17, 2 ** 40, 2 ** 40 + 2 ** 18, 1, -(2 ** 40) - 2 ** 17, 0, 2, 3]),
    (np.uint64, ct.float32, [2 ** 64 - 1, 0, 1, 2 ** 63, 3, 4, 5, 6],
     [2 ** 64, 0, 1, 2 ** 63, 3, 4, 5, 6]),
    (np.int32, ct.float16, [65519, 65520, 2049, 2051, -65520, 1, 0, 3],
     [65504, np.inf, 2048, 2052, -np.inf, 1, 0, 3]),
    (np.int32, ct.bfloat16, [257, 259, 1, 2, 3, 4, -257, 0], [256, 260, 1, 2, 3, 4, -256, 0]),
])
def test_astype_int_to_float_round_nearest_even(src, dst, vals, ref):
    # R-ASTYPE-1: int -> float rounds to nearest even with a single rounding
    out = astype(np.array(vals, src), dst)
    np.testing.assert_array_equal(out.astype(np.float64), np.array(ref, np.float64))


@pytest.mark.parametrize("src", [np.float16, BF16, np.float32, np.float64])
@pytest.mark.parametrize("dst", [np.int8, np.uint8, np.int32, np.int64, np.uint32])
def test_astype_float_to_int_truncates(src, dst):
    # R-ASTYPE-1: truncation toward zero
    a = np.array([-2.75, 2.75, -0.5, 0.5, 100.0, -100.0, 0.0, 127.0]).astype(src)
    if np.iinfo(dst).min == 0:
        a = np.abs(a)
    out = astype(a, CT[np.dtype(dst)])
    np.testing.assert_array_equal(out, np.trunc(a.astype(np.float64)).astype(dst))


@interp_only_ub
def test_astype_float_to_int_nan_is_ub():
    # R-ASTYPE-1: NaN / inf / out-of-range float -> int is UB (reported by the interpreter)
    a = np.array([1.0, np.nan, 0, 0, 0, 0, 0, 0], np.float32)
    with pytest.raises(ct.UndefinedBehaviorError):
        astype(a, ct.int32)


@pytest.mark.parametrize("mode", [None, "RN", "RZ", "RM", "RP"])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_astype_f64_to_f32_rounding_modes(mode, sign):
    # R-ASTYPE-2 example: a float64 60% of the way between two float32 neighbours:
    # RN/RP -> upper, RM/RZ -> lower (mirrored for negative); exact ties go to even under RN
    lo = np.float32(1.0)
    hi = np.nextafter(lo, np.float32(2))
    v60 = float(lo) + 0.6 * (float(hi) - float(lo))
    tie = float(hi) + (float(np.nextafter(hi, np.float32(2))) - float(hi)) / 2  # hi is odd
    tie2 = float(lo) + (float(hi) - float(lo)) / 2                             # lo is even
    a = np.array([v60, tie, tie2, 1.0, 0.0, 3.0, -0.0, 2.0 ** -140]) * sign
    out = astype(a, ct.float32, None if mode is None else getattr(RM, mode))
    m = mode or "RN"
    pos = sign > 0
    hi2 = np.nextafter(hi, np.float32(2))
    up_sel = {"RN": True, "RP": pos, "RM": not pos, "RZ": False, "RA": True}[m]
    exp0 = (hi if up_sel else lo) * np.float32(sign)
    exp1 = {"RN": hi2, "RA": hi2, "RZ": hi, "RP": hi2 if pos else hi,
            "RM": hi if pos else hi2}[m] * np.float32(sign)
    exp2 = {"RN": lo, "RA": hi, "RZ": lo, "RP": hi if pos else lo,
            "RM": lo if pos else hi}[m] * np.float32(sign)
    assert out[0] == exp0 and out[1] == exp1 and out[2] == exp2
    assert out[3] == sign and out[5] == 3 * sign
    # 2**-140 is a float32 subnormal: exact under every mode
    tiny = np.float32(2.0 ** -140) * np.float32(sign)
    assert out[7] == tiny


@pytest.mark.parametrize("dst,mode", [(ct.bfloat16, "RN"), (ct.bfloat16, "RZ"),
                                      (ct.float16, "RN"), (ct.float16, "RZ")])
def test_astype_f32_to_half_modes(dst, mode):
    # R-ASTYPE-2: bf16 and f16 targets accept RN and RZ from float32
    rng = np.random.default_rng(3)
    a = (rng.normal(size=8) * 100).astype(np.float32)
    out = astype(a, dst, getattr(RM, mode))
    for x, r in zip(a.tolist(), out.astype(np.float64).tolist()):
        near = float(np.array(x, np.float32).astype(dst.np_dtype))
        if mode == "RN":
            assert r == near
        else:
            assert abs(r) <= abs(x) and (r == x or abs(
                float(np.nextafter(np.array(r, dst.np_dtype), np.array(np.sign(x) * np.inf,
                                                                      dst.np_dtype))))
                > abs(x))


def test_astype_round_away_to_tf32():
    # R-ASTYPE-2: RA (ties away from zero) is accepted from float32 to tfloat32
    a = np.array([1 + 2 ** -11, -(1 + 2 ** -11), 1 + 3 * 2 ** -11, 1 + 2 ** -12, 2.0, 0.0,
                  1 + 2 ** -11 + 2 ** -20, -3.0], np.float32)

    @ct.kernel
    def k(x, out):
        t = ct.load(x, index=(0,), shape=(8,))
        r = t.astype(ct.tfloat32, rounding_mode=ct.RoundingMode.RA)
        ct.store(out, index=(0,), tile=r.astype(ct.float32))

    out = np.zeros(8, np.float32)
    _run(k, a, out)
    ref = [1 + 2 ** -10, -(1 + 2 ** -10), 1 + 2 ** -9, 1.0, 2.0, 0.0, 1 + 2 ** -10, -3.0]
    np.testing.assert_array_equal(out, np.array(ref, np.float32))


def test_astype_tf32_and_f8():
    # R-ASTYPE-1/2: float -> tf32 keeps 10 mantissa bits (RN, ties to even); f8 targets RN
    a = np.array([1 + 2 ** -11, 1 + 3 * 2 ** -11, 1 + 2 ** -10, -(1 + 2 ** -11) - 2 ** -20,
                  3.0, 0.1, 448.0, 0.0], np.float32)
    tf = np.zeros(8, np.float32)

    @ct.kernel
    def k(x, out, out8, out5):
        t = ct.load(x, index=(0,), shape=(8,))
        ct.store(out, index=(0,), tile=t.astype(ct.tfloat32).astype(ct.float32))
        ct.store(out8, index=(0,), tile=t.astype(ct.float8_e4m3fn))
        ct.store(out5, index=(0,), tile=t.astype(ct.float8_e5m2))

    o8 = np.zeros(8, ml_dtypes.float8_e4m3fn)
    o5 = np.zeros(8, ml_dtypes.float8_e5m2)
    _run(k, a, tf, o8, o5)
    ref = [1.0, 1 + 2 ** -9, 1 + 2 ** -10, -(1 + 2 ** -10), 3.0,
           float(Fraction(round(Fraction(0.1) * 2 ** 13 / 1), 2 ** 13)), 448.0, 0.0]
    np.testing.assert_array_equal(tf[[0, 1, 2, 3, 4, 6, 7]], np.array(ref, np.float32)[
        [0, 1, 2, 3, 4, 6, 7]])
    assert abs(float(tf[5]) - 0.1) <= 2 ** -14 and (tf[5].view(np.uint32) & 0x1FFF) == 0
    np.testing.assert_array_equal(bits(o8), bits(a.astype(ml_dtypes.float8_e4m3fn)))
    np.testing.assert_array_equal(bits(o5), bits(a.astype(ml_dtypes.float8_e5m2)))


@ct.kernel
def k_astype_modes(a, out, CASE: ct.Constant[str], MODE: ct.Constant):
    x = ct.load(a, index=(0,), shape=(8,))
    if CASE == "e8m0":
        r = x.astype(ct.float8_e8m0fnu, rounding_mode=MODE).astype(ct.float32)
    elif CASE == "int":
        r = ct.astype(x.astype(ct.int32), ct.float32, rounding_mode=MODE)
    elif CASE == "to_int":
        r = ct.astype(x, ct.int32, rounding_mode=MODE).astype(ct.float32)
    elif CASE == "bf16":
        r = ct.astype(x.astype(ct.float64), ct.bfloat16, rounding_mode=MODE).astype(ct.float32)
    elif CASE == "f16_from_f32":
        r = x.astype(ct.float16, rounding_mode=MODE).astype(ct.float32)
    elif CASE == "f32_from_f64":
        r = x.astype(ct.float64).astype(ct.float32, rounding_mode=MODE)
    elif CASE == "f8":
        r = x.astype(ct.float8_e4m3fn, rounding_mode=MODE).astype(ct.float32)
    elif CASE == "same":
        r = x.astype(ct.float32, rounding_mode=MODE)
    elif CASE == "from_e8m0":
        r = x.astype(ct.float8_e8m0fnu, rounding_mode=ct.RoundingMode.RZ).astype(
            ct.float16, rounding_mode=MODE).astype(ct.float32)
    ct.store(out, index=(0,), tile=r)


def test_astype_e8m0_needs_rz_or_rp():
    # R-ASTYPE-2: f8e8m0 accepts only RZ/RP; RN (the default) is rejected
    a = np.array([0.2, 1.0, 3.0, 0.75, 8.0, 5.0, 0.3, 100.0], np.float32)
    out = np.zeros(8, np.float32)
    _run(k_astype_modes, a, out, "e8m0", RM.RZ)
    np.testing.assert_array_equal(out, [0.125, 1, 2, 0.5, 8, 4, 0.25, 64])
    _run(k_astype_modes, a, out, "e8m0", RM.RP)
    np.testing.assert_array_equal(out, [0.25, 1, 4, 1, 8, 8, 0.5, 128])
    for mode in (None, RM.RN):
        with pytest.raises(ct.TileTypeError, match="rounding_mode=RoundingMode.RN is not "
                           "supported for conversion from float32 to float8_e8m0fnu"):
            _run(k_astype_modes, a, out, "e8m0", mode)


@pytest.mark.parametrize("case,mode,msg", [
    ("int", RM.RZ, "rounding_mode is only valid for float to float conversions"),
    ("to_int", RM.RZ, "rounding_mode is only valid for float to float conversions"),
    ("bf16", RM.RM, ("rounding_mode=RoundingMode.RM is not supported for conversion from "
                     "float64 to bfloat16")),
    ("f16_from_f32", RM.RP, "is not supported for conversion from float32 to float16"),
    ("f32_from_f64", RM.RA, ("rounding_mode=RoundingMode.RA is not supported for conversion "
                             "from float64 to float32")),
    ("from_e8m0", RM.RA, ("rounding_mode=RoundingMode.RA is not supported for conversion from "
                          "float8_e8m0fnu to float16")),
    ("f8", RM.RZ, "is not supported for conversion from float32 to float8_e4m3fn"),
    ("f16_from_f32", RM.FULL, "is not supported"), ("f16_from_f32", RM.APPROX, "is not supported"),
    ("f16_from_f32", RM.RZI, "is not supported"),
])
def test_astype_rounding_mode_errors(case, mode, msg):
    # R-ASTYPE-2
    with pytest.raises(ct.TileTypeError, match=msg):
        _run(k_astype_modes, np.ones(8, np.float32), np.zeros(8, np.float32), case, mode)


def test_astype_same_dtype_noop_and_f16_modes_from_bf16():
    # R-ASTYPE-1: same dtype is a no-op; R-ASTYPE-2: f16 target accepts RM/RP/RA from bf16
    a = np.array([1.5, -2.25, 0.0, 3.0, 1e-3, -7.0, 65504.0, 2.0], np.float32)
    out = np.zeros(8, np.float32)
    _run(k_astype_modes, a, out, "same", None)
    np.testing.assert_array_equal(out, a)

    @ct.kernel
    def k(x, out16):
        t = ct.load(x, index=(0,), shape=(8,)).astype(ct.bfloat16)
        ct.store(out16, index=(0,), tile=t.astype(ct.float16, rounding_mode=ct.RoundingMode.RM))

    o = np.zeros(8, np.float16)
    b = np.array([1.5, -2.25, 0.0, 3.0, 1.0 / 3, -1.0 / 3, 70000.0, 2.0], np.float32)
    _run(k, b, o)
    bf = b.astype(BF16).astype(np.float64)
    with np.errstate(over="ignore"):
        for v, r in zip(bf.tolist(), o.astype(np.float64).tolist()):
            assert r <= v and float(np.nextafter(np.float16(r), np.float16(np.inf))) > v


def test_astype_constant_folds():
    # R-ASTYPE-3: constant inputs convert with the R-CONST-4 rules
    @ct.kernel
    def k(out, flag):
        c = ct.astype(300, ct.int8)
        d = ct.astype(-2.7, ct.int32)
        ct.store(flag, index=(0,), tile=ct.full((1,), c == 44 and d == -2, ct.int32))
        ct.store(out, index=(0,), tile=c)

    out = np.zeros(1, np.int8)
    flag = np.zeros(1, np.int32)
    _run(k, out, flag)
    assert flag[0] == 1 and out[0] == 44

"""Compile-time constants: loose and strict typing, folding, materialisation (R-CONST-*)."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import cutile as ct


def _run(kernel, *args, grid=(1,)):
    ct.launch(None, grid, kernel, args)


# -- R-CONST-3: loose arithmetic uses Python semantics ----------------------------------------
@ct.kernel
def k_loose(out, CASE: ct.Constant[str]):
    if CASE == "add":
        v = 5 + 7
    elif CASE == "mixed":
        v = 5 + 3.0
    elif CASE == "floordiv":
        v = -7 // 2
    elif CASE == "truediv":
        v = 7 / 2
    elif CASE == "mod":
        v = -7 % 3
    elif CASE == "fmod":
        v = -7.5 % 2.0
    elif CASE == "big":
        v = (2 ** 100 + 6) // 2 ** 98
    elif CASE == "double":
        v = 0.1 + 0.2
    elif CASE == "pow":
        v = 5 ** 2.0
    elif CASE == "neg_pow":
        v = 2 ** -1
    elif CASE == "bool":
        v = True + True
    elif CASE == "cmp":
        v = (3 < 5) + (0.1 + 0.2 == 0.3)  # noqa: PLR0133 - folded in tile code
    elif CASE == "int_conv":
        v = int(-2.7) + int(True)
    elif CASE == "float_conv":
        v = float(7) / 2
    elif CASE == "bool_conv":
        v = bool(0.0) + bool(-3)
    elif CASE == "min":
        v = min(3, -2) * max(4, 1)
    elif CASE == "abs":
        v = abs(-5) + ct.exp(0.0)
    elif CASE == "bitwise":
        v = (12 & 10) | (1 << 4) ^ 3
    elif CASE == "shift":
        v = (1 << 40) >> 38
    elif CASE == "cdiv":
        v = ct.cdiv(-30, 23) * 100 + ct.cdiv(100, -13)
    ct.store(out, index=(0,), tile=v)


LOOSE = [
    ("add", 12), ("mixed", 8.0), ("floordiv", -4), ("truediv", 3.5), ("mod", 2), ("fmod", 0.5),
    ("big", 4), ("double", 0.1 + 0.2), ("pow", 25.0), ("neg_pow", 0.5), ("bool", 2),
    ("cmp", 1), ("int_conv", -1), ("float_conv", 3.5), ("bool_conv", 1), ("min", -8),
    ("abs", 6.0), ("bitwise", 27), ("shift", 4), ("cdiv", -107),
]


@pytest.mark.parametrize("case,expected", LOOSE, ids=[c for c, _ in LOOSE])
def test_loose_arithmetic_python_semantics(case, expected):
    # R-CONST-3 / R-PROMO-2 / R-MATH-7 (loose folding with math), R-DIV-4 (cdiv)
    out = np.zeros(1, np.float64)
    _run(k_loose, out, case)
    assert out[0] == expected
    if isinstance(expected, float):
        assert out[0] == np.float64(expected)           # IEEE double, not float32


@ct.kernel
def k_loose_div0(out, CASE: ct.Constant[str]):
    if CASE == "floordiv":
        v = 1 // 0
    elif CASE == "mod":
        v = 5 % 0
    elif CASE == "truediv":
        v = 1.0 / 0
    elif CASE == "strict_int":
        v = ct.int32(7) // 0
    elif CASE == "strict_mod":
        v = ct.int8(7) % ct.int8(0)
    elif CASE == "strict_cdiv":
        v = ct.cdiv(ct.int32(7), 0)
    ct.store(out, index=(0,), tile=v)


@pytest.mark.parametrize("case", ["floordiv", "mod", "truediv", "strict_int", "strict_mod",
                                  "strict_cdiv"])
def test_constant_division_by_zero(case):
    # R-CONST-3 / R-DIV-6: division by zero between constants is a compile-time TileValueError
    with pytest.raises(ct.TileValueError):
        _run(k_loose_div0, np.zeros(1, np.float64), case)


@ct.kernel
def k_loose_stays_loose(a, out, flag, N: ct.Constant[int]):
    x = ct.load(a, index=(0,), shape=(4,))
    c = (2 ** 40) // (2 ** 35) - N          # loose, 32 - N
    r = x + c
    ct.store(flag, index=(0,), tile=ct.full((1,), r.dtype == ct.int8, ct.int32))
    ct.store(out, index=(0,), tile=r)


def test_loose_results_stay_loose():
    # R-CONST-3 / R-CONST-2: arithmetic on literals and ct.Constant params stays loose, so the
    # int8 tile keeps its dtype even though 2**40 would not fit int8
    a = np.arange(4, dtype=np.int8)
    out = np.zeros(4, np.int8)
    flag = np.zeros(1, np.int32)
    _run(k_loose_stays_loose, a, out, flag, 2)
    assert flag[0] == 1
    np.testing.assert_array_equal(out, a + 30)


# -- R-CONST-4/6: strictly typed constants -----------------------------------------------------
@ct.kernel
def k_strict(out, flag, CASE: ct.Constant[str], EXP: ct.Constant):
    if CASE == "i16+2":
        v = ct.int16(5) + 2
        ok = v == 7
    elif CASE == "u8+u8":
        v = ct.uint8(150) + ct.uint8(110)
        ok = v == 4
    elif CASE == "i8(300)":
        v = ct.int8(300)
        ok = v == 44
    elif CASE == "u32(-3)":
        v = ct.uint32(-3)
        ok = v == 4294967293
    elif CASE == "i32(3e9)":
        v = ct.int32(3_000_000_000)
        ok = v == -1294967296
    elif CASE == "f16(0.2)":
        v = ct.float16(0.2)
        ok = True
    elif CASE == "bool(-3)":
        v = ct.bool_(-3)
        ok = v == True
    elif CASE == "i16+i32":
        v = ct.int16(5) + ct.int32(7)
        ok = v == 12
    elif CASE == "i32(-2.7)":
        v = ct.int32(-2.7)
        ok = v == -2
    elif CASE == "u8*u8":
        v = ct.uint8(16) * ct.uint8(17)
        ok = v == 16
    elif CASE == "i8-i8":
        v = ct.int8(-128) - ct.int8(1)
        ok = v == 127
    elif CASE == "f16+f16":
        v = ct.float16(0.1) + ct.float16(0.2)
        ok = True
    elif CASE == "i64(2**63)":
        v = ct.int64(2 ** 63)
        ok = v == -(2 ** 63)
    elif CASE == "np.int16":
        v = np.int16(-5) * 2
        ok = v == -10
    elif CASE == "u16//":
        v = ct.uint16(7) // 2
        ok = v == 3
    elif CASE == "i8//":
        v = ct.int8(-7) // 2
        ok = v == -4
    elif CASE == "i8%":
        v = ct.int8(-7) % 3
        ok = v == 2
    elif CASE == "f32/i":
        v = ct.float32(1.0) / 3
        ok = True
    elif CASE == "i32/i32":
        v = ct.int32(7) / ct.int32(2)
        ok = v == 3.5
    elif CASE == "e8m0":
        v = ct.float8_e8m0fnu(0.2)
        ok = True
    elif CASE == "neg":
        v = -ct.int8(-128)
        ok = v == -128
    elif CASE == "abs":
        v = abs(ct.int8(-128))
        ok = v == -128
    elif CASE == "bool_add":
        v = ct.bool_(True) + 1
        ok = v == 2
    ct.store(flag, index=(0,), tile=ct.full((1,), ok, ct.int32))
    ct.store(out, index=(0,), tile=v)


STRICT = [
    # (case, dtype, value)
    ("i16+2", "int16", 7), ("u8+u8", "uint8", 4), ("i8(300)", "int8", 44),
    ("u32(-3)", "uint32", 4294967293), ("i32(3e9)", "int32", -1294967296),
    ("f16(0.2)", "float16", np.float16(0.2)), ("bool(-3)", "bool_", True),
    ("i16+i32", "int32", 12), ("i32(-2.7)", "int32", -2), ("u8*u8", "uint8", 16),
    ("i8-i8", "int8", 127), ("f16+f16", "float16", np.float16(0.1) + np.float16(0.2)),
    ("i64(2**63)", "int64", -(2 ** 63)), ("np.int16", "int16", -10), ("u16//", "uint16", 3),
    ("i8//", "int8", -4), ("i8%", "int8", 2), ("f32/i", "float32", np.float32(1.0 / 3)),
    ("i32/i32", "float32", 3.5), ("e8m0", "float8_e8m0fnu", 0.25), ("neg", "int8", -128),
    ("abs", "int8", -128), ("bool_add", "int32", 2),
]
_NPD = {"int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
        "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "float16": np.float16,
        "float32": np.float32, "bool_": np.bool_, "float8_e8m0fnu": ml_dtypes.float8_e8m0fnu}
# a narrower dtype of the same kind that must reject the strict value (R-CAST-1)
_NARROWER = {"int16": np.int8, "int32": np.int16, "int64": np.int32, "uint16": np.uint8,
             "uint32": np.uint16, "float32": np.float16}


@pytest.mark.parametrize("case,dtype,value", STRICT, ids=[c[0] for c in STRICT])
def test_strict_constants(case, dtype, value):
    # R-CONST-4 (wrap / round / truncate / truthiness) and R-CONST-6 (strict result dtypes)
    out = np.zeros(1, _NPD[dtype])
    flag = np.zeros(1, np.int32)
    _run(k_strict, out, flag, case, getattr(ct, dtype))
    assert flag[0] == 1
    assert out[0] == np.asarray(value).astype(_NPD[dtype])
    if dtype in _NARROWER:
        # the constant is strict: it cannot be stored into a narrower array even if it fits
        with pytest.raises(ct.TileTypeError, match=f"cannot implicitly cast {dtype}"):
            _run(k_strict, np.zeros(1, _NARROWER[dtype]), flag, case, getattr(ct, dtype))


@ct.kernel
def k_strict_with_tile(a, out, flag, CASE: ct.Constant[str], EXP: ct.Constant):
    x = ct.load(a, index=(0,), shape=(4,))
    if CASE == "i8+i16c":
        r = x + ct.int16(1)
    elif CASE == "f16*f32c":
        r = x * ct.float32(2.0)
    elif CASE == "i8+loose":
        r = x + 1
    elif CASE == "u8+i8c":
        r = x + ct.int8(1)
    ct.store(flag, index=(0,), tile=ct.full((1,), r.dtype == EXP, ct.int32))
    ct.store(out, index=(0,), tile=r)


@pytest.mark.parametrize("case,src,exp", [("i8+i16c", np.int8, ct.int16),
                                          ("f16*f32c", np.float16, ct.float32),
                                          ("i8+loose", np.int8, ct.int8)])
def test_strict_constant_promotes_like_a_tile(case, src, exp):
    # R-CONST-6 / R-PROMO-3: a strict constant is not loose
    a = np.arange(4).astype(src)
    out = np.zeros(4, exp.np_dtype)
    flag = np.zeros(1, np.int32)
    _run(k_strict_with_tile, a, out, flag, case, exp)
    assert flag[0] == 1
    mult = 2 if case == "f16*f32c" else 1
    np.testing.assert_array_equal(out, (a.astype(np.float64) * mult + (mult == 1)).astype(
        exp.np_dtype))


def test_strict_constant_promotion_error():
    # R-PROMO-3 with a strict constant: uint8 tile + int8 constant
    with pytest.raises(ct.TileTypeError, match="Implicit promotion of uint8 and int8"):
        _run(k_strict_with_tile, np.arange(4, dtype=np.uint8), np.zeros(4, np.uint8),
             np.zeros(1, np.int32), "u8+i8c", ct.uint8)


@ct.kernel
def k_strict_errors(out, CASE: ct.Constant[str]):
    if CASE == "e8m0_neg":
        v = ct.float8_e8m0fnu(-1.0)
    elif CASE == "f4_call":
        v = ct.float4_e2m1fn(1.0)
    elif CASE == "e5m3_neg":
        v = ct.float8_e5m3fnu(-1.0)
    elif CASE == "tile_arg":
        v = ct.int32(ct.arange(4, dtype=ct.int32))
    elif CASE == "int_runtime":
        v = int(ct.bid(0))
    elif CASE == "float_runtime":
        v = float(ct.bid(0))
    ct.store(out, index=(0,), tile=v)


@pytest.mark.parametrize("case,exc,msg", [
    ("e8m0_neg", ct.TileValueError, ""),
    ("e5m3_neg", ct.TileValueError, ""),
    ("f4_call", ct.TileTypeError, "Cannot call an object of type"),
    ("tile_arg", ct.TileTypeError, "Expected a scalar"),
    ("int_runtime", ct.TileTypeError, "expects a constant argument"),
    ("float_runtime", ct.TileTypeError, "expects a constant argument"),
])
def test_strict_constant_errors(case, exc, msg):
    # R-CONST-4 / R-CONST-5
    with pytest.raises(exc, match=msg or None):
        _run(k_strict_errors, np.zeros(4, np.float32), case)


@ct.kernel
def k_dtype_call_runtime(a, out, flag):
    s = ct.load(a, index=(0,), shape=())          # runtime float32 scalar
    v = ct.int8(s)                                 # converts like astype (R-CONST-5)
    ct.store(flag, index=(0,), tile=ct.full((1,), v.dtype == ct.int8, ct.int32))
    ct.store(out, index=(0,), tile=v)


@pytest.mark.parametrize("x,expected", [(-2.7, -2), (100.9, 100), (3.0, 3)])
def test_dtype_call_runtime_scalar(x, expected):
    # R-CONST-5: a runtime scalar converts like astype (float -> int truncates)
    out = np.zeros(1, np.int8)
    flag = np.zeros(1, np.int32)
    _run(k_dtype_call_runtime, np.array([x], np.float32), out, flag)
    assert flag[0] == 1 and out[0] == expected


# -- R-CONST-7: materialisation of loose constants ----------------------------------------------
@ct.kernel
def k_materialise(out, flag, n, CASE: ct.Constant[str], EXP: ct.Constant):
    if CASE == "where_i32":
        r = ct.where(n > 0, 5, -5)
    elif CASE == "where_i64":
        r = ct.where(n > 0, 2 ** 40, 0)
    elif CASE == "where_i64_neg":
        r = ct.where(n > 0, -(2 ** 63), 0)
    elif CASE == "where_u64":
        r = ct.where(n > 0, 2 ** 63, 2 ** 64 - 1)
    elif CASE == "where_u64_i32":
        r = ct.where(n > 0, 2 ** 63, 0)
    elif CASE == "where_f32":
        r = ct.where(n > 0, 1.5, 0.0)
    elif CASE == "where_b1":
        r = ct.where(n > 0, True, False)
    elif CASE == "where_mixed":
        r = ct.where(n > 0, 1.0, -1)
    elif CASE == "where_err":
        r = ct.where(n > 0, 2 ** 64, 0)
    elif CASE == "loop_i64":
        r = 2 ** 40
        for i in range(n):
            r = r + 1
    elif CASE == "loop_u64":
        r = 2 ** 63
        for i in range(n):
            r = r + 1
    elif CASE == "loop_f32":
        r = 0.1
        for i in range(n):
            r = r + 1.0
    elif CASE == "branch_i64":
        if n > 0:
            r = 2 ** 40
        else:
            r = 2 ** 41
    elif CASE == "branch_i32_i64":
        if n > 0:
            r = 5
        else:
            r = 2 ** 41
    elif CASE == "loop_err":
        r = 2 ** 64
        for i in range(n):
            r = r + 1
    ct.store(flag, index=(0,), tile=ct.full((1,), r.dtype == EXP, ct.int32))
    ct.store(out, index=(0,), tile=r)


MATERIALISE = [
    ("where_i32", ct.int32, 5), ("where_i64", ct.int64, 2 ** 40),
    ("where_i64_neg", ct.int64, -(2 ** 63)), ("where_u64", ct.uint64, 2 ** 63),
    ("where_f32", ct.float32, 1.5), ("where_b1", ct.bool_, True),
    ("where_mixed", ct.float32, 1.0), ("loop_i64", ct.int64, 2 ** 40 + 3),
    ("loop_u64", ct.uint64, 2 ** 63 + 3), ("loop_f32", ct.float32, None),
    ("branch_i64", ct.int64, 2 ** 40),
]


@pytest.mark.parametrize("case,dtype,value", MATERIALISE, ids=[c[0] for c in MATERIALISE])
def test_loose_constant_materialisation(case, dtype, value):
    # R-CONST-7: int32 if it fits, else int64, else uint64; loose float -> float32, bool -> bool_
    out = np.zeros(1, dtype.np_dtype)
    flag = np.zeros(1, np.int32)
    _run(k_materialise, out, flag, 3, case, dtype)
    assert flag[0] == 1
    if value is None:   # float32 accumulation: 0.1 materialised as float32 then +1.0 three times
        v = np.float32(0.1)
        for _ in range(3):
            v = np.float32(v + np.float32(1.0))
        value = v
    assert out[0] == np.asarray(value).astype(dtype.np_dtype)


@pytest.mark.parametrize("case", ["where_err", "loop_err"])
def test_loose_constant_too_large(case):
    # R-CONST-7
    with pytest.raises(ct.TileValueError, match="out of range of any supported integer type"):
        _run(k_materialise, np.zeros(1, np.uint64), np.zeros(1, np.int32), 3, case, ct.uint64)


def test_loose_constants_materialise_before_promotion():
    # R-CONST-7 + R-PROMO-3: two loose constants in where promote by their concrete dtypes,
    # so uint64 (2**63) with int32 (0) is a promotion error
    with pytest.raises(ct.TileTypeError, match="Implicit promotion of uint64 and int32"):
        _run(k_materialise, np.zeros(1, np.uint64), np.zeros(1, np.int32), 3, "where_u64_i32",
             ct.uint64)


def test_branch_constants_of_different_materialised_dtypes():
    # R-CONST-7 / R-PROMO-7: 5 (int32) and 2**41 (int64) on two paths do not merge into one
    # runtime variable of a single dtype (the name depends on the path taken)
    with pytest.raises(ct.TileTypeError):
        _run(k_materialise, np.zeros(1, np.int64), np.zeros(1, np.int32), 3, "branch_i32_i64",
             ct.int64)


# -- R-CONST-1/2: ct.Constant parameters and globals ---------------------------------------------
SCALE = 3
NP_SCALE = np.float16(0.5)


@ct.kernel
def k_const_params(a, out, flag, C: ct.Constant[int], F: ct.Constant[float], n: int):
    x = ct.load(a, index=(0,), shape=(4,))
    r = x * C + F * SCALE          # int8 * 3 (loose) + loose float -> float32
    ok1 = r.dtype == ct.float32
    h = x.astype(ct.float16) * NP_SCALE       # NumPy scalar global is strict float16
    ok2 = h.dtype == ct.float16
    ct.store(flag, index=(0,), tile=ct.full((1,), ok1 and ok2, ct.int32))
    ct.store(out, index=(0,), tile=r + h)


def test_constant_parameters_and_globals():
    # R-CONST-1 / R-CONST-2 (plain hints like ``n: int`` mean nothing)
    a = np.arange(4, dtype=np.int8)
    out = np.zeros(4, np.float32)
    flag = np.zeros(1, np.int32)
    _run(k_const_params, a, out, flag, 2, 0.25, 7)
    assert flag[0] == 1
    ref = (a * 2).astype(np.float32) + np.float32(0.75) + (a.astype(np.float16)
                                                          * np.float16(0.5)).astype(np.float32)
    np.testing.assert_array_equal(out, ref)


def test_literal_dtype_attribute():
    # R-TILE-2: (0).dtype is int32 inside a kernel; strict constants know their dtype
    @ct.kernel
    def k(flag):
        ok = (0).dtype == ct.int32 and ct.int16(3).dtype == ct.int16 and (1.5).dtype == ct.float32
        ct.store(flag, index=(0,), tile=ct.full((1,), ok, ct.int32))

    flag = np.zeros(1, np.int32)
    _run(k, flag)
    assert flag[0] == 1


_ = math

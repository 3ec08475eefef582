"""Elementwise math, division, comparisons, where, bitwise ops and astype (spec §12.1, §16-§19).

Expected values are computed in the test with NumPy / Python in the exact dtype; result dtypes
are checked in the kernel (``r.dtype == EXP`` folds, R-CMP-6) and by storing into an output of
exactly that dtype.
"""

from __future__ import annotations

import math
import operator

import ml_dtypes
import numpy as np
import pytest
from spec_executor import interp_only_ub
from tile_harness import bits  # noqa: E402

import cutile as ct
from cutile.api import elementwise as _ew

RM = ct.RoundingMode
BF16 = ml_dtypes.bfloat16


def _run(kernel, *args, grid=(1,)):
    ct.launch(None, grid, kernel, args)


def bits_any_nan(a):
    """``bits`` with every NaN mapped to one pattern: the spec does not specify NaN payloads
    or signs (on a GPU ``abs.f32`` of a NaN gives 0x7FFFFFFF, NumPy keeps the payload)."""
    a = np.ascontiguousarray(a)
    b = bits(a).copy()
    b[np.isnan(a.astype(np.float64))] = 0
    return b


def make_binary(fn):
    """Kernel computing ``fn(x, y)`` on two loaded 8-element tiles; flags dtype == EXP."""
    @ct.kernel
    def k(a, b, out, flag, EXP: ct.Constant):
        x = ct.load(a, index=(0,), shape=(8,))
        y = ct.load(b, index=(0,), shape=(8,))
        r = fn(x, y)
        ct.store(flag, index=(0,), tile=ct.full((1,), r.dtype == EXP, ct.int32))
        ct.store(out, index=(0,), tile=r)
    return k


def make_unary(fn):
    @ct.kernel
    def k(a, out, flag, EXP: ct.Constant):
        x = ct.load(a, index=(0,), shape=(8,))
        r = fn(x)
        ct.store(flag, index=(0,), tile=ct.full((1,), r.dtype == EXP, ct.int32))
        ct.store(out, index=(0,), tile=r)
    return k


def binary(fn, a, b, exp):
    """Run ``fn`` elementwise on arrays a, b; return the output of dtype ``exp``."""
    out = np.zeros(8, exp.np_dtype)
    flag = np.zeros(1, np.int32)
    _run(make_binary(fn), a, b, out, flag, exp)
    assert flag[0] == 1, "result dtype differs"
    return out


def unary(fn, a, exp):
    out = np.zeros(8, exp.np_dtype)
    flag = np.zeros(1, np.int32)
    _run(make_unary(fn), a, out, flag, exp)
    assert flag[0] == 1, "result dtype differs"
    return out


INT_A = [-7, 7, -7, 7, 0, 5, -128, 127]
INT_B = [2, -2, -2, 2, 3, 1, -1, 1]


# -- R-MATH-1/4: binary arithmetic, integer wraparound ----------------------------------------
@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
@pytest.mark.parametrize("op", ["add", "sub", "mul"])
def test_int_arithmetic_wraps(dtype, op):
    # R-MATH-4: two's-complement wraparound
    a, b = np.array(INT_A, dtype), np.array(INT_B, dtype)
    fn = {"add": operator.add, "sub": operator.sub, "mul": operator.mul}[op]
    bitsz = np.dtype(dtype).itemsize * 8
    ref = [((fn(int(x), int(y)) + 2 ** (bitsz - 1)) % 2 ** bitsz) - 2 ** (bitsz - 1)
           for x, y in zip(a, b)]
    ctd = {np.int8: ct.int8, np.int16: ct.int16, np.int32: ct.int32, np.int64: ct.int64}[dtype]
    out = binary(fn, a, b, ctd)
    np.testing.assert_array_equal(out, np.array(ref, dtype))


def test_int8_overflow_examples():
    # R-MATH-4: 127 + 1 == -128, (-128) * -1 == -128, 100 * 3 wraps
    a = np.array([127, -128, 100, 64, -1, 0, 1, 2], np.int8)
    b = np.array([1, -1, 3, 2, -128, -128, 127, 127], np.int8)
    out = binary(operator.add, a, b, ct.int8)
    np.testing.assert_array_equal(out, (a.astype(np.int64) + b).astype(np.int8))
    out = binary(operator.mul, a, b, ct.int8)
    np.testing.assert_array_equal(out, (a.astype(np.int64) * b).astype(np.int8))


@pytest.mark.parametrize("dtype,ct_dtype", [(np.float16, ct.float16), (BF16, ct.bfloat16),
                                            (np.float32, ct.float32), (np.float64, ct.float64)])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "truediv"])
def test_float_basic_ops_correctly_rounded(dtype, ct_dtype, op):
    # R-MATH-4: IEEE round-to-nearest-even in the operand dtype
    rng = np.random.default_rng(1)
    a = rng.normal(size=8).astype(dtype)
    b = (rng.normal(size=8) + 3).astype(dtype)
    fn = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
          "truediv": operator.truediv}[op]
    out = binary(fn, a, b, ct_dtype)
    # one rounding from the exact result; float64 is exact enough for f16/bf16/f32 operands
    # of add/sub/mul; for division use fractions
    from fractions import Fraction
    ref = np.array([float(fn(Fraction(float(x)), Fraction(float(y)))) for x, y in zip(a, b)])
    if dtype is np.float64:
        np.testing.assert_array_equal(out, fn(a, b))
    else:
        np.testing.assert_array_equal(bits(out), bits(ref.astype(dtype)))


# -- R-MATH-2/3: restricted and bool operands ---------------------------------------------------
def _addf(x, y):
    return x + y


def _modf(x, y):
    return x % y


def _divf(x, y):
    return x / y


def _floordivf(x, y):
    return x // y


def _powf(x, y):
    return x ** y


@ct.kernel
def k_restricted(a, out, SIDE: ct.Constant[str]):
    x = ct.load(a, index=(0,), shape=(8,))
    f8 = x.astype(ct.float8_e4m3fn)
    if SIDE == "left":
        r = f8 + x
    elif SIDE == "right":
        r = x * f8
    elif SIDE == "both":
        r = f8 - f8
    elif SIDE == "loose":
        r = f8 + 1.0
    ct.store(out, index=(0,), tile=r.astype(ct.float32))


@pytest.mark.parametrize("side,msg", [("left", "Left-hand side has non-arithmetic dtype"),
                                      ("right", "Right-hand side has non-arithmetic dtype"),
                                      ("both", "non-arithmetic dtype"),
                                      ("loose", "Left-hand side has non-arithmetic dtype")])
def test_restricted_float_arithmetic_rejected(side, msg):
    # R-MATH-2 / R-DTYPE-3
    with pytest.raises(ct.TileTypeError, match=msg):
        _run(k_restricted, np.ones(8, np.float32), np.zeros(8, np.float32), side)


@pytest.mark.parametrize("fn,msg", [
    (_addf, "does not support bool, please cast bool to int"),
    (ct.sub, "does not support bool"), (ct.mul, "does not support bool"),
    (_floordivf, "does not support bool"), (ct.cdiv, "does not support bool"),
    (_powf, "does not support bool"), (ct.minimum, "does not support bool"),
    (ct.maximum, "does not support bool"), (ct.atan2, "does not support bool"),
    (_modf, "Modulo operation does not support bool"),
])
def test_bool_pair_arithmetic_rejected(fn, msg):
    # R-MATH-3
    a = np.array([True, False] * 4)
    with pytest.raises(ct.TileTypeError, match=msg):
        binary(fn, a, a, ct.int32)


def test_bool_truediv_gives_float32():
    # R-MATH-3 exception / R-PROMO-5
    a = np.array([True, False] * 4)
    b = np.ones(8, np.bool_)
    out = binary(_divf, a, b, ct.float32)
    np.testing.assert_array_equal(out, a.astype(np.float32))


@ct.kernel
def k_bool_loose(a, out, CASE: ct.Constant[str]):
    x = ct.load(a, index=(0,), shape=(8,))
    if CASE == "add_true":
        r = x + True
    elif CASE == "mul_int":
        r = x * 3
    ct.store(out, index=(0,), tile=r)


def test_bool_with_constants():
    # R-MATH-3: bool tile + bool constant is a bool pair; bool tile * 3 is int32 (R-PROMO-4)
    a = np.array([True, False] * 4)
    with pytest.raises(ct.TileTypeError, match="does not support bool"):
        _run(k_bool_loose, a, np.zeros(8, np.int32), "add_true")
    out = np.zeros(8, np.int32)
    _run(k_bool_loose, a, out, "mul_int")
    np.testing.assert_array_equal(out, a * 3)


# -- R-MATH-5: pow and atan2 -------------------------------------------------------------------
@ct.kernel
def k_pow(a, b, out, flag, CASE: ct.Constant[str], EXP: ct.Constant):
    x = ct.load(a, index=(0,), shape=(8,))
    y = ct.load(b, index=(0,), shape=(8,))
    if CASE == "tile":
        r = x ** y
    elif CASE == "half":
        r = x ** 0.5
    elif CASE == "two_pow":
        r = 2.0 ** y
    elif CASE == "sq":
        r = x ** 2
    elif CASE == "fn":
        r = ct.pow(x, y)
    elif CASE == "atan2":
        r = ct.atan2(x, y)
    ct.store(flag, index=(0,), tile=ct.full((1,), r.dtype == EXP, ct.int32))
    ct.store(out, index=(0,), tile=r)


POW_CASES = [
    # base dtype, exponent dtype, case, expected dtype
    (np.float16, np.int32, "tile", ct.float16),
    (np.float16, np.int8, "tile", ct.float16),
    (np.float16, np.uint16, "tile", ct.float16),
    (BF16, np.int16, "fn", ct.bfloat16),
    (np.float32, np.int64, "tile", ct.float32),
    (np.float16, np.float32, "tile", ct.float32),
    (np.int32, np.int32, "half", ct.float32),
    (np.float32, np.int32, "two_pow", ct.float32),
    (np.float16, np.int32, "sq", ct.float16),
    (np.float64, np.float64, "fn", ct.float64),
    (np.float32, np.float32, "atan2", ct.float32),
    (np.float16, np.float16, "atan2", ct.float16),
    (np.int8, np.float32, "atan2", ct.float32),
]


@pytest.mark.parametrize("bd,ed,case,exp", POW_CASES,
                         ids=[f"{np.dtype(c[0]).name}-{np.dtype(c[1]).name}-{c[2]}"
                              for c in POW_CASES])
def test_pow_atan2_dtypes_and_values(bd, ed, case, exp):
    # R-MATH-5 (value tolerance: R-MATH-10, transcendental, a few ulp of the result dtype)
    a = np.array([1.5, 2.0, 0.5, 3.0, 1.25, 4.0, 0.75, 1.0]).astype(bd)
    b = np.array([2, 3, -1, 0, 4, 1, 2, 5]).astype(ed)
    out = np.zeros(8, exp.np_dtype)
    flag = np.zeros(1, np.int32)
    _run(k_pow, a, b, out, flag, case, exp)
    assert flag[0] == 1
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(all="ignore"):
        ref = {"tile": a64 ** b64, "fn": a64 ** b64, "half": a64 ** 0.5, "two_pow": 2.0 ** b64,
               "sq": a64 ** 2, "atan2": np.arctan2(a64, b64)}[case]
    eps = float(ml_dtypes.finfo(exp.np_dtype).eps)
    np.testing.assert_allclose(out.astype(np.float64), ref, rtol=4 * eps, atol=0)


@pytest.mark.parametrize("case", ["tile", "fn", "atan2"])
def test_integer_pow_atan2_rejected(case):
    # R-MATH-5 (cutile): integer-only pow / atan2 on tiles raise TileTypeError
    a = np.arange(8, dtype=np.int32)
    with pytest.raises(ct.TileTypeError):
        _run(k_pow, a, a, np.zeros(8, np.int32), np.zeros(1, np.int32), case, ct.int32)


# -- R-MATH-6: minimum / maximum ---------------------------------------------------------------
def _min_nan(x, y):
    return ct.minimum(x, y, propagate_nan=True)


def _max_nan(x, y):
    return ct.maximum(x, y, propagate_nan=True)


def _builtin_min(x, y):
    return min(x, y)


def _builtin_max(x, y):
    return max(x, y)


NAN = float("nan")


@pytest.mark.parametrize("dtype,ctd", [(np.float32, ct.float32), (np.float16, ct.float16),
                                       (BF16, ct.bfloat16), (np.float64, ct.float64)])
def test_minimum_maximum_nan(dtype, ctd):
    # R-MATH-6: NaN ignored by default, propagated with propagate_nan=True
    a = np.array([1.0, NAN, NAN, -2.0, 3.0, -0.5, np.inf, -np.inf]).astype(dtype)
    b = np.array([2.0, 1.0, NAN, NAN, -3.0, 0.25, 1.0, 5.0]).astype(dtype)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    for fn, ref in [(ct.minimum, np.fmin), (ct.maximum, np.fmax), (_builtin_min, np.fmin),
                    (_builtin_max, np.fmax), (_min_nan, np.minimum), (_max_nan, np.maximum)]:
        out = binary(fn, a, b, ctd)
        np.testing.assert_array_equal(out.astype(np.float32), ref(a32, b32))


@pytest.mark.parametrize("dtype,ctd", [(np.uint8, ct.uint8), (np.int8, ct.int8),
                                       (np.uint64, ct.uint64), (np.int64, ct.int64)])
def test_minimum_maximum_int_signedness(dtype, ctd):
    # R-MATH-6: integers compare by their signedness
    info = np.iinfo(dtype)
    a = np.array([info.max, info.min, 1, 0, 5, info.max - 1, 3, 2], dtype)
    b = np.array([info.min, info.max, 0, 1, 5, info.max, 2, 3], dtype)
    np.testing.assert_array_equal(binary(ct.minimum, a, b, ctd), np.minimum(a, b))
    np.testing.assert_array_equal(binary(_builtin_max, a, b, ctd), np.maximum(a, b))


def test_min_max_mixed_promotion():
    # R-MATH-1 / R-PROMO-3: minimum promotes (int16, float16 -> float16)
    a = np.array([1, -2, 3, -4, 5, -6, 7, -8], np.int16)
    b = np.array([0.5, -2.5, 3.5, 0.0, 9.0, -6.0, 6.5, -9.0], np.float16)
    np.testing.assert_array_equal(binary(ct.maximum, a, b, ct.float16),
                                  np.maximum(a.astype(np.float16), b))


# -- R-DIV-1..7 ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype,ctd", [(np.int8, ct.int8), (np.int32, ct.int32),
                                       (np.int64, ct.int64), (np.int16, ct.int16)])
def test_int_floordiv_mod_python_semantics(dtype, ctd):
    # R-DIV-1 / R-DIV-3 (incl. MIN // -1 wrapping for the fixed-width type)
    a, b = np.array(INT_A, dtype), np.array(INT_B, dtype)
    bitsz = np.dtype(dtype).itemsize * 8

    def wrap(v):
        return ((v + 2 ** (bitsz - 1)) % 2 ** bitsz) - 2 ** (bitsz - 1)
    q = binary(_floordivf, a, b, ctd)
    r = binary(_modf, a, b, ctd)
    np.testing.assert_array_equal(q, [wrap(int(x) // int(y)) for x, y in zip(a, b)])
    np.testing.assert_array_equal(r, [int(x) % int(y) for x, y in zip(a, b)])
    # R-DIV-3 identity x == (x // y) * y + x % y (modulo 2**bits)
    assert all(wrap(int(qq) * int(y) + int(rr)) == int(x) for x, y, qq, rr in zip(a, b, q, r))
    np.testing.assert_array_equal(binary(ct.floordiv, a, b, ctd), q)
    np.testing.assert_array_equal(binary(ct.mod, a, b, ctd), r)


@pytest.mark.parametrize("dtype,ctd", [(np.uint8, ct.uint8), (np.uint32, ct.uint32),
                                       (np.uint64, ct.uint64)])
def test_unsigned_division(dtype, ctd):
    # R-DIV-1: unsigned operands divide normally; R-DIV-4 cdiv
    a = np.array([7, 200, 0, 255, 9, 8, 100, 1], dtype)
    b = np.array([2, 3, 5, 16, 4, 4, 7, 1], dtype)
    np.testing.assert_array_equal(binary(_floordivf, a, b, ctd), a // b)
    np.testing.assert_array_equal(binary(_modf, a, b, ctd), a % b)
    np.testing.assert_array_equal(binary(ct.cdiv, a, b, ctd),
                                  [-(-int(x) // int(y)) for x, y in zip(a, b)])


def test_cdiv_examples():
    # R-DIV-4: cdiv(9,4)=3, cdiv(8,4)=2, cdiv(-30,23)=-1, cdiv(100,-13)=-7, cdiv(-30,-13)=3,
    # cdiv(100,23)=5
    a = np.array([9, 8, -30, 100, -30, 100, 0, -1], np.int32)
    b = np.array([4, 4, 23, -13, -13, 23, 5, 7], np.int32)
    out = binary(ct.cdiv, a, b, ct.int32)
    np.testing.assert_array_equal(out, [math.ceil(x / y) for x, y in zip(a.tolist(), b.tolist())])
    np.testing.assert_array_equal(out[:6], [3, 2, -1, -7, 3, 5])
    assert ct.cdiv(10, 4) == 3 and ct.cdiv(8, 4) == 2           # host: (x - 1) // y + 1


def test_cdiv_float_rejected():
    # R-DIV-4 (cutile): float cdiv in tile code -> TileTypeError
    a = np.ones(8, np.float32)
    with pytest.raises(ct.TileTypeError):
        binary(ct.cdiv, a, a, ct.float32)


@pytest.mark.parametrize("dtype,ctd", [(np.float32, ct.float32), (np.float64, ct.float64),
                                       (np.float16, ct.float16), (BF16, ct.bfloat16)])
def test_float_floordiv_mod(dtype, ctd):
    # R-DIV-2: floor(x / y) of the rounded quotient; R-DIV-3: sign of the divisor
    a = np.array([5.5, -7.5, 7.5, -7.5, 1.0, -0.0, 6.0, 3.0]).astype(dtype)
    b = np.array([2.2, 2.0, -2.0, -2.0, 3.0, 2.0, 3.0, 0.0]).astype(dtype)
    q = binary(_floordivf, a, b, ctd)
    r = binary(_modf, a, b, ctd)
    with np.errstate(all="ignore"):
        quot = (a.astype(np.float64) / b.astype(np.float64)).astype(dtype)
        np.testing.assert_array_equal(q, np.floor(quot.astype(np.float64)).astype(dtype))
    assert q[0] == 2.0                                    # 5.5 // 2.2 == 2.0
    np.testing.assert_array_equal(r[1:5], np.array([0.5, -0.5, -1.5, 1.0]).astype(dtype))
    assert np.isnan(r[7]) and q[6] == 2.0
    assert np.isinf(binary(_divf, a, b, ctd)[7])          # R-DIV-6: IEEE inf for float / 0


def test_div7_example():
    # R-DIV-7: arange(4) / full(4, 2) == [0, .5, 1, 1.5] float32
    @ct.kernel
    def k(out, flag):
        r = ct.arange(4, dtype=ct.int32) / ct.full((4,), 2, ct.int32)
        ct.store(flag, index=(0,), tile=ct.full((1,), r.dtype == ct.float32, ct.int32))
        ct.store(out, index=(0,), tile=r)

    out = np.zeros(4, np.float32)
    flag = np.zeros(1, np.int32)
    _run(k, out, flag)
    assert flag[0] == 1
    np.testing.assert_array_equal(out, [0.0, 0.5, 1.0, 1.5])


@interp_only_ub
def test_runtime_integer_division_by_zero_is_ub():
    # R-DIV-6: runtime integer division by zero is UB (the interpreter reports it)
    a = np.ones(8, np.int32)
    with pytest.raises(ct.UndefinedBehaviorError):
        binary(_floordivf, a, np.zeros(8, np.int32), ct.int32)


@ct.kernel
def k_divmod(a, b, q, r):
    x = ct.load(a, index=(0,), shape=(8,))
    y = ct.load(b, index=(0,), shape=(8,))
    qq, rr = divmod(x, y)
    ct.store(q, index=(0,), tile=qq)
    ct.store(r, index=(0,), tile=rr)


def test_divmod_builtin():
    # R-DIV-5
    a, b = np.array(INT_A[:6] + [9, -9], np.int32), np.array(INT_B[:6] + [4, 4], np.int32)
    q, r = np.zeros(8, np.int32), np.zeros(8, np.int32)
    _run(k_divmod, a, b, q, r)
    np.testing.assert_array_equal(q, [int(x) // int(y) for x, y in zip(a, b)])
    np.testing.assert_array_equal(r, [int(x) % int(y) for x, y in zip(a, b)])
    with pytest.raises(ct.TileTypeError, match="divmod\\(\\) is not implemented for floating"):
        _run(k_divmod, a.astype(np.float32), b.astype(np.float32), q.astype(np.float32),
             r.astype(np.float32))


def test_divmod_api_function():
    # R-DIV-5: ct.divmod(x, y) on integer tiles is (x // y, x % y)
    @ct.kernel
    def k(a, b, q, r):
        qq, rr = ct_divmod(ct.load(a, index=(0,), shape=(8,)), ct.load(b, index=(0,), shape=(8,)))
        ct.store(q, index=(0,), tile=qq)
        ct.store(r, index=(0,), tile=rr)

    a, b = np.array(INT_A, np.int8), np.array(INT_B, np.int8)
    q, r = np.zeros(8, np.int8), np.zeros(8, np.int8)
    _run(k, a, b, q, r)
    np.testing.assert_array_equal(q, [((int(x) // int(y) + 128) % 256) - 128
                                      for x, y in zip(a, b)])
    np.testing.assert_array_equal(r, [int(x) % int(y) for x, y in zip(a, b)])


# -- R-MATH-7: unary functions ------------------------------------------------------------------
FLOAT_UNARY = {
    "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sin": np.sin,
    "cos": np.cos, "tan": np.tan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "sqrt": np.sqrt, "rsqrt": lambda v: 1.0 / np.sqrt(v),
}
UNARY_SRC = [(np.int32, ct.float32), (np.bool_, ct.float32), (np.uint8, ct.float32),
             (np.int64, ct.float32), (np.float16, ct.float16), (BF16, ct.bfloat16),
             (np.float32, ct.float32), (np.float64, ct.float64)]


@pytest.mark.parametrize("name", sorted(FLOAT_UNARY))
@pytest.mark.parametrize("src,exp", UNARY_SRC, ids=[np.dtype(s).name for s, _ in UNARY_SRC])
def test_float_unary_functions(name, src, exp):
    # R-MATH-7: bool/int inputs become float32, floats keep their dtype; values within a few
    # ulp of the correctly rounded result (R-MATH-10 tolerance for transcendentals)
    vals = np.array([1, 2, 3, 0, 1, 4, 2, 1]) if src is not np.bool_ else np.arange(8) % 2
    if np.dtype(src).kind == "f":
        vals = np.array([0.5, 1.25, 2.0, 0.1, 3.0, 0.75, 1.5, 0.3])
    a = vals.astype(src)
    out = unary(getattr(ct, name), a, exp)
    with np.errstate(all="ignore"):
        ref = FLOAT_UNARY[name](a.astype(exp.np_dtype).astype(np.float64))
    eps = float(ml_dtypes.finfo(exp.np_dtype).eps)
    np.testing.assert_allclose(out.astype(np.float64), ref, rtol=2 * eps, atol=0)


@pytest.mark.parametrize("dtype,ctd", [(np.float16, ct.float16), (BF16, ct.bfloat16),
                                       (np.float32, ct.float32), (np.float64, ct.float64)])
def test_floor_ceil_isnan_abs_negative_float(dtype, ctd):
    # R-MATH-7: floor/ceil keep the float dtype (exact), isnan gives bool
    a = np.array([1.5, -1.5, 2.0, -0.0, NAN, np.inf, -2.25, 0.75]).astype(dtype)
    a32 = a.astype(np.float32)
    np.testing.assert_array_equal(unary(ct.floor, a, ctd).astype(np.float32), np.floor(a32))
    np.testing.assert_array_equal(unary(ct.ceil, a, ctd).astype(np.float32), np.ceil(a32))
    np.testing.assert_array_equal(unary(ct.isnan, a, ct.bool_), np.isnan(a32))
    b = bits_any_nan
    np.testing.assert_array_equal(b(unary(ct.abs, a, ctd)), b(np.abs(a32).astype(dtype)))
    np.testing.assert_array_equal(b(unary(abs, a, ctd)), b(np.abs(a32).astype(dtype)))
    np.testing.assert_array_equal(b(unary(ct.negative, a, ctd)), b((-a32).astype(dtype)))
    np.testing.assert_array_equal(b(unary(_neg, a, ctd)), b((-a32).astype(dtype)))


@pytest.mark.parametrize("fn,src,msg", [
    (ct.floor, np.bool_, "Boolean inputs are not supported"),
    (ct.ceil, np.int32, "Integer inputs are not supported"),
    (ct.floor, np.uint8, "Integer inputs are not supported"),
    (ct.isnan, np.int32, "Unexpected input type"),
    (ct.isnan, np.bool_, "Unexpected input type"),
])
def test_unary_rejections(fn, src, msg):
    # R-MATH-7
    with pytest.raises(ct.TileTypeError, match=msg):
        unary(fn, np.ones(8, src), ct.float32)


def _neg(x):
    return -x


def _pos(x):
    return +x


def test_negative_abs_int_and_bool():
    # R-MATH-4 / R-MATH-7: negate/abs wrap at the minimum; bool negates to int32; abs(bool)
    # keeps bool; unary + of bool is int32
    a = np.array([-128, 127, 0, -1, 5, -5, 100, -100], np.int8)
    np.testing.assert_array_equal(unary(ct.negative, a, ct.int8), (-a.astype(np.int64))
                                  .astype(np.int8))
    np.testing.assert_array_equal(unary(abs, a, ct.int8), np.abs(a.astype(np.int64))
                                  .astype(np.int8))
    assert unary(ct.abs, a, ct.int8)[0] == -128
    b = np.array([True, False] * 4)
    np.testing.assert_array_equal(unary(_neg, b, ct.int32), -b.astype(np.int32))
    np.testing.assert_array_equal(unary(ct.abs, b, ct.bool_), b)
    np.testing.assert_array_equal(unary(_pos, b, ct.int32), b.astype(np.int32))
    u = np.array([0, 1, 255, 128, 2, 3, 4, 5], np.uint8)
    np.testing.assert_array_equal(unary(_neg, u, ct.uint8), (-u.astype(np.int64))
                                  .astype(np.uint8))


@ct.kernel
def k_unary_const(out, flag, CASE: ct.Constant[str], EXP: ct.Constant):
    if CASE == "exp_strict_int":
        v = ct.exp(ct.int32(0))
    elif CASE == "sqrt_strict_f16":
        v = ct.sqrt(ct.float16(2.0))
    elif CASE == "neg_strict_bool":
        v = -ct.bool_(True)
    elif CASE == "floor_loose":
        v = ct.floor(2.5) + ct.ceil(-2.5)
    ct.store(flag, index=(0,), tile=ct.full((1,), v.dtype == EXP, ct.int32))
    ct.store(out, index=(0,), tile=v)


@pytest.mark.parametrize("case,exp,value", [
    ("exp_strict_int", ct.float32, 1.0), ("sqrt_strict_f16", ct.float16, np.float16(np.sqrt(2))),
    ("neg_strict_bool", ct.int32, -1), ("floor_loose", ct.int32, 0),
])
def test_unary_on_constants(case, exp, value):
    # R-MATH-7: constants fold; strict constants take the unary result dtype
    out = np.zeros(1, exp.np_dtype)
    flag = np.zeros(1, np.int32)
    _run(k_unary_const, out, flag, case, exp)
    assert flag[0] == 1 and out[0] == value


# -- R-MATH-8: rounding modes and flush-to-zero ------------------------------------------------
@ct.kernel
def k_round(a, b, out, CASE: ct.Constant[str], MODE: ct.Constant):
    x = ct.load(a, index=(0,), shape=(8,))
    y = ct.load(b, index=(0,), shape=(8,))
    if CASE == "add":
        r = ct.add(x, y, rounding_mode=MODE)
    elif CASE == "sub":
        r = ct.sub(x, y, rounding_mode=MODE)
    elif CASE == "mul":
        r = ct.mul(x, y, rounding_mode=MODE)
    elif CASE == "truediv":
        r = ct.truediv(x, y, rounding_mode=MODE)
    elif CASE == "sqrt":
        r = ct.sqrt(x, rounding_mode=MODE)
    elif CASE == "exp":
        r = ct.exp(x, rounding_mode=MODE)
    elif CASE == "tanh":
        r = ct.tanh(x, rounding_mode=MODE)
    ct.store(out, index=(0,), tile=r)


def _ref_round(fn, a, b, dtype, mode):
    """Exact result via Fraction, rounded into ``dtype`` with ``mode``."""
    from fractions import Fraction
    out = []
    for x, y in zip(a.tolist(), b.tolist()):
        q = fn(Fraction(x), Fraction(y))
        near = np.array(float(q)).astype(dtype)          # float(q) is correctly rounded
        lo = near if Fraction(float(near)) <= q else np.nextafter(near, dtype(-np.inf))
        hi = near if Fraction(float(near)) >= q else np.nextafter(near, dtype(np.inf))
        if Fraction(float(lo)) == q:
            out.append(lo)
        elif mode == "RN":
            # ties cannot occur with these inputs (checked by the caller's choice)
            out.append(near)
        elif mode == "RZ":
            out.append(lo if q > 0 else hi)
        elif mode == "RM":
            out.append(lo)
        else:
            out.append(hi)
    return np.array(out, dtype)


@pytest.mark.parametrize("mode", ["RN", "RZ", "RM", "RP"])
@pytest.mark.parametrize("case", ["add", "sub", "mul", "truediv"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_directed_rounding_basic_ops(case, mode, dtype):
    # R-MATH-8 / R-MATH-8a: exact directed rounding (f32 and f64)
    a = np.array([1.0, -1.0, 1.0, 3.0, -7.0, 0.1, 1e30, 1e-3], dtype)
    b = np.array([2.0 ** -30, 2.0 ** -30, 3.0, 7.0, 3.0, -0.3, 7e-8, 1e-300], dtype)
    if dtype is np.float32:
        b[7] = np.float32(1e-40)
    fn = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
          "truediv": operator.truediv}[case]
    out = np.zeros(8, dtype)
    _run(k_round, a, b, out, case, getattr(RM, mode))
    np.testing.assert_array_equal(bits(out), bits(_ref_round(fn, a, b, dtype, mode)))


@pytest.mark.parametrize("mode", ["RZ", "RM", "RP"])
def test_directed_rounding_sqrt(mode):
    # R-MATH-8: sqrt accepts RN/RZ/RM/RP
    a = np.array([2.0, 3.0, 5.0, 0.5, 10.0, 1e-3, 7.0, 11.0], np.float32)
    out = np.zeros(8, np.float32)
    _run(k_round, a, a, out, "sqrt", getattr(RM, mode))
    from fractions import Fraction
    for x, r in zip(a.tolist(), out.tolist()):
        lo, hi = Fraction(r) ** 2, Fraction(float(np.nextafter(np.float32(r), np.float32(np.inf))))
        assert lo != Fraction(x)
        if mode in ("RZ", "RM"):
            assert Fraction(r) ** 2 < Fraction(x) < hi ** 2
        else:
            below = Fraction(float(np.nextafter(np.float32(r), np.float32(0))))
            assert below ** 2 < Fraction(x) < Fraction(r) ** 2


@pytest.mark.parametrize("case,mode,dtype,msg", [
    ("add", RM.RA, np.float32, "Rounding mode .* is not supported for add"),
    ("add", RM.FULL, np.float32, "is not supported for add"),
    ("mul", RM.APPROX, np.float32, "is not supported for mul"),
    ("sqrt", RM.RA, np.float32, "is not supported for sqrt"),
    ("exp", RM.RN, np.float32, "is not supported for exp"),
    ("tanh", RM.RZ, np.float32, "is not supported for tanh"),
    ("add", RM.RZ, np.int32, "Rounding mode can only be used for"),
    ("truediv", RM.APPROX, np.float16, "can only be used for float32 type"),
    ("sqrt", RM.APPROX, np.float64, "can only be used for float32 type"),
    ("exp", RM.FULL, np.float16, "can only be used for float32 type"),
    ("add", RM.RZI, np.float32, "is not supported for add"),
])
def test_rounding_mode_validation(case, mode, dtype, msg):
    # R-MATH-8
    a = np.ones(8, dtype)
    with pytest.raises(ct.TileTypeError, match=msg):
        _run(k_round, a, a, np.zeros(8, np.float32), case, mode)


@pytest.mark.parametrize("case,mode", [("truediv", RM.FULL), ("truediv", RM.APPROX),
                                       ("sqrt", RM.APPROX), ("exp", RM.APPROX),
                                       ("exp", RM.FULL), ("tanh", RM.APPROX), ("tanh", RM.FULL)])
def test_full_approx_modes_accepted(case, mode):
    # R-MATH-8 (values: R-MATH-10 tolerance)
    a = np.array([0.5, 1.0, 2.0, 3.0, 0.25, 4.0, 1.5, 0.1], np.float32)
    out = np.zeros(8, np.float32)
    _run(k_round, a, a + 1, out, case, mode)
    ref = {"truediv": a / (a + 1), "sqrt": np.sqrt(a), "exp": np.exp(a), "tanh": np.tanh(a)}
    np.testing.assert_allclose(out, ref[case], rtol=1e-6)


@ct.kernel
def k_ftz(a, b, out, CASE: ct.Constant[str]):
    x = ct.load(a, index=(0,), shape=(8,))
    y = ct.load(b, index=(0,), shape=(8,))
    if CASE == "add":
        r = ct.add(x, y, flush_to_zero=True)
    elif CASE == "mul":
        r = ct.mul(x, y, flush_to_zero=True)
    elif CASE == "maximum":
        r = ct.maximum(x, y, flush_to_zero=True)
    elif CASE == "exp2":
        r = ct.exp2(x, flush_to_zero=True)
    elif CASE == "sqrt":
        r = ct.sqrt(x, flush_to_zero=True)
    elif CASE == "runtime_flag":
        r = ct.add(x, y, flush_to_zero=ct.bid(0) == 0)
    elif CASE == "runtime_mode":
        r = ct.add(x, y, rounding_mode=ct.bid(0))
    ct.store(out, index=(0,), tile=r)


def test_flush_to_zero_float32():
    # R-MATH-8: ftz flushes subnormal inputs and results to (signed) zero
    sub = np.float32(1e-40)
    a = np.array([sub, -sub, 1.0, 2e-38, sub, 0.0, -2.0, 3.0], np.float32)
    b = np.array([0.0, 0.0, sub, -1.9e-38, 1.0, sub, 0.5, 0.0], np.float32)
    out = np.zeros(8, np.float32)
    _run(k_ftz, a, b, out, "add")
    ref = np.array([0.0, 0.0, 1.0, 0.0, 1.0, 0.0, -1.5, 3.0], np.float32)  # -0 + +0 = +0
    np.testing.assert_array_equal(bits(out), bits(ref))
    _run(k_ftz, a, b, out, "mul")
    np.testing.assert_array_equal(out, [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.0])


@pytest.mark.parametrize("case,dtype", [("add", np.float16), ("maximum", np.float64),
                                        ("sqrt", BF16), ("mul", np.int32)])
def test_flush_to_zero_only_float32(case, dtype):
    # R-MATH-8
    a = np.ones(8, dtype)
    with pytest.raises(ct.TileTypeError, match="Flush to zero can only be used for float32 type"):
        _run(k_ftz, a, a, np.zeros(8, np.float32), case)


def test_flush_to_zero_int_promoted_by_unary_ok():
    # R-MATH-8: ints promoted to f32 by a unary op accept flush_to_zero
    a = np.array([0, 1, 2, 3, -1, 4, 5, 6], np.int32)
    out = np.zeros(8, np.float32)
    _run(k_ftz, a, a, out, "exp2")
    np.testing.assert_array_equal(out, np.exp2(a.astype(np.float64)).astype(np.float32))


@pytest.mark.parametrize("case", ["runtime_flag", "runtime_mode"])
def test_rounding_and_ftz_must_be_constant(case):
    # R-MATH-8: both parameters must be constants
    a = np.ones(8, np.float32)
    with pytest.raises(ct.TileTypeError):
        _run(k_ftz, a, a, np.zeros(8, np.float32), case)


# -- R-CMP-1..6 ------------------------------------------------------------------------------------
@pytest.mark.parametrize("op,fn", [("eq", ct.equal), ("ne", ct.not_equal), ("lt", ct.less),
                                   ("le", ct.less_equal), ("gt", ct.greater),
                                   ("ge", ct.greater_equal)])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.float64])
def test_float_comparisons_ieee(op, fn, dtype):
    # R-CMP-1/2: NaN compares false except !=; -0.0 == 0.0
    a = np.array([1.0, NAN, NAN, -0.0, 2.0, np.inf, -1.0, 3.0]).astype(dtype)
    b = np.array([1.0, 1.0, NAN, 0.0, 1.0, np.inf, -np.inf, 4.0]).astype(dtype)
    ref = getattr(operator, op)(a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_array_equal(binary(fn, a, b, ct.bool_), ref)


def _lt(x, y):
    return x < y


def _ge(x, y):
    return x >= y


def _eq(x, y):
    return x == y


def _ne(x, y):
    return x != y


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint64, np.int64, np.bool_])
def test_int_comparisons_signedness(dtype):
    # R-CMP-3
    if dtype is np.bool_:
        a = np.array([False, True, False, True] * 2)
        b = np.array([True, False, False, True] * 2)
    else:
        info = np.iinfo(dtype)
        a = np.array([info.max, info.min, 0, 1, 200 % (info.max + 1), 5, -1 % (info.max + 1),
                      3], dtype) if info.min == 0 else np.array(
            [info.max, info.min, 0, 1, -56, 5, -1, 3], dtype)
        b = np.array([info.min, info.max, 1, 0, 100, 5, 0, 3], dtype)
    for fn, ref in [(_lt, np.less), (_ge, np.greater_equal), (_eq, np.equal), (_ne, np.not_equal)]:
        np.testing.assert_array_equal(binary(fn, a, b, ct.bool_), ref(a, b))


@ct.kernel
def k_cmp(a, out, flag, CASE: ct.Constant[str]):
    x = ct.load(a, index=(0,), shape=(8,))
    if CASE == "lt2.5":
        r = x < 2.5
    elif CASE == "arange":
        r = ct.arange(8, dtype=ct.int32) > 2
    elif CASE == "bcast":
        r = x.reshape((1, 8)) == ct.arange(2, dtype=ct.int8).reshape((2, 1))
    elif CASE == "chain":
        r = 1 < x <= 4
    elif CASE == "scalar":
        nan_ne = ct.float32(NAN) != ct.float32(NAN)
        r = ct.full((8,), nan_ne, ct.int32) + (NAN == NAN)  # noqa: PLR0124
    ok = r.dtype == ct.bool_ or CASE == "scalar"
    ct.store(flag, index=(0,), tile=ct.full((1,), ok, ct.int32))
    ct.store(out, index=(0, 0), tile=ct.broadcast_to(r, (2, 8)))


@pytest.mark.parametrize("case,ref", [
    ("lt2.5", lambda a: a.astype(np.float32) < np.float32(2.5)),
    ("arange", lambda a: np.arange(8) > 2),
    ("bcast", lambda a: a[None, :] == np.arange(2)[:, None]),
    ("chain", lambda a: (1 < a) & (a <= 4)),
    ("scalar", lambda a: np.ones(8, np.int32)),
])
def test_comparison_examples(case, ref):
    # R-CMP-1 (int8 < 2.5 compares in float32; broadcast shape), R-CMP-2 (strict and loose
    # NaN constants), R-CMP-4 (chained)
    a = np.array([1, 2, 3, 4, 0, 5, -1, 2], np.int8)
    out = np.zeros((2, 8), np.int32)
    flag = np.zeros(1, np.int32)
    _run(k_cmp, a, out, flag, case)
    assert flag[0] == 1
    np.testing.assert_array_equal(out, np.broadcast_to(ref(a), (2, 8)).astype(np.int32))


@ct.kernel
def k_cmp_tuple(flag, CASE: ct.Constant[str]):
    t = ct.arange(4, dtype=ct.int32)
    if CASE == "eq":
        ok = (1, 2, ct.float32) == (1, 2, ct.float32) and (1, 2) != (1, 2, 3)
    elif CASE == "in":
        ok = 3 in (1, 2, 3) and ct.int16 not in (ct.int8, ct.int32)
    elif CASE == "lt":
        ok = (1, 2) < (1, 3)
    elif CASE == "tile_elem":
        ok = (t, 1) == (t, 1)
    elif CASE == "strings":
        ok = "a" == "a" and ct.RoundingMode.RZ  # noqa: PLR0133 != ct.RoundingMode.RN
    ct.store(flag, index=(0,), tile=ct.full((1,), ok, ct.int32))


@pytest.mark.parametrize("case,msg", [("eq", None), ("in", None), ("strings", None),
                                      ("lt", "is not supported for tuples"),
                                      ("tile_elem", "not supported for non-scalar elements")])
def test_compile_time_comparisons(case, msg):
    # R-CMP-6
    flag = np.zeros(1, np.int32)
    if msg is None:
        _run(k_cmp_tuple, flag, case)
        assert flag[0] == 1
    else:
        with pytest.raises(ct.TileTypeError, match=msg):
            _run(k_cmp_tuple, flag, case)


# -- R-SEL-1: where ------------------------------------------------------------------------------
@ct.kernel
def k_where(a, out, flag, CASE: ct.Constant[str], EXP: ct.Constant):
    x = ct.load(a, index=(0, 0), shape=(4, 8))
    if CASE == "seed":
        cond = ct.arange(4, dtype=ct.int32) < 2
        x_true = ct.full((4,), 1.0, dtype=ct.float32)
        x_false = ct.full((4,), -1.0, dtype=ct.float32)
        r = ct.where(cond, x_true, x_false)
    elif CASE == "ints":
        r = ct.where(ct.arange(4, dtype=ct.int32) >= 2, 1, -1)
    elif CASE == "floats":
        r = ct.where(ct.arange(4, dtype=ct.int32) >= 2, 1.0, -1.0)
    elif CASE == "mask2d":
        mask = ct.arange(4, dtype=ct.int32).reshape((4, 1)) % 2 == 0
        r = ct.where(mask, x, 0.)
    elif CASE == "int_cond":
        r = ct.where(ct.arange(4, dtype=ct.int32), 1, 0)
    elif CASE == "promote":
        r = ct.where(x > 0, x.astype(ct.int8), ct.full((8,), 0.5, ct.float16))
    elif CASE == "range":
        r = ct.where(x > 0, x.astype(ct.int8), 300)
    elif CASE == "scalar_cond":
        r = ct.where(True, x, -x)
    ct.store(flag, index=(0,), tile=ct.full((1,), r.dtype == EXP, ct.int32))
    if r.ndim == 1:
        ct.store(out, index=(0,), tile=r)
    else:
        ct.store(out, index=(0, 0), tile=r)


X2D = (np.arange(32).reshape(4, 8) - 10).astype(np.float16)
WHERE = [
    ("seed", ct.float32, (4,), np.array([1, 1, -1, -1])),
    ("ints", ct.int32, (4,), np.array([-1, -1, 1, 1])),
    ("floats", ct.float32, (4,), np.array([-1.0, -1.0, 1.0, 1.0])),
    ("mask2d", ct.float16, (4, 8), np.where((np.arange(4) % 2 == 0)[:, None], X2D, 0)),
    ("int_cond", ct.int32, (4,), np.array([0, 1, 1, 1])),
    ("promote", ct.float16, (4, 8), np.where(X2D > 0, X2D.astype(np.int8), 0.5)),
    ("scalar_cond", ct.float16, (4, 8), X2D),
]


@pytest.mark.parametrize("case,exp,shape,ref", WHERE, ids=[w[0] for w in WHERE])
def test_where(case, exp, shape, ref):
    # R-SEL-1: broadcast + promotion; cond converted to bool; seed example [1, 1, -1, -1]
    out = np.zeros(shape, exp.np_dtype)
    flag = np.zeros(1, np.int32)
    _run(k_where, X2D, out, flag, case, exp)
    assert flag[0] == 1
    np.testing.assert_array_equal(out, ref.astype(exp.np_dtype))


def test_where_loose_constant_range():
    # R-SEL-1 / R-PROMO-4: the loose constant must fit the other operand's integer dtype
    with pytest.raises(ct.TileValueError, match="Integer constant 300 is out of range of int8"):
        _run(k_where, X2D, np.zeros((4, 8), np.int8), np.zeros(1, np.int32), "range", ct.int8)


# -- R-BIT-1/2/5: bitwise operations -----------------------------------------------------------
def _and(x, y):
    return x & y


def _or(x, y):
    return x | y


def _xor(x, y):
    return x ^ y


@pytest.mark.parametrize("dtype,ctd", [(np.int8, ct.int8), (np.uint16, ct.uint16),
                                       (np.int32, ct.int32), (np.uint64, ct.uint64),
                                       (np.bool_, ct.bool_)])
def test_bitwise_tiles(dtype, ctd):
    # R-BIT-1/2: same-dtype integer or bool tiles; bool & | ^ are logical
    rng = np.random.default_rng(7)
    if dtype is np.bool_:
        a, b = rng.integers(0, 2, 8).astype(bool), rng.integers(0, 2, 8).astype(bool)
    else:
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, 8, dtype=dtype, endpoint=True)
        b = rng.integers(info.min, info.max, 8, dtype=dtype, endpoint=True)
    for fn, f2, ref in [(_and, ct.bitwise_and, np.bitwise_and), (_or, ct.bitwise_or, np.bitwise_or),
                        (_xor, ct.bitwise_xor, np.bitwise_xor)]:
        np.testing.assert_array_equal(binary(fn, a, b, ctd), ref(a, b))
        np.testing.assert_array_equal(binary(f2, a, b, ctd), ref(a, b))


@pytest.mark.parametrize("da,db,msg", [
    (np.float32, np.int32, "Bitwise operations require integers or booleans"),
    (np.int32, np.float16, "Bitwise operations require integers or booleans"),
    (np.int32, np.int64, "Bitwise operands must have same data type"),
    (np.uint8, np.int8, "Bitwise operands must have same data type"),
    (np.bool_, np.int8, "Bitwise operands must have same data type"),
])
def test_bitwise_tile_errors(da, db, msg):
    # R-BIT-1/2: no promotion between two non-loose operands
    with pytest.raises(ct.TileTypeError, match=msg):
        binary(_and, np.ones(8, da), np.ones(8, db), ct.int32)


@ct.kernel
def k_bit_const(a, out, flag, CASE: ct.Constant[str], EXP: ct.Constant):
    x = ct.load(a, index=(0,), shape=(8,))
    if CASE == "and5":
        r = x & 5
    elif CASE == "or1":
        r = 1 | x
    elif CASE == "xorTrue":
        r = x ^ True
    elif CASE == "andTrue":
        r = x & True
    elif CASE == "and300":
        r = x & 300
    elif CASE == "and_float":
        r = x & 1.0
    elif CASE == "not":
        r = ~x
    elif CASE == "fnot":
        r = ct.bitwise_not(x)
    elif CASE == "not_const":
        r = x & ~True
    elif CASE == "bitwise_not_const":
        r = x & ct.bitwise_not(True)
    elif CASE == "not_int_const":
        r = x & ~0
    ct.store(flag, index=(0,), tile=ct.full((1,), r.dtype == EXP, ct.int32))
    ct.store(out, index=(0,), tile=r)


BIT_CONST = [
    (np.int64, "and5", ct.int64, lambda a: a & 5),
    (np.uint32, "and5", ct.uint32, lambda a: a & np.uint32(5)),
    (np.bool_, "or1", ct.int32, lambda a: a.astype(np.int32) | 1),
    (np.bool_, "xorTrue", ct.bool_, lambda a: ~a),
    (np.int16, "andTrue", ct.int16, lambda a: a & 1),
    (np.uint8, "andTrue", ct.uint8, lambda a: a & 1),
    (np.int32, "not", ct.int32, lambda a: ~a),
    (np.uint8, "not", ct.uint8, lambda a: ~a),
    (np.bool_, "not", ct.bool_, lambda a: ~a),
    (np.bool_, "fnot", ct.bool_, lambda a: ~a),
    (np.int64, "fnot", ct.int64, lambda a: ~a),
    (np.bool_, "bitwise_not_const", ct.bool_, lambda a: a & False),
    (np.int8, "not_int_const", ct.int8, lambda a: a & -1),
]


@pytest.mark.parametrize("src,case,exp,ref", BIT_CONST,
                         ids=[f"{np.dtype(c[0]).name}-{c[1]}" for c in BIT_CONST])
def test_bitwise_with_constants(src, case, exp, ref):
    # R-BIT-2 (loose constant promoted per R-PROMO-4), R-BIT-5 (~: complement / logical not)
    a = (np.arange(8) * 37 - 100).astype(src) if src is not np.bool_ else np.arange(8) % 3 == 0
    out = np.zeros(8, exp.np_dtype)
    flag = np.zeros(1, np.int32)
    _run(k_bit_const, a, out, flag, case, exp)
    assert flag[0] == 1
    np.testing.assert_array_equal(out, ref(a).astype(exp.np_dtype))


@pytest.mark.parametrize("src,case,exc,msg", [
    (np.int8, "andTrue", ct.TileTypeError, "Bitwise op does not support bool and int8"),
    (np.int8, "and300", ct.TileValueError, "out of range of int8"),
    (np.int32, "and_float", ct.TileTypeError, "Bitwise operations require integers"),
    (np.float32, "not", ct.TileTypeError, "Float inputs are not supported"),
    (np.float16, "fnot", ct.TileTypeError, "Float inputs are not supported"),
    (np.bool_, "not_const", ct.TileTypeError, "on boolean constant is not supported"),
])
def test_bitwise_constant_errors(src, case, exc, msg):
    # R-BIT-1/2/5
    with pytest.raises(exc, match=msg):
        _run(k_bit_const, np.ones(8, src), np.zeros(8, np.int32), np.zeros(1, np.int32), case,
             ct.int32)


# -- R-BIT-3/4: shifts ----------------------------------------------------------------------------
@ct.kernel
def k_shift(a, b, out, flag, CASE: ct.Constant[str], EXP: ct.Constant):
    x = ct.load(a, index=(0,), shape=(8,))
    y = ct.load(b, index=(0,), shape=(8,))
    if CASE == "lshift":
        r = x << y
    elif CASE == "rshift":
        r = x >> y
    elif CASE == "fn_lshift":
        r = _ew.bitwise_lshift(x, y)        # ct.bitwise_lshift once cutile exports it
    elif CASE == "fn_rshift":
        r = _ew.bitwise_rshift(x, y)
    elif CASE == "arange":
        r = ct.arange(8, dtype=ct.int32) << 2
    elif CASE == "eight":
        r = 8 >> ct.arange(8, dtype=ct.int32)
    elif CASE == "const5":
        r = x << 5
    ct.store(flag, index=(0,), tile=ct.full((1,), r.dtype == EXP, ct.int32))
    ct.store(out, index=(0,), tile=r)


@pytest.mark.parametrize("dtype,ctd", [(np.int8, ct.int8), (np.uint8, ct.uint8),
                                       (np.int32, ct.int32), (np.uint64, ct.uint64)])
def test_shift_tiles(dtype, ctd):
    # R-BIT-3: << wraps, >> is arithmetic for signed and logical for unsigned dtypes
    bitsz = np.dtype(dtype).itemsize * 8
    info = np.iinfo(dtype)
    a = np.array([1, -1 % (info.max + 1) if info.min == 0 else -1, info.max, info.min, 5, 100,
                  3, 64], dtype)
    b = np.array([0, 1, 2, 3, bitsz - 1, 4, 5, 1], dtype)
    for case, ref in [("lshift", np.left_shift), ("fn_lshift", np.left_shift),
                      ("rshift", np.right_shift), ("fn_rshift", np.right_shift)]:
        out = np.zeros(8, dtype)
        flag = np.zeros(1, np.int32)
        _run(k_shift, a, b, out, flag, case, ctd)
        assert flag[0] == 1
        np.testing.assert_array_equal(out, ref(a, b))


def test_shift_examples():
    # R-BIT-3: arange(4) << 2 == [0,4,8,12], 8 >> arange(4) == [8,4,2,1]; uint32 << 5 is fine
    out = np.zeros(8, np.int32)
    flag = np.zeros(1, np.int32)
    z = np.zeros(8, np.int32)
    _run(k_shift, z, z, out, flag, "arange", ct.int32)
    np.testing.assert_array_equal(out, np.arange(8) << 2)
    _run(k_shift, z, z, out, flag, "eight", ct.int32)
    np.testing.assert_array_equal(out, 8 >> np.arange(8))
    u = np.arange(8, dtype=np.uint32)
    out_u = np.zeros(8, np.uint32)
    _run(k_shift, u, u, out_u, flag, "const5", ct.uint32)
    assert flag[0] == 1
    np.testing.assert_array_equal(out_u, u << np.uint32(5))


@pytest.mark.parametrize("da,db,msg", [
    (np.float32, np.int32, "Bitwise shift requires an integer for left-hand side"),
    (np.int32, np.float64, "Bitwise shift requires an integer for right-hand side"),
    (np.bool_, np.int32, "Bitwise shift requires an integer"),
    (np.uint32, np.int32, "Implicit promotion of uint32 and int32 is not supported"),
])
def test_shift_errors(da, db, msg):
    # R-BIT-3
    with pytest.raises(ct.TileTypeError, match=msg):
        _run(k_shift, np.ones(8, da), np.ones(8, db), np.zeros(8, np.int32),
             np.zeros(1, np.int32), "lshift", ct.int32)


@ct.kernel
def k_shift_const(out, flag, CASE: ct.Constant[str]):
    if CASE == "wrap":
        v = ct.int8(64) << 1
        ok = v == -128
    elif CASE == "logical":
        v = ct.uint8(200) >> 3
        ok = v == 25
    elif CASE == "arith":
        v = ct.int8(-128) >> 7
        ok = v == -1
    elif CASE == "too_far":
        v = ct.int32(1) << 32
        ok = True
    elif CASE == "negative":
        v = 1 << -1
        ok = True
    ct.store(flag, index=(0,), tile=ct.full((1,), ok, ct.int32))
    ct.store(out, index=(0,), tile=v)


@pytest.mark.parametrize("case,dtype,value", [("wrap", np.int8, -128),
                                              ("logical", np.uint8, 25),
                                              ("arith", np.int8, -1)])
def test_shift_strict_constants(case, dtype, value):
    # R-BIT-3 / R-CONST-6: strict constants shift in their dtype
    out = np.zeros(1, dtype)
    flag = np.zeros(1, np.int32)
    _run(k_shift_const, out, flag, case)
    assert flag[0] == 1 and out[0] == value


@pytest.mark.parametrize("case", ["too_far", "negative"])
def test_shift_constant_count_out_of_range(case):
    # R-BIT-4: an out-of-range count is UB; between constants it is a compile-time error
    with pytest.raises(ct.TileValueError):
        _run(k_shift_const, np.zeros(1, np.int64), np.zeros(1, np.int32), case)


# -- messages of upstream tests, poisoned lanes, misc --------------------------------------------
@pytest.mark.parametrize("case,mode,dtype,msg", [
    ("add", RM.FULL, np.float32, "Rounding mode full is not supported for add"),
    ("mul", RM.RZI, np.float32, "Rounding mode nearest_int_to_zero is not supported"),
    ("sqrt", RM.APPROX, np.float16, "Rounding mode approx can only be used for float32 type"),
    ("add", RM.RN, np.int32, "Rounding mode can only be used for unrestricted float types"),
    ("add", RM.FULL, np.int32, "Rounding mode full is not supported"),
])
def test_rounding_mode_messages(case, mode, dtype, msg):
    # R-MATH-8 (fragments as matched by upstream tests: the mode's .value is named; the mode
    # is checked against the op before the dtype)
    a = np.ones(8, dtype)
    with pytest.raises(ct.TileTypeError, match=msg):
        _run(k_round, a, a, np.zeros(8, np.float32), case, mode)


@ct.kernel
def k_poison_div(a, b, out, N: ct.Constant[int]):
    x = ct.load(a, index=(0,), shape=(8,))
    y = ct.load(b, index=(0,), shape=(8,))          # UNDETERMINED padding: lanes >= N poisoned
    d = ct.where(ct.arange(8, dtype=ct.int32) < N, y, y * 0)
    ct.store(out, index=(0,), tile=x // d + x % d)


def test_integer_division_by_poisoned_zero_is_not_reported():
    # R-DIV-6 / R-PAD-3: a zero divisor in a lane that only holds padding is not an error of
    # the program (the lane is poisoned and never stored)
    a = np.array([7, -7, 9, 100, 5], np.int32)
    b = np.array([2, 2, -4, 7, 3], np.int32)
    out = np.zeros(5, np.int32)
    _run(k_poison_div, a, b, out, 5)
    np.testing.assert_array_equal(out, a // b + a % b)


@ct.kernel
def k_misc_const(out, flag, CASE: ct.Constant[str]):
    if CASE == "log0":
        v = ct.log(0.0)
    elif CASE == "sqrt_neg":
        v = ct.sqrt(-1.0)
    elif CASE == "pos_bool":
        v = +ct.bool_(True)
    elif CASE == "divmod_loose":
        q, r = ct_divmod(-7, 2)
        v = q * 10 + r
    elif CASE == "divmod_strict":
        q, r = ct_divmod(ct.int8(-128), ct.int8(-1))       # -128 // -1 wraps in int8
        v = ct.astype(q, ct.int32) * 10 + ct.astype(r, ct.int32)
    elif CASE == "divmod_bool":
        q, r = ct_divmod(True, ct.bool_(False))
        v = q
    elif CASE == "divmod_float":
        q, r = ct_divmod(ct.float32(1.0), 2)
        v = q
    elif CASE == "mod_bool":
        v = True % True
    ct.store(flag, index=(0,), tile=ct.full((1,), v.dtype == ct.int32, ct.int32))
    ct.store(out, index=(0,), tile=v)


ct_divmod = _ew.divmod          # ct.divmod once cutile exports it


@pytest.mark.parametrize("case,value,exc,msg", [
    ("log0", None, ct.TileValueError, ""), ("sqrt_neg", None, ct.TileValueError, ""),
    ("pos_bool", 1, None, ""), ("divmod_loose", -39, None, ""),
    ("divmod_strict", -1280, None, ""),
    ("divmod_bool", None, ct.TileTypeError, "divmod\\(\\) operation does not support bool"),
    ("divmod_float", None, ct.TileTypeError, "divmod\\(\\) is not implemented for floating"),
    ("mod_bool", None, ct.TileTypeError, "Modulo operation does not support bool"),
])
def test_constant_math_and_divmod(case, value, exc, msg):
    # R-MATH-7 (loose constants fold with Python's math: domain errors are compile-time
    # errors), unary + of a strict bool is int32, R-DIV-5 divmod on constants
    out = np.zeros(1, np.int32)
    flag = np.zeros(1, np.int32)
    if exc is not None:
        with pytest.raises(exc, match=msg or None):
            _run(k_misc_const, out, flag, case)
        return
    _run(k_misc_const, out, flag, case)
    assert flag[0] == 1 and out[0] == value


def test_bf16_pow_integer_exponent_stays_exact():
    # R-MATH-5: bf16 ** int32 keeps bf16, and the exponent is not rounded to bf16 (257 is not
    # a bf16 value: 1.0078125**257 differs from 1.0078125**256 by about two bf16 ulps)
    a = np.full(8, 1.0078125, BF16)
    b = np.array([257, 256, 255, 2, 1, 0, -1, 3], np.int32)
    out = np.zeros(8, BF16)
    flag = np.zeros(1, np.int32)
    _run(k_pow, a, b, out, flag, "tile", ct.bfloat16)
    assert flag[0] == 1
    ref = (1.0078125 ** b.astype(np.float64)).astype(np.float32).astype(BF16)
    np.testing.assert_array_equal(out.astype(np.float32), ref.astype(np.float32))
    assert out[0] != out[1]


@ct.kernel
def k_in(out, CASE: ct.Constant[str]):
    b = ct.bid(0)
    if CASE == "in":
        r = b in (1, 3, 4)
    elif CASE == "not_in":
        r = b not in (1, 3, 4)
    elif CASE == "tile":
        r = ct.arange(4, dtype=ct.int32) in (1, 2)
    elif CASE == "tuples":                  # tuples compare as tuples; never equal to scalars
        r = (b, 1) in (3, (0, 1), (b * 2, 1)) or (b,) in (b,)
    ct.store(out, index=(b,), tile=ct.astype(r, ct.int32))


@pytest.mark.parametrize("case", ["in", "not_in"])
def test_in_with_runtime_scalar(case):
    # R-CMP-6: ``x in tup`` compares scalars; a runtime scalar gives a runtime bool
    out = np.zeros(6, np.int32)
    _run(k_in, out, case, grid=(6,))
    ref = np.isin(np.arange(6), [1, 3, 4])
    np.testing.assert_array_equal(out, ref if case == "in" else ~ref)
    with pytest.raises(ct.TileTypeError, match="'in' requires scalar operands"):
        _run(k_in, out, "tile", grid=(6,))


def test_in_with_tuple_items_R_CMP_6():
    """R-CMP-6 (as Python and 1.7): a tuple item is compared as tuples compare."""
    out = np.zeros(6, np.int32)
    _run(k_in, out, "tuples", grid=(6,))
    np.testing.assert_array_equal(out, [1, 0, 0, 0, 0, 0])

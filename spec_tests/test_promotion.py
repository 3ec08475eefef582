"""Type promotion (R-PROMO-*), broadcasting (R-BCAST-*) and implicit casts (R-CAST-*).

Result dtypes are observed inside the kernel: ``r.dtype == EXP`` folds at compile time
(R-CMP-6) and is stored as 0/1 into an int32 flag array; results are also stored into an
output array of exactly the expected dtype, whose values are checked against NumPy.
"""

from __future__ import annotations

import math
import operator

import ml_dtypes
import numpy as np
import pytest

import cutile as ct

# R-PROMO-3: the table, written out again here (independent of cutile.dtypes).
_NAMES = ["b1", "u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64", "f16", "f32", "f64", "bf16"]
_TABLE = """
b1   u8   u16  u32  u64  i8   i16  i32  i64  f16  f32  f64  bf16
u8   u8   u16  u32  u64  E    E    E    E    f16  f32  f64  bf16
u16  u16  u16  u32  u64  E    E    E    E    f16  f32  f64  bf16
u32  u32  u32  u32  u64  E    E    E    E    f16  f32  f64  bf16
u64  u64  u64  u64  u64  E    E    E    E    f16  f32  f64  bf16
i8   E    E    E    E    i8   i16  i32  i64  f16  f32  f64  bf16
i16  E    E    E    E    i16  i16  i32  i64  f16  f32  f64  bf16
i32  E    E    E    E    i32  i32  i32  i64  f16  f32  f64  bf16
i64  E    E    E    E    i64  i64  i64  i64  f16  f32  f64  bf16
f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f32  f64  E
f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f64  f32
f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64
bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 E    f32  f64  bf16
"""
_CT = {"b1": ct.bool_, "u8": ct.uint8, "u16": ct.uint16, "u32": ct.uint32, "u64": ct.uint64,
       "i8": ct.int8, "i16": ct.int16, "i32": ct.int32, "i64": ct.int64, "f16": ct.float16,
       "f32": ct.float32, "f64": ct.float64, "bf16": ct.bfloat16}
_NP = {"b1": np.bool_, "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
       "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "f16": np.float16,
       "f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16}
PROMO = {}
for _r, _line in zip(_NAMES, _TABLE.strip().splitlines()):
    for _c, _cell in zip(_NAMES, _line.split()):
        PROMO[(_r, _c)] = None if _cell == "E" else _cell
PAIRS = [(a, b) for a in _NAMES for b in _NAMES]


def _run(kernel, *args, grid=(1,)):
    ct.launch(None, grid, kernel, args)


def _inputs(name, n=4):
    """Small values representable in every dtype (0/1 for bool)."""
    if name == "b1":
        return np.array([True, False, True, True][:n])
    return (np.arange(n) % 4 + 1).astype(_NP[name])


def make_binary(fn):
    @ct.kernel
    def k(a, b, out, flag, EXP: ct.Constant):
        x = ct.load(a, index=(0,), shape=(4,))
        y = ct.load(b, index=(0,), shape=(4,))
        r = fn(x, y)
        ct.store(flag, index=(0,), tile=ct.full((1,), r.dtype == EXP, ct.int32))
        ct.store(flag, index=(1,), tile=ct.full((1,), r.shape == (4,), ct.int32))
        ct.store(out, index=(0,), tile=r)
    return k


def _where(x, y):
    return ct.where(ct.arange(4, dtype=ct.int32) < 2, x, y)


K_ADD = make_binary(operator.add)
K_WHERE = make_binary(_where)
K_DIV = make_binary(operator.truediv)
K_LT = make_binary(ct.less)


@pytest.mark.parametrize("da,db", PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_promotion_table_where(da, db):
    # R-PROMO-3 (every cell, via where, which promotes x and y: R-SEL-1)
    exp = PROMO[(da, db)]
    a, b = _inputs(da), _inputs(db)
    if exp is None:
        out = np.zeros(4, np.float32)
        with pytest.raises(ct.TileTypeError,
                           match=f"Implicit promotion of {_CT[da].name} and {_CT[db].name} "
                                 "is not supported"):
            _run(K_WHERE, a, b, out, np.zeros(2, np.int32), _CT["f32"])
        return
    out = np.zeros(4, _NP[exp])
    flag = np.zeros(2, np.int32)
    _run(K_WHERE, a, b, out, flag, _CT[exp])
    assert flag.tolist() == [1, 1]
    ref = np.where(np.arange(4) < 2, a.astype(_NP[exp]), b.astype(_NP[exp]))
    assert out.dtype == ref.dtype
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("da,db", PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_promotion_table_add(da, db):
    # R-PROMO-3 through arithmetic; a bool result is rejected (R-MATH-3)
    exp = PROMO[(da, db)]
    a, b = _inputs(da), _inputs(db)
    flag = np.zeros(2, np.int32)
    if exp is None:
        with pytest.raises(ct.TileTypeError, match="Implicit promotion of"):
            _run(K_ADD, a, b, np.zeros(4, np.float32), flag, ct.float32)
        return
    if exp == "b1":
        with pytest.raises(ct.TileTypeError, match="does not support bool"):
            _run(K_ADD, a, b, np.zeros(4, np.int32), flag, ct.bool_)
        return
    out = np.zeros(4, _NP[exp])
    _run(K_ADD, a, b, out, flag, _CT[exp])
    assert flag.tolist() == [1, 1]
    ref = a.astype(_NP[exp]) + b.astype(_NP[exp])
    np.testing.assert_array_equal(out, ref.astype(_NP[exp]))


@pytest.mark.parametrize("da,db", [("i8", "i64"), ("b1", "b1"), ("u16", "u64"), ("i32", "f16"),
                                   ("f16", "f16"), ("i64", "i64"), ("u8", "bf16"), ("f64", "i8")])
def test_truediv_forces_float(da, db):
    # R-PROMO-5: a non-float common dtype becomes float32; float results are kept
    common = PROMO[(da, db)]
    exp = common if common in ("f16", "bf16", "f32", "f64") else "f32"
    a, b = _inputs(da), _inputs(db)
    if db == "b1":
        b = np.ones(4, np.bool_)
    out = np.zeros(4, _NP[exp])
    flag = np.zeros(2, np.int32)
    _run(K_DIV, a, b, out, flag, _CT[exp])
    assert flag.tolist() == [1, 1]
    ref = (a.astype(np.float64) / b.astype(np.float64)).astype(_NP[exp])
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("da,db", [("u8", "i8"), ("u32", "i32"), ("u8", "i64"), ("f16", "bf16")])
def test_comparison_promotion_errors(da, db):
    # R-CMP-1: comparisons promote by the table too
    with pytest.raises(ct.TileTypeError, match="Implicit promotion"):
        _run(K_LT, _inputs(da), _inputs(db), np.zeros(4, np.bool_), np.zeros(2, np.int32),
             ct.bool_)


RESTRICTED = [ct.float8_e4m3fn, ct.float8_e5m2, ct.tfloat32]


@pytest.mark.parametrize("rd", RESTRICTED, ids=lambda d: d.name)
@pytest.mark.parametrize("other", ["f32", "f16", "i32", "b1"])
def test_restricted_float_promotes_only_with_itself(rd, other):
    # R-PROMO-3 / R-DTYPE-3: restricted floats promote with nothing else
    src = np.ones(4, np.float32)

    @ct.kernel
    def k(a, b, out, R: ct.Constant, SAME: ct.Constant[bool]):
        x = ct.load(a, index=(0,), shape=(4,)).astype(R)
        if SAME:
            y = ct.load(a, index=(0,), shape=(4,)).astype(R)
        else:
            y = ct.load(b, index=(0,), shape=(4,))
        r = ct.where(ct.arange(4, dtype=ct.int32) < 2, x, y)
        ct.store(out, index=(0,), tile=r.astype(ct.float32))

    with pytest.raises(ct.TileTypeError, match=f"Implicit promotion of {rd.name} and"):
        _run(k, src, _inputs(other), np.zeros(4, np.float32), rd, False)
    out = np.zeros(4, np.float32)
    _run(k, src, _inputs(other), out, rd, True)            # identity promotion is fine
    np.testing.assert_array_equal(out, np.ones(4, np.float32))


# -- R-PROMO-4: one loose operand ------------------------------------------------------------
@ct.kernel
def k_loose(a, out, flag, CASE: ct.Constant[str], EXP: ct.Constant):
    x = ct.load(a, index=(0,), shape=(4,))
    if CASE == "add5":
        r = x + 5
    elif CASE == "radd5":
        r = 5 + x
    elif CASE == "sub300":
        r = x - 300
    elif CASE == "mul2.5":
        r = x * 2.5
    elif CASE == "add2.5":
        r = x + 2.5
    elif CASE == "mul0.5":
        r = x * 0.5
    elif CASE == "add1":
        r = x + 1
    elif CASE == "addTrue":
        r = x + True
    elif CASE == "add2":
        r = x + 2
    elif CASE == "and5":
        r = x & 5
    elif CASE == "div23":
        r = x / 23
    elif CASE == "div2":
        r = x / 2
    elif CASE == "div300":
        r = x / 300
    elif CASE == "add2**40":
        r = x + 2 ** 40
    elif CASE == "sub128":
        r = x - 127 - 1
    elif CASE == "sub129":
        r = x - 129
    elif CASE == "add255":
        r = x + 255
    elif CASE == "add256":
        r = x + 256
    elif CASE == "addneg1":
        r = x + (-1)
    elif CASE == "lt2.5":
        r = x < 2.5
    elif CASE == "lt300":
        r = x < 300
    elif CASE == "addbig_f":
        r = x + 1e10
    ct.store(flag, index=(0,), tile=ct.full((1,), r.dtype == EXP, ct.int32))
    ct.store(out, index=(0,), tile=r)


LOOSE_CASES = [
    # (input dtype, case, expected dtype, reference function on float64/int values)
    ("i8", "add5", "i8", lambda v: v + 5),
    ("i8", "radd5", "i8", lambda v: 5 + v),
    ("f16", "mul2.5", "f16", lambda v: v * np.float16(2.5)),
    ("i8", "add2.5", "f32", lambda v: v.astype(np.float32) + np.float32(2.5)),
    ("i64", "mul0.5", "f32", lambda v: v.astype(np.float32) * np.float32(0.5)),
    ("b1", "add1", "i32", lambda v: v.astype(np.int32) + 1),
    ("i8", "addTrue", "i8", lambda v: v + np.int8(1)),
    ("f16", "add2", "f16", lambda v: v + np.float16(2)),
    ("u32", "and5", "u32", lambda v: v & np.uint32(5)),
    ("i64", "and5", "i64", lambda v: v & np.int64(5)),
    ("b1", "and5", "i32", lambda v: v.astype(np.int32) & 5),
    ("i32", "div23", "f32", lambda v: v.astype(np.float32) / np.float32(23)),
    ("f16", "div2", "f16", lambda v: v / np.float16(2)),
    ("i8", "div300", "f32", lambda v: v.astype(np.float32) / np.float32(300)),  # no range check
    ("i64", "add2**40", "i64", lambda v: v + np.int64(2 ** 40)),
    ("i8", "sub128", "i8", lambda v: v - np.int8(127) - np.int8(1)),
    ("u8", "add255", "u8", lambda v: (v.astype(np.int64) + 255).astype(np.uint8)),
    ("i32", "add2**40", "i64", None),    # same category: int32 wins, constant out of range
    ("i8", "lt2.5", "b1", lambda v: v.astype(np.float32) < np.float32(2.5)),
    ("f32", "addbig_f", "f32", lambda v: v + np.float32(1e10)),
    ("bf16", "mul2.5", "bf16", lambda v: (v.astype(np.float32) * 2.5).astype(ml_dtypes.bfloat16)),
]


@pytest.mark.parametrize("src,case,exp,ref", LOOSE_CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in LOOSE_CASES])
def test_loose_constant_promotion(src, case, exp, ref):
    # R-PROMO-4 (1: same category keeps the tile dtype; 2: the higher category wins)
    if (src, case) == ("i32", "add2**40"):
        # Same category (integral): the tile dtype wins and 2**40 is out of range of int32.
        with pytest.raises(ct.TileValueError, match="out of range of int32"):
            _run(k_loose, _inputs(src), np.zeros(4, np.int64), np.zeros(1, np.int32), case,
                 ct.int64)
        return
    a = _inputs(src)
    out = np.zeros(4, _NP[exp])
    flag = np.zeros(1, np.int32)
    _run(k_loose, a, out, flag, case, _CT[exp])
    assert flag[0] == 1
    np.testing.assert_array_equal(out, np.asarray(ref(a)).astype(_NP[exp]))


@pytest.mark.parametrize("src,case,const", [("i8", "sub300", 300), ("i8", "sub129", 129),
                                            ("u8", "add256", 256), ("u8", "addneg1", -1),
                                            ("i8", "lt300", 300)])
def test_loose_constant_out_of_range(src, case, const):
    # R-PROMO-4.1: an integer constant must lie in the integer tile's range (``x - 300``
    # checks the constant 300 itself, not -300)
    with pytest.raises(ct.TileValueError,
                       match=f"Integer constant {const} is out of range of {_CT[src].name}"):
        _run(k_loose, _inputs(src), np.zeros(4, np.float64), np.zeros(1, np.int32), case,
             ct.int32)


# -- R-PROMO-6: runtime kernel scalars ----------------------------------------------------------
@ct.kernel
def k_scalar(a, y, out, flag, CASE: ct.Constant[str], EXP: ct.Constant):
    x = ct.load(a, index=(0,), shape=(4,))
    if CASE == "div":
        r = x / y
    elif CASE == "add":
        r = x + y
    elif CASE == "and":
        r = x & y
    elif CASE == "scalar":
        r = y + 0
    ct.store(flag, index=(0,), tile=ct.full((1,), r.dtype == EXP, ct.int32))
    ct.store(out, index=(0,), tile=r)


@pytest.mark.parametrize("src,y,case,exp", [
    ("f16", 0.5, "div", "f32"),      # runtime float is float32, not loose
    ("f16", 3, "add", "f16"),        # runtime int32 with f16 -> f16 by the table
    ("i8", 3, "add", "i32"),         # runtime int32 is not loose: i8 + i32 -> i32
    ("i8", True, "add", "i8"),       # runtime bool_: b1 + i8 -> i8
    ("f32", 2, "scalar", "i32"),     # Python int -> int32
    ("f32", 2.0, "scalar", "f32"),   # Python float -> float32
])
def test_runtime_scalar_promotion(src, y, case, exp):
    # R-PROMO-6
    a = _inputs(src)
    out = np.zeros(4, _NP[exp])
    flag = np.zeros(1, np.int32)
    _run(k_scalar, a, y, out, flag, case, _CT[exp])
    assert flag[0] == 1
    if case == "div":
        ref = (a.astype(np.float32) / np.float32(y))
    elif case == "add":
        ref = a.astype(_NP[exp]) + np.asarray(y).astype(_NP[exp])
    else:
        ref = np.array([y, 0, 0, 0])           # a 0-D tile stores one element (R-STORE-1)
    np.testing.assert_array_equal(out, ref.astype(_NP[exp]))


def test_runtime_scalar_bitwise_is_strict():
    # R-PROMO-6 / R-BIT-2: int64 tile & runtime int32 scalar -> same-dtype error
    a = np.arange(4, dtype=np.int64)
    with pytest.raises(ct.TileTypeError, match="Bitwise operands must have same data type"):
        _run(k_scalar, a, 3, np.zeros(4, np.int64), np.zeros(1, np.int32), "and", ct.int64)


def test_runtime_scalar_int64_annotation():
    # R-PROMO-6: ct.ScalarInt64 makes a runtime int64
    @ct.kernel
    def k(a, y: ct.ScalarInt64, out, flag):
        x = ct.load(a, index=(0,), shape=(4,))
        r = x & y
        ct.store(flag, index=(0,), tile=ct.full((1,), r.dtype == ct.int64, ct.int32))
        ct.store(out, index=(0,), tile=r)

    a = np.arange(4, dtype=np.int64) + 2 ** 40
    out = np.zeros(4, np.int64)
    flag = np.zeros(1, np.int32)
    _run(k, a, 2 ** 40 + 1, out, flag)
    assert flag[0] == 1
    np.testing.assert_array_equal(out, a & (2 ** 40 + 1))


# -- R-PROMO-7: constants merged at control-flow joins --------------------------------------------
@ct.kernel
def k_merge(a, n, out, flag, CASE: ct.Constant[str]):
    x = ct.load(a, index=(0,), shape=(4,))
    if CASE == "differ":
        if n > 0:
            t = 3
        else:
            t = 7
        r = x + t
        ct.store(flag, index=(0,), tile=ct.full((1,), r.dtype == ct.int32, ct.int32))
    elif CASE == "same":
        if n > 0:
            t = 7
        else:
            t = 7
        r = x + t
        ct.store(flag, index=(0,), tile=ct.full((1,), r.dtype == ct.int8, ct.int32))
    elif CASE == "runtime":
        if n > 0:
            t = n
        else:
            t = 7
        r = x + t
        ct.store(flag, index=(0,), tile=ct.full((1,), r.dtype == ct.int32, ct.int32))
    ct.store(out, index=(0,), tile=r)


@pytest.mark.parametrize("case,n,addend", [("differ", 1, 3), ("differ", 0, 7), ("same", 1, 7),
                                           ("runtime", 5, 5), ("runtime", -1, 7)])
def test_branch_merged_constants_lose_looseness(case, n, addend):
    # R-PROMO-7: differing constants become a runtime int32; equal ones stay loose
    a = np.arange(4, dtype=np.int8)
    out = np.zeros(4, np.int32)
    flag = np.zeros(1, np.int32)
    _run(k_merge, a, n, out, flag, case)
    assert flag[0] == 1
    np.testing.assert_array_equal(out, a.astype(np.int32) + addend)


def test_branch_merged_int8_result_is_not_widened():
    # R-PROMO-7: same constant on both paths stays loose -> int8 + 7 is int8 (store into int8)
    a = np.arange(4, dtype=np.int8)
    out = np.zeros(4, np.int8)
    _run(k_merge, a, 1, out, np.zeros(1, np.int32), "same")
    np.testing.assert_array_equal(out, a + 7)
    with pytest.raises(ct.TileTypeError, match="cannot implicitly cast int32 to int8"):
        _run(k_merge, a, 1, out, np.zeros(1, np.int32), "differ")


# -- seeds 002: tile arithmetic, broadcasting, scalar promotion -----------------------------------
@ct.kernel
def k_seed_bcast(out, flag):
    x = ct.full((8, 2), 3, dtype=ct.int32)
    y = ct.full((4, 1, 2), 5, dtype=ct.int32)
    z = x + y
    ct.store(flag, index=(0,), tile=ct.full((1,), z.shape == (4, 8, 2), ct.int32))
    ct.store(out, index=(0, 0, 0), tile=z)


def test_seed_broadcast_8x2_with_4x1x2():
    # R-BCAST-1: (8,2) + (4,1,2) -> (4,8,2)
    out = np.zeros((4, 8, 2), np.int32)
    flag = np.zeros(1, np.int32)
    _run(k_seed_bcast, out, flag)
    assert flag[0] == 1
    np.testing.assert_array_equal(out, np.full((4, 8, 2), 8, np.int32))


@ct.kernel
def k_bcast_shapes(out, CASE: ct.Constant[str]):
    if CASE == "ok":
        z = ct.full((4, 1), 1.0, ct.float32) * ct.full((1, 8), 2.0, ct.float32)
        ct.store(out, index=(0, 0), tile=z)
    elif CASE == "bad":
        z = ct.full((4,), 1.0, ct.float32) + ct.full((8,), 2.0, ct.float32)
        ct.store(out, index=(0, 0), tile=z.reshape((1, 4)))
    elif CASE == "scalar":
        z = ct.full((4, 8), 1.0, ct.float32) - ct.float32(0.5)
        ct.store(out, index=(0, 0), tile=z)


def test_broadcast_rules():
    # R-BCAST-1/2
    out = np.zeros((4, 8), np.float32)
    _run(k_bcast_shapes, out, "ok")
    np.testing.assert_array_equal(out, np.full((4, 8), 2.0, np.float32))
    _run(k_bcast_shapes, out, "scalar")
    np.testing.assert_array_equal(out, np.full((4, 8), 0.5, np.float32))
    with pytest.raises(ct.TileTypeError):
        _run(k_bcast_shapes, out, "bad")


@ct.kernel
def k_seed_scalar(a, b, c, out_i, flag, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    x = ct.load(a, index=(bid,), shape=(TILE,))
    y = ct.load(b, index=(bid,), shape=(TILE,))
    xi = ct.full((8,), 3, dtype=ct.int32)
    r1 = xi + 2
    r2 = xi + 2.5
    z = 2.0 * x + y
    ct.store(flag, index=(0,), tile=ct.full((1,), r1.dtype == ct.int32, ct.int32))
    ct.store(flag, index=(1,), tile=ct.full((1,), r2.dtype == ct.float32, ct.int32))
    ct.store(flag, index=(2,), tile=ct.full((1,), z.dtype == ct.float32, ct.int32))
    ct.store(out_i, index=(0,), tile=r1)
    ct.store(out_i, index=(1,), tile=r2.astype(ct.int32))
    ct.store(c, index=(bid,), tile=z)


def test_seed_scalar_promotion_examples():
    # R-PROMO-4 / R-CPP-6 (seeds 002): int32 + 2 -> int32, int32 + 2.5 -> float32,
    # 2.0 * x + y stays float32
    n = 30
    a = np.linspace(-3, 3, n).astype(np.float32)
    b = np.linspace(1, 2, n).astype(np.float32)
    c = np.zeros(n, np.float32)
    out_i = np.zeros(16, np.int32)
    flag = np.zeros(3, np.int32)
    _run(k_seed_scalar, a, b, c, out_i, flag, 8, grid=(4,))
    assert flag.tolist() == [1, 1, 1]
    np.testing.assert_array_equal(out_i[:8], 5)
    np.testing.assert_array_equal(out_i[8:], 5)   # 5.5 truncated by astype
    # 2.0*x + y may be contracted (R-FMA-1): compare with the single-rounded value
    ref = (2.0 * a.astype(np.float64) + b.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(c, ref)


# -- R-CAST-1/2: implicit casts on store ----------------------------------------------------------
@ct.kernel
def k_store_cast(a, out, CASE: ct.Constant[str]):
    if CASE == "tile":
        ct.store(out, index=(0,), tile=ct.load(a, index=(0,), shape=(4,)))
    elif CASE == "c128":
        ct.store(out, index=(0,), tile=128)
    elif CASE == "c127":
        ct.store(out, index=(0,), tile=127)
    elif CASE == "c-1":
        ct.store(out, index=(0,), tile=-1)
    elif CASE == "c1.0":
        ct.store(out, index=(0,), tile=1.0)
    elif CASE == "c1":
        ct.store(out, index=(0,), tile=1)
    elif CASE == "c2":
        ct.store(out, index=(0,), tile=2)
    elif CASE == "cTrue":
        ct.store(out, index=(0,), tile=True)
    elif CASE == "cinf":
        ct.store(out, index=(0,), tile=math.inf)
    elif CASE == "c0.1":
        ct.store(out, index=(0,), tile=0.1)


CAST_OK = [("i32", "f32"), ("f16", "f32"), ("bf16", "f32"), ("b1", "i8"), ("b1", "u64"),
           ("b1", "f16"), ("b1", "bf16"), ("i8", "i64"), ("u8", "u16"), ("u8", "f16"),
           ("i64", "bf16"), ("f32", "f64"), ("u32", "u64"), ("i16", "f16")]
CAST_BAD = [("f32", "i32"), ("f32", "f16"), ("i32", "b1"), ("i32", "u32"), ("u32", "i64"),
            ("i64", "i32"), ("f64", "f32"), ("bf16", "f16"), ("f16", "bf16"), ("u8", "i8"),
            ("u8", "b1")]


@pytest.mark.parametrize("src,dst", CAST_OK, ids=[f"{a}->{b}" for a, b in CAST_OK])
def test_implicit_cast_widening_ok(src, dst):
    # R-CAST-1: promote(S, T) == T
    a = _inputs(src)
    out = np.zeros(4, _NP[dst])
    _run(k_store_cast, a, out, "tile")
    np.testing.assert_array_equal(out, a.astype(_NP[dst]))


@pytest.mark.parametrize("src,dst", CAST_BAD, ids=[f"{a}->{b}" for a, b in CAST_BAD])
def test_implicit_cast_narrowing_rejected(src, dst):
    # R-CAST-1
    with pytest.raises(ct.TileTypeError,
                       match=f"Stored tile is incompatible with array's dtype.*cannot implicitly "
                             f"cast {_CT[src].name} to {_CT[dst].name}"):
        _run(k_store_cast, _inputs(src), np.zeros(4, _NP[dst]), "tile")


def test_implicit_cast_restricted():
    # R-CAST-1: f32 -> tf32 is an error; identical restricted floats are fine
    @ct.kernel
    def k(a, b, out, CASE: ct.Constant[str]):
        t = ct.load(a, index=(0,), shape=(4,))
        if CASE == "f8":
            ct.store(out, index=(0,), tile=t)
        elif CASE == "tf32":
            ct.store(out, index=(0,), tile=ct.where(t > 0, t.astype(ct.tfloat32),
                                                    ct.load(b, index=(0,), shape=(4,))))

    a = np.array([1.0, 2.0, 0.5, -4.0], ml_dtypes.float8_e5m2)
    out = np.zeros(4, ml_dtypes.float8_e5m2)
    _run(k, a, a, out, "f8")
    with pytest.raises(ct.TileTypeError, match="Implicit promotion of tfloat32 and float32"):
        _run(k, np.ones(4, np.float32), np.ones(4, np.float32), np.zeros(4, np.float32), "tf32")
    np.testing.assert_array_equal(out.astype(np.float32), a.astype(np.float32))


@pytest.mark.parametrize("case,dst,expected", [
    ("c127", "i8", 127), ("c-1", "i8", -1), ("c1.0", "f16", 1.0), ("c1", "b1", True),
    ("cTrue", "b1", True), ("cTrue", "i32", 1), ("c1", "f32", 1.0), ("cinf", "f16", np.inf),
    ("c0.1", "bf16", ml_dtypes.bfloat16(0.1)), ("c0.1", "f16", np.float16(0.1)),
])
def test_implicit_cast_loose_constants_ok(case, dst, expected):
    # R-CAST-2 (a scalar store writes one element, R-STORE-1)
    out = np.zeros(4, _NP[dst])
    _run(k_store_cast, np.zeros(4, np.float32), out, case)
    ref = np.zeros(4, _NP[dst])
    ref[0] = expected
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("case,dst,exc,msg", [
    ("c128", "i8", ct.TileValueError, "128 is out of range"),
    ("c-1", "u8", ct.TileValueError, "-1 is out of range"),
    ("c1.0", "b1", ct.TileTypeError, "cannot implicitly cast"),
    ("c2", "b1", ct.TileTypeError, "cannot implicitly cast"),
    ("c1.0", "i32", ct.TileTypeError, "cannot implicitly cast"),
    ("c0.1", "u8", ct.TileTypeError, "cannot implicitly cast"),
])
def test_implicit_cast_loose_constants_rejected(case, dst, exc, msg):
    # R-CAST-2
    with pytest.raises(exc, match=msg):
        _run(k_store_cast, np.zeros(4, np.float32), np.zeros(4, _NP[dst]), case)

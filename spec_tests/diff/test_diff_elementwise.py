"""Interpreter vs Numba backend: random elementwise chains with broadcasting, mixed dtypes
(promotion through the frontend), comparisons, where, conversions and fused multiply-adds."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cutile import dtypes as dt

from .harness import assert_same, examples, kernel_from_source, poison, run_both, shards, sim

DTYPES = [dt.float32, dt.float16, dt.bfloat16, dt.float64, dt.int8, dt.int16, dt.int32,
          dt.int64, dt.uint8, dt.uint32, dt.uint64, dt.bool_]
FLOAT_BIN = ["+", "-", "*", "/", "//", "%", "min", "max", "pow", "atan2"]
INT_BIN = ["+", "-", "*", "//", "%", "min", "max", "&", "|", "^"]
FLOAT_UN = ["-", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "tanh", "floor", "ceil", "exp2",
            "log2", "cos"]
INT_UN = ["-", "abs", "~"]
TRANSCENDENTAL = {"exp", "log", "sin", "tanh", "exp2", "log2", "cos", "pow", "atan2", "rsqrt"}
if not sim():
    # On a GPU these are libdevice's (a few ulp, not correctly rounded), and one ulp can turn
    # into anything downstream (floor, comparisons, casts): chains keep to the correctly
    # rounded ops there, and test_transcendental_within_ulps bounds each function alone.
    FLOAT_BIN = [f for f in FLOAT_BIN if f not in TRANSCENDENTAL]
    FLOAT_UN = [f for f in FLOAT_UN if f not in TRANSCENDENTAL]
SHAPES = ["full", "row", "col", "scalar"]


def values(rng, shape, d: dt.DType):
    npd = d.np_dtype
    if d.is_bool:
        return rng.random(shape) < 0.5
    if d.is_integral:
        info = np.iinfo(npd)
        v = rng.integers(info.min, info.max, size=shape, dtype=npd, endpoint=True)
        small = rng.integers(-3 if d.is_signed else 0, 4, size=shape).astype(npd)
        return np.where(rng.random(shape) < 0.4, small, v).astype(npd)
    v = rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, size=shape)
    if d is dt.bfloat16:
        v = v * 10.0 ** rng.integers(-30, 30, size=shape)   # bfloat16 has float32's range
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5])
    v = np.where(rng.random(shape) < 0.15, special[rng.integers(0, 8, size=shape)], v)
    with np.errstate(all="ignore"):
        return np.asarray(v, dtype=npd)


@st.composite
def program(draw):
    n_in = draw(st.integers(2, 4))
    ins = []
    for i in range(n_in):
        d = draw(st.sampled_from(DTYPES))
        kind = "full" if i == 0 else draw(st.sampled_from(SHAPES))
        ins.append((d, kind))
    env = [(f"x{i}", d) for i, (d, _) in enumerate(ins)]
    lines, uses_minmax, uses_math = [], False, False
    for j in range(draw(st.integers(1, 6))):
        name = f"e{j}"
        a, da = env[draw(st.integers(0, len(env) - 1))]
        choice = draw(st.integers(0, 9))
        if choice <= 1:                                   # unary
            if da.is_float:
                fn = draw(st.sampled_from(FLOAT_UN))
            elif da.is_integral:
                fn = draw(st.sampled_from(INT_UN))
            else:
                fn = "~"
            uses_math |= fn in TRANSCENDENTAL
            expr = {"-": f"-{a}", "~": f"~{a}", "abs": f"ct.abs({a})"}.get(fn, f"ct.{fn}({a})")
            lines.append(f"{name} = {expr}")
            env.append((name, da))
            continue
        b, db = env[draw(st.integers(0, len(env) - 1))]
        d = dt.promote(da, db)
        if d is None:
            continue
        if choice == 2:                                   # compare + where
            c, dc = env[draw(st.integers(0, len(env) - 1))]
            d2 = dt.promote(dc, d)
            if d2 is None or d.is_bool and dc.is_bool or dt.promote(da, dc) is None:
                continue                                  # where(a, c) must promote too
            op = draw(st.sampled_from(["<", "<=", "==", "!=", ">", ">="]))
            lines.append(f"{name} = ct.where({a} {op} {b}, {a}, {c})")
            env.append((name, dt.promote(da, dc)))
            continue
        if choice == 3:                                   # astype to another dtype
            tgt = draw(st.sampled_from(DTYPES))
            if da.is_float and not tgt.is_float:
                continue                                  # NaN/inf -> int is UB
            lines.append(f"{name} = {a}.astype(ct.{tgt.name})")
            env.append((name, tgt))
            continue
        if choice == 4 and d.is_float:
            c, dc = env[draw(st.integers(0, len(env) - 1))]
            if dt.promote(dc, d) is not d:
                continue
            lines.append(f"{name} = {a} * {b} + {c}")     # fused by the frontend (R-FMA-1)
            env.append((name, d))
            continue
        ops = FLOAT_BIN if d.is_float else INT_BIN if d.is_integral else ["&", "|", "^"]
        fn = draw(st.sampled_from(ops))
        if fn in ("&", "|", "^") and da is not db:
            continue                                      # bitwise ops do not promote
        uses_math |= fn in TRANSCENDENTAL
        uses_minmax |= fn in ("min", "max")
        if d.is_integral and fn in ("//", "%"):
            if db is not d:
                b = f"{b}.astype(ct.{d.name})"
            b = f"ct.where({b} == 0, 1, {b})"             # division by zero is UB (R-DIV-6)
            if d.is_signed:                               # so is MIN // -1 on int64
                b = f"ct.where({b} == -1, 1, {b})"
        if fn in ("min", "max"):
            expr = f"ct.{'minimum' if fn == 'min' else 'maximum'}({a}, {b})"
        elif fn in ("pow", "atan2"):
            expr = f"ct.{fn}({a}, {b})"
        else:
            expr = f"{a} {fn} {b}"
        lines.append(f"{name} = {expr}")
        env.append((name, d))
    last, dl = env[-1]
    seed = draw(st.integers(0, 2 ** 16))
    T0, T1 = draw(st.sampled_from([(4, 8), (8, 8), (2, 16), (16, 4), (1, 32)]))
    return ins, lines, last, dl, seed, T0, T1, uses_minmax, uses_math


def _load(i, d, kind):
    if kind == "full":
        return f"x{i} = ct.load(a{i}, (ct.bid(0), 0), (T0, T1), padding_mode=ct.PaddingMode.ZERO)"
    if kind == "row":
        return f"x{i} = ct.load(a{i}, (0,), (T1,), padding_mode=ct.PaddingMode.ZERO)"
    if kind == "col":
        return f"x{i} = ct.load(a{i}, (ct.bid(0), 0), (T0, 1), padding_mode=ct.PaddingMode.ZERO)"
    return f"x{i} = a{i}"


@pytest.mark.parametrize("shard", shards())
@settings(max_examples=examples(60))
@given(program())
def test_elementwise_chains(shard, prog):
    ins, lines, last, dl, seed, T0, T1, minmax, math = prog
    params = ", ".join(f"a{i}" for i in range(len(ins)))
    body = [_load(i, d, kind) for i, (d, kind) in enumerate(ins)] + lines
    results = [ln.split(" = ")[0] for ln in lines] or [last]
    for j, name in enumerate(results):       # every intermediate is checked
        body.append(f"r{j} = ct.broadcast_to({name}, (T0, T1)).astype(ct.float64)")
        body.append(f"ct.store(out, ({j}, ct.bid(0), 0), ct.reshape(r{j}, (1, T0, T1)))")
    src = (f"@ct.kernel\ndef chain({params}, out, T0: Constant[int], T1: Constant[int]):\n"
           + "".join(f"    {ln}\n" for ln in body))
    k = kernel_from_source(src, "chain")
    rng = np.random.default_rng(seed)
    args = []
    rows = T0 + max(1, T0 // 2)                         # ragged: the last tile is partial
    for i, (d, kind) in enumerate(ins):
        if kind == "full":
            args.append(values(rng, (rows, T1), d))
        elif kind == "row":
            args.append(values(rng, (T1,), d))
        elif kind == "col":
            args.append(values(rng, (rows, 1), d))
        else:
            args.append(values(rng, (), d)[()])
    out = poison((len(results), rows, T1), np.float64)
    ref, got = run_both(k, (2,), args + [out, T0, T1])
    assert not math or sim()
    assert_same(ref[-1], got[-1], signed_zero=not minmax, what=src)


# Error bounds on the GPU (libdevice, non-fast variants, the functions torch and the real
# cuTile use there; CUDA C Programming Guide, "Mathematical Functions"): float32
# exp/exp2/sin/cos/tanh/pow/rsqrt <= 2 ulp, atan2 <= 3 ulp, log/log2 <= 1 ulp; float64 <= 2
# ulp (float64 rsqrt is correctly rounded: 1/sqrt in float64 with one rounding).
# The interpreter is correctly rounded (float64/exact), so the distance is at most the bound +
# 1/2, here rounded up to 4.  float16/bfloat16 are computed in float32 and rounded once: at
# most one unit of the half type.  Special values (NaN, inf, 0) must agree.
ULP_BOUND = {dt.float32: 4, dt.float64: 4, dt.float16: 1, dt.bfloat16: 1}
UNARY_MATH = ["exp", "exp2", "log", "log2", "sin", "cos", "tanh", "rsqrt"]
BINARY_MATH = ["pow", "atan2"]


@pytest.mark.parametrize("shard", shards())
@settings(max_examples=examples(12))
@given(st.sampled_from(UNARY_MATH + BINARY_MATH), st.sampled_from(list(ULP_BOUND)),
       st.integers(0, 2 ** 16))
def test_transcendental_within_ulps(shard, fn, d, seed):
    call = f"ct.{fn}(x, y)" if fn in BINARY_MATH else f"ct.{fn}(x)"
    src = ("@ct.kernel\ndef tm(a, b, o, T: Constant[int]):\n"
           "    x = ct.load(a, (ct.bid(0),), (T,))\n"
           "    y = ct.load(b, (ct.bid(0),), (T,))\n"
           f"    ct.store(o, (ct.bid(0),), {call})\n")
    k = kernel_from_source(src, "tm")
    rng = np.random.default_rng(seed)
    n = 256
    a, b = values(rng, (n,), d), values(rng, (n,), d)
    if fn == "pow":
        with np.errstate(invalid="ignore"):                          # inf % 8 is NaN: kept
            b = np.round(b.astype(np.float64) % 8).astype(d.np_dtype)   # results in range
    o = poison((n,), d.np_dtype)
    ref, got = run_both(k, (2,), [a, b, o, 128])
    assert_same(ref[2], got[2], ulps=0 if sim() else ULP_BOUND[d], what=f"{fn} {d.name}")


@pytest.mark.parametrize("shard", shards())
@settings(max_examples=examples(12))
@given(st.sampled_from([dt.float32, dt.float64, dt.float16]), st.integers(0, 2 ** 16))
def test_fma_is_fused_and_mul_add_is_not(shard, d, seed):
    src = ("@ct.kernel\ndef fm(a, b, c, o1, o2, T: Constant[int]):\n"
           "    x = ct.load(a, (ct.bid(0),), (T,))\n"
           "    y = ct.load(b, (ct.bid(0),), (T,))\n"
           "    z = ct.load(c, (ct.bid(0),), (T,))\n"
           "    ct.store(o1, (ct.bid(0),), x * y + z)\n"        # one rounding (Fma)
           "    p = x * y\n"
           "    ct.store(o2, (ct.bid(0),), p + z + p)\n")      # product used twice: two roundings
    k = kernel_from_source(src, "fm")
    rng = np.random.default_rng(seed)
    n = 64
    a, b, c = (rng.standard_normal(n).astype(d.np_dtype) for _ in range(3))
    o1, o2 = poison((n,), d.np_dtype), poison((n,), d.np_dtype)
    ref, got = run_both(k, (2,), [a, b, c, o1, o2, 32])
    assert_same(ref[3], got[3], what="fma")
    assert_same(ref[4], got[4], what="mul then add")


MODES = ["RZ", "RM", "RP"]


@pytest.mark.parametrize("shard", shards())
@settings(max_examples=examples(12))
@given(st.sampled_from([dt.float32, dt.float64]), st.sampled_from(MODES),
       st.integers(0, 2 ** 16))
def test_directed_rounding(shard, d, mode, seed):
    src = (f"@ct.kernel\ndef rnd(a, b, o, T: Constant[int]):\n"
           f"    x = ct.load(a, (ct.bid(0),), (T,))\n"
           f"    y = ct.load(b, (ct.bid(0),), (T,))\n"
           f"    m = ct.RoundingMode.{mode}\n"
           f"    r0 = ct.add(x, y, rounding_mode=m)\n"
           f"    r1 = ct.sub(x, y, rounding_mode=m)\n"
           f"    r2 = ct.mul(x, y, rounding_mode=m)\n"
           f"    r3 = ct.truediv(x, y, rounding_mode=m)\n"
           f"    r4 = ct.sqrt(ct.abs(x), rounding_mode=m)\n"
           f"    r5 = ct.sum(ct.reshape(x, (T // 8, 8)), axis=1, rounding_mode=m)\n"
           f"    r6 = x.astype(ct.float64).astype(ct.float32, rounding_mode=m)\n"
           f"    ct.store(o, (0, ct.bid(0)), ct.reshape(r0, (1, T)))\n"
           f"    ct.store(o, (1, ct.bid(0)), ct.reshape(r1, (1, T)))\n"
           f"    ct.store(o, (2, ct.bid(0)), ct.reshape(r2, (1, T)))\n"
           f"    ct.store(o, (3, ct.bid(0)), ct.reshape(r3, (1, T)))\n"
           f"    ct.store(o, (4, ct.bid(0)), ct.reshape(r4, (1, T)))\n"
           f"    ct.store(o, (5, ct.bid(0)), ct.reshape(ct.broadcast_to(r5[:, None], (T // 8, 8)),"
           f" (1, T)))\n"
           f"    ct.store(o, (6, ct.bid(0)), ct.reshape(r6.astype(x.dtype), (1, T)))\n")
    k = kernel_from_source(src, "rnd")
    rng = np.random.default_rng(seed)
    n = 64
    a, b = values(rng, (n,), d), values(rng, (n,), d)
    o = poison((7, n), d.np_dtype)
    ref, got = run_both(k, (2,), [a, b, o, 32])
    assert_same(ref[2], got[2], what=f"{mode} {d.name}")


def test_bfloat16_and_float8_scalar_arguments():
    import ml_dtypes
    src = ("@ct.kernel\ndef sc(a, s, f, o, T: Constant[int]):\n"
           "    x = ct.load(a, (0,), (T,))\n"
           "    ct.store(o, (0,), (x * s).astype(ct.float32) + f.astype(ct.float32))\n")
    k = kernel_from_source(src, "sc")
    a = np.arange(16).astype(dt.bfloat16.np_dtype)
    o = poison((16,), np.float32)
    ref, got = run_both(k, (1,), [a, ml_dtypes.bfloat16(1.5), ml_dtypes.float8_e4m3fn(-2.5), o,
                                  16])
    assert_same(ref[-1], got[-1], what="scalars")
    np.testing.assert_array_equal(ref[-1], np.arange(16) * 1.5 - 2.5)


# Conversions whose NaN handling the backend does with bit operations (no hardware conversion
# of a NaN, whose sign and payload PTX leaves open): the interpreter (ml_dtypes) keeps the sign
# and gives the target's NaN; a float8 NaN's byte (minifloat.py) does not leak out.
NAN_CONVERSIONS = [(dt.float32, dt.float8_e4m3fn), (dt.float32, dt.float8_e5m2),
                   (dt.float32, dt.bfloat16), (dt.bfloat16, dt.float8_e4m3fn),
                   (dt.bfloat16, dt.float8_e5m2), (dt.float8_e4m3fn, dt.float32),
                   (dt.float8_e5m2, dt.float32), (dt.float8_e5m2, dt.bfloat16),
                   (dt.float8_e5m2, dt.float8_e4m3fn), (dt.float8_e4m3fn, dt.float8_e5m2)]


def _nan_patterns(d: dt.DType) -> np.ndarray:
    """Every NaN of a format of up to 16 bits (float32: both signs, a few payloads), and a
    few numbers, as ``d`` values; 16 of them."""
    if d is dt.float32:
        bits = np.array([0x7FC00000, 0xFFC00000, 0x7FA00000, 0xFFE00001, 0x7F800001,
                         0xFFFFFFFF, 0x3F800000, 0xC0200000] * 2, np.uint32)
        return bits.view(np.float32)
    w = d.bitwidth
    u = np.uint8 if w == 8 else np.uint16
    every = np.arange(1 << w, dtype=u)
    nans = every[np.isnan(every.view(d.np_dtype).astype(np.float32))]
    nums = every[np.isfinite(every.view(d.np_dtype).astype(np.float32))][::97]
    return np.resize(np.concatenate([nans, nums]), 16).astype(u).view(d.np_dtype)


@pytest.mark.parametrize("src_d,dst_d", NAN_CONVERSIONS, ids=lambda d: d.name)
def test_nan_conversions_keep_the_sign_R_ASTYPE_2(src_d, dst_d):
    src = ("@ct.kernel\ndef cv(a, o):\n"
           f"    ct.store(o, (0,), ct.load(a, (0,), (16,)).astype(ct.{dst_d.name}))\n")
    a = _nan_patterns(src_d)
    o = poison((16,), dst_d.np_dtype)
    ref, got = run_both(kernel_from_source(src, "cv"), (1,), [a, o], threads=8)
    np.testing.assert_array_equal(got[1].view(np.uint8), ref[1].view(np.uint8),
                                  err_msg=f"{src_d.name} -> {dst_d.name}")

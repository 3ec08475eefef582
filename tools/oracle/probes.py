"""Probe kernels run on both the real cuda.tile (on the GPU) and cutile, to settle what the
spec leaves unclear.  ``import cutile as ct`` is replaced by ``cuda.tile`` in the oracle run.

Each probe is ``probe_<name>(launch) -> dict[str, np.ndarray | str]``; ``launch(grid, kernel,
args)`` runs a kernel on host NumPy arrays (mutating outputs in place) on the executor under
test.  ``run_all`` records every probe's outputs or the exception it raised.
"""

from __future__ import annotations

import numpy as np

import cutile as ct

DTYPES = ["bool_", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
          "float16", "bfloat16", "float32", "float64"]


def dcode(t):
    """An int code for a value's dtype (compile-time chain, folded by both compilers)."""
    d = t.dtype
    if d == ct.bool_:
        return 1
    if d == ct.uint8:
        return 2
    if d == ct.uint16:
        return 3
    if d == ct.uint32:
        return 4
    if d == ct.uint64:
        return 5
    if d == ct.int8:
        return 6
    if d == ct.int16:
        return 7
    if d == ct.int32:
        return 8
    if d == ct.int64:
        return 9
    if d == ct.float16:
        return 10
    if d == ct.bfloat16:
        return 11
    if d == ct.float32:
        return 12
    if d == ct.float64:
        return 13
    return 0


@ct.kernel
def k_promo(a, b, out):
    x = ct.load(a, (0,), (2,))
    y = ct.load(b, (0,), (2,))
    ct.store(out, (0,), dcode(x + y))


@ct.kernel
def k_promo_loose(a, out):
    x = ct.load(a, (0,), (2,))
    ct.store(out, (0,), dcode(x + 5))
    ct.store(out, (1,), dcode(x + 2.5))
    ct.store(out, (2,), dcode(x * 0.5))
    ct.store(out, (3,), dcode(x / 2))
    ct.store(out, (4,), dcode(x // 2))


@ct.kernel
def k_fma(x, y, z, out):
    a = ct.load(x, (0,), (256,))
    b = ct.load(y, (0,), (256,))
    c = ct.load(z, (0,), (256,))
    ct.store(out, (0,), a * b + c)


@ct.kernel
def k_nofuse(x, y, z, out):
    a = ct.load(x, (0,), (256,))
    b = ct.load(y, (0,), (256,))
    c = ct.load(z, (0,), (256,))
    t = a * b
    ct.store(out, (0,), t + c + t * 0.0)


@ct.kernel
def k_mma(A, B, C, T: ct.Constant[int]):
    a = ct.load(A, (0, 0), (T, T))
    b = ct.load(B, (0, 0), (T, T))
    ct.store(C, (0, 0), ct.mma(a, b, ct.zeros((T, T), ct.float32)))


@ct.kernel
def k_matmul16(A, B, C, T: ct.Constant[int]):
    a = ct.load(A, (0, 0), (T, T))
    b = ct.load(B, (0, 0), (T, T))
    ct.store(C, (0, 0), a @ b)


@ct.kernel
def k_intdiv(a, b, out):
    x = ct.load(a, (0,), (8,))
    y = ct.load(b, (0,), (8,))
    ct.store(out, (0, 0), (x // y).reshape((1, 8)))
    ct.store(out, (1, 0), (x % y).reshape((1, 8)))
    ct.store(out, (2, 0), ct.cdiv(x, y).reshape((1, 8)))


@ct.kernel
def k_fdiv(a, b, out):
    x = ct.load(a, (0,), (8,))
    y = ct.load(b, (0,), (8,))
    ct.store(out, (0, 0), (x // y).reshape((1, 8)))
    ct.store(out, (1, 0), (x % y).reshape((1, 8)))


@ct.kernel
def k_convert(a, o8, o16, obf, ou8):
    x = ct.load(a, (0,), (16,))
    ct.store(o8, (0,), x.astype(ct.int8))
    ct.store(o16, (0,), x.astype(ct.float16))
    ct.store(obf, (0,), x.astype(ct.bfloat16))
    ct.store(ou8, (0,), x.astype(ct.bool_).astype(ct.uint8))


@ct.kernel
def k_minmax(a, b, out):
    x = ct.load(a, (0,), (8,))
    y = ct.load(b, (0,), (8,))
    ct.store(out, (0, 0), ct.minimum(x, y).reshape((1, 8)))
    ct.store(out, (1, 0), ct.maximum(x, y).reshape((1, 8)))
    ct.store(out, (2, 0), ct.minimum(x, y, propagate_nan=True).reshape((1, 8)))
    ct.store(out, (3, 0), ct.maximum(x, y, propagate_nan=True).reshape((1, 8)))


@ct.kernel
def k_nanred(a, out, iout):
    x = ct.load(a, (0, 0), (2, 8))
    ct.store(out, (0, 0), ct.max(x, axis=1).reshape((1, 2)))
    ct.store(out, (1, 0), ct.min(x, axis=1).reshape((1, 2)))
    ct.store(out, (2, 0), ct.max(x, axis=1, propagate_nan=True).reshape((1, 2)))
    ct.store(out, (3, 0), ct.min(x, axis=1, propagate_nan=True).reshape((1, 2)))
    ct.store(iout, (0, 0), ct.argmax(x, axis=1).reshape((1, 2)))
    ct.store(iout, (1, 0), ct.argmin(x, axis=1).reshape((1, 2)))
    ct.store(iout, (2, 0), ct.argmax(x, axis=1, propagate_nan=True).reshape((1, 2)))
    ct.store(iout, (3, 0), ct.argmin(x, axis=1, propagate_nan=True).reshape((1, 2)))


@ct.kernel
def k_sumorder(a, out, N: ct.Constant[int]):
    x = ct.load(a, (0,), (N,))
    ct.store(out, (0,), ct.sum(x))


@ct.kernel
def k_sumtypes(b, i8, out):
    x = ct.load(b, (0,), (8,))
    y = ct.load(i8, (0,), (8,))
    ct.store(out, (0,), dcode(ct.sum(x)))
    ct.store(out, (1,), dcode(ct.sum(y)))
    ct.store(out, (2,), ct.sum(y).astype(ct.int32))
    ct.store(out, (3,), dcode(ct.argmax(y)))


@ct.kernel
def k_transc(a, out):
    x = ct.load(a, (0,), (1024,))
    ct.store(out, (0, 0), ct.exp(x).reshape((1, 1024)))
    ct.store(out, (1, 0), ct.log(ct.abs(x) + 1.0).reshape((1, 1024)))
    ct.store(out, (2, 0), ct.sin(x).reshape((1, 1024)))
    ct.store(out, (3, 0), ct.tanh(x).reshape((1, 1024)))
    ct.store(out, (4, 0), ct.sqrt(ct.abs(x)).reshape((1, 1024)))
    ct.store(out, (5, 0), ct.rsqrt(ct.abs(x) + 1.0).reshape((1, 1024)))
    ct.store(out, (6, 0), (x / 3.0).reshape((1, 1024)))
    ct.store(out, (7, 0), ct.exp2(x).reshape((1, 1024)))


@ct.kernel
def k_where(m, out):
    c = ct.load(m, (0,), (4,))
    ct.store(out, (0,), dcode(ct.where(c, 1, 2)))
    ct.store(out, (1,), dcode(ct.where(c, 1, 2.0)))
    ct.store(out, (2,), dcode(ct.where(c, ct.int8(1), 2)))
    ct.store(out, (3,), dcode(ct.where(c, 1.0, -1.0)))


@ct.kernel
def k_arange(out, fout):
    ct.store(out, (0,), ct.arange(8, dtype=ct.int32, start=7, step=-1))
    ct.store(fout, (0,), ct.arange(8, dtype=ct.float32, start=0.5, step=0.25))


@ct.kernel
def k_undetermined(a, out):
    t = ct.load(a, (0,), (8,))
    ct.store(out, (0,), t)


@ct.kernel
def k_bad_uint_int(a, b, out):
    ct.store(out, (0,), ct.load(a, (0,), (2,)) + ct.load(b, (0,), (2,)))


@ct.kernel
def k_bad_store_cast(a, out):
    ct.store(out, (0,), ct.load(a, (0,), (2,)))


@ct.kernel
def k_bad_int8_range(a, out):
    ct.store(out, (0,), ct.load(a, (0,), (2,)) - 300)


@ct.kernel
def k_loop_const(out, n):
    acc = 0
    for i in range(n):
        acc += i
    ct.store(out, (0,), dcode(acc))
    ct.store(out, (1,), acc)


@ct.kernel
def k_matmul_shapes(a, b, out):
    x = ct.load(a, (0,), (4,))
    y = ct.load(b, (0, 0), (4, 2))
    ct.store(out, (0,), x @ y)


@ct.kernel
def k_f16_int(a, b, out):
    x = ct.load(a, (0,), (2,))
    y = ct.load(b, (0,), (2,))
    ct.store(out, (0,), dcode(x ** y))
    ct.store(out, (1,), dcode(x + y))


def probe_promotion(launch):
    out = {}
    pairs = [("int32", "float16"), ("uint8", "int8"), ("uint16", "uint64"), ("int64", "float16"),
             ("int64", "bfloat16"), ("float16", "bfloat16"), ("bool_", "int8"),
             ("bool_", "float32"), ("uint32", "float32"), ("int8", "int16"),
             ("bfloat16", "float32"), ("float16", "float64"), ("uint64", "int64"),
             ("bool_", "bool_")]
    for a, b in pairs:
        code = np.zeros(1, np.int32)
        try:
            launch((1,), k_promo, (np.ones(2, _np(a)), np.ones(2, _np(b)), code))
            out[f"promo_{a}_{b}"] = code.copy()
        except Exception as e:  # noqa: BLE001
            out[f"promo_{a}_{b}"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    for a in ("int8", "uint8", "int64", "float16", "bool_", "bfloat16"):
        code = np.zeros(5, np.int32)
        try:
            launch((1,), k_promo_loose, (np.ones(2, _np(a)), code))
            out[f"loose_{a}"] = code.copy()
        except Exception as e:  # noqa: BLE001
            out[f"loose_{a}"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    code = np.zeros(2, np.int32)
    try:
        launch((1,), k_f16_int, (np.ones(2, np.float16), np.ones(2, np.int32), code))
        out["f16_pow_int32"] = code.copy()
    except Exception as e:  # noqa: BLE001
        out["f16_pow_int32"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    return out


def _np(name):
    if name == "bfloat16":
        import ml_dtypes
        return ml_dtypes.bfloat16
    return np.dtype(name.rstrip("_") if name != "bool_" else "bool")


def _rng(seed=0):
    return np.random.default_rng(seed)


def probe_fma(launch):
    r = _rng(1)
    x = r.standard_normal(256).astype(np.float32)
    y = r.standard_normal(256).astype(np.float32)
    z = (-(x.astype(np.float64) * y)).astype(np.float32)     # cancellation exposes fusion
    o1 = np.zeros(256, np.float32)
    o2 = np.zeros(256, np.float32)
    launch((1,), k_fma, (x, y, z, o1))
    launch((1,), k_nofuse, (x, y, z, o2))
    return {"fma_inputs": np.stack([x, y, z]), "fused": o1, "unfused": o2}


def probe_mma(launch):
    r = _rng(2)
    A = r.standard_normal((64, 64)).astype(np.float32)
    B = r.standard_normal((64, 64)).astype(np.float32)
    C = np.zeros((64, 64), np.float32)
    launch((1,), k_mma, (A, B, C, 64))
    A16 = r.standard_normal((32, 32)).astype(np.float16)
    B16 = r.standard_normal((32, 32)).astype(np.float16)
    C16 = np.zeros((32, 32), np.float16)
    launch((1,), k_matmul16, (A16, B16, C16, 32))
    o = np.zeros(2, np.float32)
    launch((1,), k_matmul_shapes, (np.arange(4, dtype=np.float32),
                                   np.arange(8, dtype=np.float32).reshape(4, 2), o))
    return {"mma_A": A, "mma_B": B, "mma_C": C, "mm16_A": A16, "mm16_B": B16, "mm16_C": C16,
            "matmul_1d": o}


def probe_division(launch):
    a = np.array([-7, 7, -7, 7, 9, 8, -30, 100], np.int32)
    b = np.array([2, -2, 3, -3, 4, 4, 23, -13], np.int32)
    o = np.zeros((3, 8), np.int32)
    launch((1,), k_intdiv, (a, b, o))
    fa = np.array([5.5, -7.5, 7.5, -1.0, 0.0, -0.0, 3.0, 1e30], np.float32)
    fb = np.array([2.2, 2.0, -2.0, 3.0, 2.0, 2.0, 0.0, 3.0], np.float32)
    fo = np.zeros((2, 8), np.float32)
    launch((1,), k_fdiv, (fa, fb, fo))
    return {"intdiv": o, "floatdiv": fo}


def probe_convert(launch):
    a = np.array([-1.7, -0.5, 0.5, 1.5, 2.5, 100.9, -128.9, 127.9, 65504.0, 70000.0,
                  1e-8, -1e-8, 0.1, 0.2, 3.14159, np.nan], np.float32)
    o8 = np.zeros(16, np.int8)
    o16 = np.zeros(16, np.float16)
    import ml_dtypes
    obf = np.zeros(16, ml_dtypes.bfloat16)
    ou8 = np.zeros(16, np.uint8)
    a8 = a.copy()
    a8[[8, 9, 15]] = 0.0                     # keep float->int in range (UB otherwise)
    launch((1,), k_convert, (a8, o8, o16, obf, ou8))
    return {"to_int8": o8, "to_f16": o16, "to_bf16": obf.view(np.uint16), "to_bool": ou8}


def probe_nan(launch):
    nan, inf = np.nan, np.inf
    x = np.array([1.0, nan, nan, -0.0, 0.0, 3.0, -inf, nan], np.float32)
    y = np.array([nan, 2.0, nan, 0.0, -0.0, -3.0, inf, 1.0], np.float32)
    o = np.zeros((4, 8), np.float32)
    launch((1,), k_minmax, (x, y, o))
    m = np.array([[3, inf, nan, 1.5, 5, -2, 2, 6], [nan, nan, 7, 1, nan, 8, nan, 0.5]],
                 np.float32)
    ro = np.zeros((4, 2), np.float32)
    io = np.zeros((4, 2), np.int32)
    launch((1,), k_nanred, (m, ro, io))
    return {"minmax": o, "nanred": ro, "nanarg": io}


def probe_sums(launch):
    r = _rng(3)
    x = (r.standard_normal(1024) * np.exp(r.standard_normal(1024) * 4)).astype(np.float32)
    o = np.zeros(1, np.float32)
    launch((1,), k_sumorder, (x, o, 1024))
    o2 = np.zeros(4, np.int32)
    launch((1,), k_sumtypes, (np.ones(8, bool), np.full(8, 100, np.int8), o2))
    return {"sum_input": x, "sum_1024": o, "sumtypes": o2}


def probe_transcendental(launch):
    r = _rng(4)
    x = (r.standard_normal(1024) * 3).astype(np.float32)
    o = np.zeros((8, 1024), np.float32)
    launch((1,), k_transc, (x, o))
    return {"transc_in": x, "transc": o}


def probe_misc(launch):
    out = {}
    o = np.zeros(4, np.int32)
    launch((1,), k_where, (np.array([True, False, True, False]), o))
    out["where_codes"] = o
    ai = np.zeros(8, np.int32)
    af = np.zeros(8, np.float32)
    launch((1,), k_arange, (ai, af))
    out["arange_i"] = ai
    out["arange_f"] = af
    u = np.full(8, -1.0, np.float32)
    try:
        launch((1,), k_undetermined, (np.arange(5, dtype=np.float32), u))
        out["undetermined_tail"] = u
    except Exception as e:  # noqa: BLE001 - cutile's interpreter reports R-UB-2 here
        out["undetermined_tail"] = f"{type(e).__name__}"
    lc = np.zeros(2, np.int32)
    launch((1,), k_loop_const, (lc, 5))
    out["loop_const"] = lc
    for name, k, args in [
        ("err_uint_int", k_bad_uint_int, (np.ones(2, np.uint32), np.ones(2, np.int32),
                                          np.zeros(2, np.uint32))),
        ("err_store_cast", k_bad_store_cast, (np.ones(2, np.float32), np.zeros(2, np.int32))),
        ("err_int8_range", k_bad_int8_range, (np.ones(2, np.int8), np.zeros(2, np.int8))),
    ]:
        try:
            launch((1,), k, args)
            out[name] = "no error"
        except Exception as e:  # noqa: BLE001
            out[name] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    return out


@ct.kernel
def k_undetermined_2d(a, out):
    ct.store(out, (0, 0), ct.load(a, (0, 0), (4, 8)))


def probe_undetermined(launch):
    """UNDETERMINED padding (issue 22, docs/decisions.md): the bits of the padded lanes (the
    real cuTile: small finite garbage; cutile's backend and its interpreter with
    CUTILE_STRICT=0: zeros; the strict interpreter: R-UB-2) and NVIDIA's attention pattern
    over 37 keys in tiles of 16 (finite padding: softmax attention, ``attention_err`` is the
    largest difference from float64)."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "spec_tests"))
    from backend_kernels import attention_ragged, attention_reference
    out = {}

    def attempt(name, fn):
        try:
            out.update(fn())
        except Exception as e:  # noqa: BLE001 - cutile's strict interpreter reports R-UB-2
            out[name] = f"{type(e).__name__}"

    for name, dtype, bits in (("i32", np.int32, np.uint32), ("f32", np.float32, np.uint32),
                              ("f16", np.float16, np.uint16)):
        def pad1d(name=name, dtype=dtype, bits=bits):
            u = np.full(8, -1, dtype)
            launch((1,), k_undetermined, (np.arange(3, dtype=dtype), u))
            return {f"pad1d_{name}_bits": u.view(bits)}
        attempt(f"pad1d_{name}_bits", pad1d)

    def pad2d():
        u = np.full((4, 8), -1, np.float32)
        launch((1,), k_undetermined_2d, (np.arange(15, dtype=np.float32).reshape(3, 5), u))
        return {"pad2d_f32_bits": u.view(np.uint32)}
    attempt("pad2d_f32_bits", pad2d)

    def attention():
        rng = np.random.default_rng(22)
        q, k, v = (rng.standard_normal((2, r, 16)).astype(np.float32) for r in (20, 37, 37))
        o = np.zeros_like(q)
        launch((2, 2), attention_ragged, (q, k, v, o, 0.25, 16, 16, 16))
        err = np.abs(o.astype(np.float64) - attention_reference(q, k, v, 0.25)).max()
        return {"attention": o, "attention_err": np.array([err])}
    attempt("attention", attention)
    return out


PROBES = [probe_promotion, probe_fma, probe_mma, probe_division, probe_convert, probe_nan,
          probe_sums, probe_transcendental, probe_misc, probe_undetermined]


def run_all(launch) -> dict:
    results = {}
    for p in PROBES:
        try:
            for k, v in p(launch).items():
                results[f"{p.__name__}.{k}"] = v
        except Exception as e:  # noqa: BLE001
            results[f"{p.__name__}.ERROR"] = f"{type(e).__name__}: {str(e)[:300]}"
    return results


@ct.kernel
def k_sum_1d(a, out, N: ct.Constant[int]):
    x = ct.load(a, (0,), (N,))
    ct.store(out, (0,), ct.sum(x))


@ct.kernel
def k_sum_2d(a, out0, out1, M: ct.Constant[int], N: ct.Constant[int]):
    x = ct.load(a, (0, 0), (M, N))
    ct.store(out0, (0,), ct.sum(x, axis=0))
    ct.store(out1, (0,), ct.sum(x, axis=1))


@ct.kernel
def k_sum_f16(a, out, N: ct.Constant[int]):
    x = ct.load(a, (0,), (N,))
    ct.store(out, (0,), ct.sum(x))


def probe_sum_orders(launch):
    """Float sums whose result depends on the combine order (settles R-RED-4's order)."""
    out = {}
    r = _rng(7)
    for n in (8, 16, 64, 256, 1024, 4096):
        for rep in range(3):
            x = (r.standard_normal(n) * np.exp(r.standard_normal(n) * 5)).astype(np.float32)
            o = np.zeros(1, np.float32)
            launch((1,), k_sum_1d, (x, o, n))
            out[f"sum1d_{n}_{rep}_in"] = x
            out[f"sum1d_{n}_{rep}_out"] = o
    x = (r.standard_normal((16, 64)) * np.exp(r.standard_normal((16, 64)) * 5)).astype(np.float32)
    o0 = np.zeros(64, np.float32)
    o1 = np.zeros(16, np.float32)
    launch((1,), k_sum_2d, (x, o0, o1, 16, 64))
    out["sum2d_in"], out["sum2d_ax0"], out["sum2d_ax1"] = x, o0, o1
    h = (r.standard_normal(256) * 10).astype(np.float16)
    oh = np.zeros(1, np.float16)
    launch((1,), k_sum_f16, (h, oh, 256))
    out["sumf16_in"], out["sumf16_out"] = h, oh
    return out


PROBES.append(probe_sum_orders)


@ct.kernel
def k_f8_convert(a, out):
    x = ct.load(a, (0,), (16,))
    ct.store(out, (0, 0), x.astype(ct.float8_e4m3fn).astype(ct.float32).reshape((1, 16)))
    ct.store(out, (1, 0), x.astype(ct.float8_e5m2).astype(ct.float32).reshape((1, 16)))
    ct.store(out, (2, 0), x.astype(ct.float16).astype(ct.float32).reshape((1, 16)))
    ct.store(out, (3, 0), x.astype(ct.bfloat16).astype(ct.float32).reshape((1, 16)))


@ct.kernel
def k_mma_acc(A, B, C, M: ct.Constant[int], N: ct.Constant[int], K: ct.Constant[int]):
    a = ct.load(A, (0, 0), (M, K))
    b = ct.load(B, (0, 0), (K, N))
    acc = ct.zeros((M, N), C.dtype)
    ct.store(C, (0, 0), ct.mma(a, b, acc))


def probe_f8_and_mma_models(launch):
    out = {}
    x = np.array([500, 1000, 1e6, -1e6, 448, 449, 57344, 60000, 1e9, np.nan, np.inf, -np.inf,
                  65520, 70000, 3.0e38, 0.0], np.float32)
    o = np.zeros((4, 16), np.float32)
    try:
        launch((1,), k_f8_convert, (x, o))
        out["f8_overflow"] = o
    except Exception as e:  # noqa: BLE001
        out["f8_overflow"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    r = _rng(9)
    import ml_dtypes
    for name, dt_in, dt_acc, m, n, k in [("f16_f16_64", np.float16, np.float16, 32, 32, 64),
                                         ("f16_f32_64", np.float16, np.float32, 32, 32, 64),
                                         ("bf16_f32_64", ml_dtypes.bfloat16, np.float32, 32, 32,
                                          64),
                                         ("f16_f16_128", np.float16, np.float16, 64, 32, 128)]:
        A = r.standard_normal((m, k)).astype(dt_in)
        B = r.standard_normal((k, n)).astype(dt_in)
        C = np.zeros((m, n), dt_acc)
        try:
            launch((1,), k_mma_acc, (A, B, C, m, n, k))
            out[f"mma_{name}_A"] = A.astype(np.float32)
            out[f"mma_{name}_B"] = B.astype(np.float32)
            out[f"mma_{name}_C"] = C
        except Exception as e:  # noqa: BLE001
            out[f"mma_{name}"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    return out


PROBES.append(probe_f8_and_mma_models)

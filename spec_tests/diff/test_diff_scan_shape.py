"""Interpreter vs Numba backend (issue 10 part B): scans along each axis (cumsum/cumprod/user
``scan``, forward and reversed), ``reduce`` with tuple combiners, cat/extract/insert on ragged
(non-square, non-uniform) shapes with runtime indices, bitcast round trips of every
equal-width dtype pair, and byte packing.  All bit for bit (R-SCAN-*, R-RED-8, R-SHAPE-6..8,
R-BITCAST-*)."""

from __future__ import annotations

import itertools

import ml_dtypes  # noqa: F401
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cutile import dtypes as dt

from .harness import assert_same, examples, kernel_from_source, poison, run_both, shards
from .test_diff_reduce_shape import values

SCAN_DTYPES = [dt.float32, dt.float16, dt.bfloat16, dt.float64, dt.int32, dt.int8, dt.uint16]
SCAN_SHAPES = [(16,), (4, 8), (8, 2), (2, 4, 4), (1, 16), (16, 1)]


def _idx(nd):
    return "(" + ", ".join(["ct.bid(0)"] + ["0"] * (nd - 1)) + ("," if nd == 1 else "") + ")"


@pytest.mark.parametrize("shard", shards())
@settings(max_examples=examples(24))
@given(st.sampled_from(SCAN_SHAPES), st.sampled_from(SCAN_DTYPES),
       st.sampled_from(["cumsum", "cumprod", "scanmax", "scanpair"]), st.data(),
       st.booleans(), st.integers(0, 2 ** 16), st.sampled_from([8, 32]))
def test_scans_along_each_axis(shard, shape, d, fn, data, reverse, seed, threads):
    """R-SCAN-1/3: every axis, forward and reversed, bit for bit (sequential order)."""
    nd = len(shape)
    axis = data.draw(st.integers(-nd, nd - 1))
    if fn == "cumsum" or fn == "cumprod":
        body = f"    r = ct.{fn}(x, {axis}, reverse={reverse})\n"
    elif fn == "scanmax":
        body = f"    r = ct.scan(x, {axis}, ct.maximum, 0, reverse={reverse})\n"
    else:     # a non-commutative tuple combiner: (a, n) o (b, m) = (a*m + b, n + m)
        body = (f"    c = ct.full({shape!r}, 1, x.dtype)\n"
                f"    r, n = ct.scan((x, c), {axis}, lambda a, n, b, m: (a * m + b, n + m), "
                f"(0, 0), reverse={reverse})\n"
                "    r = r + n\n")
    src = (f"@ct.kernel\ndef sc(a, out):\n"
           f"    x = ct.load(a, {_idx(nd)}, {shape!r})\n" + body +
           f"    ct.store(out, {_idx(nd)}, r)\n")
    k = kernel_from_source(src, "sc")
    rng = np.random.default_rng(seed)
    full = (shape[0] * 2,) + shape[1:]
    a = values(rng, full, d, special=fn != "cumprod")
    out = poison(full, d.np_dtype)
    ref, got = run_both(k, (2,), [a, out], threads=threads)
    # R-MATH-6: maximum's sign of a zero from -0.0 vs +0.0 is unspecified (on the H200 NVVM
    # turned the select into max.f32: -0.0 where the interpreter kept +0.0)
    assert_same(ref[1], got[1], signed_zero=fn != "scanmax", what=src)


@pytest.mark.parametrize("shard", shards())
@settings(max_examples=examples(12))
@given(st.sampled_from([(8,), (4, 8), (8, 4), (2, 2, 8)]),
       st.sampled_from([dt.float32, dt.int32, dt.float16, dt.int64]), st.data(),
       st.booleans(), st.integers(0, 2 ** 16))
def test_reduce_tuple_combiner(shard, shape, d, data, keep, seed):
    """R-RED-8: (value, index) argmax through ``reduce`` along any axis, and a sum."""
    nd = len(shape)
    axis = data.draw(st.integers(0, nd - 1))
    oshape = tuple(1 if i == axis else s for i, s in enumerate(shape)) if keep else \
        tuple(s for i, s in enumerate(shape) if i != axis)
    ost = oshape or (1,)
    res = "" if oshape else "    v = ct.reshape(v, (1,))\n    i = ct.reshape(i, (1,))\n" \
        "    s = ct.reshape(s, (1,))\n"
    src = (f"@ct.kernel\ndef rd(a, ov, oi, os):\n"
           f"    x = ct.load(a, {_idx(nd)}, {shape!r})\n"
           f"    ix = ct.broadcast_to(ct.reshape(ct.arange({shape[axis]}, dtype=ct.int32), "
           f"{tuple(shape[axis] if j == axis else 1 for j in range(nd))!r}), {shape!r})\n"
           f"    v, i = ct.reduce((x, ix), {axis}, lambda a, i, b, j: "
           f"(ct.where(b > a, b, a), ct.where(b > a, j, ct.where(b == a, ct.minimum(i, j), i))),"
           f" (0, 0), keepdims={keep})\n"
           f"    s = ct.reduce(x, {axis}, lambda a, b: a + b, 0, keepdims={keep})\n" + res +
           f"    ct.store(ov, {_idx(len(ost))}, v)\n"
           f"    ct.store(oi, {_idx(len(ost))}, i)\n"
           f"    ct.store(os, {_idx(len(ost))}, s)\n")
    k = kernel_from_source(src, "rd")
    rng = np.random.default_rng(seed)
    a = values(rng, (shape[0] * 2,) + shape[1:], d, special=False)
    big = (ost[0] * 2,) + ost[1:]
    ov, oi, os_ = poison(big, d.np_dtype), poison(big, np.int32), poison(big, d.np_dtype)
    ref, got = run_both(k, (2,), [a, ov, oi, os_], threads=16)
    for j in (1, 2, 3):
        assert_same(ref[j], got[j], what=src)


@pytest.mark.parametrize("shard", shards())
@settings(max_examples=examples(12))
@given(st.sampled_from([((8, 4), (2, 4)), ((4, 16), (4, 2)), ((2, 8), (1, 8)),
                        ((16,), (4,)), ((2, 4, 8), (1, 2, 4))]),
       st.sampled_from([dt.float32, dt.int8, dt.float16, dt.bool_, dt.int64, dt.bfloat16]),
       st.integers(0, 2 ** 16), st.sampled_from([8, 64]))
def test_cat_extract_insert_ragged(shard, shapes, d, seed, threads):
    """R-SHAPE-6..8: runtime cell indices (from an index array), cat along axis 0 and -1."""
    shape, cell = shapes
    nd = len(shape)
    grid = tuple(n // c for n, c in zip(shape, cell))
    idx = "(" + ", ".join(f"ct.load(ix, ({j},), (1,)).item()" for j in range(nd)) + \
        ("," if nd == 1 else "") + ")"
    z = "(" + ", ".join(["0"] * nd) + ("," if nd == 1 else "") + ")"
    cat_shape = (shape[0] * 2,) + shape[1:]
    src = (f"@ct.kernel\ndef sh(a, b, ix, o1, o2, o3, o4):\n"
           f"    x = ct.load(a, {z}, {shape!r})\n"
           f"    y = ct.load(b, {z}, {cell!r})\n"
           f"    i = {idx}\n"
           f"    ct.store(o1, {z}, ct.extract(x, i, {cell!r}))\n"
           f"    ct.store(o2, {z}, x.insert(i, y))\n"
           f"    ct.store(o3, {z}, ct.cat((x, x.insert(i, y)), 0))\n"
           f"    ct.store(o4, {z}, ct.cat((y, y), -1))\n")
    k = kernel_from_source(src, "sh")
    rng = np.random.default_rng(seed)
    if d.is_bool:
        a, b = rng.random(shape) < 0.5, rng.random(cell) < 0.5
    else:
        a, b = values(rng, shape, d), values(rng, cell, d)
    ix = np.array([rng.integers(0, g) for g in grid], np.int32)
    cat2 = cell[:-1] + (cell[-1] * 2,)
    outs = [poison(cell, d.np_dtype), poison(shape, d.np_dtype), poison(cat_shape, d.np_dtype),
            poison(cat2, d.np_dtype)]
    ref, got = run_both(k, (1,), [a, b, ix, *outs], threads=threads)
    for j in range(3, 7):
        assert_same(ref[j], got[j], what=src)


_WIDTHS = {}
for _d in dt.ALL_DTYPES:
    if _d.has_numpy and not _d.is_bool:
        _WIDTHS.setdefault(_d.bitwidth, []).append(_d)
BITCAST_PAIRS = [(a, b) for w in sorted(_WIDTHS) for a, b in itertools.product(_WIDTHS[w],
                                                                              repeat=2)
                 if a is not b]


def _bit_values(rng, dtypes, n):
    """Random bit patterns, as ``dtypes[0]``; for widths up to 16 bits every third one a NaN
    pattern of a float dtype among ``dtypes``, whose bits must survive too (the backend keeps
    float16 and float8 NaN payloads: bits.py, minifloat.py)."""
    w = dtypes[0].bitwidth
    u = {4: np.uint8, 8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[w]
    b = rng.integers(0, np.iinfo(u).max, size=n, dtype=u, endpoint=True)
    if w == 4:
        b &= 15
    if w in (8, 16):
        every = np.arange(1 << w, dtype=u)
        nans = np.concatenate([every[np.isnan(every.view(d.np_dtype).astype(np.float32))]
                               for d in dtypes if d.is_float and d.has_numpy] + [every[:0]])
        if nans.size:
            b[::3] = rng.choice(nans, size=b[::3].size)
    return b.view(dtypes[0].np_dtype)


@pytest.mark.parametrize("src_d,dst_d", BITCAST_PAIRS, ids=lambda d: d.name)
def test_bitcast_round_trip(src_d, dst_d):
    """R-BITCAST-1: bitcast S -> D -> S of every equal-width pair, and the D values."""
    def arr(d):       # tfloat32 has no arrays: it travels as float32 (R-DTYPE-4)
        return dt.float32 if d is dt.tfloat32 else d

    def out(d, e):
        return f"{e}.astype(ct.float32)" if d is dt.tfloat32 else e

    load = "ct.load(a, (0,), (16,))" + (".astype(ct.tfloat32)" if src_d is dt.tfloat32 else "")
    src = ("@ct.kernel\ndef bc(a, o1, o2):\n"
           f"    x = {load}\n"
           f"    y = ct.bitcast(x, ct.{dst_d.name})\n"
           f"    ct.store(o1, (0,), {out(dst_d, 'y')})\n"
           f"    ct.store(o2, (0,), {out(src_d, f'ct.bitcast(y, ct.{src_d.name})')})\n")
    k = kernel_from_source(src, "bc")
    rng = np.random.default_rng(src_d.bitwidth * 7 + len(dst_d.name))
    a = _bit_values(rng, [src_d, dst_d], 16)
    if src_d is dt.tfloat32:
        a = (a.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)   # exact tf32 values
    o1, o2 = poison((16,), arr(dst_d).np_dtype), poison((16,), arr(src_d).np_dtype)
    ref, got = run_both(k, (1,), [a, o1, o2], threads=8)
    assert_same(ref[1], got[1], what=src)
    assert_same(ref[2], got[2], what=src)
    for r in (ref, got):                                                 # a round trip
        np.testing.assert_array_equal(r[2].view(np.uint8), a.view(np.uint8))
    np.testing.assert_array_equal(got[1].view(np.uint8), ref[1].view(np.uint8))   # NaN bits


@pytest.mark.parametrize("d", [d for d in dt.ALL_DTYPES if d.has_numpy and not d.is_bool
                               and d is not dt.tfloat32], ids=lambda d: d.name)
def test_pack_unpack_bytes(d):
    """R-BITCAST-2/3: pack_to_bytes of a (2, 8) tile, and unpack back (tfloat32 has no arrays;
    its bits are covered by the bitcast round trips)."""
    n = 16
    nbytes = n * d.bitwidth // 8
    src = ("@ct.kernel\ndef pk(a, o1, o2):\n"
           "    x = ct.load(a, (0, 0), (2, 8))\n"
           "    b = ct.pack_to_bytes(x)\n"
           "    ct.store(o1, (0,), b)\n"
           f"    ct.store(o2, (0,), ct.unpack_from_bytes(b, ct.{d.name}))\n")
    k = kernel_from_source(src, "pk")
    a = _bit_values(np.random.default_rng(d.bitwidth), [d], n).reshape(2, 8)
    o1, o2 = poison((nbytes,), np.uint8), poison((n,), d.np_dtype)
    ref, got = run_both(k, (1,), [a, o1, o2], threads=8)
    assert_same(ref[1], got[1], what=src)
    assert_same(ref[2], got[2], what=src)
    for r in (ref, got):                                     # NaN payloads included
        np.testing.assert_array_equal(r[2].view(np.uint8), a.ravel().view(np.uint8))

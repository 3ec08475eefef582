"""Hypothesis properties of global-memory ops through whole kernels (§6, §8, §9).

* tile-space copy: random array shapes that are not multiples of random power-of-two tile
  shapes, every padding mode, orders and several dtypes; the padded tiles and the discarded
  out-of-bounds store lanes are compared with a NumPy reference, and guard bands around the
  destination must stay untouched;
* gather/scatter with random (often out-of-bounds, negative, unsigned) indices and masks.

Kernels are built once per compile-time configuration (cached) so examples stay cheap.
"""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from spec_executor import ub_checked

import cutile as ct

P = ct.PaddingMode
BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64),
          np.dtype(np.int8), np.dtype(np.int32), np.dtype(np.uint16), np.dtype(np.bool_)]
FLOAT_MODES = [P.ZERO, P.NEG_ZERO, P.NAN, P.POS_INF, P.NEG_INF, P.UNDETERMINED]
INT_MODES = [P.ZERO, P.UNDETERMINED]
ORDERS = ["C", "F", (1, 0), (0, 1), (-1, 0)]
FILLS = {P.ZERO: 0.0, P.NEG_ZERO: -0.0, P.NAN: np.nan, P.POS_INF: np.inf, P.NEG_INF: -np.inf}
GUARD_PAD = 3


def is_float(dtype) -> bool:
    return dtype.kind not in "biu"


def bits(a) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}")


def random_values(rng, shape, dtype):
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -1000), min(info.max, 1000) + 1, shape).astype(dtype)
    v = rng.standard_normal(shape) * 8
    v[rng.random(shape) < 0.1] = -0.0
    return v.astype(dtype)


def embedded(shape, dtype, rng, fortran=False):
    """A destination array inside a guard buffer: (buffer, view, guard mask, guard copy)."""
    bshape = tuple(n + 2 * GUARD_PAD for n in shape)
    buf = np.asarray(random_values(rng, bshape, dtype), order="F" if fortran else "C")
    view = buf[tuple(slice(GUARD_PAD, GUARD_PAD + n) for n in shape)]
    mark = np.ones(bshape, bool)
    mark[tuple(slice(GUARD_PAD, GUARD_PAD + n) for n in shape)] = False
    return buf, view, mark, buf.copy()


def perm_of(order):
    return {"C": (0, 1), "F": (1, 0)}[order] if isinstance(order, str) else tuple(
        a % 2 for a in order)


# -- tile-space copy -----------------------------------------------------------------------------
@functools.cache
def copy_kernel(mode, order, tm, tn, grid_out):
    @ct.kernel
    def k(x, y, tiles):
        i, j = ct.bid(0), ct.bid(1)
        t = ct.load(x, (i, j), (tm, tn), order=order, padding_mode=mode)
        ct.store(y, (i, j), t, order=order)  # OOB lanes discarded (R-STORE-3/5)
        if grid_out:
            ct.store(tiles, (i, j), t)         # padded tile made visible (R-PAD-1)
    return k


@st.composite
def copy_cases(draw):
    dtype = draw(st.sampled_from(DTYPES))
    mode = draw(st.sampled_from(FLOAT_MODES if is_float(dtype) else INT_MODES))
    order = draw(st.sampled_from(ORDERS))
    tm, tn = (draw(st.sampled_from([1, 2, 4, 8, 16])) for _ in range(2))
    m = draw(st.integers(1, 40))
    n = draw(st.integers(1, 40))
    pm, pn = perm_of(order)
    t_m, t_n = (m, n)[pm], (m, n)[pn]  # extents of the permuted array
    assume(t_m % tm or t_n % tn)        # at least one partial tile dimension
    return dtype, mode, order, (tm, tn), (m, n), draw(st.integers(0, 2**32 - 1)), draw(
        st.booleans())


@given(copy_cases())
def test_prop_tile_space_copy(case):
    # R-SPACE-1/2, R-LOAD-2/4, R-PAD-1/3, R-STORE-3/5.
    dtype, mode, order, (tm, tn), shape, seed, fortran = case
    rng = np.random.default_rng(seed)
    x = np.asarray(random_values(rng, shape, dtype), order="F" if fortran else "C")
    perm = perm_of(order)
    xt = np.transpose(x, perm)
    grid = (-(-xt.shape[0] // tm), -(-xt.shape[1] // tn))
    ybuf, y, ymark, ycopy = embedded(shape, dtype, rng, fortran=not fortran)
    tbuf, tiles, tmark, tcopy = embedded((grid[0] * tm, grid[1] * tn), dtype, rng)
    undetermined = mode is P.UNDETERMINED
    if undetermined and ub_checked():
        # Storing the padded tiles in bounds relies on the padding: R-UB-2 (tiles untouched
        # for the failing block; earlier blocks may have written full tiles).
        with pytest.raises(ct.UndefinedBehaviorError, match="UNDETERMINED"):
            ct.launch(None, grid, copy_kernel(mode, order, tm, tn, True), (x, y, tiles))
        ybuf[...] = ycopy
    ct.launch(None, grid, copy_kernel(mode, order, tm, tn, not undetermined), (x, y, tiles))
    np.testing.assert_array_equal(bits(y), bits(x))
    np.testing.assert_array_equal(bits(ybuf[ymark]), bits(ycopy[ymark]))
    np.testing.assert_array_equal(bits(tbuf[tmark]), bits(tcopy[tmark]))
    if undetermined:
        return
    ref = np.full(tiles.shape, np.array(FILLS[mode]).astype(dtype), dtype)
    ref[:xt.shape[0], :xt.shape[1]] = xt
    if mode is P.NAN:
        nan = np.isnan(ref.astype(np.float64))
        assert np.array_equal(np.isnan(tiles.astype(np.float64)), nan)
        np.testing.assert_array_equal(bits(tiles)[~nan], bits(ref)[~nan])
    else:
        np.testing.assert_array_equal(bits(tiles), bits(ref))


@functools.cache
def view_kernel(tile, step, mode):
    @ct.kernel
    def k(x, out):
        v = x.tiled_view(tile, padding_mode=mode, traversal_steps=step)
        ov = out.tiled_view(tile)
        for i in range(v.num_tiles(0)):
            ov.store(i, v.load(i))
    return k


@given(st.sampled_from([1, 2, 4, 8]), st.integers(1, 9), st.integers(1, 40),
       st.sampled_from([P.ZERO, P.NEG_INF]), st.integers(0, 2**32 - 1))
def test_prop_tiled_view_steps(tile, step, n, mode, seed):
    # R-VIEW-2/4/5: window i covers x[i*step : i*step+tile], padded past the end.
    rng = np.random.default_rng(seed)
    x = random_values(rng, (n,), np.dtype(np.float32))
    count = -(-n // step)
    out = np.zeros(count * tile, np.float32)
    ct.launch(None, (1,), view_kernel(tile, step, mode), (x, out))
    padded = np.concatenate([x, np.full(tile + step, FILLS[mode], np.float32)])
    ref = np.concatenate([padded[i * step:i * step + tile] for i in range(count)])
    np.testing.assert_array_equal(bits(out), bits(ref))


# -- gather / scatter ----------------------------------------------------------------------------
@functools.cache
def gs_kernel(k_len, with_mask, check_bounds):
    @ct.kernel
    def k(x, i0, i1, m, pad, y, out):
        a = ct.load(i0, (0,), (k_len,))
        b = ct.load(i1, (0,), (k_len,))
        p = ct.load(pad, (0,), (k_len,))
        if with_mask:  # compile-time constant (R-CF-3)
            mask = ct.load(m, (0,), (k_len,))
            g = ct.gather(x, (a[:, None], b[None, :]), mask=mask[:, None],
                          padding_value=p[None, :], check_bounds=check_bounds)
            ct.store(out, (0, 0), g)
            ct.scatter(y, (a, b), p + 1, mask=mask, check_bounds=check_bounds)
        else:
            g = ct.gather(x, (a[:, None], b[None, :]), padding_value=p[None, :],
                          check_bounds=check_bounds)
            ct.store(out, (0, 0), g)
            ct.scatter(y, (a, b), p + 1, check_bounds=check_bounds)
    return k


@st.composite
def gs_cases(draw):
    m, n = draw(st.integers(1, 12)), draw(st.integers(1, 12))
    k_len = draw(st.sampled_from([1, 2, 4, 8]))
    idt = draw(st.sampled_from([np.int32, np.int64, np.int8, np.uint32, np.uint8]))
    lo = 0 if np.dtype(idt).kind == "u" else -2 * max(m, n)
    hi = max(2 * max(m, n), 16)  # wide enough for k_len unique rows
    # Scatter positions must be distinct (R-GS-6 leaves duplicates unspecified): unique rows.
    rows = draw(st.lists(st.integers(lo, hi), min_size=k_len, max_size=k_len, unique=True))
    cols = draw(st.lists(st.integers(lo, hi), min_size=k_len, max_size=k_len))
    with_mask = draw(st.booleans())
    mask = draw(st.lists(st.booleans(), min_size=k_len, max_size=k_len))
    return (m, n), k_len, np.array(rows, idt), np.array(cols, idt), with_mask, np.array(
        mask, bool), draw(st.integers(0, 2**32 - 1))


@given(gs_cases())
def test_prop_gather_scatter(case):
    # R-GS-2/3/4/5/6: OOB (negative, too large) positions give padding / are skipped.
    shape, k_len, rows, cols, with_mask, mask, seed = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    pad = rng.standard_normal(k_len).astype(np.float32)
    ybuf, y, ymark, ycopy = embedded(shape, np.dtype(np.float32), rng)
    y0 = y.copy()
    out = np.zeros((k_len, k_len), np.float32)
    ct.launch(None, (1,), gs_kernel(k_len, with_mask, True),
              (x, rows, cols, mask, pad, y, out))
    r, c = rows.astype(np.int64), cols.astype(np.int64)
    ref = np.empty((k_len, k_len), np.float32)
    for a in range(k_len):
        for b in range(k_len):
            ok = (0 <= r[a] < shape[0]) and (0 <= c[b] < shape[1]) and (mask[a] or not with_mask)
            ref[a, b] = x[r[a], c[b]] if ok else pad[b]
    np.testing.assert_array_equal(out, ref)
    yref = y0.copy()
    for a in range(k_len):
        if (0 <= r[a] < shape[0]) and (0 <= c[a] < shape[1]) and (mask[a] or not with_mask):
            yref[r[a], c[a]] = pad[a] + 1
    np.testing.assert_array_equal(y, yref)
    np.testing.assert_array_equal(ybuf[ymark], ycopy[ymark])
    # check_bounds=False is UB (R-UB-3) exactly when a masked-in position is out of bounds.
    bad_g = any((mask[a] or not with_mask) and not (0 <= r[a] < shape[0] and 0 <= c[b] <
                                                    shape[1])
                for a in range(k_len) for b in range(k_len))
    if bad_g:
        if not ub_checked():
            return
        with pytest.raises(ct.UndefinedBehaviorError, match="R-UB-3"):
            ct.launch(None, (1,), gs_kernel(k_len, with_mask, False),
                      (x, rows, cols, mask, pad, y, out))
    else:
        ct.launch(None, (1,), gs_kernel(k_len, with_mask, False),
                  (x, rows, cols, mask, pad, y, out))
        np.testing.assert_array_equal(out, ref)

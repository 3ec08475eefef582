"""Interpreter vs Numba backend: tile-space load/store on ragged shapes with every padding
mode and order, array slices and queries, gather/scatter with out-of-bounds indices."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cutile as ct
from cutile import Constant
from cutile import dtypes as dt

from .harness import assert_same, examples, poison, run_both, shards

P = ct.PaddingMode
FLOAT_PADS = [P.ZERO, P.NEG_ZERO, P.NAN, P.POS_INF, P.NEG_INF, P.UNDETERMINED]
DTYPES = [np.float32, np.float16, np.float64, np.int8, np.uint16, np.int32, np.int64, np.uint64,
          np.bool_,                                      # the first 9: NumPy's own dtypes
          dt.bfloat16.np_dtype, dt.float8_e4m3fn.np_dtype, dt.float8_e5m2.np_dtype,
          dt.float4_e2m1fn.np_dtype, dt.float8_e8m0fnu.np_dtype]


def values(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind in "fV":                     # V: ml_dtypes' bfloat16/float8/float4
        scale = 100 if dtype.itemsize > 1 else 3
        return np.abs(rng.standard_normal(shape) * scale).astype(dtype) \
            if dtype.name == "float8_e8m0fnu" else \
            (rng.standard_normal(shape) * scale).astype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) < 0.5
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)


@ct.kernel
def copy1(a, b, T0: Constant[int], PAD: Constant[object]):
    t = ct.load(a, (ct.bid(0),), (T0,), padding_mode=PAD)
    ct.store(b, (ct.bid(0),), t)


@ct.kernel
def copy2(a, b, T0: Constant[int], T1: Constant[int], PAD: Constant[object],
          ORD: Constant[object]):
    t = ct.load(a, (ct.bid(0), ct.bid(1)), (T0, T1), padding_mode=PAD, order=ORD)
    ct.store(b, (ct.bid(0), ct.bid(1)), t)


@ct.kernel
def copy3(a, b, T0: Constant[int], T1: Constant[int], T2: Constant[int], PAD: Constant[object],
          ORD: Constant[object]):
    t = ct.load(a, (ct.bid(0), ct.bid(1), ct.bid(2)), (T0, T1, T2), padding_mode=PAD, order=ORD)
    ct.store(b, (ct.bid(0), ct.bid(1), ct.bid(2)), t)


@st.composite
def copy_case(draw):
    ndim = draw(st.integers(1, 3))
    dtype = draw(st.sampled_from(DTYPES))
    kind = np.dtype(dtype).kind
    pads = FLOAT_PADS if kind in "fV" else [P.ZERO, P.UNDETERMINED]
    pad = draw(st.sampled_from(pads))
    tiles = [draw(st.sampled_from([1, 2, 4, 8, 16])) for _ in range(ndim)]
    while np.prod(tiles) > 256:
        tiles[tiles.index(max(tiles))] //= 2
    order = tuple(draw(st.permutations(range(ndim)))) if ndim > 1 else (0,)
    # tile-space extents (of the transposed array): ragged, at most 2 tiles per dim
    ext = [draw(st.integers(1, 2 * t)) for t in tiles]
    grid = [-(-e // t) for e, t in zip(ext, tiles)]
    while np.prod(grid) > 4:
        k = grid.index(max(grid))
        ext[k] = tiles[k]
        grid[k] = 1
    seed = draw(st.integers(0, 2 ** 16))
    # padded lanes are visible when the output covers whole tiles (not for UNDETERMINED,
    # whose lanes must not reach memory, R-PAD-3)
    full = pad is not P.UNDETERMINED and draw(st.booleans())
    return ndim, dtype, pad, tuple(tiles), order, tuple(ext), tuple(grid), seed, full


@pytest.mark.parametrize("shard", shards())
@settings(max_examples=examples(40))
@given(copy_case())
def test_copy_every_padding_mode_ragged(shard, case):
    ndim, dtype, pad, tiles, order, ext, grid, seed, full = case
    rng = np.random.default_rng(seed)
    inv = np.argsort(order)
    a_shape = tuple(ext[inv[j]] for j in range(ndim))          # array axis order[j] = ext[j]
    a = values(rng, a_shape, dtype)
    o_ext = tuple(g * t for g, t in zip(grid, tiles)) if full else ext
    b = poison(o_ext, dtype)               # stored without order: tile space = array axes
    if ndim == 1:
        args, k = [a, b, tiles[0], pad], copy1
    elif ndim == 2:
        args, k = [a, b, *tiles, pad, order], copy2
    else:
        args, k = [a, b, *tiles, pad, order], copy3
    # Numba device arrays cannot hold ml_dtypes' types (they would be void): host arrays then
    device = bool(seed & 1) and dtype in DTYPES[:9]
    ref, got = run_both(k, grid, args, device=device)
    assert_same(ref[1], got[1], what=f"copy {np.dtype(dtype).name} {pad}")
    assert_same(ref[0], got[0], what="input unchanged")


@ct.kernel
def slice_query(a, out, q, start, stop, T: Constant[int]):
    s = a.slice(1, start, stop)
    t = ct.load(s, (ct.bid(0), 0), (T, T), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, (ct.bid(0), 0), t)
    info = ct.full((4,), 0, dtype=ct.int32)
    info = ct.where(ct.arange(4, dtype=ct.int32) == 0, s.shape[0], info)
    info = ct.where(ct.arange(4, dtype=ct.int32) == 1, s.shape[1], info)
    info = ct.where(ct.arange(4, dtype=ct.int32) == 2, a.strides[0], info)
    info = ct.where(ct.arange(4, dtype=ct.int32) == 3, ct.num_blocks(0), info)
    ct.store(q, (ct.bid(0),), info)


@pytest.mark.parametrize("shard", shards())
@settings(max_examples=examples(8))
@given(st.integers(0, 8), st.integers(1, 6), st.integers(0, 2 ** 16))
def test_array_slice_and_queries(shard, start, width, seed):
    rng = np.random.default_rng(seed)
    a = values(rng, (7, 11), np.float32)
    stop = min(start + width, 11)
    out = poison((8, 4), np.float32)
    q = poison((8,), np.int32)
    ref, got = run_both(slice_query, (2,), [a, out, q, start, stop, 4])
    assert_same(ref[1], got[1], what="sliced load")
    assert_same(ref[2], got[2], what="shape/strides/num_blocks")


@ct.kernel
def gather_scatter(a, idx, m, out, b, T: Constant[int], PADV: Constant[float]):
    i = ct.load(idx, (ct.bid(0),), (T,))
    mask = ct.load(m, (ct.bid(0),), (T,))
    g = ct.gather(a, i, mask=mask, padding_value=PADV)
    ct.store(out, (ct.bid(0),), g)
    ct.scatter(b, i, g * 2.0, mask=mask)


@pytest.mark.parametrize("shard", shards())
@settings(max_examples=examples(20))
@given(st.integers(3, 40), st.sampled_from([8, 16, 32]), st.integers(0, 2 ** 16),
       st.sampled_from([np.int32, np.int64, np.uint32, np.int8]), st.booleans())
def test_gather_scatter_oob(shard, n, T, seed, idx_dtype, device):
    rng = np.random.default_rng(seed)
    a = values(rng, (n,), np.float32)
    nblocks = 2
    info = np.iinfo(idx_dtype)
    # unique indices (scatter order between threads is unspecified, R-GS-6), some out of
    # bounds on both sides (negative, and >= n; uint wraps to huge)
    pool = np.arange(max(info.min, -8), min(info.max, n + 8) + 1)
    idx = rng.permutation(pool)[:T * nblocks]
    if idx.size < T * nblocks:
        idx = np.concatenate([idx, np.full(T * nblocks - idx.size, n + 3)])
    idx = idx.astype(idx_dtype)
    m = rng.random(T * nblocks) < 0.8
    out = poison((T * nblocks,), np.float32)
    b = poison((n,), np.float32)
    dup = np.unique(idx[m & (idx.astype(np.int64) >= 0) & (idx.astype(np.int64) < n)],
                    return_counts=True)[1]
    if (dup > 1).any():
        return
    ref, got = run_both(gather_scatter, (nblocks,), [a, idx, m, out, b, T, -1.5], device=device)
    assert_same(ref[3], got[3], what="gather")
    assert_same(ref[4], got[4], what="scatter")


@ct.kernel
def gather2d(a, out, s, T: Constant[int]):
    r = ct.arange(T, dtype=ct.int32)[:, None] - 2
    c = ct.arange(T, dtype=ct.int32)[None, :] * 2 - 1
    g = ct.gather(a, (r + ct.bid(0), c), padding_value=7)
    ct.store(out, (ct.bid(0), 0), g)
    # blocks scatter to disjoint rows of another array: a block reading what another block
    # writes would be a data race (R-EXEC-4; blocks run concurrently on a GPU)
    ct.scatter(s, (r + ct.bid(0) * T, c), g + 1)


def test_gather_scatter_2d_broadcast_indices():
    rng = np.random.default_rng(0)
    a = values(rng, (6, 9), np.int32)
    out = poison((16, 8), np.int32)
    s = poison((12, 9), np.int32)
    ref, got = run_both(gather2d, (2,), [a, out, s, 8])
    assert_same(ref[1], got[1], what="gather 2d")
    assert_same(ref[2], got[2], what="scatter 2d")


@ct.kernel
def scalar_gs(a, z, out, z2):
    v = ct.gather(a, 3)
    w = ct.gather(z, ())
    ct.scatter(out, ct.bid(0), v + w)
    if ct.bid(0) == 0:                         # one writer: no inter-block race (R-EXEC-4)
        ct.scatter(z2, (), w + 1.0)


def test_scalar_gather_scatter_and_rank0():
    a = np.arange(8, dtype=np.float64)
    z = np.array(2.5)
    out = poison((3,), np.float64)
    z2 = poison((), np.float64)
    ref, got = run_both(scalar_gs, (3,), [a, z, out, z2])
    assert_same(ref[2], got[2], what="scalar scatter")
    assert_same(ref[3], got[3], what="rank-0 scatter")


@ct.kernel
def gather_empty(a, out, n, T: Constant[int]):
    s = a.slice(0, n, n)                                  # an empty view at the end
    g = ct.gather(s, ct.arange(T, dtype=ct.int32) - 2, padding_value=4.5)
    ct.store(out, (0,), g)


def test_gather_from_empty_view_reads_nothing():
    a = np.arange(8, dtype=np.float32)
    out = poison((16,), np.float32)
    ref, got = run_both(gather_empty, (1,), [a, out, 8, 16])
    assert_same(ref[1], got[1], what="gather from an empty array")


@ct.kernel
def empty_args(e1, e2, out, T: Constant[int]):
    x = ct.load(e1, (0,), (T,), padding_mode=ct.PaddingMode.ZERO)
    y = ct.load(e2, (0, 0), (T, T), padding_mode=ct.PaddingMode.NEG_INF)
    g = ct.gather(e1, ct.arange(T, dtype=ct.int32), padding_value=1.5)
    ct.store(out, (0,), x + ct.max(y, axis=1) + g)
    ct.store(e2, (0, 0), y)                               # wholly out of bounds: discarded
    ct.scatter(e1, ct.arange(T, dtype=ct.int32), x)       # every index out of bounds


@pytest.mark.parametrize("device", [False, True], ids=["host", "device"])
@pytest.mark.parametrize("shape2", [(0, 8), (4, 0), (0, 0)])
def test_empty_array_arguments(shape2, device):
    """R-LOAD-4/R-PAD-1, R-STORE-3 and R-GS-3 with arrays of extent 0 passed to the kernel:
    loads and gathers read their padding, stores and scatters write nothing.  (On the GPU an
    empty array's parameter points at a one-element buffer, read branch-free by masked-off
    lanes; the simulator stands in for it instead of failing the launch on NumPy's bounds
    check), whether the arrays come from the host or as device arrays."""
    e1 = np.zeros((0,), np.float32)
    e2 = np.zeros(shape2, np.float32)
    out = poison((8,), np.float32)
    ref, got = run_both(empty_args, (1,), [e1, e2, out, 8], device=device)
    assert_same(ref[2], got[2], what="loads from empty arrays")
    assert got[0].shape == (0,) and got[1].shape == shape2

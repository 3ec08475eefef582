"""Interpreter vs Numba backend: atomics with colliding indices across blocks (R-ATOM-1..7),
tiled-view atomics (R-VIEW-7) and RawArrayMemory (§7).

The order of colliding atomics is free (R-ATOM-2), so the comparison is order-free: for every
element, the final value of commutative ops (add/and/or/xor/max/min on integers) is compared
exactly; for every op the old values must chain: the multiset {old values} + {final} equals
{old ∘ update} + {initial} per element (true for every serial order, false for lost or
invented updates).  Float add is compared within a stated bound (one rounding per addition).
"""

from __future__ import annotations

from collections import Counter

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cutile as ct
from cutile import Constant

from .harness import examples, run_both, shards

STEP = {"xchg": lambda c, u: u, "add": lambda c, u: c + u, "max": max, "min": min,
        "and": lambda c, u: c & u, "or": lambda c, u: c | u, "xor": lambda c, u: c ^ u}
FNS = {"xchg": ct.atomic_xchg, "add": ct.atomic_add, "max": ct.atomic_max,
       "min": ct.atomic_min, "and": ct.atomic_and, "or": ct.atomic_or, "xor": ct.atomic_xor}


def _rmw_kernel(fn):
    @ct.kernel
    def k(x, idx, upd, old, T: Constant[int]):
        i = ct.load(idx, (ct.bid(0),), (T,))
        u = ct.load(upd, (ct.bid(0),), (T,))
        ct.store(old, (ct.bid(0),), fn(x, i, u))
    return k


KERNELS = {k: _rmw_kernel(f) for k, f in FNS.items()}


@ct.kernel
def cas_kernel(x, idx, exp, des, old, T: Constant[int]):
    i = ct.load(idx, (ct.bid(0),), (T,))
    e = ct.load(exp, (ct.bid(0),), (T,))
    d = ct.load(des, (ct.bid(0),), (T,))
    ct.store(old, (ct.bid(0),), ct.atomic_cas(x, i, e, d))


def check_chain(kind, x0, x1, idx, upd, old, exp=None):
    """The old values of every element form one serial chain from x0 to x1 (module doc)."""
    n = x0.size
    with np.errstate(over="ignore"):
        for e in range(n):
            ks = [k for k in range(idx.size) if idx[k] == e]
            if kind == "cas":
                new = [upd[k] if old[k].tobytes() == exp[k].tobytes() else old[k] for k in ks]
            else:
                new = [x0.dtype.type(STEP[kind](old[k], upd[k])) for k in ks]
            starts = Counter([old[k].tobytes() for k in ks] + [x1[e].tobytes()])
            ends = Counter([v.tobytes() for v in new] + [x0[e].tobytes()])
            assert starts == ends, f"{kind}: element {e}: old values do not chain " \
                                   f"({x0[e]} -> {x1[e]}, olds {[old[k] for k in ks]})"
    out = (idx < 0) | (idx >= n)
    if exp is None:
        return
    np.testing.assert_array_equal(old[out], exp[out])   # R-ATOM-6: OOB cas returns expected


INT_DTYPES = [np.int32, np.uint32, np.int64, np.uint64]


@st.composite
def rmw_case(draw):
    kind = draw(st.sampled_from(list(FNS) + ["cas"]))
    dtype = draw(st.sampled_from(INT_DTYPES + ([np.float32, np.float64]
                                               if kind in ("xchg", "cas") else [])))
    n = draw(st.integers(1, 9))
    T = draw(st.sampled_from([1, 4, 16]))
    blocks = draw(st.integers(1, 3))
    threads = draw(st.sampled_from([None, 32]))
    seed = draw(st.integers(0, 2**31 - 1))
    return kind, dtype, n, T, blocks, threads, seed


def _values(rng, shape, dtype, small=False):
    if np.dtype(dtype).kind == "f":
        return rng.integers(-3, 3, shape).astype(dtype)     # few values: cas hits often
    info = np.iinfo(dtype)
    if small:
        return rng.integers(0, 3, shape).astype(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


@pytest.mark.parametrize("shard", shards())
@settings(max_examples=examples(20))
@given(case=rmw_case())
def test_rmw_colliding_indices(shard, case):
    kind, dtype, n, T, blocks, threads, seed = case
    rng = np.random.default_rng(seed)
    m = T * blocks
    x = _values(rng, n, dtype, small=kind == "cas")
    idx = rng.integers(-1, n + 1, m).astype(np.int32)        # collisions and out of bounds
    old = np.zeros(m, dtype)
    if kind == "cas":
        exp, des = _values(rng, m, dtype, True), _values(rng, m, dtype)
        ref, got = run_both(cas_kernel, (blocks,), (x, idx, exp, des, old, T), threads=threads)
        check_chain("cas", x, got[0], idx, des, got[4], exp)
        check_chain("cas", x, ref[0], idx, des, ref[4], exp)
        return
    upd = _values(rng, m, dtype)
    ref, got = run_both(KERNELS[kind], (blocks,), (x, idx, upd, old, T), threads=threads)
    if kind != "xchg":                       # commutative: the final values are order-free
        np.testing.assert_array_equal(got[0], ref[0])
    check_chain(kind, x, got[0], idx, upd, got[3])
    check_chain(kind, x, ref[0], idx, upd, ref[3])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16])
def test_float_add_within_bound(dtype):
    """Float add: per element the numba result is within k roundings of the interpreter's
    (k additions: |diff| <= 2 k eps sum|terms|); float16/bfloat16 through atom16.py."""
    rng = np.random.default_rng(11)
    n, T, blocks = 4, 16, 2
    x = rng.standard_normal(n).astype(dtype)
    idx = rng.integers(0, n, T * blocks).astype(np.int32)
    upd = rng.standard_normal(T * blocks).astype(dtype)
    ref, got = run_both(KERNELS["add"], (blocks,), (x, idx, upd, np.zeros(T * blocks, dtype), T))
    eps = float(ml_dtypes.finfo(dtype).eps)
    for e in range(n):
        terms = np.r_[x[e], upd[idx == e]].astype(np.float64)
        bound = 2 * terms.size * eps * np.abs(terms).sum()
        assert abs(float(got[0][e]) - float(ref[0][e])) <= bound
        assert abs(float(ref[0][e]) - terms.sum()) <= bound


@ct.kernel
def view_add(x, u, T0: Constant[int], T1: Constant[int], S0: Constant[int],
             MIX: Constant[bool]):
    v = x.tiled_view((T0, T1), traversal_steps=(S0, T1))
    t = ct.load(u, (ct.bid(0), 0), (T0, T1))
    v.atomic_store_add((ct.bid(0), ct.bid(1)), t)
    if MIX:        # only without overlap: add, max and xor do not commute with each other
        v.atomic_store_max((ct.bid(0), ct.bid(1)), -50)
        v.atomic_store_xor((ct.bid(0), ct.bid(1)), ct.full((T0, T1), 3, ct.int32))


@pytest.mark.parametrize("shape,tile,step,threads", [((6, 10), (4, 8), 2, None),
                                                     ((5, 3), (2, 4), 1, 32),
                                                     ((8, 8), (4, 4), 4, 64)])
def test_view_atomics_overlapping(shape, tile, step, threads):
    """R-VIEW-7: overlapping tiles (steps < tile) from several blocks; ragged edges."""
    rng = np.random.default_rng(2)
    x = rng.integers(-100, 100, shape).astype(np.int32)
    g0 = -(-shape[0] // step)
    g1 = -(-shape[1] // tile[1])
    u = rng.integers(-100, 100, (g0 * tile[0], tile[1])).astype(np.int32)
    ref, got = run_both(view_add, (g0, g1), (x, u, tile[0], tile[1], step, step >= tile[0]),
                        threads=threads)
    np.testing.assert_array_equal(got[0], ref[0])


@ct.kernel
def raw_kernel(x, out, T: Constant[int]):
    r = x.get_raw_memory()
    o = ct.arange(T, dtype=ct.int32)
    ct.store(out, (0,), r.atomic_add_offset(o * 2 % 8, 1, mask=o % 3 != 0))
    ct.store(out, (1,), r.load_offset(o, padding_value=-1, mask=o < 6))
    r.store_offset(o + x.strides[0], o * 10, mask=o < 4)      # row 1


def test_raw_memory():
    """§7: offsets from the base of a (strided, guarded) array view; masks; atomics."""
    x = np.arange(24, dtype=np.int32).reshape(3, 8)
    ref, got = run_both(raw_kernel, (1,), (x, np.zeros(16, np.int32), 8), threads=32)
    np.testing.assert_array_equal(got[0], ref[0])
    check_chain("add", x.ravel()[:8], ref[0].ravel()[:8], np.where(np.arange(8) % 3 != 0,
                np.arange(8) * 2 % 8, -1), np.ones(8, np.int32), ref[1][:8])
    check_chain("add", x.ravel()[:8], got[0].ravel()[:8], np.where(np.arange(8) % 3 != 0,
                np.arange(8) * 2 % 8, -1), np.ones(8, np.int32), got[1][:8])


def _example_outputs(name, executor, **kw):
    """The example's output array (its last array argument) after ``run`` on ``executor``."""
    import importlib
    import os
    import sys

    from cutile.executors import backend
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
    try:
        mod = importlib.import_module(name)
    finally:
        sys.path.pop(0)
    outs = []

    def capture(stream, grid, kernel, args):
        ct.launch(stream, grid, kernel, args)
        outs.append([a for a in args if isinstance(a, np.ndarray)][-1].copy())

    with backend(executor):
        err = mod.run(launch=capture, **kw)
    return err, outs


def test_example_histogram_agrees():
    """examples/histogram.py at simulator size: identical bins on both executors."""
    e1, r = _example_outputs("histogram", "interp", n=300, nbins=8, tile=32)
    e2, g = _example_outputs("histogram", "numba", n=300, nbins=8, tile=32)
    assert e1 == 0 and e2 == 0
    np.testing.assert_array_equal(g[0], r[0])


def test_example_splitk_matmul_agrees():
    """examples/splitk_matmul.py at simulator size: within the float32 summation bound."""
    kw = dict(m=40, n=36, k=128, split=4)
    e1, r = _example_outputs("splitk_matmul", "interp", **kw)
    e2, g = _example_outputs("splitk_matmul", "numba", **kw)
    # 128 products and 4 slice additions per element, |terms| ~ 1: well inside 1e-3
    assert e1 < 1e-3 and e2 < 1e-3
    np.testing.assert_allclose(g[0], r[0], atol=1e-4, rtol=0)


def test_raw_memory_of_fortran_array_refused():
    """The backend decodes raw offsets with the strides in axis order; a Fortran-ordered
    array is refused at launch with TileUnsupportedFeatureError (the interpreter runs it)."""
    from cutile.executors import backend
    a = np.asfortranarray(np.arange(16, dtype=np.int32).reshape(4, 4))
    out = np.zeros(16, np.int32)
    with backend("interp"):                     # the interpreter runs it, whatever the default
        ct.launch(None, (1,), raw_kernel, (a.copy(order="F"), out, 8))
    with backend("numba"), pytest.raises(ct.TileUnsupportedFeatureError,
                                         match=r"RawArrayMemory .*strides decrease"):
        ct.launch(None, (1,), raw_kernel, (a, out, 8))


@ct.kernel
def raw_row(x, out):
    r = x.slice(0, 1, 2).get_raw_memory()            # shape (1, 8): axis 0 has extent 1
    ct.store(out, (0,), r.atomic_xor_offset(ct.arange(8, dtype=ct.int32), 5))


def test_raw_memory_extent_one_axis():
    """§7: a raw offset into a view with an extent-1 axis decodes to index 0 on that axis."""
    x = np.arange(24, dtype=np.int32).reshape(3, 8)
    ref, got = run_both(raw_row, (1,), (x, np.zeros(8, np.int32)))
    np.testing.assert_array_equal(ref[1], x[1])
    np.testing.assert_array_equal(got[0], ref[0])
    np.testing.assert_array_equal(got[1], ref[1])


@ct.kernel
def zero_d_atomics(x, lock, count, last, olds):
    while ct.atomic_cas(lock, (), 0, 1, memory_order=ct.MemoryOrder.ACQUIRE) == 1:
        pass
    ct.scatter(x, (), ct.gather(x, ()) + 1.5)
    ct.atomic_xchg(lock, (), 0, memory_order=ct.MemoryOrder.RELEASE)
    ct.scatter(olds, ct.bid(0), ct.atomic_add(count, (), 1))
    ct.atomic_xchg(last, (), ct.bid(0) * 0.25)


def test_atomics_on_0d_arrays():
    """R-ATOM-1: a 0-D array's index is ``()``; the spin lock of NVIDIA's test_token_order
    (cas ACQUIRE / xchg RELEASE), add returning the old value and float xchg, from 6 blocks.
    The blocks' order is free (R-ATOM-2): the old values of ``count`` are compared as a set."""
    args = (np.array(2.0, np.float32), np.array(0, np.int32), np.array(10, np.int64),
            np.array(-1.0, np.float32), np.zeros(6, np.int64))
    ref, got = run_both(zero_d_atomics, (6,), args)
    for r in (ref, got):
        assert r[0] == 2.0 + 6 * 1.5 and r[1] == 0 and r[2] == 16
        assert sorted(r[4]) == list(range(10, 16)) and r[3] in np.arange(6) * 0.25

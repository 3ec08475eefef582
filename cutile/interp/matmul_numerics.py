"""Matrix-multiply numerics (R-MM-2/3): ``matmul``'s documented definition (exact products,
summed in float64 in k order, plus acc, rounded once) and the fast paths that provably give
its bits (BLAS plus an error bound; lanes the bound cannot decide are summed by the
definition).  ``numerics`` re-exports ``matmul``."""

from __future__ import annotations

import math
import sys
import threading
import weakref

import numpy as np

from .. import dtypes as dt
from ..semantics.buffers import bits
from ..semantics.matmul import f16_acc_chunk
from .rounding import F64, round_from_f64

_U = 2.0 ** -53  # unit roundoff of float64


def _sequential_dot(a64: np.ndarray, b64: np.ndarray) -> np.ndarray:
    """sum_k a[..., :, k] * b[..., k, :] in float64, k ascending from +0.0 (the definition)."""
    xk = np.moveaxis(a64, -1, 0)[..., :, None]
    yk = np.moveaxis(b64, -2, 0)[..., None, :]
    out_shape = np.broadcast_shapes(xk.shape[1:], yk.shape[1:])
    s = np.zeros(out_shape, F64)
    tmp = np.empty(out_shape, F64)
    for k in range(xk.shape[0]):
        np.multiply(xk[k], yk[k], out=tmp)
        np.add(s, tmp, out=s)
    return s


def _sequential_at(a64: np.ndarray, b64: np.ndarray, idx: tuple) -> np.ndarray:
    """The definition's sum for the output elements ``idx`` only (index arrays batch..., i, j).

    ``add.accumulate`` is the sequential recurrence s_k = s_(k-1) + p_k; adding +0.0 at the
    end gives the sign of zero of a sum started from +0.0."""
    rows = a64[idx[:-1]]                                   # (n, K)
    cols = np.swapaxes(b64, -1, -2)[idx[:-2] + idx[-1:]]   # (n, K)
    return _sequential_rows(rows, cols)


def _sequential_rows(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """The definition's sum of ``rows[i] * cols[i]`` (both (n, K) float64) for each i."""
    return np.add.accumulate(rows * cols, axis=-1)[:, -1] + 0.0


def _lsb_exponents(v: np.ndarray) -> np.ndarray:
    """Exponent of the lowest set significand bit of each float64 (2**20 for zero)."""
    m, e = np.frexp(v)
    sig = np.abs(m * 2.0 ** 53).astype(np.int64)
    low = np.frexp((sig & -sig).astype(F64))[1] - 1
    return np.where(v == 0, 1 << 20, e.astype(np.int64) - 53 + low)


def _exact_blas(a64: np.ndarray, b64: np.ndarray) -> np.ndarray | None:
    """The sequential float64 dot products via BLAS when they are provably exact, else None.

    If every product and every partial sum is an integer multiple of 2**L (L = the sum of the
    operands' smallest set-bit exponents) and bounded by (|a| @ |b|) < 2**(L+53), then no
    addition rounds, in any order: BLAS returns the same bits as the sequential loop (+0.0 is
    added because the loop starts from +0.0, which turns an all-(-0) sum into +0).
    """
    if not (np.isfinite(a64).all() and np.isfinite(b64).all()):
        return None
    la, lb = int(_lsb_exponents(a64).min(initial=1 << 20)), int(
        _lsb_exponents(b64).min(initial=1 << 20))
    if la >= 1 << 20 or lb >= 1 << 20:
        return np.matmul(a64, b64) + 0.0
    if la + lb < -1074:
        return None
    bound = float(np.matmul(np.abs(a64), np.abs(b64)).max()) * (1 + 2.0 ** -30)
    if not bound < np.ldexp(1.0, la + lb + 53):
        return None
    return np.matmul(a64, b64) + 0.0


def _round_acc(v: np.ndarray, acc_dtype: dt.DType) -> np.ndarray:
    """float64 -> float32/float16 accumulator, one round-to-nearest-even (NumPy's casts to
    float32 and float16 are correctly rounded from float64, unlike ml_dtypes' bfloat16)."""
    if acc_dtype in (dt.float32, dt.float16):
        return v.astype(acc_dtype.np_dtype)
    return round_from_f64(v, None, acc_dtype)


_SCRATCH = threading.local()
_SCRATCH_MAX = 1 << 23          # bytes: larger temporaries are allocated per call


def _scratch(slot: int, shape: tuple, dtype) -> np.ndarray:
    """A per-thread temporary reused across calls (an interpreter loop calls ``matmul`` with
    the same shapes every iteration; fresh multi-megabyte arrays cost page faults each time).
    Its contents are garbage; it must not escape the caller."""
    dtype = np.dtype(dtype)
    if math.prod(shape) * dtype.itemsize > _SCRATCH_MAX:
        return np.empty(shape, dtype)
    bufs = getattr(_SCRATCH, "bufs", None)
    if bufs is None:
        bufs = _SCRATCH.bufs = {}
    x = bufs.get(slot)
    if x is None or x.shape != shape or x.dtype != dtype:
        x = bufs[slot] = np.empty(shape, dtype)
    return x


def _recycled(shape: tuple, dtype) -> np.ndarray:
    """A fresh-looking result array (contents garbage) that may reuse the memory of an
    earlier result nothing refers to any more.

    Why: an interpreter loop's ``acc = mma(a, b, acc)`` makes one megabyte-sized result per
    iteration; where the allocator hands out new pages each time, their page faults cost as
    much as a pass over the data.  Exact reuse test: the pool's array is returned only when
    its reference count is the pool's own (every holder - a tile, a view through ``.base``,
    a buffer export - counts one), so no one can observe the reuse."""
    dtype = np.dtype(dtype)
    if math.prod(shape) * dtype.itemsize > _SCRATCH_MAX:
        return np.empty(shape, dtype)
    pool = getattr(_SCRATCH, "pool", None)
    if pool is None:
        pool = _SCRATCH.pool = []
    for i in range(len(pool)):
        if sys.getrefcount(pool[i]) <= _UNREFERENCED:
            x = pool[i]
            if x.shape == shape and x.dtype == dtype:
                _bounds().pop(id(x), None)
                return x
    x = np.empty(shape, dtype)
    pool.append(x)
    if len(pool) > _POOL_MAX:
        del pool[0]
    return x


_POOL_MAX = 4


def _unreferenced_count() -> int:
    """``sys.getrefcount(pool[i])`` of an array only the pool holds, as ``_recycled`` calls
    it (measured, not assumed: interpreters differ in what they count)."""
    pool = [np.empty(1)]
    for i in range(1):
        return sys.getrefcount(pool[i])
    raise AssertionError


_UNREFERENCED = _unreferenced_count()


_BOUNDS_MAX = 16


def _bounds() -> dict:
    """This thread's |value| bounds of results this module made: id -> (weak reference,
    bound).  A later ``matmul`` whose acc is one of them (``acc = mma(a, b, acc)``) takes the
    bound instead of a pass over acc."""
    b = getattr(_SCRATCH, "bounds", None)
    if b is None:
        b = _SCRATCH.bounds = {}
    return b


def _note_bound(v: np.ndarray, bound: float) -> None:
    """Remember that every |v| <= ``bound`` (finite, below the dtype's largest value).  ``v``
    is a result this module is returning: nothing writes a tile after it is made (rules never
    write their operands), and ``_recycled`` forgets the note before it reuses ``v``."""
    if not bound < float(np.finfo(v.dtype).max):
        return
    b = _bounds()
    if len(b) >= _BOUNDS_MAX:
        b.clear()
    b[id(v)] = (weakref.ref(v), bound)


def _acc_absmax(c: np.ndarray) -> float:
    """max |c|, or a bound of it noted by ``_note_bound`` when ``c`` is that very array (its
    weak reference resolves to ``c``: an id reused by another array does not match)."""
    got = _bounds().get(id(c))
    if got is not None and got[0]() is c:
        return got[1]
    return _absmax(c, c)


def _absmax(v: np.ndarray, v64: np.ndarray) -> float:
    """max |v| (0 for an empty array; NaN if v holds a NaN), from ``v`` itself where NumPy
    reduces its dtype natively (float32, float64), else from its float64 copy ``v64``."""
    if v.dtype not in (np.float32, np.float64):
        v = v64
    return float(np.maximum(v.max(initial=0), -v.min(initial=0)))


def _one_bound_applies(in_dtype: np.dtype, k: int, acc_dtype: dt.DType) -> bool:
    """Whether one error bound per call (``_bound_matmul``) may decide the product: narrow
    float inputs into a float32 accumulator, or into a float16 one when K is one tensor-core
    chunk (longer K rounds per chunk: ``_f16_acc_matmul``)."""
    return (in_dtype.kind not in "iu" and in_dtype != np.float64
            and acc_dtype in (dt.float32, dt.float16)
            and (acc_dtype is dt.float32 or k <= f16_acc_chunk(in_dtype.itemsize)))


def _one_bound(k: int, amax: float, bmax: float, cmax: float) -> float:
    """E of ``_certified_round`` for a product with K = ``k``, |x| <= amax, |y| <= bmax,
    |acc| <= cmax: 4 (2K + 8) u T with T = K amax bmax + cmax, about twice what its proof
    needs (|BLAS sum + acc - definition's sum + acc| is below (2K + 3) u T)."""
    return 4.0 * (2 * k + 8) * _U * (k * amax * bmax + cmax) * (1 + 2.0 ** -20)


def _certified_bound(k: int, amax: float, bmax: float, cmax: float,
                     acc_dtype: dt.DType) -> float:
    """E of ``_certified_round``: ``_one_bound``, at least 2**-147 for a float32 accumulator
    (why there); a larger E keeps every inequality of its proof."""
    big = _one_bound(k, amax, bmax, cmax)
    return max(big, 2.0 ** -147) if acc_dtype is dt.float32 else big


def _bound_matmul(a, b, c, acc_dtype: dt.DType) -> np.ndarray | None:
    """The definition for narrow float inputs (all finite) and a float32/float16 accumulator,
    with one error bound for the whole call instead of one per element (``_one_bound``,
    ``_certified_round``).  None when that bound is 0 or not finite (the caller's general
    path decides)."""
    k = a.shape[-1]
    a64, b64 = _scratch(0, a.shape, F64), _scratch(1, b.shape, F64)
    np.copyto(a64, a)
    np.copyto(b64, b)
    amax, bmax, cmax = _absmax(a, a64), _absmax(b, b64), _acc_absmax(c)
    big = _certified_bound(k, amax, bmax, cmax, acc_dtype)
    if not (big > 0 and np.isfinite(big)):      # NaN (a NaN or inf operand) included
        return None
    r = np.matmul(a64, b64, out=_scratch(2, c.shape, F64))
    return _certified_round(r, c, big, k * amax * bmax + cmax, acc_dtype,
                            lambda idx: _sequential_at(a64, b64, idx))


def _few_true(flags: np.ndarray, limit: int) -> np.ndarray | None:
    """Positions of the True entries of the 1-D bool ``flags``, or None when more than
    ``limit``.  A few (the usual near ties) are found by ``argmax`` from the last one on
    (it stops at the first True: one scan in all, several times faster than
    ``flatnonzero``)."""
    found, start, n = [], 0, len(flags)
    while start < n:
        k = start + int(flags[start:].argmax())
        if not flags[k]:
            break
        if len(found) == 8:
            found = np.flatnonzero(flags)
            return None if len(found) > limit else found
        found.append(k)
        start = k + 1
    return np.array(found, np.intp)


def _certified_round(r, c, big: float, total: float, acc_dtype: dt.DType,
                     seq, shifted: bool = False) -> np.ndarray | None:
    """The definition's result from BLAS sums ``r`` (float64, overwritten), acc ``c``
    (float32/float16) and E = ``big`` (``_one_bound``); the few lanes E cannot decide get
    ``seq(idx)`` (the definition's sums of the lanes ``idx``) + c, rounded once.  None when
    many lanes are near ties (the per-element bound of the general path is cheaper then).
    ``total`` = K amax bmax + cmax bounds the result's values (noted for the next call).

    Proof.  Let D = fl(s + c) be the definition's float64 value before its one rounding
    (s its sequential sum) and t = fl(r + c) ours, T = ``total``.  Every product is exact
    in float64 and |product| <= amax bmax; BLAS and the definition each sum the same K
    products in some order, within gamma(K) K amax bmax of the exact sum (any summation
    tree), so |t - D| <= 2 gamma(K) K amax bmax + 2u (T + ...) <= (2K + 3) u T, and
    |t| <= 2T.  (Products are exact, and a float64 sum or difference is within u of its
    exact value relative to it, underflow or not.)  ``_one_bound`` makes
    E >= 4 (2K + 8) u T, so
        |t - D| + u (|t| + E) <= (2K + 5) u T + u E < E / 2.
    In place (three float64 operations, each correctly rounded):
        x = fl(t - E):  t - E < D, and D is a float64, so x <= D (rounding is monotone);
        y = fl(x + 2E): x >= t - E - u (|t| + E), so x + 2E > D and y >= D.
    Rounding to the accumulator is monotone, so lo = rnd(x) <= rnd(D) <= rnd(y) = hi:
    where lo and hi have the same bits, lo is the definition's result.
    ``shifted``: BLAS summed -E with the products (one more term, 1 * -E, exact), so
    x = fl(r + c) at once.  Its sum is within gamma(K) (P + E) of the exact one (P = K amax
    bmax), so |x - (D - E)| <= (2K + 3) u T + (K + 2) u E < E / 2 as above: x < D and
    x + 2E > D + E / 2, and the rest holds unchanged.
    For a float32 accumulator E >= 2**-147 (``_certified_bound``), so lo == hi as values
    is the bit test: no NaN occurs (|t| <= 2T is finite),
    and lo = -0 would put x in [-2**-150, -0], so y >= x + 2E (rounded, and 2**-149 is a
    float64) >= 2**-149, a nonzero hi (hi = -0 would need y <= 0 < x + 2E)."""
    nd = acc_dtype.np_dtype
    values = nd == np.float32
    c64 = _scratch(8, r.shape, F64)
    np.copyto(c64, c)                   # c (float32/float16) widens exactly
    np.add(r, c64, out=r)
    if not shifted:
        np.subtract(r, big, out=r)
    lo = _recycled(r.shape, nd)
    np.copyto(lo, r, casting="same_kind")
    np.add(r, 2 * big, out=r)
    hi = _scratch(3, r.shape, nd)
    np.copyto(hi, r, casting="same_kind")
    w = nd if values else f"u{nd.itemsize}"
    todo = np.not_equal(lo.view(w), hi.view(w), out=_scratch(4, r.shape, np.bool_))
    flat = _few_true(todo.reshape(-1), todo.size // 16)
    if flat is None:
        return None                     # many near ties: the per-element bound is cheaper
    if len(flat):
        idx = np.unravel_index(flat, r.shape)
        lo[idx] = _round_acc(seq(idx) + c[idx].astype(F64), acc_dtype)
    # |D| <= T (1 + (K+2) u) and one rounding to float16/float32 adds at most 2**-11:
    _note_bound(lo, total * (1 + 2.0 ** -10))
    return lo


def matmul_factored(xs, ix, ys, iy, acc, acc_dtype: dt.DType) -> np.ndarray | None:
    """``matmul(xs[ix], ys[iy], acc, acc_dtype)``, the same bits, for a batch of products
    whose operands repeat: product j is ``xs[ix[j]] @ ys[iy[j]] + acc[j]`` with xs (U, M, K),
    ys (V, K, N), acc (n, M, N).  None where this path does not apply (the caller then
    multiplies the gathered operands with ``matmul``): integer or float64 inputs, a float16
    accumulator beyond one chunk, more pairs U*V than products, a non-finite operand, many
    near ties.

    Why: the blocks of a batch share tiles (a matmul grid's A tile depends only on the
    block's row of C, its B tile only on its column), and one GEMM of all U*V pairs costs
    what n small ones do in flops, at about twice their speed.  When product j is pair
    (ix, iy) = (j % U, j // U) (bid(0) picks the row), that GEMM,
    (U*M, K) times each ys[v], writes the products in batch order; otherwise they are
    gathered from it.

    Exact by ``_bound_matmul``'s argument: each lane sums the same K exact products as
    ``matmul`` of the gathered operands would (only the BLAS call that sums them differs),
    and the bound holds for every order of summing them; max |x| and |y| are taken over the
    distinct tiles, a superset of those used, which only enlarges the bound; lanes it cannot
    decide are summed by the definition."""
    n = len(ix)
    u, m, k = xs.shape
    v, _, nn = ys.shape
    if u * v > n or not _one_bound_applies(xs.dtype, k, acc_dtype):
        return None
    with np.errstate(all="ignore"):
        # One more K column: x's ones times y's -E (``_certified_round``, ``shifted``).
        xw = _scratch(5, (u * m, k + 1), F64)
        x64 = xw[:, :k]
        np.copyto(x64.reshape(u, m, k), xs)
        yw = _scratch(6, (v, k + 1, nn), F64)
        y64 = yw[:, :k]
        np.copyto(y64, ys)
        amax, bmax, cmax = _absmax(xs, x64), _absmax(ys, y64), _acc_absmax(acc)
        big = _certified_bound(k, amax, bmax, cmax, acc_dtype)
        if not (big > 0 and np.isfinite(big)):
            return None
        xw[:, k] = 1.0
        yw[:, k] = -big
        r = _scratch(2, (n, m, nn), F64)
        j = np.arange(n)
        if u * v == n and (ix == j % u).all() and (iy == j // u).all():
            np.matmul(xw, yw, out=r.reshape(v, u * m, nn))
        else:
            pairs = np.matmul(xw, yw, out=_scratch(7, (v, u * m, nn), F64))
            np.copyto(r, pairs.reshape(v, u, m, nn)[iy, ix])
        rows = x64.reshape(u, m, k)
        return _certified_round(
            r, acc, big, k * amax * bmax + cmax, acc_dtype,
            lambda idx: _sequential_rows(rows[ix[idx[0]], idx[1]], y64[iy[idx[0]], :, idx[2]]),
            shifted=True)


def _narrow_matmul(a64, b64, c64, acc_dtype: dt.DType) -> np.ndarray:
    """The definition for non-float64 inputs, fast: products are exact in float64, so any
    summation order (BLAS's) lies within err = (2K+8) u (|a|@|b| + |acc| + |r|) of the
    sequential sum r_seq.  Where r - err and r + err round to the same acc value, that value
    is round(r_seq); the rest (ties, near-ties, non-finite rows/columns) are summed
    sequentially."""
    k = a64.shape[-1]
    fa, fb = np.isfinite(a64), np.isfinite(b64)
    bad_a, bad_b = ~fa.all(axis=-1), ~fb.all(axis=-2)       # rows / columns with inf, NaN
    if bad_a.any() or bad_b.any():
        a64f, b64f = np.where(fa, a64, 0.0), np.where(fb, b64, 0.0)
    else:
        a64f, b64f = a64, b64
    m = np.matmul(a64f, b64f)
    r = (m + 0.0) + c64
    res = _round_acc(r, acc_dtype)
    # |a| @ |b| is the same product when no operand is negative (only zero signs differ,
    # which the bound ignores): skip the second matmul then.
    nonneg = not (a64f < 0).any() and not (b64f < 0).any()
    t = m if nonneg else np.matmul(np.abs(a64f), np.abs(b64f))
    err = (2 * k + 8) * _U * (t + np.abs(c64) + np.abs(r))
    todo = np.isfinite(r) & (bits(_round_acc(r - err, acc_dtype))
                             != bits(_round_acc(r + err, acc_dtype)))
    todo = todo | bad_a[..., :, None] | bad_b[..., None, :]
    if todo.any():
        idx = np.nonzero(np.broadcast_to(todo, r.shape))
        res[idx] = _round_acc(_sequential_at(a64, b64, idx) + c64[idx], acc_dtype)
    return res


def _f16_acc_matmul(a64, b64, c64, chunk: int) -> np.ndarray:
    """A float16 accumulator, as the GPU's tensor cores update it: K is consumed in chunks
    of ``chunk``; each chunk's dot product is formed exactly and added to the accumulator with
    one rounding to float16.  On an H100 this reproduced cuda.tile 1.7's f16-accumulator mma
    bit for bit on 99.9 % of elements (docs/decisions.md); one rounding for the whole K does
    not (73 %)."""
    acc = c64
    k = a64.shape[-1]
    out = None
    for k0 in range(0, k, chunk):
        out = _narrow_matmul(a64[..., k0:k0 + chunk], b64[..., k0:k0 + chunk, :], acc,
                             dt.float16)
        acc = out.astype(F64)
    return np.asarray(out, np.float16)


def matmul(x, y, acc, acc_dtype: dt.DType) -> np.ndarray:
    """``x @ y + acc`` for (...,M,K) @ (...,K,N), acc (...,M,N) of ``acc_dtype`` (R-MM-2/3).

    Definition (float inputs): every product is formed in float64 (exact for all formats
    narrower than float64) and summed in float64 in sequential k order (k = 0, 1, ..., K-1,
    starting from +0.0); then acc is added in float64 and the result is rounded ONCE to
    acc_dtype (round-to-nearest-even).  float64 inputs therefore accumulate sequentially in
    float64 (products and sums rounded).  Narrower inputs use BLAS plus a rigorous error bound
    to get the same bits fast (_narrow_matmul); float64 uses BLAS only where it provably gives
    the same bits (_exact_blas).  int8/uint8 inputs: exact products summed exactly (float64
    BLAS is exact for |sum| < 2**53), plus acc, wrapped to int32.
    """
    a, b, c = np.asarray(x), np.asarray(y), np.asarray(acc)
    if c.dtype != acc_dtype.np_dtype:
        raise TypeError(f"acc has dtype {c.dtype}, expected {acc_dtype.name}")
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"matmul shapes {a.shape} and {b.shape} do not match")
    batch = c.shape[:-2]
    if a.shape[:-2] != batch:
        a = np.broadcast_to(a, batch + a.shape[-2:])
    if b.shape[:-2] != batch:
        b = np.broadcast_to(b, batch + b.shape[-2:])
    if a.dtype.kind in "iu":
        s = np.matmul(a.astype(F64), b.astype(F64)).astype(np.int64)
        with np.errstate(over="ignore"):
            return np.asarray((s + c.astype(np.int64)).astype(acc_dtype.np_dtype))
    with np.errstate(all="ignore"):
        if _one_bound_applies(a.dtype, a.shape[-1], acc_dtype):
            r = _bound_matmul(a, b, c, acc_dtype)
            if r is not None:
                return r
        a64, b64, c64 = a.astype(F64), b.astype(F64), c.astype(F64)
        if acc_dtype is dt.float16:
            return _f16_acc_matmul(a64, b64, c64, f16_acc_chunk(a.dtype.itemsize))
        if a.dtype != np.float64:
            return np.asarray(_narrow_matmul(a64, b64, c64, acc_dtype), acc_dtype.np_dtype)
        s = _exact_blas(a64, b64)
        if s is None:
            s = _sequential_dot(a64, b64)
        return np.asarray(s + c64, dtype=acc_dtype.np_dtype)

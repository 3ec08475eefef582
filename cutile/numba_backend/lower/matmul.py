"""Lowering of ``Mma``: the seeds' shared-memory tiled matmul, register-blocked (float16 and
bfloat16 operands with a float32 accumulator take the tensor cores on a GPU: ``matmul_tc.py``;
float32 ones the vectorised FFMA schedule of ``ffma.py`` / ``matmul_ffma.py`` on a GPU).

The IR's K loop (``for k: acc = mma(load(A, k), load(B, k), acc)``) is the seed's phase loop:
the two loads are the collaborative, coalesced global loads (each with its own bounds check;
partial K tiles read the padding the kernel asked for, ZERO in matmuls), and ``Mma`` stages
the tiles in shared memory — A transposed as ``As[k][m]`` with a one-element row pad (no bank
conflicts on the transposing write), B as ``Bs[k][n]`` — then one barrier (read-after-write),
then every thread updates its own register sub-tile of the accumulator (blocked layout:
rows ``ty + i*TY``, columns ``tx + j*TX``), loading one A value per row and one B value per
column per k step.  The write-after-read barrier before the next iteration's staging is
placed by the barrier tracker (the loop's back edge carries the pending reads).

Accumulation (``CUTILE_NUMBA_MMA_ACC``):

- ``f32`` (default, the GPU fast path): float inputs accumulate into the float32 accumulator
  with ``fmaf``, k in order, starting from ``acc``.  Not bit-identical to the interpreter
  (which sums exact products in float64 and rounds once): the difference is bounded by
  ``K * 2**-23 * sum_k |x_ik * y_kj|`` (+ the final rounding), see docs/backend.md.
- ``exact``: every product is exact in float64 (f16/f32/tf32 inputs), the sum runs in
  float64 in k order from +0.0 and ``acc`` is added last, then one rounding: bit-identical to
  the interpreter.  float64 and integer inputs always take this path (it is exact there too).
"""

from __future__ import annotations

from ... import dtypes as dt
from ...errors import TileUnsupportedFeatureError
from ...ir import ops
from ...semantics.matmul import f16_acc_chunk
from ..exprs import cast
from ..ffma import UNROLL_BUDGET
from ..registry import lower
from .matmul_tc import mma_tc

_FLOAT_IN = (dt.float16, dt.bfloat16, dt.float32, dt.tfloat32, dt.float64, dt.float8_e4m3fn,
             dt.float8_e5m2)


def _check(op):
    xd, yd, ad = op.x.type.dtype, op.y.type.dtype, op.acc.type.dtype
    ok_in = xd in _FLOAT_IN + (dt.int8, dt.uint8) and yd in _FLOAT_IN + (dt.int8, dt.uint8)
    if not ok_in or ad not in (dt.float16, dt.float32, dt.float64, dt.int32):
        raise TileUnsupportedFeatureError(
            f"op Mma with {xd.name} x {yd.name} -> {ad.name} is not supported by the numba "
            "backend")


@lower(ops.Mma)
def mma(g, op):
    _check(op)
    plan = g.mma.staging_plan(op)     # tensor cores, or ffma.py's vectorised FFMA
    if plan is not None:
        mma_tc(g, op, plan)
        return
    x, y, acc = op.x, op.y, op.acc
    xs, ys = x.type.shape, y.type.shape
    batched = len(xs) == 3
    M, K, N = xs[-2], xs[-1], ys[-1]
    nb = xs[0] if batched else 1
    xd, ad = x.type.dtype, acc.type.dtype
    out = g.natural(op.result)
    acc_regs = g.get(acc, out)
    lda = M + 1
    bufa, bufb = _stage(g, op, batched, nb, K, lda, N)
    abase, bbase, pairs = _subtile_bases(g, out, batched, K, lda, N)
    kind, acc_names, bases, chunk = _accumulators(g, out, acc_regs, xd, ad, K)
    _k_steps(g, _Dot(kind, xd, bufa, bufb, abase, bbase, pairs, acc_names, bases, chunk),
             K, lda, N, out.nregs)
    g.define(op.result, out, _results(kind, ad, acc_names, acc_regs, bases))
    g.smem_did_read(bufa)
    g.smem_did_read(bufb)


def _stage(g, op, batched: bool, nb: int, K: int, lda: int, N: int) -> tuple[str, str]:
    """Stage A (transposed, rows padded to ``lda``) and B in shared memory; one barrier."""
    x, y = op.x, op.y
    site = ("mma", id(op))
    bufa = g.buffer(site, 0, x.type.dtype, nb * K * lda)
    bufb = g.buffer(site, 1, y.type.dtype, nb * K * N)
    g.smem_before_write(bufa, bufb)
    for v, buf, w in ((x, bufa, ((K * lda,) if batched else ()) + (1, lda)),
                      (y, bufb, ((K * N,) if batched else ()) + (N, 1))):
        tv = g.tv(v)
        lay = tv.layout if tv.layout is not None else g.natural(v)
        g.smem_write(buf, lay, g.get(v, lay), v.type.dtype, w)
    g.smem_sync()
    return bufa, bufb


def _subtile_bases(g, out, batched: bool, K: int, lda: int, N: int):
    """The thread's register sub-tile: one base offset into As per row and into Bs per column
    (``abase``/``bbase``: offset expression -> variable), and per accumulator register the
    (row base, column base) pair it multiplies."""
    abase, bbase, pairs = {}, {}, []
    for k in range(out.nregs):
        c = g.coords(out, k)
        b = c[0] if batched else "0"
        m, n = c[-2], c[-1]
        ea = m if b == "0" else f"{b} * {K * lda} + {m}"
        eb = n if b == "0" else f"{b} * {K * N} + {n}"
        if ea not in abase:
            abase[ea] = g.tmp("ra")
        if eb not in bbase:
            bbase[eb] = g.tmp("rb")
        pairs.append((abase[ea], bbase[eb]))
    for e, name in list(abase.items()) + list(bbase.items()):
        g.line(f"{name} = {e}")
    return abase, bbase, pairs


def _accumulators(g, out, acc_regs: list, xd, ad, K: int):
    """(kind, accumulator names, float16 chunk bases, chunk): ``kind`` is how products sum
    ("f32", "f64" exact, "int"); the accumulators start from ``acc`` (f32) or zero."""
    exact = g.mma_acc == "exact" or xd is dt.float64 or not xd.is_float
    acc_names = [g.tmp("acc") for _ in range(out.nregs)]
    if not xd.is_float:
        kind, zero = "int", "i64(0)"
    elif exact:
        kind, zero = "f64", "f64(0.0)"
    else:
        kind = "f32"
    for n_, a in zip(acc_names, acc_regs):
        if kind == "f32":
            g.line(f"{n_} = {a if ad is dt.float32 else f'f32({a})'}")
        else:
            g.line(f"{n_} = {zero}")
    # A float16 accumulator in exact mode rounds once per K chunk, as the interpreter (and the
    # tensor cores) do: base = f16(chunk's exact dot + base), chunk by chunk.
    chunk = f16_acc_chunk(xd.bitwidth // 8) if kind == "f64" and ad is dt.float16 else 0
    bases = []
    if chunk and K > chunk:
        for a in acc_regs:
            bases.append(g.tmp("base"))
            g.line(f"{bases[-1]} = f64({a})")
    return kind, acc_names, bases, chunk


class _Dot:
    """The state of one register-blocked dot: the staged buffers, the sub-tile's bases, the
    accumulators' current names (``acc``, updated per step) and the names a k loop carries."""

    def __init__(self, kind, xd, bufa, bufb, abase, bbase, pairs, acc_names, bases, chunk):
        self.kind, self.xd, self.bufa, self.bufb = kind, xd, bufa, bufb
        self.abase, self.bbase, self.pairs = abase, bbase, pairs
        self.acc = acc_names
        self.carried = list(acc_names)
        self.bases, self.chunk = bases, chunk

    def fx(self, v):           # operand as the type the products are formed in
        if self.kind == "int":
            return f"i64({v})"
        if self.kind == "f64":
            return f"f64({v})" if self.xd is not dt.float64 else v
        return v if self.xd in (dt.float32, dt.tfloat32, dt.bfloat16) or self.xd.is_restricted \
            else f"f32({v})"

    def step(self, g, a_off: str, b_off: str, ssa: bool):
        """One k: load the row and column values, one multiply-add per accumulator."""
        av, bv = {}, {}
        for name in self.abase.values():
            t = g.tmp("xa")
            g.line(f"{t} = {self.fx(f'{self.bufa}[{_plus(name, a_off)}]')}")
            av[name] = t
        for name in self.bbase.values():
            t = g.tmp("xb")
            g.line(f"{t} = {self.fx(f'{self.bufb}[{_plus(name, b_off)}]')}")
            bv[name] = t
        for i, (pa, pb) in enumerate(self.pairs):
            a, b = av[pa], bv[pb]
            n_ = self.acc[i]
            # unrolled: a fresh name per step (single assignment keeps Numba's compile fast)
            t = g.tmp("acc") if ssa else self.carried[i]
            if self.kind == "f32":
                g.line(f"{t} = libdevice.fmaf({a}, {b}, {n_})")
            elif self.kind == "f64" and self.xd is dt.float64:
                g.line(f"{t} = {n_} + libdevice.dmul_rn({a}, {b})")
            else:     # exact products: a contraction into an FMA changes nothing
                g.line(f"{t} = {n_} + {a} * {b}")
            self.acc[i] = t

    def chunk_end(self, g, loop_tail: bool):
        """Round a float16 accumulator's chunk into its base (exact mode)."""
        for i, base in enumerate(self.bases):
            g.line(f"{base} = f64(f16({self.acc[i]} + {base}))")
            if loop_tail:
                g.line(f"{self.carried[i]} = f64(0.0)")
                self.acc[i] = self.carried[i]
            else:
                self.acc[i] = "f64(0.0)"


def _plus(base, off):
    return base if off == "0" else f"{base} + {off}"


def _k_steps(g, d: _Dot, K: int, lda: int, N: int, nregs: int) -> None:
    """The K steps, unrolled when they fit ``UNROLL_BUDGET``, else a loop unrolled by a
    divisor of K (float16 chunk ends at compile-time positions)."""
    bases, chunk = d.bases, d.chunk
    per_k = len(d.abase) + len(d.bbase) + nregs
    if per_k * K <= UNROLL_BUDGET:
        for kk in range(K):
            d.step(g, str(kk * lda), str(kk * N), True)
            if bases and (kk + 1) % chunk == 0 and kk + 1 < K:
                d.chunk_end(g, False)
        return
    # A k loop unrolled UNROLL times: Numba's compile time grows quadratically with the
    # size of a basic block, NVVM keeps the accumulators in registers either way.
    u = max(1, min(K, UNROLL_BUDGET // max(per_k, 1)))
    while K % u:
        u -= 1
    if bases:
        u = max(u - u % chunk, chunk)        # chunk ends at compile-time positions
    kv = g.tmp("k")
    g.line(f"for {kv} in range(0, {K}, {u}):")
    with g.e.indent():
        for j in range(u):
            d.step(g, f"({kv} + {j}) * {lda}" if j else f"{kv} * {lda}",
                   f"({kv} + {j}) * {N}" if j else f"{kv} * {N}", j < u - 1)
            if bases and (j + 1) % chunk == 0:
                d.chunk_end(g, j == u - 1)


def _results(kind: str, ad, acc_names: list, acc_regs: list, bases: list) -> list:
    """The result registers: the accumulators (plus ``acc`` in the exact and integer modes,
    added last), in the accumulator's dtype."""
    c = cast(ad)
    res = []
    for i, (n_, a) in enumerate(zip(acc_names, acc_regs)):
        if kind == "f32":
            res.append(n_ if ad is dt.float32 else f"{c}({n_})")
        elif kind == "int":
            res.append(f"i32({n_} + i64({a}))")
        elif ad is dt.float64:
            res.append(f"{n_} + {a}")
        elif bases:
            res.append(f"{c}({n_} + {bases[i]})")
        else:
            res.append(f"{c}({n_} + f64({a}))")
    return res


@lower(ops.MmaScaled)
def mma_scaled(g, op):
    """R-MM-6 needs the block-scaled MMA of sm_100+ (Blackwell); the H100 (sm_90) and older
    have none and this backend has no software lowering: refuse clearly."""
    raise TileUnsupportedFeatureError(
        "mma_scaled is not supported by the numba backend: block-scaled MMA needs an sm_100+ "
        "(Blackwell) GPU and the backend has no software lowering; run this kernel on the "
        "interpreter (cutile.set_backend('interp')), which computes it exactly")

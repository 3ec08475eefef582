"""Lowering of global-memory ops.  Every global access has its own bounds check (seed 001:
loads, stores, gathers and scatters each test their own indices): out-of-bounds loads take the
padding value, out-of-bounds stores and scatters are skipped, so a generated kernel never
touches memory outside its arrays, whatever ``check_bounds`` says.  A tile-space load or store
tests the whole tile first (one uniform test): a tile wholly inside its array needs no
per-element test, so that branch has none.

Tile-space positions follow R-LOAD-2/R-VIEW-2: element ``x`` of the tile is
``transpose(A, order)[index * steps + x]``.  Each thread computes ``index*steps + thread
coordinate`` once per dimension; a register adds its compile-time offset.
"""

from __future__ import annotations

from ... import config
from ...enums import MemoryOrder, MemoryScope
from ...errors import TileUnsupportedFeatureError
from ...ir import ops
from ...ir.effects import FOREIGN
from ...padding import padding_fill
from .. import layout as L
from ..exprs import cast, from_storage, literal, select, to_storage
from ..params import storage_itemsize
from ..registry import lower
from ..values import AV
from . import matmul_ws


def _av(g, v) -> AV:
    return g.arrays[id(v)]


@lower(ops.ArrayDim)
def array_dim(g, op):
    a = _av(g, op.array)
    g.define(op.result, g.scalar_layout(),
             [f"{cast(op.result.type.dtype)}({a.name}.shape[{op.axis}])"])


@lower(ops.ArrayStride)
def array_stride(g, op):
    g.define(op.result, g.scalar_layout(),
             [f"{cast(op.result.type.dtype)}({stride(g, _av(g, op.array), op.axis)})"])


def stride(g, a: AV, axis: int) -> str:
    """int64 expression of ``a``'s stride along ``axis``, in elements: the user's array's
    (a NumPy argument travels as a contiguous copy), or a foreign array's own."""
    if a.root is None:
        raise TileUnsupportedFeatureError(
            "numba backend: the strides of an array chosen at runtime (e.g. a list item with a "
            "runtime index, or an array variable reassigned in a loop) are not available; "
            "index the list with a constant, or query the strides before choosing")
    if a.root == FOREIGN:
        return f"(i64({a.name}.strides[{axis}]) // {storage_itemsize(a.dtype)})"
    g.strides_used.add((a.root, axis))
    return f"i64(st{a.root}_{axis})"


@lower(ops.ArraySlice)
def array_slice(g, op):
    a = _av(g, op.array)
    start, stop = g.scalar(op.start), g.scalar(op.stop)
    name = g.vname(op.result)
    sl = ", ".join(f"{start}:{stop}" if i == op.axis else ":" for i in range(a.ndim))
    g.line(f"{name} = {a.name}[{sl}]")
    g.arrays[id(op.result)] = g.array_value(op.result, name)


_FENCE = {MemoryScope.BLOCK: "cuda.threadfence_block()", MemoryScope.DEVICE: "cuda.threadfence()",
          MemoryScope.SYS: "cuda.threadfence_system()"}


def fence(scope: MemoryScope) -> str:
    """The fence of a memory scope (every thread runs it for its own accesses)."""
    return _FENCE[scope]


def releasing(g, scope: MemoryScope) -> None:
    """Before a RELEASE (atomic or store): every thread of the block fences its earlier
    accesses, then a barrier, so the releasing threads publish the whole block's.  No
    barrier for a block-scope release, or where no plain access touches data the kernel
    writes (``GlobalAccesses.sync_orders_data``: nothing for it to publish)."""
    g.line(fence(scope))
    if scope is not MemoryScope.BLOCK and g.globals_.sync_orders_data():
        g.barrier()


def acquired(g, scope: MemoryScope) -> None:
    """After an ACQUIRE (atomic or load) by some threads: a fence, then a barrier so that no
    thread of the block accesses memory before it (same exceptions as ``releasing``)."""
    g.line(fence(scope))
    if scope is not MemoryScope.BLOCK and g.globals_.sync_orders_data():
        g.barrier()


def _tile_positions(g, op, a, lay, shape):
    """Per tile dim: (extent variable, base+thread-coordinate variable, whole-tile test).

    The whole-tile test is true when every element of the tile lies inside the array along
    that dim (``0 <= index*step`` and ``index*step + extent <= n``); it is uniform over the
    block, so a tile that passes it on every dim is accessed without per-element checks."""
    steps = op.steps if op.steps is not None else shape
    exts, bases, whole = [], [], []
    for j in range(len(shape)):
        ax = op.order[j]
        n = g.tmp("n")
        g.line(f"{n} = {a.name}.shape[{ax}]")
        t, q = g.tmp("t"), g.tmp("q")
        idx = g.scalar(op.index[j])
        c = g.coord_var(lay, j)
        g.line(f"{t} = i64({idx}) * {int(steps[j])}")
        g.line(f"{q} = {t}" + (f" + {c}" if c != "0" else ""))
        exts.append(n)
        bases.append(q)
        whole.append(f"(0 <= {t}) & ({t} + {int(shape[j])} <= {n})")
    return exts, bases, " & ".join(whole)


def _reg_access(g, op, a, lay, k, exts, bases, safe: bool):
    """(array reference, in-bounds condition) of register ``k``.  With ``safe`` the index is
    clamped to 0 when out of bounds (a branch-free load reads element 0 and discards it)."""
    offs = lay.reg_offsets(k)
    pos = [b if o == 0 else f"({b} + {o})" for b, o in zip(bases, offs)]
    conds = " & ".join(f"(0 <= {p}) & ({p} < {n})" for p, n in zip(pos, exts))
    ok = g.let(conds) if safe else conds
    idx = [None] * len(pos)
    for j, p in enumerate(pos):
        idx[op.order[j]] = f"u64(cuda.selp({ok}, {p}, i64(0)))" if safe else f"u64({p})"
    return f"{a.name}[{', '.join(idx)}]", ok


@lower(ops.Load)
def load(g, op):
    if g.mma.direct_load(op):
        g.line("pass  # staged into shared memory by its mma (cp.async or TMA)")
        return
    a = _av(g, op.array)
    lay = g.natural(op.result)
    dtype = op.result.type.dtype
    pad = literal(padding_fill(dtype.np_dtype, op.padding), dtype)
    exts, bases, whole = _tile_positions(g, op, a, lay, op.shape)
    ordered = op.memory_order is not MemoryOrder.WEAK
    if ordered:
        # RELAXED/ACQUIRE (R-LOAD-7): an atomic read.  The fence before it is also a compiler
        # barrier: a spin-wait loop reads memory again every iteration.
        g.line(fence(op.memory_scope))

    def checked():
        out = []
        # an out-of-bounds lane reads element 0 and takes the padding value: a parameter's
        # element 0 is always addressable (launch.py gives empty arguments a one-element
        # buffer), a view made in the kernel (an empty slice) may have none, so reads from
        # one are skipped, block-uniformly, when it has no elements
        some = None if a.addressable else g.let(" & ".join(f"({n} > 0)" for n in exts))
        for k in range(lay.nregs):
            ref, ok = _reg_access(g, op, a, lay, k, exts, bases, True)
            val = select(ok, from_storage(ref, dtype), pad, dtype)
            out.append(val if some is None else f"({val} if {some} else {pad})")
        return out

    if ordered or lay.nregs < 2:
        out = checked()
        if ordered:
            names = [g.tmp("acq") for _ in out]
            for n, e in zip(names, out):
                g.line(f"{n} = {e}")
            out = names
            if op.memory_order is MemoryOrder.ACQUIRE:
                acquired(g, op.memory_scope)
    else:
        # a tile wholly inside the array (the common case: every tile of a launch whose
        # shapes are multiples of the tile's) loads with no per-element test or index clamp
        out = g.reg_names(op.result, lay.nregs)
        g.line(f"if {whole}:")
        with g.e.indent():
            for k, n in enumerate(out):
                ref = _reg_access(g, op, a, lay, k, exts, bases, False)[0]
                g.line(f"{n} = {from_storage(ref, dtype)}")
        g.line("else:")
        with g.e.indent():
            for n, e in zip(out, checked()):
                g.line(f"{n} = {e}")
    g.define(op.result, lay, out)


# a tile at least this large is worth an exchange before its store (CUTILE_NUMBA_STORE_EXCHANGE)
_EXCHANGE_STORE_MIN = 4096


def _coalesced(g, op, lay):
    """The flat layout to store ``op``'s tile in, through an exchange, or None: with
    ``CUTILE_NUMBA_STORE_EXCHANGE=1``, a tile of at least ``_EXCHANGE_STORE_MIN`` elements in
    a non-flat layout (an mma fragment: a few columns of eight rows per warp instruction),
    stored at the kernel's top level where a staging buffer retired by a K loop holds the
    exchange (``SmemPlan.can_take``: no shared memory of its own, no lost occupancy).  The
    batched matmul's (1, TM, TN) store, exchanged that way by its reshape, ran at 558 TFLOP/s
    on an H200 against 439 with the fragment stored as it lies; the 2-D matmul's store is
    not measured yet, hence opt-in."""
    shape = op.tile.type.shape
    if not config.numba_store_exchange() or g.loops or op.tile.type.size < _EXCHANGE_STORE_MIN:
        return None
    flat = L.flat(shape, g.T)
    if lay == flat or lay.replica_mask or not g.smem.can_take(cast(op.tile.type.dtype),
                                                              op.tile.type.size):
        return None
    return flat


@lower(ops.Store)
def store(g, op):
    if g.ws is not None and g.ws.store is op:
        matmul_ws.store_by_tma(g, op)           # a TMA K loop's epilogue (ws_plan.py)
        return
    a = _av(g, op.array)
    tv = g.tv(op.tile)
    lay = tv.layout if tv.layout is not None else g.natural(op.tile)
    lay = _coalesced(g, op, lay) or lay
    regs = g.get(op.tile, lay)
    exts, bases, whole = _tile_positions(g, op, a, lay, op.tile.type.shape)
    if op.memory_order is MemoryOrder.RELEASE:
        releasing(g, op.memory_scope)      # R-STORE-4: the block's earlier accesses first
    w = g.writer(lay)
    if w is not None:
        g.line(f"if {w}:")
        g.e.level += 1

    def each(check: bool):
        for k in range(lay.nregs):
            ref, conds = _reg_access(g, op, a, lay, k, exts, bases, False)
            value = to_storage(regs[k], a.dtype)
            if check:
                g.line(f"if {conds}:")
                g.line(f"    {ref} = {value}")
            else:
                g.line(f"{ref} = {value}")

    if lay.nregs < 2:
        each(True)
    else:                  # a tile wholly inside the array: no per-element tests (see load)
        g.line(f"if {whole}:")
        with g.e.indent():
            each(False)
        g.line("else:")
        with g.e.indent():
            each(True)
    if w is not None:
        g.e.level -= 1


def gs_setup(g, op, lay):
    """Gather/scatter (and atomic) operands in layout ``lay``: (array reference, per-axis
    index registers, mask registers or None, names of the array's extents)."""
    a = _av(g, op.array)
    idx = [g.get(v, lay) for v in op.indices]
    mask = g.get(op.mask, lay) if op.mask is not None else None
    exts = []
    for ax in range(a.ndim):
        n = g.tmp("n")
        g.line(f"{n} = {a.name}.shape[{ax}]")
        exts.append(n)
    return a, idx, mask, exts


def _gs_reg(g, a, idx, mask, exts, k, safe: bool):
    """(array reference, condition) of register ``k``.  Indices go through int64 (uint64 >=
    2**63 wraps negative: out of bounds); ``safe`` clamps out-of-bounds indices to 0."""
    names = []
    for j in range(a.ndim):
        n = g.tmp("x")
        g.line(f"{n} = i64({idx[j][k]})")
        names.append(n)
    conds = [f"(0 <= {n}) & ({n} < {e})" for n, e in zip(names, exts)]
    if mask is not None:
        conds.insert(0, f"({mask[k]})")
    cond = g.let(" & ".join(conds)) if conds else "True"
    if safe:
        names = [f"u64(cuda.selp({cond}, {n}, i64(0)))" for n in names]
    else:
        names = [f"u64({n})" for n in names]
    ref = f"{a.name}[{', '.join(names)}]" if names else f"{a.name}[()]"
    return ref, cond


@lower(ops.Gather)
def gather(g, op):
    lay = g.natural(op.result)
    a, idx, mask, exts = gs_setup(g, op, lay)
    pad = g.get(op.padding, lay)
    dtype = op.result.type.dtype
    names = g.reg_names(op.result, lay.nregs)
    if exts:
        # A gather from an empty array is well defined (all padding) but has no element 0 to
        # read: guard the reads with the (block-uniform) emptiness test.
        g.line(f"if {' & '.join(f'({n} > 0)' for n in exts)}:")
        g.e.level += 1
    for k, n in enumerate(names):
        ref, cond = _gs_reg(g, a, idx, mask, exts, k, True)
        g.line(f"{n} = {select(cond, from_storage(ref, dtype), pad[k], dtype)}")
    if exts:
        g.e.level -= 1
        g.line("else:")
        for n, p in zip(names, pad):
            g.line(f"    {n} = {p}")
    g.alias(op.result, lay, names)


@lower(ops.Scatter)
def scatter(g, op):
    tv = g.tv(op.value)
    lay = tv.layout if tv.layout is not None else g.natural(op.value)
    a, idx, mask, exts = gs_setup(g, op, lay)
    vals = g.get(op.value, lay)
    w = g.writer(lay)
    if w is not None:
        g.line(f"if {w}:")
        g.e.level += 1
    for k in range(lay.nregs):
        ref, cond = _gs_reg(g, a, idx, mask, exts, k, False)
        g.line(f"if {cond}:")
        g.line(f"    {ref} = {to_storage(vals[k], a.dtype)}")
    if w is not None:
        g.e.level -= 1

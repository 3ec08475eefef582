"""Lowering of atomics and raw memory (§20, R-VIEW-7, §7) through ``numba.cuda.atomic``.

Each position of the index shape is one ``cuda.atomic`` call by the thread holding it (one
replica only: the old values then reach the other replicas through shared memory).
add/max/min/and/or/xor/exch/cas map to ``cuda.atomic.add/max/min/and_/or_/xor/exch/cas`` on
int32/int64/uint32/uint64; float32/float64 add is native; float xchg/cas run on the array's
bits (``a.view(uint32/uint64)``; CAS compares bit patterns, as the interpreter does).  Memory
orders become fences and barriers (``memory.releasing``/``acquired``): before a RELEASE/ACQ_REL
every thread fences (``cuda.threadfence{_block,,_system}()`` for scope BLOCK/DEVICE/SYS) and
the block meets at a barrier, so one thread's atomic publishes the whole block's accesses;
after an ACQUIRE/ACQ_REL every thread fences and (DEVICE/SYS) the block meets again.

float16/bfloat16 ``add`` (the only 16-bit atomic R-ATOM-4 allows) goes through
``atom16.py``'s one-instruction PTX intrinsics (``atom.add.noftz.f16``, sm_70+;
``.bf16``, sm_90+: the generator records the compute capability in ``g.min_cc`` and the launch
refuses an older device).  A 0-D array is atomically updated through its 1-element 1-D view
(``a.reshape((1,))``).  Raw memory offsets are decoded to an index with the user's strides
(row-major order of strides required, checked at launch).
"""

from __future__ import annotations

from ... import dtypes as dt
from ...enums import MemoryOrder
from ...errors import TileUnsupportedFeatureError
from ...ir import ops
from ...ir.core import walk
from ...ir.effects import FOREIGN
from .. import atom16
from ..exprs import from_storage, literal, select, to_storage
from ..params import storage_itemsize
from ..registry import lower
from ..values import AV, row_major_strides
from .memory import acquired, gs_setup, releasing, stride
from .pointer import storage_proto

_FN = {"add": "add", "max": "max", "min": "min", "and": "and_", "or": "or_", "xor": "xor",
       "xchg": "exch"}
_BITS = {dt.float32: ("u32", "np.uint32", "u32(libdevice.float_as_int({}))",
                      "libdevice.int_as_float(i32({}))"),
         dt.float64: ("u64", "np.uint64", "u64(libdevice.double_as_longlong({}))",
                      "libdevice.longlong_as_double(i64({}))")}


def _check(g, op, kind: str, a) -> None:
    dtype = a.dtype
    if dtype in (dt.float16, dt.bfloat16):
        if kind != "add":                       # the type rule admits add only (R-ATOM-4)
            raise TileUnsupportedFeatureError(
                f"atomic_{kind} on {dtype.name} is not supported by the numba backend", op.loc)
        cc = atom16.MIN_CC[dtype.name]
        g.min_cc.append((cc, f"atomic_add on {dtype.name} needs a GPU of compute capability "
                             f"{cc[0]}.{cc[1]} or newer (PTX atom.add.noftz."
                             f"{'bf16' if dtype is dt.bfloat16 else 'f16'})", op.loc))


def _one_d(g, a):
    """``a`` itself, or for a 0-D array its 1-element 1-D view ``a.reshape((1,))``
    (``cuda.atomic`` types only arrays of one or more dimensions; index ``()`` of the 0-D
    array is index 0; a 0-D array is always typed "C", ``params.layout``).  Not ``a[None]``:
    the simulator accepts it, Numba-CUDA has no lowering for it
    (``test_backend_ptx.py::test_atomics_on_0d_arrays_compile``)."""
    if a.ndim:
        return a
    view = g.tmp("elem")
    g.line(f"{view} = {a.name}.reshape((1,))")
    return AV(view, a.roots, 1, a.dtype)


def _raw_array(g, op, a):
    """The array RawArrayMemory offsets index: ``a`` itself (a parameter: its strides are
    checked at launch, ``launch._check_raw_layout``), or for an array from
    ``Array.from_foreign`` (runtime strides) a 1-D stride-1 view of the bytes from its first to
    its last element, so an offset is its address (one not naming an element is R-UB-3)."""
    if FOREIGN not in a.roots:
        return a
    if len(a.roots) > 1:
        raise TileUnsupportedFeatureError(
            "RawArrayMemory of an array chosen at runtime between a foreign array and another "
            "is not supported by the numba backend (index the list with a constant)", op.loc)
    span, item = g.tmp("span"), storage_itemsize(a.dtype)
    g.line(f"{span} = i64(1)")
    for ax in range(a.ndim):
        g.line(f"{span} = {span} + (i64({a.name}.shape[{ax}]) - 1) * "
               f"(i64({a.name}.strides[{ax}]) // {item})")
    if a.ndim:
        empty = " | ".join(f"(i64({a.name}.shape[{ax}]) == 0)" for ax in range(a.ndim))
        g.line(f"{span} = cuda.selp({empty}, i64(0), {span})")
    flat = g.tmp("flat")
    g.line(f"{flat} = array_at(array_address({a.name}), ({span},), (i64(1),), "
           f"{storage_proto(a.dtype)})")
    return AV(flat, frozenset({FOREIGN}), 1, a.dtype)


def _raw_index(g, op, a, off: str) -> tuple[list[str], str]:
    """Index names and in-bounds condition of element offset ``off`` from ``a``'s base: the
    offset is decoded greedily with the user's strides (row-major order of strides)."""
    rest = g.tmp("o")
    g.line(f"{rest} = i64({off})")
    names, conds = [], [f"({rest} >= 0)"]
    for ax in range(a.ndim):
        st = stride(g, a, ax)
        n = g.tmp("x")
        # an axis of extent 1 only has index 0 (its stride may be anything)
        g.line(f"{n} = cuda.selp(i64({a.name}.shape[{ax}]) > 1, "
               f"{rest} // cuda.selp({st} > 0, {st}, i64(1)), i64(0))")
        g.line(f"{rest} = {rest} - {n} * {st}")
        names.append(n)
        conds.append(f"(0 <= {n}) & ({n} < {a.name}.shape[{ax}])")
    conds.append(f"({rest} == 0)")
    g.raw_roots.update(a.roots - {FOREIGN})
    return names, " & ".join(conds)


def _positions(g, op, lay):
    """(array value, per register: (index expressions, condition))."""
    if op.raw:
        a = _raw_array(g, op, _one_d(g, g.arrays[id(op.array)]))
        offs = g.get(op.indices[0], lay)
        mask = g.get(op.mask, lay) if op.mask is not None else None
        out = []
        for k in range(lay.nregs):
            names, cond = _raw_index(g, op, a, offs[k])
            if mask is not None:
                cond = f"({mask[k]}) & {cond}"
            out.append((names, g.let(cond)))
        return a, out
    a, idx, mask, exts = gs_setup(g, op, lay)
    if a.ndim == 0:                 # the 0-D array's element: index 0 of its 1-D view
        a, idx, exts = _one_d(g, a), [["0"] * lay.nregs], ["1"]
    out = []
    for k in range(lay.nregs):
        names = []
        for j in range(a.ndim):
            n = g.tmp("x")
            g.line(f"{n} = i64({idx[j][k]})")
            names.append(n)
        conds = [f"(0 <= {n}) & ({n} < {e})" for n, e in zip(names, exts)]
        if mask is not None:
            conds.insert(0, f"({mask[k]})")
        out.append((names, g.let(" & ".join(conds))))
    return a, out


def _used(g, v) -> bool:
    """Whether an op of the kernel reads ``v`` (tiled-view atomics never read their result:
    no shared-memory exchange of old values then)."""
    used = getattr(g, "_atomic_used", None)
    if used is None:
        used = g._atomic_used = {id(o) for op in walk(g.ir.body) for o in op.operands()}
    return id(v) in used


def _index(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"({', '.join(names)})"


def _emit(g, op, kind: str, defaults, call, operands) -> None:
    """Guarded atomic per register, fences, and the old values shared among replicas.

    Every operand is brought into the result layout first: a layout conversion may need
    shared memory and barriers, which must not sit under the one-replica predicate."""
    lay = g.natural(op.result)
    a = g.arrays[id(op.array)]
    _check(g, op, kind, a)
    regs = [g.get(v, lay) for v in operands]
    a, pos = _positions(g, op, lay)
    names = g.reg_names(op.result, lay.nregs)
    w = g.writer(lay)
    for n, d in zip(names, defaults(lay)):
        g.line(f"{n} = {d}")
    if op.order in (MemoryOrder.RELEASE, MemoryOrder.ACQ_REL):
        releasing(g, op.scope)        # the whole block's earlier accesses, not one thread's
    if w is not None:
        g.line(f"if {w}:")
        g.e.level += 1
    for k, (idx, cond) in enumerate(pos):
        g.line(f"if {cond}:")
        g.line(f"    {names[k]} = {call(a, _index(idx), [r[k] for r in regs])}")
    if w is not None:
        g.e.level -= 1
    if op.order in (MemoryOrder.ACQUIRE, MemoryOrder.ACQ_REL):
        acquired(g, op.scope)         # no thread of the block reads before the acquire
    if w is None or not _used(g, op.result):
        g.alias(op.result, lay, names)
        return
    # the replicas that did not run the atomics read the old values back
    dtype = op.result.type.dtype
    weights = row_major_strides(lay.shape)
    buf = g.buffer(("atomic", id(op)), 0, dtype, lay.size)
    g.smem_write(buf, lay, names, dtype, weights)
    g.smem_sync()
    out = [g.tmp("old") for _ in range(lay.nregs)]
    for k, r in enumerate(out):
        g.line(f"{r} = {g.smem_load(buf, g.linear(lay, weights, k), dtype)}")
    g.smem_did_read(buf)
    g.alias(op.result, lay, out)


@lower(ops.AtomicRMW)
def atomic_rmw(g, op):
    dtype = op.array.type.dtype

    def defaults(lay):
        return [literal(0, dtype)] * lay.nregs

    def call(a, idx, vals):
        u = vals[0]
        if op.kind == "add" and dtype is dt.float16:
            return f"atom_add_f16({a.name}, {idx}, f16({u}))"
        if op.kind == "add" and dtype is dt.bfloat16:
            return from_storage(f"atom_add_bf16({a.name}, {idx}, {to_storage(u, dtype)})",
                                dtype)
        if op.kind == "xchg" and dtype in _BITS:
            bits, npd, to_bits, from_bits = _BITS[dtype]
            return from_bits.format(
                f"cuda.atomic.exch({a.name}.view({npd}), {idx}, {to_bits.format(u)})")
        return f"cuda.atomic.{_FN[op.kind]}({a.name}, {idx}, {u})"

    _emit(g, op, op.kind, defaults, call, [op.update])


@lower(ops.AtomicCAS)
def atomic_cas(g, op):
    dtype = op.array.type.dtype

    def defaults(lay):
        return list(g.get(op.expected, lay))

    def call(a, idx, vals):
        e, d = vals
        if dtype in _BITS:
            bits, npd, to_bits, from_bits = _BITS[dtype]
            return from_bits.format(f"cuda.atomic.cas({a.name}.view({npd}), {idx}, "
                                    f"{to_bits.format(e)}, {to_bits.format(d)})")
        return f"cuda.atomic.cas({a.name}, {idx}, {e}, {d})"

    _emit(g, op, "cas", defaults, call, [op.expected, op.desired])


@lower(ops.RawLoad)
def raw_load(g, op):
    lay = g.natural(op.result)
    a = _raw_array(g, op, g.arrays[id(op.array)])
    dtype = op.result.type.dtype
    pad = g.get(op.padding, lay)
    offs = g.get(op.offset, lay)
    mask = g.get(op.mask, lay) if op.mask is not None else None
    names = g.reg_names(op.result, lay.nregs)
    for k, n in enumerate(names):
        idx, cond = _raw_index(g, op, a, offs[k])
        if mask is not None:
            cond = f"({mask[k]}) & {cond}"
        cond = g.let(cond)
        # a lane not accessed reads element 0 (launch.py gives empty arrays a valid address)
        safe = [f"cuda.selp({cond}, {x}, i64(0))" for x in idx]
        ref = f"{a.name}[{', '.join(safe)}]"
        g.line(f"{n} = {select(cond, from_storage(ref, dtype), pad[k], dtype)}")
    g.alias(op.result, lay, names)


@lower(ops.RawStore)
def raw_store(g, op):
    tv = g.tv(op.value)
    lay = tv.layout if tv.layout is not None else g.natural(op.value)
    a = _raw_array(g, op, g.arrays[id(op.array)])
    vals = g.get(op.value, lay)
    offs = g.get(op.offset, lay)
    mask = g.get(op.mask, lay) if op.mask is not None else None
    w = g.writer(lay)
    if w is not None:
        g.line(f"if {w}:")
        g.e.level += 1
    for k in range(lay.nregs):
        idx, cond = _raw_index(g, op, a, offs[k])
        if mask is not None:
            cond = f"({mask[k]}) & {cond}"
        g.line(f"if {cond}:")
        g.line(f"    {a.name}[{', '.join(idx)}] = {to_storage(vals[k], a.dtype)}")
    if w is not None:
        g.e.level -= 1

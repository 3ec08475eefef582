"""Atomics (spec §20): ``atomic_add/and/or/xor/max/min/xchg/cas`` on arrays, the tiled-view
``atomic_store_*`` methods (R-VIEW-7) and ``RawArrayMemory`` (§7: ``Array.get_raw_memory()``,
element offsets from the array's base).  Every form emits ``AtomicRMW``/``AtomicCAS``."""

from __future__ import annotations

from .. import dtypes as dt
from ..enums import MemoryOrder, MemoryScope
from ..errors import TileTypeError
from ..ir import ops
from ..lang import coerce
from ..lang.context import current
from ..lang.registry import TileOp, tile_op
from ..lang.values import ArrayV, Const, RawMemV, TileV, ViewV, describe
from . import memory
from .classes import Array, Tile
from .elementwise import binary

_INTS = (dt.int32, dt.int64, dt.uint32, dt.uint64)
# R-ATOM-4: array dtypes per operation
ARRAY_DTYPES = {
    "cas": _INTS + (dt.float32, dt.float64),
    "xchg": _INTS + (dt.float32, dt.float64),
    "add": _INTS + (dt.float32, dt.float64, dt.float16, dt.bfloat16),
    "max": _INTS, "min": _INTS, "and": _INTS, "or": _INTS, "xor": _INTS,
}
_BITWISE = ("and", "or", "xor")


def _orders(memory_order, memory_scope, opname: str) -> tuple[MemoryOrder, MemoryScope]:
    """R-ATOM-7: a non-WEAK constant order with a BLOCK/DEVICE/SYS scope."""
    memory._memory_order(memory_order, memory_scope, (
        MemoryOrder.RELAXED, MemoryOrder.ACQUIRE, MemoryOrder.RELEASE, MemoryOrder.ACQ_REL),
        opname)
    o = memory._const_enum(memory_order, MemoryOrder, "memory_order")
    s = memory._const_enum(memory_scope, MemoryScope, "memory_scope")
    if s is MemoryScope.CLUSTER:
        raise TileTypeError(f"Invalid memory scope for {opname}: CLUSTER is not valid for cuTile "
                            f"(use BLOCK, DEVICE or SYS)")
    return o, s


def _operand(v, dtype: dt.DType, kind: str, shape: tuple, what: str) -> TileV:
    """R-ATOM-5: cast (cas/xchg/add/max/min) or exact dtype (and/or/xor), then broadcast."""
    v = coerce.fval(v)
    if not (isinstance(v, TileV) or coerce.is_number_const(v)):
        raise TileTypeError(f"Expected a tile or a scalar for {what}, got {describe(v)}")
    vs = coerce.value_shape(v)
    if not memory._broadcastable_to(vs, shape):
        raise TileTypeError(f"{what.capitalize()} shape {vs} is not broadcastable to the index "
                            f"shape {shape}")
    if kind in _BITWISE:
        # a bare integer literal counts as int32 here (R-ATOM-5)
        src = dt.int32 if isinstance(v, Const) and v.is_loose and isinstance(v.value, int) \
            else coerce.value_dtype(v)
        if src is not dtype:
            raise TileTypeError(f"Bitwise atomic read-modify-write operations require the update "
                                f"dtype ({src.name}) to exactly match the target dtype "
                                f"({dtype.name})")
        t = coerce.to_tile(v, dtype)
    else:
        t = coerce.implicit_cast(v, dtype, f"Atomic {what} is incompatible with the array's "
                                           f"dtype")
    return coerce.broadcast(t, shape)


def _check_dtype(dtype: dt.DType, kind: str, what: str = "array") -> None:
    if dtype not in ARRAY_DTYPES[kind]:
        ok = ", ".join(d.name for d in ARRAY_DTYPES[kind])
        raise TileTypeError(f"Unsupported {what} dtype {dtype.name} for atomic {kind} "
                            f"(supported: {ok})")


def _emit_rmw(arr: ArrayV, idx: tuple, update, kind: str, shape: tuple, mask, cb: bool,
              order: MemoryOrder, scope: MemoryScope, raw: bool) -> TileV:
    u = _operand(update, arr.dtype, kind, shape, "update")
    return current().emit_value(ops.AtomicRMW(arr.value, idx, u.value, kind, mask, cb, order,
                                              scope, raw))


def _emit_cas(arr: ArrayV, idx: tuple, expected, desired, shape: tuple, mask, cb: bool,
              order: MemoryOrder, scope: MemoryScope, raw: bool) -> TileV:
    e = _operand(expected, arr.dtype, "cas", shape, "expected value")
    d = _operand(desired, arr.dtype, "cas", shape, "desired value")
    return current().emit_value(ops.AtomicCAS(arr.value, idx, e.value, d.value, mask, cb, order,
                                              scope, raw))


def _array_positions(array, indices, kind: str, *values):
    """R-ATOM-1: the array, its broadcast index tiles and the index shape."""
    arr = coerce.require_array(coerce.fval(array))
    _check_dtype(arr.dtype, kind)
    items, shape = memory.gs_indices(arr, indices)
    idx = tuple(coerce.broadcast(coerce.to_tile(i), shape).value for i in items)
    return arr, idx, shape


def _rmw(kind: str) -> TileOp[..., Tile]:
    opname = "tile_atomic_rmw"

    def impl(array: Array, indices: Tile | int | tuple[Tile | int, ...],
             update: Tile | int | float, /, *, check_bounds: bool = True,
             memory_order: MemoryOrder = MemoryOrder.ACQ_REL,
             memory_scope: MemoryScope = MemoryScope.DEVICE) -> Tile:
        arr, idx, shape = _array_positions(array, indices, kind)
        cb = memory._check_bounds(check_bounds)
        order, scope = _orders(memory_order, memory_scope, opname)
        return _emit_rmw(arr, idx, update, kind, shape, None, cb, order, scope, False)

    impl.__name__ = impl.__qualname__ = f"atomic_{kind}"
    what = {"xchg": "stores ``update``", "add": "adds ``update``",
            "max": "keeps the larger value (signed/unsigned per dtype)",
            "min": "keeps the smaller value (signed/unsigned per dtype)",
            "and": "bitwise-ands ``update``", "or": "bitwise-ors ``update``",
            "xor": "bitwise-xors ``update``"}[kind]
    impl.__doc__ = (
        f"Atomically, per position of the index shape, {what} at ``array[indices]`` and "
        f"return the old values (R-ATOM-1..7).\n\n"
        f"Positions hitting one element all apply; out-of-bounds positions do nothing.\n\n"
        f">>> old = ct.atomic_{kind}(a, ct.arange(16, dtype=ct.int32), t)\n")
    return tile_op(impl)


atomic_xchg = _rmw("xchg")
atomic_add = _rmw("add")
atomic_max = _rmw("max")
atomic_min = _rmw("min")
atomic_and = _rmw("and")
atomic_or = _rmw("or")
atomic_xor = _rmw("xor")


@tile_op
def atomic_cas(array: Array, indices: Tile | int | tuple[Tile | int, ...],
               expected: Tile | int | float, desired: Tile | int | float, /, *,
               check_bounds: bool = True, memory_order: MemoryOrder = MemoryOrder.ACQ_REL,
               memory_scope: MemoryScope = MemoryScope.DEVICE) -> Tile:
    """Atomically, per position, store ``desired`` at ``array[indices]`` where the element
    equals ``expected`` (bitwise); return the old values (R-ATOM-1..7).  Out-of-bounds
    positions return ``expected``.

    >>> old = ct.atomic_cas(lock, 0, 0, 1)      # try to take a spin lock
    """
    arr, idx, shape = _array_positions(array, indices, "cas")
    cb = memory._check_bounds(check_bounds)
    order, scope = _orders(memory_order, memory_scope, "tile_atomic_cas")
    return _emit_cas(arr, idx, expected, desired, shape, None, cb, order, scope, False)


# -- TiledView.atomic_store_* (R-VIEW-7) --------------------------------------------------------
def _view_positions(view: ViewV, index) -> tuple:
    """Element indices of the view's tile at tile-space ``index``: ``index*steps + iota``
    per dimension (int64), broadcast to the tile shape."""
    arr = view.array
    base = memory._index(index, arr.ndim, "tiled view")
    shape = view.load_shape
    out = []
    for d, (b, n, st) in enumerate(zip(base, shape, view.steps)):
        origin = binary("mul", coerce.convert(TileV(b), dt.int64), Const(st, dt.int64),
                        fusible=False)
        iota = current().emit_value(ops.Iota(n, dt.int64))
        iota = current().emit_value(ops.Reshape(iota.value, tuple(
            n if k == d else 1 for k in range(len(shape)))))
        pos = binary("add", coerce.broadcast(iota, shape), origin, fusible=False)
        out.append(coerce.broadcast(pos, shape).value)
    return tuple(out), shape


def view_atomic(kind: str):
    def method(view: ViewV, index, update, /):
        arr = view.array
        _check_dtype(arr.dtype, kind, "tiled view")
        u = coerce.fval(update)
        us = coerce.value_shape(u) if isinstance(u, TileV) or coerce.is_number_const(u) else ()
        if not memory._broadcastable_to(us, tuple(view.tile_shape)):
            raise TileTypeError(f"Update shape {us} is not broadcastable to the tiled view's "
                                f"tile shape {view.tile_shape}")
        idx, shape = _view_positions(view, index)
        # RELAXED, DEVICE scope, bounds-checked: not configurable (R-VIEW-7); returns None
        _emit_rmw(arr, idx, u, kind, shape, None, True, MemoryOrder.RELAXED,
                  MemoryScope.DEVICE, False)

    method.__name__ = f"atomic_store_{kind}"
    method.__doc__ = (f"``v.atomic_store_{kind}(index, update)``: element-wise atomic {kind} "
                      f"into the tile at ``index``; out-of-bounds lanes ignored (R-VIEW-7).")
    return method


VIEW_ATOMICS = {f"atomic_store_{k}": view_atomic(k)
                for k in ("add", "max", "min", "and", "or", "xor")}


# -- RawArrayMemory (§7) -----------------------------------------------------------------------
def get_raw_memory(arr: ArrayV, /) -> RawMemV:
    """``a.get_raw_memory()``: loads, stores and atomics by element offset from ``a``'s base."""
    return RawMemV(arr)


def _raw_offsets(raw: RawMemV, offset, mask, *values) -> tuple:
    """One integer offset tile and an optional bool mask, broadcast with the values' shapes."""
    off = coerce.fval(offset)
    if not (isinstance(off, TileV) or coerce.is_number_const(off)):
        raise TileTypeError(f"Expected an integer scalar or tile for offset, got {describe(off)}")
    if not coerce.value_dtype(off).is_integral:
        raise TileTypeError(f"Offset has non-integer data type {coerce.value_dtype(off).name}")
    shapes = [coerce.value_shape(off)]
    m = coerce.fval(mask)
    has_mask = not (isinstance(m, Const) and m.value is None)
    if has_mask:
        if not (isinstance(m, TileV) or coerce.is_number_const(m)) \
                or not coerce.value_dtype(m).is_bool:
            raise TileTypeError(f"Mask must have boolean dtype, but got {describe(m)}")
        shapes.append(coerce.value_shape(m))
    for v in values:
        v = coerce.fval(v)
        if isinstance(v, TileV) or coerce.is_number_const(v):
            shapes.append(coerce.value_shape(v))
    shape = coerce.broadcast_shapes(*shapes)
    o = coerce.broadcast(coerce.to_tile(off), shape).value
    mv = coerce.broadcast(coerce.to_tile(m), shape).value if has_mask else None
    return (o,), mv, shape


def _fits_offsets(raw: RawMemV, offset, mask, value, what: str) -> None:
    """As 1.7: a raw load's padding / a raw store's value (and the mask) must broadcast to the
    offset's shape, which they do not widen (an offset is not broadcast up to a value)."""
    shape = coerce.value_shape(coerce.fval(offset))
    for v, name in ((mask, "Mask"), (value, what)):
        v = coerce.fval(v)
        if isinstance(v, TileV) or coerce.is_number_const(v):
            vs = coerce.value_shape(v)
            if not memory._broadcastable_to(vs, shape):
                raise TileTypeError(f"{name} shape {vs} is not broadcastable to the offset "
                                    f"shape {shape}")


def raw_load_offset(raw: RawMemV, offset, /, *, mask=None, padding_value=0, latency=None):
    """``RawArrayMemory.load_offset``: ``base[offset]`` where ``mask``, else ``padding_value``."""
    arr = raw.array
    memory.check_hints(latency, None)
    _fits_offsets(raw, offset, mask, padding_value, "Padding")
    idx, mv, shape = _raw_offsets(raw, offset, mask, padding_value)
    pad = coerce.broadcast(coerce.implicit_cast(coerce.fval(padding_value), arr.dtype,
                                                "Invalid padding value"), shape)
    return current().emit_value(ops.RawLoad(arr.value, idx[0], pad.value, mv))


def raw_store_offset(raw: RawMemV, offset, value, /, *, mask=None, latency=None):
    """``RawArrayMemory.store_offset``: ``base[offset] = value`` where ``mask``."""
    arr = raw.array
    memory.check_hints(latency, None)
    _fits_offsets(raw, offset, mask, value, "Value")
    idx, mv, shape = _raw_offsets(raw, offset, mask, value)
    v = coerce.broadcast(coerce.implicit_cast(coerce.fval(value), arr.dtype,
                                              "Stored value is incompatible with array's dtype"),
                         shape)
    current().emit(ops.RawStore(arr.value, idx[0], v.value, mv))


def _raw_rmw(kind: str):
    def method(raw: RawMemV, offset, update, /, *, mask=None,
               memory_order=MemoryOrder.ACQ_REL, memory_scope=MemoryScope.DEVICE):
        arr = raw.array
        _check_dtype(arr.dtype, kind)
        idx, mv, shape = _raw_offsets(raw, offset, mask, update)
        order, scope = _orders(memory_order, memory_scope, "tile_atomic_rmw")
        return _emit_rmw(arr, idx, update, kind, shape, mv, True, order, scope, True)

    method.__name__ = f"atomic_{kind}_offset"
    return method


def _raw_cas(raw: RawMemV, offset, expected, desired, /, *, mask=None,
             memory_order=MemoryOrder.ACQ_REL, memory_scope=MemoryScope.DEVICE):
    arr = raw.array
    _check_dtype(arr.dtype, "cas")
    idx, mv, shape = _raw_offsets(raw, offset, mask, expected, desired)
    order, scope = _orders(memory_order, memory_scope, "tile_atomic_cas")
    return _emit_cas(arr, idx, expected, desired, shape, mv, True, order, scope, True)


RAW_METHODS = {"load_offset": raw_load_offset, "store_offset": raw_store_offset,
               "atomic_cas_offset": _raw_cas}
RAW_METHODS.update({f"atomic_{k}_offset": _raw_rmw(k)
                    for k in ("xchg", "add", "max", "min", "and", "or", "xor")})

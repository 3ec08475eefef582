"""Global memory: tile-space ``load``/``store``, ``num_tiles``, ``gather``/``scatter``, and the
``Array``/``TiledView`` methods (spec §6-§9)."""

from __future__ import annotations

from .. import dtypes as dt
from ..enums import MemoryOrder, MemoryScope, PaddingMode
from ..errors import TileTypeError, TileValueError
from ..frontend import coerce
from ..frontend.context import current
from ..frontend.values import ArrayV, Const, FVal, TileV, TupleV, ViewV, describe
from ..ir import ops
from ._registry import tile_op

# -- argument checks ---------------------------------------------------------------------------


def _index(index, ndim: int, what: str = "array") -> tuple:
    """R-LOAD-1: a tuple of signed integer scalars, one per dimension."""
    v = coerce.fval(index)
    if isinstance(v, (TupleV,)) or (isinstance(v, Const) and isinstance(v.value, tuple)):
        items = coerce.tuple_items(v, "index")
    elif ndim == 1 and coerce.is_scalar(v):
        items = (v,)
    else:
        raise TileTypeError(f"Expected a tuple of signed integers for index, got {describe(v)}")
    if len(items) != ndim:
        raise TileTypeError(f"Index size {len(items)} does not match the {what} rank {ndim}")
    out = []
    for it in items:
        if not coerce.is_scalar(it):
            raise TileTypeError(f"Expected a tuple of signed integers for index, got "
                                f"{describe(it)}")
        out.append(coerce.signed_index(it).value)
    return tuple(out)


def _order(order, ndim: int) -> tuple[int, ...]:
    """R-SPACE-2/3: "C", "F" or a permutation tuple."""
    v = coerce.fval(order)
    if isinstance(v, Const) and isinstance(v.value, str):
        if v.value == "C":
            return tuple(range(ndim))
        if v.value == "F":
            return tuple(reversed(range(ndim)))
        raise TileTypeError(f"Expected 'C' or 'F' for order, got {v.value!r}")
    if not (isinstance(v, TupleV) or (isinstance(v, Const) and isinstance(v.value, tuple))):
        raise TileTypeError(f"Expected 'C', 'F' or a constant tuple for order, got {describe(v)}")
    items = coerce.tuple_items(v, "order")
    if len(items) != ndim:
        raise TileTypeError(f"Expected tuple of length {ndim} for order, got {len(items)}")
    perm = []
    for it in items:
        a = coerce.const_int(it, "order")
        if not -ndim <= a < ndim:
            raise TileTypeError(f"Axis {a} is out of range for rank {ndim}")
        perm.append(a % ndim)
    if sorted(perm) != list(range(ndim)):
        raise TileTypeError(f"Axis order must be a permutation of {tuple(range(ndim))}")
    return tuple(perm)


def _padding(padding_mode, dtype) -> PaddingMode:
    v = coerce.fval(padding_mode)
    if not (isinstance(v, Const) and isinstance(v.value, PaddingMode)):
        raise TileTypeError(f"Expected PaddingMode for padding_mode, got {describe(v)}")
    mode = v.value
    if mode not in (PaddingMode.ZERO, PaddingMode.UNDETERMINED) and not dtype.is_float:
        # R-PAD-2 (cutile): float-only fills are rejected on integer/bool arrays.
        raise TileTypeError(f"Padding mode {mode.name} requires a float array, got {dtype.name}")
    return mode


def _hints(latency, allow_tma) -> None:
    lat = coerce.fval(latency)
    if not (isinstance(lat, Const) and lat.value is None):
        n = coerce.const_int(lat, "latency")
        if not 1 <= n <= 10:
            raise TileValueError(f"Latency must be between 1 and 10, got {n}")
    tma = coerce.fval(allow_tma)
    if not (isinstance(tma, Const) and tma.value is None):
        coerce.const_bool(tma, "allow_tma")


def _memory_order(order, scope, allowed: tuple, opname: str) -> None:
    o, s = coerce.fval(order), coerce.fval(scope)
    if not (isinstance(o, Const) and isinstance(o.value, MemoryOrder)):
        raise TileTypeError("memory_order must be a constant MemoryOrder")
    if not (isinstance(s, Const) and isinstance(s.value, MemoryScope)):
        raise TileTypeError("memory_scope must be a constant MemoryScope")
    if o.value not in allowed:
        raise TileTypeError(f"Invalid memory order for {opname}: {o.value.name}")
    if o.value is MemoryOrder.WEAK and s.value is not MemoryScope.NONE:
        raise TileTypeError("WEAK memory ordering cannot specify a memory scope")
    if o.value is not MemoryOrder.WEAK and s.value is MemoryScope.NONE:
        raise TileTypeError(f"{o.value.name} memory ordering requires a memory scope")


def _check_bounds(flag) -> bool:
    return coerce.const_bool(coerce.fval(flag), "check_bounds")


def _load_shape(shape, ndim: int) -> tuple[tuple, bool]:
    """The tile shape to load and whether the result is 0-D (``shape == ()``, R-LOAD-3)."""
    s = coerce.const_shape(coerce.fval(shape), ndim)
    if s == ():
        return (1,) * ndim, True
    return s, False


def _emit_load(arr: ArrayV, idx: tuple, shape: tuple, scalar: bool, order, padding,
               check_bounds: bool, steps=None) -> TileV:
    if arr.ndim == 0:
        raise TileTypeError("Tile-space load of a 0-D array is not supported; use ct.gather")
    t = current().emit_value(ops.Load(arr.value, idx, tuple(shape), tuple(order), padding,
                                      check_bounds, steps))
    if scalar:
        t = current().emit_value(ops.Reshape(t.value, ()))
    return t


# -- load / store ------------------------------------------------------------------------------
@tile_op
def load(array, /, index, shape, *, order="C", padding_mode=PaddingMode.UNDETERMINED,
         check_bounds=True, latency=None, allow_tma=None, memory_order=MemoryOrder.WEAK,
         memory_scope=MemoryScope.NONE):
    """Load the tile at tile-space ``index`` of ``array`` (R-LOAD-1..7).

    Out-of-bounds elements of a partial tile take the ``padding_mode`` fill.

    >>> t = ct.load(a, index=(ct.bid(0),), shape=(128,), padding_mode=ct.PaddingMode.ZERO)
    """
    arr = coerce.require_array(coerce.fval(array))
    idx = _index(index, arr.ndim)
    tshape, scalar = _load_shape(shape, arr.ndim)
    perm = _order(order, arr.ndim)
    pad = _padding(padding_mode, arr.dtype)
    cb = _check_bounds(check_bounds)
    _hints(latency, allow_tma)
    _memory_order(memory_order, memory_scope,
                  (MemoryOrder.WEAK, MemoryOrder.RELAXED, MemoryOrder.ACQUIRE), "tile_load")
    return _emit_load(arr, idx, tshape, scalar, perm, pad, cb)


def _store_tile(value: FVal, arr: ArrayV, context: str, shape: tuple | None = None) -> TileV:
    """Cast the stored value to the array dtype; scalars become all-ones tiles (R-STORE-1/2)."""
    t = coerce.implicit_cast(coerce.fval(value), arr.dtype, context)
    if shape is not None:
        return coerce.broadcast(t, shape)
    if t.shape == ():
        return current().emit_value(ops.Reshape(t.value, (1,) * arr.ndim))
    if len(t.shape) != arr.ndim:
        raise TileTypeError(f"Stored tile of rank {len(t.shape)} does not match the array rank "
                            f"{arr.ndim}")
    return t


@tile_op
def store(array, /, index, tile, *, order="C", check_bounds=True, latency=None, allow_tma=None,
          memory_order=MemoryOrder.WEAK, memory_scope=MemoryScope.NONE):
    """Store ``tile`` at tile-space ``index``; out-of-bounds lanes are discarded (R-STORE-1..5).

    >>> ct.store(out, index=(ct.bid(0),), tile=t)
    """
    arr = coerce.require_array(coerce.fval(array))
    if arr.ndim == 0:
        raise TileTypeError("Tile-space store to a 0-D array is not supported; use ct.scatter")
    idx = _index(index, arr.ndim)
    perm = _order(order, arr.ndim)
    cb = _check_bounds(check_bounds)
    _hints(latency, allow_tma)
    _memory_order(memory_order, memory_scope,
                  (MemoryOrder.WEAK, MemoryOrder.RELAXED, MemoryOrder.RELEASE), "tile_store")
    v = coerce.fval(tile)
    if not (isinstance(v, TileV) or coerce.is_number_const(v)):
        raise TileTypeError(f"Expected a tile to store, got {describe(v)}")
    t = _store_tile(v, arr, "Stored tile is incompatible with array's dtype")
    current().emit(ops.Store(arr.value, idx, t.value, perm, cb))


def array_dim(arr: ArrayV, axis: int) -> FVal:
    """``arr.shape[axis]``: a constant when known at compile time, else a runtime scalar."""
    s = arr.static_shape[axis]
    if s is not None:
        return Const(s)
    return current().emit_value(ops.ArrayDim(arr.value, axis))


def _num_tiles_of(extent: FVal, tile: int) -> FVal:
    from .elementwise import binary
    n = binary("cdiv", extent, tile, fusible=False)
    if isinstance(n, Const):
        return Const(n.value)
    return coerce.convert(n, dt.int32)


@tile_op
def num_tiles(array, /, axis, shape, order="C"):
    """Number of tiles of ``shape`` along tile-space ``axis`` (R-SPACE-4), as int32."""
    arr = coerce.require_array(coerce.fval(array))
    ax = coerce.normalize_axis(coerce.const_int(coerce.fval(axis), "axis"), arr.ndim)
    tshape, _ = _load_shape(shape, arr.ndim)
    perm = _order(order, arr.ndim)
    return _num_tiles_of(array_dim(arr, perm[ax]), tshape[ax])


# -- gather / scatter --------------------------------------------------------------------------
def _gs_indices(arr: ArrayV, indices, extra_shapes=()) -> tuple[tuple, tuple]:
    """R-GS-1: index entries broadcast together; returns (index values, index shape)."""
    v = coerce.fval(indices)
    if arr.ndim == 1 and not (isinstance(v, TupleV) or (isinstance(v, Const)
                                                       and isinstance(v.value, tuple))):
        items = (v,)
    else:
        if not (isinstance(v, TupleV) or (isinstance(v, Const) and isinstance(v.value, tuple))):
            raise TileTypeError(f"Indices must be a tuple of length {arr.ndim}")
        items = coerce.tuple_items(v, "indices")
    if len(items) != arr.ndim:
        raise TileTypeError(f"Indices must be a tuple of length {arr.ndim}, got {len(items)}")
    for i, it in enumerate(items):
        d = coerce.value_dtype(it)
        if not d.is_integral:
            raise TileTypeError(f"Index #{i} has non-integer data type {d.name}")
    try:
        shape = coerce.broadcast_shapes(*(coerce.value_shape(i) for i in items))
    except TileTypeError:
        raise TileTypeError("Indices are not broadcastable to a common shape") from None
    return items, shape


def _gs_common(arr, items, shape, mask, cb):
    idx = tuple(coerce.broadcast(coerce.to_tile(i), shape).value for i in items)
    m = coerce.fval(mask)
    mval = None
    if not (isinstance(m, Const) and m.value is None):
        if coerce.value_dtype(m) is not dt.bool_:
            raise TileTypeError("Custom mask must have boolean dtype")
        ms = coerce.value_shape(m)
        try:
            if coerce.broadcast_shapes(ms, shape) != shape:
                raise TileTypeError("")
        except TileTypeError:
            raise TileTypeError(f"Mask shape {ms} is not broadcastable to {shape}") from None
        mval = coerce.broadcast(coerce.to_tile(m), shape).value
    return idx, mval, _check_bounds(cb)


@tile_op
def gather(array, indices, /, *, mask=None, padding_value=0, check_bounds=True, latency=None):
    """Load ``array[indices]`` elementwise; masked-off or out-of-bounds positions give
    ``padding_value`` (R-GS-1..5).

    >>> t = ct.gather(a, bid * 8 + ct.arange(8, dtype=ct.int32))
    """
    arr = coerce.require_array(coerce.fval(array))
    items, shape = _gs_indices(arr, indices)
    _hints(latency, None)
    pad = coerce.implicit_cast(coerce.fval(padding_value), arr.dtype,
                               "Padding value is incompatible with array's dtype")
    ps = pad.shape
    if coerce.broadcast_shapes(ps, shape) != shape:
        raise TileTypeError(f"Padding value shape {ps} is not broadcastable to {shape}")
    idx, mval, cb = _gs_common(arr, items, shape, mask, check_bounds)
    pad = coerce.broadcast(pad, shape)
    return current().emit_value(ops.Gather(arr.value, idx, pad.value, mval, cb))


@tile_op
def scatter(array, indices, value, /, *, mask=None, check_bounds=True, latency=None):
    """Store ``value`` to ``array[indices]`` elementwise; masked-off or out-of-bounds positions
    are skipped (R-GS-1..7)."""
    arr = coerce.require_array(coerce.fval(array))
    items, shape = _gs_indices(arr, indices)
    _hints(latency, None)
    v = coerce.implicit_cast(coerce.fval(value), arr.dtype,
                             "Stored value is incompatible with array's dtype")
    if coerce.broadcast_shapes(v.shape, shape) != shape:
        shape = coerce.broadcast_shapes(v.shape, shape)
    idx, mval, cb = _gs_common(arr, items, shape, mask, check_bounds)
    v = coerce.broadcast(v, shape)
    current().emit(ops.Scatter(arr.value, idx, v.value, mval, cb))


# -- Array methods (R-ARR-1..3) ----------------------------------------------------------------
def array_slice(arr: ArrayV, axis, start, stop) -> ArrayV:
    ax = coerce.normalize_axis(coerce.const_int(coerce.fval(axis), "axis"), arr.ndim)
    bounds = []
    for name, b in (("start", start), ("stop", stop)):
        b = coerce.fval(b)
        if not coerce.is_scalar(b) or not coerce.value_dtype(b).is_signed:
            if not (isinstance(b, Const) and b.is_loose and isinstance(b.value, int)):
                raise TileTypeError(f"Expected a signed integer scalar for slice {name}")
        if isinstance(b, Const) and b.value < 0:
            raise TileTypeError(f"Slice {name} must be non-negative")
        bounds.append(b)
    s0, s1 = bounds
    if isinstance(s0, Const) and isinstance(s1, Const) and s1.value < s0.value:
        raise TileTypeError("Slice stop must be greater than or equal to start")
    static = list(arr.static_shape)
    static[ax] = (s1.value - s0.value) if isinstance(s0, Const) and isinstance(s1, Const) \
        else None
    idx = arr.type.index_dtype
    t0, t1 = (coerce.to_tile(b, idx) if isinstance(b, Const) else coerce.convert(b, idx)
              for b in (s0, s1))
    return current().emit_array(ops.ArraySlice(arr.value, ax, t0.value, t1.value), tuple(static))


def tiled_view(arr: ArrayV, tile_shape, *, padding_mode=PaddingMode.UNDETERMINED,
               traversal_steps=None) -> ViewV:
    shape = coerce.const_shape(coerce.fval(tile_shape), arr.ndim, "tile_shape")
    if shape != () and len(shape) != arr.ndim:
        raise TileTypeError(f"Expected shape length to be {arr.ndim}, got {len(shape)}")
    pad = _padding(padding_mode, arr.dtype)
    load_shape = shape if shape != () else (1,) * arr.ndim
    st = coerce.fval(traversal_steps)
    if isinstance(st, Const) and st.value is None:
        steps = load_shape
    else:
        items = (st,) if coerce.is_number_const(st) else coerce.tuple_items(st, "traversal_steps")
        if len(items) != arr.ndim:
            raise TileTypeError(f"Expected traversal_steps length to be {arr.ndim}, "
                                f"got {len(items)}")
        steps = tuple(coerce.const_int(i, "traversal_steps") for i in items)
        for i, s in enumerate(steps):
            if s <= 0:
                raise TileTypeError(f"Entry #{i} of traversal_steps {steps} is not positive")
    return ViewV(arr, shape, pad, tuple(steps))


def view_load(view: ViewV, index, *, check_bounds=True, latency=None, allow_tma=None) -> TileV:
    arr = view.array
    idx = _index(index, arr.ndim, "tiled view")
    _hints(latency, allow_tma)
    steps = None if view.steps == view.load_shape else view.steps
    return _emit_load(arr, idx, view.load_shape, view.tile_shape == (), tuple(range(arr.ndim)),
                      view.padding, _check_bounds(check_bounds), steps)


def view_store(view: ViewV, index, tile, *, check_bounds=True, latency=None, allow_tma=None):
    arr = view.array
    idx = _index(index, arr.ndim, "tiled view")
    _hints(latency, allow_tma)
    v = coerce.fval(tile)
    shape = view.load_shape
    src = coerce.value_shape(v)
    try:
        ok = coerce.broadcast_shapes(src, view.tile_shape) == tuple(view.tile_shape)
    except TileTypeError:
        ok = False
    if not ok:
        raise TileTypeError(f"Tile shape {src} is not broadcastable to the tiled view's tile "
                            f"shape {view.tile_shape}")
    t = coerce.implicit_cast(v, arr.dtype, "Stored tile is incompatible with tiled view's dtype")
    if view.tile_shape == ():
        t = current().emit_value(ops.Reshape(t.value, shape))
    else:
        t = coerce.broadcast(t, shape)
    steps = None if view.steps == shape else view.steps
    current().emit(ops.Store(arr.value, idx, t.value, tuple(range(arr.ndim)),
                             _check_bounds(check_bounds), steps))


def view_num_tiles(view: ViewV, axis) -> FVal:
    arr = view.array
    ax = coerce.normalize_axis(coerce.const_int(coerce.fval(axis), "axis"), arr.ndim)
    return _num_tiles_of(array_dim(arr, ax), view.steps[ax])

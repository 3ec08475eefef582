"""Global memory: tile-space ``load``/``store``, ``num_tiles``, ``gather``/``scatter``, and the
``Array``/``TiledView`` methods (spec §6-§9)."""

from __future__ import annotations

from .. import dtypes as dt
from ..enums import MemoryOrder, MemoryScope, PaddingMode
from ..errors import TileTypeError, TileValueError
from ..ir import ops
from ..lang import coerce
from ..lang.context import current
from ..lang.registry import tile_op
from ..lang.values import ArrayV, Const, FVal, TileV, TupleV, ViewV, describe
from .classes import Array, Tile
from .elementwise import binary

# -- argument checks ---------------------------------------------------------------------------


def is_tuple_value(v: FVal) -> bool:
    """Whether ``v`` is a tuple (runtime or constant)."""
    return isinstance(v, TupleV) or (isinstance(v, Const) and isinstance(v.value, tuple))


def is_signed_int_scalar(v: FVal) -> bool:
    """A signed integer scalar: int literal (not bool), strict signed constant, 0-D signed tile."""
    if isinstance(v, Const):
        if not v.is_number or isinstance(v.value, (bool, float)):
            return False
        return v.dtype is None or v.dtype.is_signed
    return isinstance(v, TileV) and v.shape == () and v.dtype.is_signed


def _index(index, ndim: int, what: str = "array") -> tuple:
    """R-LOAD-1: a tuple of signed integer scalars, one per dimension (or a single scalar)."""
    v = coerce.fval(index)
    is_tuple = is_tuple_value(v)
    items = coerce.tuple_items(v, "index") if is_tuple else (v,)
    for i, it in enumerate(items):
        if not is_signed_int_scalar(it):
            where = f"item #{i}" if is_tuple else "given value"
            raise TileTypeError(f"Expected a tuple of signed integers or a single signed integer "
                                f"scalar for index, but {where} is {describe(it)}")
    if len(items) != ndim:
        raise TileTypeError(f"Index size {len(items)} does not match the {what} rank {ndim}")
    return tuple(coerce.signed_index(it).value for it in items)


def _order(order, ndim: int) -> tuple[int, ...]:
    """R-SPACE-2/3: "C", "F" or a constant permutation tuple (negative axes normalised)."""
    v = coerce.fval(order)
    if isinstance(v, Const) and isinstance(v.value, str):
        if v.value == "C":
            return tuple(range(ndim))
        if v.value == "F":
            return tuple(reversed(range(ndim)))
        raise TileTypeError(f"Expected 'C' or 'F' for order, got '{v.value}'")
    if not is_tuple_value(v):
        raise TileTypeError(f"Expected a constant string or integer tuple for order, got "
                            f"{describe(v)}")
    items = coerce.tuple_items(v, "order")
    for it in items:
        if not (isinstance(it, Const) and isinstance(it.value, int)
                and not isinstance(it.value, bool)):
            raise TileTypeError(f"Expected a constant string or integer tuple for order, got "
                                f"an item that is {describe(it)}")
    if len(items) != ndim:
        raise TileTypeError(f"Expected tuple of length {ndim} for order, got {len(items)}")
    perm = []
    for it in items:
        a = it.value
        if not -ndim <= a < ndim:
            raise TileTypeError(f"Axis {a} is out of range for rank {ndim}")
        a %= ndim
        if a in perm:
            raise TileTypeError(f"Axis order must be a permutation, but axis {a} is used at "
                                f"least twice")
        perm.append(a)
    return tuple(perm)


def _const_enum(v: FVal, enum, what: str):
    """A constant member of ``enum``; like cuda.tile, a constant string naming a member
    (``"ZERO"``) is accepted too."""
    v = coerce.fval(v)
    if isinstance(v, Const) and isinstance(v.value, enum):
        return v.value
    if isinstance(v, Const) and isinstance(v.value, str) and v.value in enum.__members__:
        return enum.__members__[v.value]
    raise TileTypeError(f"Expected {enum.__name__} for {what}, but given value is {describe(v)}")


def padding_mode_of(padding_mode, dtype) -> PaddingMode:
    """R-PAD-2: a constant PaddingMode; float-only fills are rejected on int/bool arrays."""
    mode = _const_enum(padding_mode, PaddingMode, "padding_mode")
    if mode not in (PaddingMode.ZERO, PaddingMode.UNDETERMINED) and not dtype.is_float:
        # R-PAD-2 (cutile): NEG_ZERO/NAN/POS_INF/NEG_INF only mean something for floats.
        raise TileTypeError(f"Padding mode {mode.name} requires a float array, got an array "
                            f"of {dtype.name}")
    return mode


def check_hints(latency, allow_tma) -> None:
    """The performance hints of a memory op: ``latency`` None or 1..10, ``allow_tma`` None or
    a constant bool (they change nothing else)."""
    lat = coerce.fval(latency)
    if not (isinstance(lat, Const) and lat.value is None):
        n = coerce.const_int(lat, "latency")
        if not 1 <= n <= 10:
            raise TileValueError(f"Latency must be between 1 and 10, got {n}")
    tma = coerce.fval(allow_tma)
    if not (isinstance(tma, Const) and tma.value is None):
        coerce.const_bool(tma, "allow_tma")


def _memory_order(order, scope, allowed: tuple, opname: str) -> tuple:
    """R-LOAD-7 / R-STORE-4: WEAK needs scope NONE, every other order needs a scope.
    Returns the (MemoryOrder, MemoryScope) members."""
    o = _const_enum(order, MemoryOrder, "memory_order")
    s = _const_enum(scope, MemoryScope, "memory_scope")
    if o not in allowed:
        raise TileTypeError(f"Invalid memory order for {opname}. Got {o.name}, expected one of "
                            + ", ".join(m.name for m in allowed))
    if s is MemoryScope.CLUSTER:
        # R-LOAD-7 / R-ATOM-7: CLUSTER belongs to cuda.lang; cuTile has no cluster scope.
        raise TileTypeError(f"Invalid memory scope for {opname}. Got CLUSTER, expected one of "
                            "NONE, BLOCK, DEVICE, SYS")
    if o is MemoryOrder.WEAK and s is not MemoryScope.NONE:
        raise TileTypeError(f"{opname} with WEAK memory ordering cannot specify a memory scope")
    if o is not MemoryOrder.WEAK and s is MemoryScope.NONE:
        raise TileTypeError(f"{opname} with {o.name} memory ordering requires a memory scope")
    return o, s


def _check_bounds(flag) -> bool:
    return coerce.const_bool(coerce.fval(flag), "check_bounds")


def _load_shape(shape, ndim: int) -> tuple[tuple, bool]:
    """The tile shape to load and whether the result is 0-D (``shape == ()``, R-LOAD-3)."""
    s = coerce.const_shape(coerce.fval(shape), ndim)
    if s == ():
        return (1,) * ndim, True
    return s, False


def _emit_load(arr: ArrayV, idx: tuple, shape: tuple, scalar: bool, order, padding,
               check_bounds: bool, steps=None, memory_order=MemoryOrder.WEAK,
               memory_scope=MemoryScope.NONE) -> TileV:
    if arr.ndim == 0:
        raise TileTypeError("Tile-space load of a 0-D array is not supported; use ct.gather")
    t = current().emit_value(ops.Load(arr.value, idx, tuple(shape), tuple(order), padding,
                                      check_bounds, steps, memory_order, memory_scope))
    if scalar:
        t = current().emit_value(ops.Reshape(t.value, ()))
    return t


# -- load / store ------------------------------------------------------------------------------
@tile_op
def load(array: Array, /, index: int | Tile | tuple[int | Tile, ...],
         shape: int | tuple[int, ...], *, order: str | tuple[int, ...] = "C",
         padding_mode: PaddingMode = PaddingMode.UNDETERMINED, check_bounds: bool = True,
         latency: int | None = None, allow_tma: bool | None = None,
         memory_order: MemoryOrder = MemoryOrder.WEAK,
         memory_scope: MemoryScope = MemoryScope.NONE) -> Tile:
    """Load one tile of ``array``: the ``shape`` block at tile-space position ``index``.

    The array is cut into tiles of ``shape``; ``index`` numbers them (one entry per
    dimension), so tile ``(i, j)`` holds elements ``[i*TM:(i+1)*TM, j*TN:(j+1)*TN]``.

    - ``index``: signed integers, one per array dimension (a bare int for a 1-D array); often
      ``ct.bid(0)``.
    - ``shape``: compile-time powers of two, one per dimension (``ct.Constant[int]``
      parameters or literals); ``()`` loads the single element at ``index`` as a 0-D tile.
    - ``padding_mode``: the value of the elements of a partial tile that lie outside the array:
      ``ZERO``, ``NEG_ZERO``, ``NAN``, ``POS_INF``, ``NEG_INF``, or ``UNDETERMINED`` (default:
      do not rely on them; the interpreter raises ``UndefinedBehaviorError`` where they reach
      a store or a branch).  Pad with the neutral element of what follows (ZERO before a sum,
      NEG_INF before a max).
    - ``order``: ``"C"``, ``"F"`` or a permutation: load from the array with its axes permuted
      (``order=(1, 0)`` loads a tile of the transpose).
    - ``check_bounds=False`` promises every element is inside the array (out of bounds is
      then undefined behaviour); ``latency`` and ``allow_tma`` are performance hints.
    - ``memory_order``/``memory_scope``: ``WEAK`` (default) or, with a scope, ``RELAXED`` or
      ``ACQUIRE`` for loads that synchronise with other blocks (docs/ops_atomic.md).

    Returns a tile of the array's dtype and of ``shape``.  The rules, with every error
    message, are R-LOAD-1..7 in docs/language.md.

    >>> t = ct.load(a, index=(ct.bid(0),), shape=(128,), padding_mode=ct.PaddingMode.ZERO)
    >>> m = ct.load(x, (ct.bid(0), k), (TM, TK))                    # tile (bid, k) of 2-D x
    """
    arr = coerce.require_array(coerce.fval(array))
    idx = _index(index, arr.ndim)
    tshape, scalar = _load_shape(shape, arr.ndim)
    perm = _order(order, arr.ndim)
    pad = padding_mode_of(padding_mode, arr.dtype)
    cb = _check_bounds(check_bounds)
    check_hints(latency, allow_tma)
    mo, ms = _memory_order(memory_order, memory_scope,
                           (MemoryOrder.WEAK, MemoryOrder.RELAXED, MemoryOrder.ACQUIRE),
                           "tile_load")
    return _emit_load(arr, idx, tshape, scalar, perm, pad, cb, None, mo, ms)


def _store_tile(value: FVal, arr: ArrayV, context: str) -> TileV:
    """Cast the stored value to the array dtype; scalars become all-ones tiles (R-STORE-1/2)."""
    t = coerce.implicit_cast(coerce.fval(value), arr.dtype, context)
    if t.shape == ():
        return current().emit_value(ops.Reshape(t.value, (1,) * arr.ndim))
    if len(t.shape) != arr.ndim:
        raise TileTypeError(f"Stored tile of rank {len(t.shape)} does not match the array rank "
                            f"{arr.ndim}")
    return t


@tile_op
def store(array: Array, /, index: int | Tile | tuple[int | Tile, ...], tile: Tile | int | float, *,
          order: str | tuple[int, ...] = "C", check_bounds: bool = True,
          latency: int | None = None, allow_tma: bool | None = None,
          memory_order: MemoryOrder = MemoryOrder.WEAK,
          memory_scope: MemoryScope = MemoryScope.NONE) -> None:
    """Store ``tile`` into ``array`` at tile-space position ``index`` (see ``ct.load``: the
    array is cut into tiles of the tile's shape, ``index`` numbers them).

    - Elements of a partial tile that fall outside the array are dropped (no padding).
    - ``tile`` is cast to the array's dtype when that loses nothing (an int32 tile into a
      float32 array); a narrowing store (float32 into float16) is a ``TileTypeError``: write
      ``tile.astype(array.dtype)``.  A scalar or 0-D tile stores one element at ``index``.
    - ``order``, ``check_bounds``, ``latency``, ``allow_tma`` as for ``ct.load``;
      ``memory_order`` ``WEAK`` (default) or, with a scope, ``RELAXED`` or ``RELEASE``.

    The rules are R-STORE-1..5 in docs/language.md.

    >>> ct.store(out, index=(ct.bid(0),), tile=t)
    """
    arr = coerce.require_array(coerce.fval(array))
    if arr.ndim == 0:
        raise TileTypeError("Tile-space store to a 0-D array is not supported; use ct.scatter")
    idx = _index(index, arr.ndim)
    perm = _order(order, arr.ndim)
    cb = _check_bounds(check_bounds)
    check_hints(latency, allow_tma)
    mo, ms = _memory_order(memory_order, memory_scope,
                           (MemoryOrder.WEAK, MemoryOrder.RELAXED, MemoryOrder.RELEASE),
                           "tile_store")
    v = coerce.fval(tile)
    if not (isinstance(v, TileV) or coerce.is_number_const(v)):
        raise TileTypeError(f"Expected a tile to store, got {describe(v)}")
    t = _store_tile(v, arr, "Stored tile is incompatible with array's dtype")
    current().emit(ops.Store(arr.value, idx, t.value, perm, cb, None, mo, ms))


def array_dim(arr: ArrayV, axis: int) -> FVal:
    """``arr.shape[axis]``: a constant when known at compile time, else a runtime scalar."""
    s = arr.static_shape[axis]
    if s is not None:
        return Const(s)
    return current().emit_value(ops.ArrayDim(arr.value, axis))


def _num_tiles_of(extent: FVal, tile: int) -> FVal:
    n = binary("cdiv", extent, tile, fusible=False)
    if isinstance(n, Const):
        return Const(n.value)
    return coerce.convert(n, dt.int32)


@tile_op
def num_tiles(array: Array, /, axis: int, shape: int | tuple[int, ...],
              order: str | tuple[int, ...] = "C") -> int:
    """Number of tiles of ``shape`` along tile-space ``axis`` (R-SPACE-4), as int32."""
    arr = coerce.require_array(coerce.fval(array))
    ax = coerce.normalize_axis(coerce.const_int(coerce.fval(axis), "axis"), arr.ndim)
    tshape, _ = _load_shape(shape, arr.ndim)
    perm = _order(order, arr.ndim)
    return _num_tiles_of(array_dim(arr, perm[ax]), tshape[ax])


# -- gather / scatter --------------------------------------------------------------------------
def gs_indices(arr: ArrayV, indices) -> tuple[tuple, tuple]:
    """R-GS-1: integer scalars/tiles (signed or unsigned), one per dimension, broadcast together.

    Returns (index values, index shape).
    """
    v = coerce.fval(indices)
    is_tuple = is_tuple_value(v)
    items = coerce.tuple_items(v, "indices") if is_tuple else (v,)
    for i, it in enumerate(items):
        if not (isinstance(it, TileV) or coerce.is_number_const(it)):
            raise TileTypeError(f"Expected a tuple of integer scalars/tiles or a single integer "
                                f"scalar/tile for indices, but item #{i} is {describe(it)}")
    if len(items) != arr.ndim:
        msg = f"For array of rank {arr.ndim}, `indices` must be a tuple of length {arr.ndim}"
        if arr.ndim == 1:
            msg += ", or a single scalar/tile"
        got = f"a tuple of length {len(items)}" if is_tuple else describe(v)
        raise TileTypeError(f"{msg}; got {got}")
    for i, it in enumerate(items):
        d = coerce.value_dtype(it)
        if not d.is_integral:
            for_dim = f"for dimension {i} " if len(items) > 1 else ""
            raise TileTypeError(f"Index {for_dim}has non-integer data type {d.name} (expected a "
                                f"tuple of integer scalars/tiles or a single integer scalar/tile)")
    shapes = [coerce.value_shape(i) for i in items]
    try:
        shape = coerce.broadcast_shapes(*shapes)
    except TileTypeError:
        raise TileTypeError("Index shapes " + ", ".join(str(tuple(s)) for s in shapes)
                            + " are not broadcastable to a common shape") from None
    return items, shape


def _broadcastable_to(src: tuple, dst: tuple) -> bool:
    """R-BCAST-1 without rank growth of ``dst``: ``src`` broadcasts to exactly ``dst``."""
    return len(src) <= len(dst) and all(a in (b, 1) for a, b in zip(reversed(src),
                                                                      reversed(dst)))


def _gs_common(items, shape, mask, cb):
    """Broadcast the indices; validate the mask (R-GS-5) and ``check_bounds`` (R-GS-3)."""
    idx = tuple(coerce.broadcast(coerce.to_tile(i), shape).value for i in items)
    m = coerce.fval(mask)
    mval = None
    if not (isinstance(m, Const) and m.value is None):
        if not (isinstance(m, TileV) or coerce.is_number_const(m)):
            raise TileTypeError(f"Custom mask must have boolean dtype, but got {describe(m)}")
        md = coerce.value_dtype(m)
        if not md.is_bool:
            raise TileTypeError(f"Custom mask must have boolean dtype, but got {md.name}")
        ms = coerce.value_shape(m)
        if not _broadcastable_to(ms, shape):
            raise TileTypeError(f"Custom mask shape {ms} is not broadcastable to the index "
                                f"shape {shape}")
        mval = coerce.broadcast(coerce.to_tile(m), shape).value
    return idx, mval, _check_bounds(cb)


def _tile_or_scalar(v: FVal, what: str) -> FVal:
    if not (isinstance(v, TileV) or coerce.is_number_const(v)):
        raise TileTypeError(f"Expected a tile or a scalar for {what}, got {describe(v)}")
    return v


@tile_op
def gather(array: Array, indices: Tile | tuple[Tile | int, ...], /, *, mask: Tile | None = None,
           padding_value: int | float = 0, check_bounds: bool = True,
           latency: int | None = None) -> Tile:
    """Load ``array[indices]`` elementwise; masked-off or out-of-bounds positions give
    ``padding_value`` (R-GS-1..5).  Negative indices are out of bounds.

    >>> t = ct.gather(a, bid * 8 + ct.arange(8, dtype=ct.int32))
    """
    arr = coerce.require_array(coerce.fval(array))
    items, shape = gs_indices(arr, indices)
    pv = _tile_or_scalar(coerce.fval(padding_value), "padding_value")
    ps = coerce.value_shape(pv)
    if not _broadcastable_to(ps, shape):
        raise TileTypeError(f"Padding shape {ps} is not broadcastable to the index shape "
                            f"{shape}")
    pad = coerce.implicit_cast(pv, arr.dtype, "Invalid padding value")
    check_hints(latency, None)
    idx, mval, cb = _gs_common(items, shape, mask, check_bounds)
    pad = coerce.broadcast(pad, shape)
    return current().emit_value(ops.Gather(arr.value, idx, pad.value, mval, cb))


@tile_op
def scatter(array: Array, indices: Tile | tuple[Tile | int, ...], value: Tile | int | float, /, *,
            mask: Tile | None = None, check_bounds: bool = True,
            latency: int | None = None) -> None:
    """Store ``value`` to ``array[indices]`` elementwise; masked-off or out-of-bounds positions
    are skipped (R-GS-1..7).  ``value`` broadcasts to the index shape.

    >>> ct.scatter(c, bid * 8 + ct.arange(8, dtype=ct.int32), t)
    """
    arr = coerce.require_array(coerce.fval(array))
    items, shape = gs_indices(arr, indices)
    vv = _tile_or_scalar(coerce.fval(value), "value")
    vs = coerce.value_shape(vv)
    if not _broadcastable_to(vs, shape):
        raise TileTypeError(f"Value shape {vs} is not broadcastable to the index shape {shape}")
    v = coerce.implicit_cast(vv, arr.dtype, "Stored value is incompatible with array's dtype")
    check_hints(latency, None)
    idx, mval, cb = _gs_common(items, shape, mask, check_bounds)
    v = coerce.broadcast(v, shape)
    current().emit(ops.Scatter(arr.value, idx, v.value, mval, cb))


# -- Array methods (R-ARR-1..3) ----------------------------------------------------------------
def array_slice(arr: ArrayV, axis, start, stop) -> ArrayV:
    """``a.slice(axis, start, stop)`` (R-ARR-1/2): a view; constant bounds are checked here,
    runtime bounds by the interpreter (R-UB-4)."""
    ax = coerce.const_int(coerce.fval(axis), "axis")
    if not -arr.ndim <= ax < arr.ndim:       # 1.7's wording, the reason quoted
        raise TileTypeError(f"Invalid axis for slice: 'Axis {ax} is out of range for rank "
                            f"{arr.ndim}'")
    ax = coerce.normalize_axis(ax, arr.ndim)
    bounds = []
    for name, b in (("start", start), ("stop", stop)):
        b = coerce.fval(b)
        if not is_signed_int_scalar(b):
            raise TileTypeError(f"Expected a signed integer scalar for slice {name}, but got "
                                f"{describe(b)}")
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
    """``a.tiled_view(...)`` (R-VIEW-1..3): fixes tile shape, padding mode and steps."""
    shape = coerce.const_shape(coerce.fval(tile_shape), arr.ndim, "tile_shape")
    if shape != () and len(shape) != arr.ndim:
        raise TileTypeError(f"Expected shape length to be {arr.ndim}, got {len(shape)}")
    pad = padding_mode_of(padding_mode, arr.dtype)
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
                raise TileTypeError(f"Dimension #{i} of traversal_steps {steps} is not "
                                    f"positive")
    return ViewV(arr, shape, pad, tuple(steps))


def view_load(view: ViewV, index, *, check_bounds=True, latency=None, allow_tma=None) -> TileV:
    """``v.load(index)`` (R-VIEW-5): tile-space load with the view's shape, padding, steps."""
    arr = view.array
    idx = _index(index, arr.ndim, "tiled view")
    check_hints(latency, allow_tma)
    steps = None if view.steps == view.load_shape else view.steps
    return _emit_load(arr, idx, view.load_shape, view.tile_shape == (), tuple(range(arr.ndim)),
                      view.padding, _check_bounds(check_bounds), steps)


def view_store(view: ViewV, index, tile, *, check_bounds=True, latency=None, allow_tma=None):
    """``v.store(index, tile)`` (R-VIEW-6): broadcast to the tile shape, cast, store."""
    arr = view.array
    idx = _index(index, arr.ndim, "tiled view")
    check_hints(latency, allow_tma)
    v = coerce.fval(tile)
    shape = view.load_shape
    src = coerce.value_shape(v)
    if not _broadcastable_to(src, tuple(view.tile_shape)):
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
    """``v.num_tiles(axis)`` (R-VIEW-4): cdiv(shape[axis], steps[axis]) as int32."""
    arr = view.array
    ax = coerce.normalize_axis(coerce.const_int(coerce.fval(axis), "axis"), arr.ndim)
    return _num_tiles_of(array_dim(arr, ax), view.steps[ax])

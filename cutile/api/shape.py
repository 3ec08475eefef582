"""Shape manipulation: ``reshape``, ``broadcast_to``, ``expand_dims``, ``permute``,
``transpose`` and tile ``[None]`` indexing (R-SHAPE-1..5, R-TILE-3)."""

from __future__ import annotations

from ..errors import TileTypeError
from ..frontend import coerce
from ..frontend.context import current
from ..frontend.values import Const, FVal, TileV, TupleV, describe
from ..ir import ops
from ._registry import tile_op


def _tile(x) -> TileV:
    v = coerce.fval(x)
    if coerce.is_number_const(v):
        return coerce.to_tile(v)
    if not isinstance(v, TileV):
        raise TileTypeError(f"Expected a tile, got {describe(v)}")
    return v


def reshape_to(t: TileV, shape: tuple) -> TileV:
    if t.shape == tuple(shape):
        return t
    return current().emit_value(ops.Reshape(t.value, tuple(shape)))


@tile_op
def reshape(x, /, shape):
    """Row-major reshape; one entry may be -1 (R-SHAPE-1)."""
    t = _tile(x)
    s = coerce.fval(shape)
    if not (isinstance(s, TupleV) or (isinstance(s, Const) and isinstance(s.value, tuple))):
        raise TileTypeError(f"Expected a tuple for shape, got {describe(s)}")
    dims = [coerce.const_int(i, "shape") for i in coerce.tuple_items(s, "shape")]
    if dims.count(-1) > 1:
        raise TileTypeError("Only one dimension can be -1")
    if any(d < -1 for d in dims):
        raise TileTypeError(f"Invalid dimension in shape {tuple(dims)}")
    size = t.type.size
    if -1 in dims:
        known = 1
        for d in dims:
            if d != -1:
                known *= d
        if known == 0 or size % known:
            raise TileTypeError(f"Cannot reshape {t.shape} to {tuple(dims)}")
        dims[dims.index(-1)] = size // known
    total = 1
    for d in dims:
        total *= d
    if total != size:
        raise TileTypeError(f"Cannot reshape {t.shape} to {tuple(dims)}")
    coerce.check_power_of_two_shape(tuple(dims))
    return reshape_to(t, tuple(dims))


@tile_op
def broadcast_to(x, /, shape):
    """Broadcast to a power-of-two ``shape`` without reducing rank (R-SHAPE-2)."""
    t = _tile(x)
    target = coerce.const_shape(coerce.fval(shape))
    try:
        ok = len(target) >= len(t.shape) and coerce.broadcast_shapes(t.shape, target) == target
    except TileTypeError:
        ok = False
    if not ok:
        raise TileTypeError(f"Tile shape {t.shape} is not broadcastable to {target}")
    return coerce.broadcast(t, target)


@tile_op
def expand_dims(x, /, axis):
    """Insert a length-1 axis at ``axis`` (R-SHAPE-3)."""
    t = _tile(x)
    a = coerce.const_int(coerce.fval(axis), "axis")
    nd = len(t.shape)
    if not -(nd + 1) <= a <= nd:
        raise TileTypeError(f"Axis {a} is out of range for rank {nd + 1}")
    a %= nd + 1
    return reshape_to(t, t.shape[:a] + (1,) + t.shape[a:])


def permute_axes(t: TileV, axes: tuple) -> TileV:
    if tuple(axes) == tuple(range(len(t.shape))):
        return t
    return current().emit_value(ops.Permute(t.value, tuple(axes)))


@tile_op
def permute(x, /, axes):
    """Reorder axes like ``np.transpose(x, axes)`` (R-SHAPE-4)."""
    t = _tile(x)
    items = coerce.tuple_items(coerce.fval(axes), "axes")
    nd = len(t.shape)
    if len(items) != nd:
        raise TileTypeError(f"Num axes must match input's rank {nd}, got {len(items)}")
    perm = []
    for i in items:
        a = coerce.normalize_axis(coerce.const_int(i, "axes"), nd)
        if a in perm:
            raise TileTypeError(f"Repeated axis {a} in permute")
        perm.append(a)
    return permute_axes(t, tuple(perm))


@tile_op
def transpose(x, /, axis0=None, axis1=None):
    """Swap two axes; with both ``None`` the two axes of a 2-D tile (R-SHAPE-5)."""
    t = _tile(x)
    nd = len(t.shape)
    if nd < 2:
        raise TileTypeError("Cannot transpose a tile with fewer than 2 dimensions")
    a0, a1 = coerce.fval(axis0), coerce.fval(axis1)
    none0 = isinstance(a0, Const) and a0.value is None
    none1 = isinstance(a1, Const) and a1.value is None
    if none0 != none1:
        raise TileTypeError("axis0 and axis1 must either both be specified or both be None")
    if none0:
        if nd > 2:
            raise TileTypeError("axis0 and axis1 must be specified for tile with more than 2 "
                                "dimensions")
        i, j = 0, 1
    else:
        i = coerce.normalize_axis(coerce.const_int(a0, "axis0"), nd)
        j = coerce.normalize_axis(coerce.const_int(a1, "axis1"), nd)
    perm = list(range(nd))
    perm[i], perm[j] = perm[j], perm[i]
    return permute_axes(t, tuple(perm))


def index_newaxis(t: TileV, idx: FVal) -> FVal:
    """``t[:, None]`` style subscripts: only ``None``, ``...`` and full slices (R-TILE-3)."""
    items = coerce.tuple_items(idx, "subscript") if isinstance(idx, TupleV) else (idx,)
    consts = []
    for it in items:
        if not isinstance(it, Const) or not (it.value is None or it.value is Ellipsis or (
                isinstance(it.value, slice) and it.value == slice(None))):
            raise TileTypeError("Directly indexing a tile is not supported; use ct.extract, "
                                "t.item() or ct.insert")
        consts.append(it.value)
    if consts.count(Ellipsis) > 1:
        raise TileTypeError("An index can only have a single ellipsis")
    n_full = sum(1 for c in consts if isinstance(c, slice))
    nd = len(t.shape)
    if n_full > nd:
        raise TileTypeError(f"Too many indices for a tile of rank {nd}")
    if Ellipsis in consts:
        e = consts.index(Ellipsis)
        consts[e:e + 1] = [slice(None)] * (nd - n_full)
    else:
        consts += [slice(None)] * (nd - n_full)
    shape, src = [], 0
    for c in consts:
        if c is None:
            shape.append(1)
        else:
            shape.append(t.shape[src])
            src += 1
    return reshape_to(t, tuple(shape))


def item(t: TileV) -> TileV:
    if t.type.size != 1:
        raise TileTypeError(f"Cannot reshape {t.shape} to ()")
    return reshape_to(t, ())

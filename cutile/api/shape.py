"""Shape manipulation: ``reshape``, ``broadcast_to``, ``expand_dims``, ``permute``,
``transpose`` and tile ``[None]`` indexing (R-SHAPE-1..5, R-TILE-3)."""

from __future__ import annotations

from .. import dtypes as dt
from ..dtypes import DType
from ..errors import TileTypeError
from ..ir import ops
from ..lang import coerce
from ..lang.context import current
from ..lang.registry import tile_op
from ..lang.values import Const, FVal, TileV, TupleV, describe
from .classes import Tile


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
def reshape(x: Tile, /, shape: int | tuple[int, ...]) -> Tile:
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
def broadcast_to(x: Tile, /, shape: int | tuple[int, ...]) -> Tile:
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
def expand_dims(x: Tile, /, axis: int) -> Tile:
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
def permute(x: Tile, /, axes: tuple[int, ...]) -> Tile:
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
def transpose(x: Tile, /, axis0: int | None = None, axis1: int | None = None) -> Tile:
    """Swap two axes; with both ``None`` the two axes of a 2-D tile (R-SHAPE-5)."""
    t = _tile(x)
    nd = len(t.shape)
    if nd < 2:
        raise TileTypeError("Cannot transpose a tile with fewer than 2 dimensions")
    a0, a1 = coerce.fval(axis0), coerce.fval(axis1)
    none0 = isinstance(a0, Const) and a0.value is None
    none1 = isinstance(a1, Const) and a1.value is None
    if none0 != none1:
        raise TileTypeError("transpose axes must either both be specified or both be None "
                            "(axis0, axis1)")
    if none0:
        if nd > 2:
            raise TileTypeError("`axes` must be specified for tile with more than 2 "
                                "dimensions: pass axis0 and axis1")
        i, j = 0, 1
    else:
        i = coerce.normalize_axis(coerce.const_int(a0, "axis0"), nd)
        j = coerce.normalize_axis(coerce.const_int(a1, "axis1"), nd)
    perm = list(range(nd))
    perm[i], perm[j] = perm[j], perm[i]
    return permute_axes(t, tuple(perm))


def index_newaxis(t: TileV, idx: FVal) -> FVal:
    """``t[:, None]`` style subscripts: only ``None``, ``...`` and full slices (R-TILE-3).
    As 1.7, a key that is not a tuple may only be ``None`` (``t[:]`` and ``t[...]`` are
    refused: direct indexing)."""
    if not isinstance(idx, TupleV) and not (isinstance(idx, Const) and idx.value is None):
        raise TileTypeError("Directly indexing a tile is not supported; use ct.extract, "
                            "t.item() or ct.insert")
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


# -- cat / extract / insert (R-SHAPE-6..10) -------------------------------------------------------
@tile_op
def cat(tiles: tuple[Tile, ...], /, axis: int) -> Tile:
    """Concatenate a tuple of one or two tiles along constant ``axis`` (R-SHAPE-6).

    >>> c = ct.cat((a, b), axis=0)            # two (2, 4) tiles -> (4, 4)
    """
    v = coerce.fval(tiles)
    if not (isinstance(v, TupleV) or (isinstance(v, Const) and isinstance(v.value, tuple))):
        raise TileTypeError(f"cat() expects a tuple of tiles, got {describe(v)}")
    items = coerce.tuple_items(v, "tiles")
    if not items:
        raise TileTypeError("cat() received an empty tuple")
    if len(items) > 2:
        raise TileTypeError(f"cat() supports at most 2 tiles, got {len(items)}")
    ts = [_tile(i) for i in items]
    ax = coerce.const_int(coerce.fval(axis), "axis")
    if len(ts) == 1:
        coerce.normalize_axis(ax, len(ts[0].shape))
        return ts[0]
    a, b = ts
    if a.dtype is not b.dtype:
        raise TileTypeError(f"cat(): Expected tiles to have the same dtype, got "
                            f"{a.dtype.name} and {b.dtype.name}")
    if len(a.shape) != len(b.shape):
        raise TileTypeError(f"cat(): Expected tiles to have the same rank, got "
                            f"{len(a.shape)} and {len(b.shape)}")
    ax = coerce.normalize_axis(ax, len(a.shape))
    if any(x != y for i, (x, y) in enumerate(zip(a.shape, b.shape)) if i != ax):
        raise TileTypeError(f"cat(): Expected tiles to have the same shape for non axis "
                            f"dimensions, got {a.shape} and {b.shape}")
    shape = list(a.shape)
    shape[ax] += b.shape[ax]
    if shape[ax] & (shape[ax] - 1):
        raise TileTypeError(f"Result tile shape must be power of 2, got {tuple(shape)}")
    return current().emit_value(ops.Cat(a.value, b.value, ax))


def _cell_index(index, nd: int) -> list:
    """R-SHAPE-9: a tuple of ``nd`` signed integer scalars (a bare scalar for 1-D)."""
    v = coerce.fval(index)
    if isinstance(v, TupleV) or (isinstance(v, Const) and isinstance(v.value, tuple)):
        items = list(coerce.tuple_items(v, "index"))
    else:
        items = [v]
    if len(items) != nd:
        raise TileTypeError(f"Index size {len(items)} does not match the tile rank {nd}")
    return items


def _cell_values(items, shape, cell) -> tuple:
    """Index scalars as IR values; constant ones are range-checked (R-SHAPE-7)."""
    out = []
    for d, (it, n, s) in enumerate(zip(items, shape, cell)):
        idx = coerce.signed_index(it)
        if isinstance(it, Const) and not 0 <= it.value < n // s:
            raise TileTypeError(f"Index {it.value} is out of bounds for axis {d} with "
                                f"{n // s} cells of size {s}")
        out.append(idx.value)
    return tuple(out)


def _check_divides(shape, cell, what: str) -> None:
    for n, s in zip(shape, cell):
        if s <= 0 or n % s:
            raise TileTypeError(f"Tile shape {shape} is not divisible by {what} shape {cell}")


@tile_op
def extract(x: Tile, /, index: int | tuple[int, ...], shape: int | tuple[int, ...]) -> Tile:
    """Grid cell ``index`` of ``x`` cut into cells of constant ``shape`` (R-SHAPE-7).

    ``index`` counts cells, not elements: ``extract(t, (i, j), (2, 4))`` is
    ``t[2*i:2*i+2, 4*j:4*j+4]``.  ``shape=()`` takes one element as a 0-d tile.
    >>> half = ct.extract(t, (1,), (4,))      # (8,) -> elements 4..7
    """
    t = _tile(x)
    nd = len(t.shape)
    sv = coerce.fval(shape)
    cell = coerce.const_shape(sv, nd, "shape")
    scalar = cell == ()
    if scalar:
        cell = (1,) * nd
    _check_divides(t.shape, cell, "extract")
    idx = _cell_values(_cell_index(index, nd), t.shape, cell)
    out = current().emit_value(ops.Extract(t.value, idx, cell))
    return reshape_to(out, ()) if scalar else out


@tile_op
def insert(x: Tile, /, index: int | tuple[int, ...], value: Tile) -> Tile:
    """A copy of ``x`` with grid cell ``index`` (cell shape: ``value.shape``) set to ``value``
    (R-SHAPE-8); ``value.dtype`` must equal ``x.dtype``.

    >>> t = ct.insert(t, (0,), ct.zeros((4,), t.dtype))   # first four elements set to 0
    """
    t = _tile(x)
    nd = len(t.shape)
    v = coerce.fval(value)
    if coerce.is_number_const(v):
        v = coerce.to_tile(v, t.dtype) if v.is_loose else coerce.to_tile(v)
    if not isinstance(v, TileV):
        raise TileTypeError(f"Expected a tile for value, got {describe(v)}")
    if v.dtype is not t.dtype:
        raise TileTypeError(f"Cannot insert a tile of dtype {v.dtype.name} into a tile of dtype "
                            f"{t.dtype.name}")
    if v.shape == ():
        v = reshape_to(v, (1,) * nd)
    if len(v.shape) != nd:
        raise TileTypeError(f"Value rank {len(v.shape)} does not match the tile rank {nd}")
    _check_divides(t.shape, v.shape, "value")
    idx = _cell_values(_cell_index(index, nd), t.shape, v.shape)
    return current().emit_value(ops.Insert(t.value, v.value, idx))


# -- bitcast / pack / unpack (R-BITCAST-1..3) -----------------------------------------------------
def _bits_dtype(d, what: str):
    target = dt.normalize_dtype(coerce.const_value(coerce.fval(d), what))
    if target is None:
        raise TileTypeError(f"Expected a dtype for {what}, got {describe(coerce.fval(d))}")
    return target


@tile_op
def bitcast(x: Tile, /, dtype: DType) -> Tile:
    """Reinterpret each element's bits as ``dtype`` of the same width (R-BITCAST-1).

    >>> u = ct.bitcast(f, ct.uint32)          # float32 1.0 -> 0x3f800000
    """
    t = _tile(x)
    target = _bits_dtype(dtype, "dtype")
    if t.dtype.is_bool or target.is_bool:
        raise TileTypeError("bitcast to or from bool is not supported")
    if t.dtype.is_foreign_pointer or target.is_foreign_pointer:     # §7: not numeric
        raise TileTypeError("bitcast to or from a foreign pointer is not supported")
    if t.dtype.bitwidth != target.bitwidth:
        raise TileTypeError(f"Cannot bitcast {t.dtype.name} to {target.name}: bit width is "
                            f"different ({t.dtype.bitwidth} vs {target.bitwidth})")
    if target is t.dtype:
        return t
    return current().emit_value(ops.Bitcast(t.value, target))


@tile_op
def pack_to_bytes(x: Tile, /) -> Tile:
    """The row-major, little-endian bytes of ``x`` as a 1-D ``uint8`` tile (R-BITCAST-2).

    >>> b = ct.pack_to_bytes(ct.full((1,), 0x04030201, ct.int32))   # [1, 2, 3, 4]
    """
    t = _tile(x)
    if t.dtype.is_bool:
        raise TileTypeError("pack_to_bytes from a bool_ tile is not supported")
    if t.type.size * t.dtype.bitwidth % 8:
        raise TileTypeError(f"pack_to_bytes: {t.type.size} elements of {t.dtype.name} are not a "
                            "whole number of bytes")
    return current().emit_value(ops.PackBytes(t.value))


@tile_op
def unpack_from_bytes(x: Tile, /, dtype: DType) -> Tile:
    """Inverse of ``pack_to_bytes``: a 1-D ``uint8`` tile read as ``dtype`` (R-BITCAST-3).

    >>> w = ct.unpack_from_bytes(ct.arange(4, dtype=ct.uint8) + 1, ct.int32)  # [0x04030201]
    """
    t = _tile(x)
    target = _bits_dtype(dtype, "dtype")
    if len(t.shape) != 1:
        raise TileTypeError(f"unpack_from_bytes requires a 1D tile, got shape {t.shape}")
    if t.dtype is not dt.uint8:
        raise TileTypeError(f"unpack_from_bytes requires uint8 tile, got {t.dtype.name}")
    if target.is_bool:
        raise TileTypeError("unpack_from_bytes to a bool_ tile is not supported: bool_ has no "
                            "bit layout; unpack to uint8 and compare with 0")
    if t.shape[0] * 8 % target.bitwidth:
        raise TileTypeError(f"unpack_from_bytes: {t.shape[0] * 8} bits are not divisible by "
                            f"{target.bitwidth}")
    return current().emit_value(ops.UnpackBytes(t.value, target))

"""Advanced indexing: one gathered (*sparse*) dimension and dense ``Slice`` dimensions
(spec §10, R-ADV-1..6).

The sparse index tile and one ``start + arange(length)`` per dense dimension are broadcast
against each other (each along its own axis) into a gather/scatter index grid: out-of-bounds
lanes of a load take the ``padding_mode`` value, those of a store are dropped (R-ADV-4/5).  The
IR ops (``AdvancedGather``/``AdvancedScatter``) are gather/scatter that also know the sparse
axis and padding mode, so the interpreter checks R-UB-1, R-UB-7 and UNDETERMINED padding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import dtypes as dt
from ..enums import PaddingMode
from ..errors import TileTypeError
from ..ir import ops
from ..lang import coerce
from ..lang.context import current
from ..lang.registry import tile_op
from ..lang.values import Const, SliceV, TileV, describe
from ..padding import padding_value
from .classes import Array, Tile
from .elementwise import binary
from .memory import check_hints, is_signed_int_scalar, is_tuple_value, padding_mode_of


@dataclass(frozen=True)
class HostSlice:
    """``ct.Slice(start, length)`` built in host code (only meaningful inside a kernel)."""

    start: int
    length: int


def _slice_impl(start: Tile | int, length: int, /) -> HostSlice:
    """A dense dimension ``[start, start + length)`` of ``load/store_advanced_indexing``
    (R-ADV-2): ``start`` a signed integer scalar, ``length`` a constant power of two.

    >>> t = ct.load_advanced_indexing(a, (rows, ct.Slice(0, 16)))
    """
    s = coerce.fval(start)
    if not is_signed_int_scalar(s):
        raise TileTypeError(f"Slice start must be a signed integer scalar, got {describe(s)}")
    n = coerce.fval(length)
    if not (isinstance(n, Const) and isinstance(n.value, int)
            and not isinstance(n.value, bool)):
        raise TileTypeError(f"Slice length must be a compile-time constant integer, got "
                            f"{describe(n)}")
    if n.value <= 0 or n.value & (n.value - 1):
        raise TileTypeError(f"Slice length must be a positive power of two, got {n.value}")
    return SliceV(s, n.value)


Slice = tile_op(_slice_impl, host=HostSlice, name="Slice")


def _indices(arr, indices) -> tuple[list, tuple, int]:
    """R-ADV-1/2: the gather index tiles (one per dimension, each along its own axis), the
    implied tile shape and the sparse axis."""
    if arr.ndim < 2:
        raise TileTypeError(f"Advanced indexing requires a 2D or higher-rank array, got rank "
                            f"{arr.ndim}")
    v = coerce.fval(indices)
    if not is_tuple_value(v):
        raise TileTypeError(f"Expected a tuple of indices, got {describe(v)}")
    items = coerce.tuple_items(v, "indices")
    if len(items) != arr.ndim:
        raise TileTypeError(f"Number of indices {len(items)} does not match array rank "
                            f"{arr.ndim}")
    tiles = [i for i, it in enumerate(items) if isinstance(it, TileV)]
    for i, it in enumerate(items):
        if not isinstance(it, (TileV, SliceV)):
            raise TileTypeError(f"Index #{i} must be a 1D integer Tile or a ct.Slice, got "
                                f"{describe(it)}")
    if len(tiles) != 1:
        raise TileTypeError(f"exactly one index must be a 1D integer Tile, got {len(tiles)}")
    sparse = items[tiles[0]]
    if len(sparse.shape) != 1 or not sparse.dtype.is_integral:
        raise TileTypeError(f"Sparse index must be a 1D integer tile, got {describe(sparse)}")
    shape = tuple(it.shape[0] if isinstance(it, TileV) else it.length for it in items)
    out = []
    for ax, it in enumerate(items):
        axis_shape = tuple(shape[ax] if j == ax else 1 for j in range(arr.ndim))
        if isinstance(it, TileV):
            t = it
        else:
            iota = current().emit_value(ops.Iota(it.length, dt.int64))
            start = it.start if isinstance(it.start, Const) else coerce.convert(it.start,
                                                                               dt.int64)
            t = binary("add", iota, Const(start.value, dt.int64)
                       if isinstance(start, Const) else start, fusible=False)
        out.append(current().emit_value(ops.Reshape(t.value, axis_shape)))
    return out, shape, tiles[0]


def _broadcast_all(idx: list, shape: tuple) -> tuple:
    return tuple(coerce.broadcast(t, shape).value for t in idx)


@tile_op
def load_advanced_indexing(array: Array, indices: tuple[Any, ...], /, *,
                           padding_mode: PaddingMode = PaddingMode.UNDETERMINED,
                           latency: int | None = None, allow_tma: bool | None = None) -> Tile:
    """Load rows ``indices[sparse]`` of ``array`` with dense ``Slice``s on the other dimensions
    (R-ADV-1..4); out-of-bounds elements take the ``padding_mode`` fill.

    >>> t = ct.load_advanced_indexing(x, (ct.arange(4, dtype=ct.int32), ct.Slice(2, 4)))
    """
    arr = coerce.require_array(coerce.fval(array))
    idx, shape, sparse = _indices(arr, indices)
    mode = padding_mode_of(padding_mode, arr.dtype)
    check_hints(latency, allow_tma)
    pad = coerce.implicit_cast(Const(padding_value(mode)), arr.dtype, "Invalid padding value")
    pad = coerce.broadcast(pad, shape)
    return current().emit_value(ops.AdvancedGather(arr.value, _broadcast_all(idx, shape),
                                                   pad.value, None, True, sparse, mode))


@tile_op
def store_advanced_indexing(array: Array, indices: tuple[Any, ...], tile: Tile | int | float, /,
                            *, latency: int | None = None, allow_tma: bool | None = None) -> None:
    """Store ``tile`` to rows ``indices[sparse]`` and dense ``Slice``s of ``array``
    (R-ADV-5); out-of-bounds elements are dropped.  ``tile.shape`` must equal the implied shape.

    >>> ct.store_advanced_indexing(y, (rows, ct.Slice(0, 16)), t)
    """
    arr = coerce.require_array(coerce.fval(array))
    idx, shape, sparse = _indices(arr, indices)
    check_hints(latency, allow_tma)
    v = coerce.fval(tile)
    if not (isinstance(v, TileV) or coerce.is_number_const(v)):
        raise TileTypeError(f"Expected a tile to store, got {describe(v)}")
    if coerce.value_shape(v) != shape:
        raise TileTypeError(f"Tile shape {coerce.value_shape(v)} does not match the shape "
                            f"implied by indices {shape}")
    t = coerce.implicit_cast(v, arr.dtype, "Stored tile is incompatible with array's dtype")
    current().emit(ops.AdvancedScatter(arr.value, _broadcast_all(idx, shape), t.value, None,
                                       True, sparse))


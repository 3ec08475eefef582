"""Foreign pointers (§7): ``Array.foreign_pointer`` and ``Array.from_foreign``.

A foreign pointer is a scalar of dtype ``foreign_pointer[T]`` (``cutile.dtypes.
foreign_pointer_dtype``): it can be broadcast, reshaped and chosen with ``ct.where``, and turned
back into an array; it supports no numeric operation."""

from __future__ import annotations

from .. import dtypes as dt
from ..errors import TileTypeError
from ..ir import ops
from ..lang import coerce
from ..lang.context import current
from ..lang.registry import tile_op
from ..lang.values import ArrayV, Const, TileV, describe


def foreign_pointer(arr: ArrayV) -> TileV:
    """``a.foreign_pointer``: the array's base pointer as a scalar foreign pointer."""
    return current().emit_value(ops.ForeignPointer(arr.value))


def _extents(v, what: str) -> tuple:
    items = coerce.tuple_items(coerce.fval(v), what)
    out = []
    for it in items:
        if isinstance(it, Const) and isinstance(it.value, int) and not isinstance(it.value,
                                                                                  bool):
            if it.value < 0:
                raise TileTypeError(f"Array.from_foreign: {what} must be non-negative, got "
                                    f"{it.value}")
            out.append(it)
        elif isinstance(it, TileV) and it.shape == () and it.dtype.is_signed:
            out.append(it)
        else:
            raise TileTypeError(f"Array.from_foreign: {what} must hold signed integer scalars, "
                                f"got {describe(it)}")
    return tuple(out)


@tile_op
def from_foreign(pointer, shape, strides):
    """``ct.Array.from_foreign(pointer, shape, strides)``: an array of the pointer's pointee
    dtype with ``shape`` and ``strides`` (in elements; non-negative signed integers).

    >>> view = ct.Array.from_foreign(x.foreign_pointer, x.shape, x.strides)
    """
    p = coerce.fval(pointer)
    if not (isinstance(p, TileV) and p.shape == () and p.dtype.is_foreign_pointer):
        raise TileTypeError(f"Array.from_foreign expects a scalar foreign pointer, got "
                            f"{describe(p)}")
    sh, st = _extents(shape, "shape"), _extents(strides, "strides")
    if len(sh) != len(st):
        raise TileTypeError(f"Array.from_foreign: shape and strides must have the same rank, "
                            f"got {len(sh)} and {len(st)}")
    wide = any(isinstance(v, TileV) and v.dtype is dt.int64 for v in sh + st)
    idx = dt.int64 if wide else dt.int32

    def scalar(v):
        return coerce.to_tile(v, idx) if isinstance(v, Const) else coerce.convert(v, idx)

    static = tuple(v.value if isinstance(v, Const) else None for v in sh)
    op = ops.FromForeign(p.value, tuple(scalar(v).value for v in sh),
                         tuple(scalar(v).value for v in st))
    return current().emit_array(op, static)

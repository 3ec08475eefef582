"""Foreign pointers (§7): an array's base as a scalar of a foreign pointer dtype, and an array
built from such a pointer with a shape and strides."""

from __future__ import annotations

from ...dtypes import foreign_pointer_dtype, foreign_pointer_pointee_dtype, int32, int64
from ..core import Op, Value, opdef
from ..types import ArrayType, TileType
from . import _check


@opdef("pointer", pure=True)
class ForeignPointer(Op):
    """``array.foreign_pointer``: a 0-D tile of ``foreign_pointer[dtype]``."""

    array: Value

    def infer(self):
        a = _check.array(self.array, self, "array")
        return [TileType(foreign_pointer_dtype(a.dtype), ())]


@opdef("pointer", pure=True)
class FromForeign(Op):
    """``Array.from_foreign(pointer, shape, strides)``: strides in elements, one scalar per
    dimension for each; the index dtype is int64 when any of them is int64."""

    pointer: Value
    shape: tuple
    strides: tuple

    def infer(self):
        p = _check.scalar(self.pointer, self, "pointer")
        _check.expect(p.dtype.is_foreign_pointer, self, "pointer must be a foreign pointer")
        _check.expect(len(self.shape) == len(self.strides), self, "shape/strides rank")
        wide = False
        for v in self.shape + self.strides:
            t = _check.scalar(v, self, "extent")
            _check.expect(t.dtype.is_signed, self, "extents must be signed integers")
            wide |= t.dtype is int64
        return [ArrayType(foreign_pointer_pointee_dtype(p.dtype), len(self.shape),
                          int64 if wide else int32)]


__all__ = ["ForeignPointer", "FromForeign"]

"""Compile-time values of the frontend's abstract interpretation.

The frontend evaluates the kernel's Python source over these: constants (loose or strictly
typed numbers and any other compile-time object), runtime tiles and arrays (backed by IR
values), tuples, tiled views, functions/closures and bound methods.  Only tiles and arrays
reach the IR.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from .. import dtypes as dt
from ..dtypes import DType
from ..enums import PaddingMode
from ..ir.core import Value
from ..ir.types import ArrayType, TileType


class FVal:
    """Base of frontend values."""

    kind = "value"


@dataclass(eq=False)
class Const(FVal):
    """A compile-time constant.  Numbers with ``dtype is None`` are loosely typed (R-CONST-3)."""

    value: Any
    dtype: DType | None = None
    kind = "constant"

    @property
    def is_number(self) -> bool:
        return isinstance(self.value, (bool, int, float)) and not isinstance(self.value, DType)

    @property
    def is_loose(self) -> bool:
        return self.dtype is None and self.is_number

    def __repr__(self) -> str:
        return f"Const({self.value!r}{', ' + self.dtype.name if self.dtype else ''})"


@dataclass(eq=False)
class TileV(FVal):
    """A runtime tile or scalar (0-d tile)."""

    value: Value
    kind = "tile"

    @property
    def type(self) -> TileType:
        return self.value.type

    @property
    def dtype(self) -> DType:
        return self.value.type.dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return self.value.type.shape


@dataclass(eq=False)
class ArrayV(FVal):
    """A global array (kernel argument or a view of one).  ``static_shape`` holds the extents
    known at compile time (``None`` where runtime); ``static_strides`` the strides so known (in
    elements; empty when none is, as for views)."""

    value: Value
    static_shape: tuple
    static_strides: tuple = ()
    kind = "array"

    @property
    def type(self) -> ArrayType:
        return self.value.type

    @property
    def dtype(self) -> DType:
        return self.value.type.dtype

    @property
    def ndim(self) -> int:
        return self.value.type.ndim


@dataclass(eq=False)
class TupleV(FVal):
    items: tuple
    kind = "tuple"


@dataclass(eq=False)
class FmtV(FVal):
    """A string holding runtime values (an f-string over tiles): literal ``str`` parts and
    ``(TileV, printf_fmt.Spec)`` parts, printed by ``ct.print`` (R-PRINT-3/4)."""

    parts: tuple
    kind = "formatted string"


@dataclass(eq=False)
class SliceV(FVal):
    """``ct.Slice(start, length)`` in tile code: a dense dimension of advanced indexing (§10);
    ``start`` a signed integer scalar (runtime allowed), ``length`` a constant power of two."""

    start: FVal
    length: int
    kind = "slice"


@dataclass(eq=False)
class ViewV(FVal):
    """``Array.tiled_view(...)``: an array with a fixed tile shape, padding and steps (§8)."""

    array: ArrayV
    tile_shape: tuple          # as given (R-VIEW-3), () allowed
    padding: PaddingMode
    steps: tuple               # normalised, one per dim
    kind = "tiled view"

    @property
    def load_shape(self) -> tuple:
        return self.tile_shape if self.tile_shape != () else (1,) * self.array.ndim


@dataclass(eq=False)
class RawMemV(FVal):
    """``Array.get_raw_memory()``: element-offset access from the array's base (§7)."""

    array: ArrayV
    kind = "raw array memory"


@dataclass(eq=False)
class FuncV(FVal):
    """A nested ``def`` or ``lambda``: its AST, the defining function's source info and the
    captured environment: the enclosing scope's variables as they are when the closure is
    called, frozen once that scope ends (R-PY-6)."""

    node: Any
    name: str
    closure: dict
    globals: dict
    source: Any             # SourceInfo of the enclosing function
    defaults: dict = field(default_factory=dict)
    scope: Any = None       # the defining function's Env: read at each call (R-PY-6)
    kind = "function"


@dataclass(eq=False)
class BoundMethod(FVal):
    """``obj.method`` of a tile, array or view, waiting to be called."""

    obj: FVal
    name: str
    kind = "method"


@dataclass(eq=False)
class RangeV(FVal):
    start: FVal
    stop: FVal
    step: FVal
    kind = "range"


@dataclass(eq=False)
class Invalid(FVal):
    """A name whose value depends on the path taken or that is not defined on every path."""

    name: str
    reason: str
    kind = "invalid"


def describe(v: FVal) -> str:
    """Short human description for error messages."""
    if isinstance(v, Const):
        if v.is_loose:
            return f"constant {v.value!r}"
        if v.dtype is not None:
            return f"{v.dtype.name} constant {v.value!r}"
        if isinstance(v.value, enum.Enum):                       # 1.7's words
            return f"<enum constant {type(v.value).__name__}.{v.value.name}>"
        return f"{type(v.value).__name__} {v.value!r}"
    if isinstance(v, TileV):
        return str(v.type) if v.shape else f"{v.dtype.name} scalar"
    if isinstance(v, ArrayV):
        return f"array {v.type}"
    return v.kind


def type_str(v: FVal) -> str:
    """A value's type in cuda.tile 1.7's notation (``Tile[int32,()]``, ``None``,
    ``GeneratorContextManager[...]``), for its "Unsupported operand types" errors."""
    if isinstance(v, Const) and v.value is None:
        return "None"
    if isinstance(v, Const) and type(v.value) in (bool, int, float):
        d = v.dtype or {bool: dt.bool_, int: dt.int32, float: dt.float32}[type(v.value)]
        return f"Tile[{d.name},()]"
    if isinstance(v, TileV):
        return f"Tile[{v.dtype.name},{tuple(v.shape)}]".replace(" ", "")
    if isinstance(v, ContextV):
        args = ", ".join(type_str(a) for a in v.args)
        kwargs = ", ".join(f"{k}: {type_str(a)}" for k, a in v.kwargs.items())
        return f"GeneratorContextManager[{v.func!r}, args=[{args}], kwargs={{{kwargs}}}]"
    return describe(v)


@dataclass(eq=False)
class ListV(TupleV):
    """A list-of-arrays kernel argument (R-PY-4): a tuple of arrays whose length is fixed by the
    specialisation; it also takes runtime indices and its ``len`` is an int32."""

    kind = "list"


@dataclass(eq=False)
class DataclassV(FVal):
    """An instance of a frozen dataclass built in tile code or passed in (R-PY-10): its class
    and one frontend value per field."""

    cls: type
    fields: dict
    kind = "dataclass"


@dataclass(eq=False)
class ContextV(FVal):
    """A ``@contextmanager`` helper called in tile code, waiting for ``with`` (R-PY-12)."""

    func: Any
    args: tuple
    kwargs: dict
    entered: list = field(default_factory=list)
    kind = "context manager"

"""IR value types: tiles (scalars are 0-d tiles) and arrays.  Every IR value has one of these."""

from __future__ import annotations

from dataclasses import dataclass

from ..dtypes import DType, int32


@dataclass(frozen=True)
class TileType:
    """A tile of ``dtype`` and constant ``shape``; ``shape == ()`` is a scalar (R-TILE-2)."""

    dtype: DType
    shape: tuple[int, ...] = ()

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def is_scalar(self) -> bool:
        return self.shape == ()

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __str__(self) -> str:
        return f"tile<{self.dtype.name}{''.join(f'x{d}' for d in self.shape)}>" if self.shape \
            else self.dtype.name


@dataclass(frozen=True)
class ArrayType:
    """A global array argument (or a view of one): dtype, rank and index dtype (R-ARRAY-1/2)."""

    dtype: DType
    ndim: int
    index_dtype: DType = int32

    def __str__(self) -> str:
        return f"array<{self.dtype.name}, {self.ndim}d>"


Type = TileType | ArrayType

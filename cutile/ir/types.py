"""IR value types: tiles (scalars are 0-d tiles) and arrays.  Every IR value has one of these."""

from __future__ import annotations

from dataclasses import dataclass

from ..dtypes import DType, int32
from ..errors import TileValueError

# The most elements one tile may hold.  1.7 documents no number (its compiler fails later, on
# the GPU); cutile rejects bigger tiles at compile time so that no executor tries to allocate
# them (an interpreter tile of 2**40 elements would be 4 TiB).  2**24 is far above anything a
# block can hold in registers or shared memory.
MAX_TILE_ELEMENTS = 1 << 24


def check_tile_size(shape: tuple) -> None:
    """TileValueError when a tile of ``shape`` would hold more than MAX_TILE_ELEMENTS."""
    n = 1
    for d in shape:
        n *= d
    if n > MAX_TILE_ELEMENTS:
        raise TileValueError(f"Tile shape {tuple(shape)} has {n} elements, more than the "
                             f"{MAX_TILE_ELEMENTS} (2**24) elements a tile may hold; "
                             "use a smaller tile shape and loop over the tiles")


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

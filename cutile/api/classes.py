"""The ``Tile``, ``Array``, ``TiledView`` and ``Scalar`` names, used in annotations.

Tile code never instantiates them: tiles, arrays and views are frontend values.  They exist
so that kernels annotated for cuda.tile (``def f(a: ct.Array, t: ct.Tile)``) import unchanged.
"""

from __future__ import annotations

from .pointer import from_foreign


class Tile:
    """An immutable n-d value with a dtype and a power-of-two shape (R-TILE-1..5)."""

    def __init__(self, *args, **kwargs):
        raise TypeError("Tiles exist only in tile code")


class Array:
    """A global array kernel argument or a view of one (R-ARRAY-1..4, §7)."""

    def __init__(self, *args, **kwargs):
        raise TypeError("Arrays exist only as kernel arguments")

    from_foreign = None      # set below: ``Array.from_foreign`` is a tile op (api/pointer.py)


class TiledView:
    """``Array.tiled_view(...)``: an array partitioned into tiles of one shape (§8)."""

    def __init__(self, *args, **kwargs):
        raise TypeError("Tiled views exist only in tile code")


class RawArrayMemory:
    """``Array.get_raw_memory()``: loads, stores and atomics by element offset (§7)."""

    def __init__(self, *args, **kwargs):
        raise TypeError("RawArrayMemory exists only in tile code")


Scalar = int | float | bool | Tile


def _attach() -> None:
    Array.from_foreign = from_foreign


_attach()

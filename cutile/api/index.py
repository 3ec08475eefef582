"""Execution-space queries: ``bid`` and ``num_blocks`` (R-EXEC-2)."""

from __future__ import annotations

from ..errors import TileTypeError
from ..ir import ops
from ..lang import coerce
from ..lang.context import current
from ..lang.registry import tile_op
from ..lang.values import Const
from .classes import Tile


def _axis(axis) -> int:
    a = coerce.fval(axis)
    if not (isinstance(a, Const) and isinstance(a.value, int) and a.value in (0, 1, 2)
            and not isinstance(a.value, bool)):
        raise TileTypeError("Axis must be 0, 1, or 2")
    return a.value


@tile_op
def bid(axis: int) -> Tile:
    """This block's coordinate along grid ``axis`` (int32).

    >>> @ct.kernel
    ... def k(out):
    ...     ct.store(out, (ct.bid(0),), ct.bid(0))
    """
    return current().emit_value(ops.BlockId(_axis(axis)))


@tile_op
def num_blocks(axis: int) -> Tile:
    """The grid's extent along ``axis`` (int32)."""
    return current().emit_value(ops.NumBlocks(_axis(axis)))

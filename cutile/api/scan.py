"""Scans: ``cumsum``, ``cumprod`` and ``scan`` with a user combiner (R-SCAN-1..3).

Inclusive prefix scans along one constant axis, shape preserved, dtype as R-RED-3 (no
widening; bool -> int32).  ``reverse=True`` scans from the end.  Combination order (so float
results are reproducible): strictly sequential along the axis, ``out[0] = x[0]``,
``out[i] = out[i-1] op x[i]`` (reversed: ``out[i] = x[i] op out[i+1]``); float16/bfloat16
``cumsum``/``cumprod`` run in float32 and round each output once.  cuda.tile 1.7 has no
``exclusive`` argument: an exclusive scan is ``cumsum(x) - x`` or a shifted ``cat``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..enums import RoundingMode
from ..ir import ops
from ..lang import coerce
from ..lang.context import current
from ..lang.registry import tile_op
from ..lang.values import TileV, TupleV
from . import _combiner
from .classes import Tile
from .reduce import reduction_input


def _axis(axis, ndim: int) -> int:
    return coerce.normalize_axis(coerce.const_int(coerce.fval(axis), "axis"), ndim)


def _cum(fn, x, axis, reverse, rounding_mode, flush_to_zero):
    t = reduction_input(x)
    if t.shape == ():
        t = current().emit_value(ops.Reshape(t.value, (1,)))
    ax = _axis(axis, len(t.shape))
    rev = coerce.const_bool(coerce.fval(reverse), "reverse")
    name = "cumsum" if fn == "sum" else "cumprod"
    rounding = coerce.rounding_mode(rounding_mode, name, t.dtype)
    ftz = coerce.flush_to_zero(flush_to_zero, name, t.dtype)
    return current().emit_value(ops.CumScan(fn, t.value, ax, rev, rounding, ftz))


@tile_op
def cumsum(x: Tile, /, axis: int = 0, *, reverse: bool = False,
           rounding_mode: RoundingMode | None = None, flush_to_zero: bool = False) -> Tile:
    """Inclusive prefix sum along ``axis`` (default 0), summed left to right (R-SCAN-1).

    >>> ct.cumsum(t, 1)                       # [[0,1,2,3],[4,5,6,7]] -> [[0,1,3,6],[4,9,15,22]]
    >>> ct.cumsum(t, 1, reverse=True)         # -> [[6,6,5,3],[22,18,13,7]]
    """
    return _cum("sum", x, axis, reverse, rounding_mode, flush_to_zero)


@tile_op
def cumprod(x: Tile, /, axis: int = 0, *, reverse: bool = False,
            rounding_mode: RoundingMode | None = None, flush_to_zero: bool = False) -> Tile:
    """Inclusive prefix product along ``axis`` (default 0), left to right (R-SCAN-1)."""
    return _cum("prod", x, axis, reverse, rounding_mode, flush_to_zero)


@tile_op
def scan(x: Tile | tuple[Tile, ...], /, axis: int, func: Callable[..., Any],
         identity: int | float | tuple[int | float, ...], *,
         reverse: bool = False) -> Tile | tuple[Tile, ...]:
    """Inclusive scan with a user combiner ``func`` (R-SCAN-3); tiles or a tuple of tiles.

    ``func`` takes 2 0-d tiles (2N for a tuple of N tiles: the running value's N components,
    then the next element's) and returns one (an N-tuple).  It is compiled once; elements are
    combined sequentially along ``axis`` (``out[i] = func(out[i-1], x[i])``; reversed
    ``out[i] = func(x[i], out[i+1])``), so ``func`` need not be commutative.

    >>> run_max = ct.scan(t, 0, ct.maximum, -float("inf"))
    >>> s, c = ct.scan((v, ones), 0, lambda a, n, b, m: (a + b, n + m), (0.0, 0))
    """
    tiles, is_tuple = _combiner.operand_tiles(x, "scan")
    if tiles[0].shape == ():
        tiles = [current().emit_value(ops.Reshape(t.value, (1,))) for t in tiles]
    ax = _axis(axis, len(tiles[0].shape))
    rev = coerce.const_bool(coerce.fval(reverse), "reverse")
    dtypes = [t.dtype for t in tiles]
    ids = _combiner.identities(identity, dtypes, is_tuple)
    body = _combiner.compile_body(func, dtypes, "scan")
    op = current().emit(ops.ScanFn(tuple(t.value for t in tiles), ax, ids, rev, body))
    outs = tuple(TileV(r) for r in op.results)
    return TupleV(outs) if is_tuple else outs[0]

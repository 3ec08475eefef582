"""Reductions: ``sum``, ``prod``, ``max``, ``min``, ``argmax``, ``argmin`` (R-RED-1..7) and
``reduce`` with a user combiner (R-RED-8/9).

Typing: the result dtype is the input dtype (no widening; ``bool_`` is first converted to
``int32``), arg-reductions give ``int32``; restricted floats are rejected.  The reduced axes
are removed unless ``keepdims=True``.  Numerics (combine order, NaN handling) are documented
in ``cutile.interp.numerics.reduce`` / ``argreduce``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import dtypes as dt
from ..enums import RoundingMode
from ..errors import TileTypeError
from ..ir import ops
from ..lang import coerce
from ..lang.context import current
from ..lang.registry import tile_op
from ..lang.values import Const, TileV, TupleV, describe
from . import _combiner
from .classes import Tile


def reduction_input(x) -> TileV:
    """The operand of a reduction or scan as a tile: arithmetic dtypes only, bool as int32."""
    v = coerce.fval(x)
    if not (isinstance(v, TileV) or coerce.is_number_const(v)):
        raise TileTypeError(f"Expected a tile, got {describe(v)}")
    t = coerce.to_tile(v)
    if t.dtype.is_restricted or t.dtype.is_foreign_pointer:     # R-DTYPE-3, R-RED-3, §7
        raise TileTypeError(f"Non-arithmetic dtype {t.dtype.name} is unsupported for reduction")
    if t.dtype.is_bool:
        t = coerce.convert(t, dt.int32)           # R-RED-3
    return t


def _is_none(v) -> bool:
    return isinstance(v, Const) and v.value is None


def _axes(axis, ndim: int) -> tuple[int, ...]:
    """R-RED-1: None (all axes), an int, or a tuple of ints; normalised and sorted."""
    a = coerce.fval(axis)
    if _is_none(a):
        return tuple(range(ndim))
    if isinstance(a, TupleV) or (isinstance(a, Const) and isinstance(a.value, tuple)):
        raw = [coerce.const_int(i, "axis") for i in coerce.tuple_items(a, "axis")]
    else:
        raw = [coerce.const_int(a, "axis")]
    out: list[int] = []
    for r in raw:
        n = coerce.normalize_axis(r, ndim)
        if n in out:
            raise TileTypeError(f"Repeated reduction axis {n}")
        out.append(n)
    return tuple(sorted(out))


def _keepdims(k) -> bool:
    v = coerce.fval(k)
    if not (isinstance(v, Const) and isinstance(v.value, bool)):
        raise TileTypeError(f"Expected a boolean constant for keepdims, got {describe(v)}")
    return v.value


def _reduce(fn, x, axis, keepdims, *, rounding_mode=None, flush_to_zero=False,
            propagate_nan=False):
    t = reduction_input(x)
    axes = _axes(axis, len(t.shape))
    kd = _keepdims(keepdims)
    rounding = coerce.rounding_mode(rounding_mode, fn, t.dtype)       # R-RED-7
    ftz = coerce.flush_to_zero(flush_to_zero, fn, t.dtype)
    nan = coerce.const_bool(coerce.fval(propagate_nan), "propagate_nan")
    return current().emit_value(ops.Reduce(fn, t.value, axes, kd, nan, rounding, ftz))


@tile_op
def sum(x: Tile, /, axis: int | tuple[int, ...] | None = None, *,
        keepdims: bool = False, rounding_mode: RoundingMode | None = None,
        flush_to_zero: bool = False) -> Tile:
    """Sum over ``axis`` (None: all; int; tuple), without widening the dtype (R-RED-1..4).

    >>> s = ct.sum(t, axis=1)                 # (M, N) -> (M,)
    >>> s = ct.sum(t, axis=1, keepdims=True)  # (M, N) -> (M, 1)
    """
    return _reduce("sum", x, axis, keepdims, rounding_mode=rounding_mode,
                   flush_to_zero=flush_to_zero)


@tile_op
def prod(x: Tile, /, axis: int | tuple[int, ...] | None = None, *,
         keepdims: bool = False, rounding_mode: RoundingMode | None = None,
         flush_to_zero: bool = False) -> Tile:
    """Product over ``axis``, without widening the dtype (R-RED-1..4)."""
    return _reduce("prod", x, axis, keepdims, rounding_mode=rounding_mode,
                   flush_to_zero=flush_to_zero)


@tile_op
def max(x: Tile, /, axis: int | tuple[int, ...] | None = None, *,
        keepdims: bool = False, flush_to_zero: bool = False, propagate_nan: bool = False) -> Tile:
    """Maximum over ``axis``; NaNs ignored unless ``propagate_nan`` (R-RED-5)."""
    return _reduce("max", x, axis, keepdims, flush_to_zero=flush_to_zero,
                   propagate_nan=propagate_nan)


@tile_op
def min(x: Tile, /, axis: int | tuple[int, ...] | None = None, *,
        keepdims: bool = False, flush_to_zero: bool = False, propagate_nan: bool = False) -> Tile:
    """Minimum over ``axis``; NaNs ignored unless ``propagate_nan`` (R-RED-5)."""
    return _reduce("min", x, axis, keepdims, flush_to_zero=flush_to_zero,
                   propagate_nan=propagate_nan)


def _arg(fn, x, axis, keepdims, propagate_nan):
    t = reduction_input(x)
    a = coerce.fval(axis)
    if _is_none(a):
        ax = None
    elif isinstance(a, TupleV) or (isinstance(a, Const) and isinstance(a.value, tuple)):
        raise TileTypeError(f"{fn}() expects an integer constant or None for axis, "
                            f"got {describe(a)}")
    else:
        ax = coerce.normalize_axis(coerce.const_int(a, "axis"), len(t.shape))
    kd = _keepdims(keepdims)
    nan = coerce.const_bool(coerce.fval(propagate_nan), "propagate_nan")
    return current().emit_value(ops.ArgReduce(fn, t.value, ax, kd, nan))


@tile_op
def argmax(x: Tile, /, axis: int | tuple[int, ...] | None = None, *,
           keepdims: bool = False, propagate_nan: bool = False) -> Tile:
    """Index of the first maximum along ``axis`` (None: flat row-major index), int32 (R-RED-6).

    >>> i = ct.argmax(t, axis=1)              # (M, N) -> (M,) int32
    """
    return _arg("argmax", x, axis, keepdims, propagate_nan)


@tile_op
def argmin(x: Tile, /, axis: int | tuple[int, ...] | None = None, *,
           keepdims: bool = False, propagate_nan: bool = False) -> Tile:
    """Index of the first minimum along ``axis`` (None: flat row-major index), int32 (R-RED-6)."""
    return _arg("argmin", x, axis, keepdims, propagate_nan)


@tile_op
def reduce(x: Tile | tuple[Tile, ...], /, axis: int | tuple[int, ...] | None,
           func: Callable[..., Any], identity: int | float | tuple[int | float, ...], *,
           keepdims: bool = False) -> Tile | tuple[Tile, ...]:
    """Reduce ``x`` (a tile or a tuple of tiles) along ``axis`` with a user combiner (R-RED-8).

    ``func`` takes 2 0-d tiles (2N for N tiles: one group's N components, then the other's)
    and returns one (an N-tuple); results are cast back to the input dtypes.  It is compiled
    once.  Combination order: the pairwise tree of ``sum`` (element i with i + n/2, then
    i + n/4, ...; the lower half is the left operand), so ``func`` must be associative; the
    ``identity`` is never needed for power-of-two lengths but is checked.

    >>> m = ct.reduce(t, 1, ct.maximum, -float("inf"))
    >>> v, i = ct.reduce((vals, idx), 0, lambda a, i, b, j: (ct.where(b > a, b, a),
    ...                                                    ct.where(b > a, j, i)), (-1.0, 0))
    """
    tiles, is_tuple = _combiner.operand_tiles(x, "reduce")
    nd = len(tiles[0].shape)
    a = coerce.fval(axis)
    ax = coerce.normalize_axis(coerce.const_int(a, "axis"), nd or 1)
    kd = _keepdims(keepdims)
    dtypes = [t.dtype for t in tiles]
    ids = _combiner.identities(identity, dtypes, is_tuple)
    body = _combiner.compile_body(func, dtypes, "reduce")
    if nd == 0:
        tiles = [current().emit_value(ops.Reshape(t.value, (1,))) for t in tiles]
    op = current().emit(ops.ReduceFn(tuple(t.value for t in tiles), ax, ids, kd, body))
    outs = tuple(TileV(r) for r in op.results)
    return TupleV(outs) if is_tuple else outs[0]

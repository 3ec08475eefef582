"""Reductions: ``sum``, ``prod``, ``max``, ``min``, ``argmax``, ``argmin`` (R-RED-1..7)."""

from __future__ import annotations

import builtins

from .. import dtypes as dt
from ..errors import TileTypeError
from ..frontend import coerce
from ..frontend.context import current
from ..frontend.values import Const, TileV, TupleV
from ..ir import ops
from ._registry import tile_op
from .elementwise import _ftz, _rounding


def _input(x) -> TileV:
    t = coerce.to_tile(coerce.fval(x))
    if t.dtype.is_restricted:
        raise TileTypeError(f"Non-arithmetic dtype {t.dtype.name} is unsupported for reduction")
    if t.dtype.is_bool:
        t = coerce.convert(t, dt.int32)           # R-RED-3
    return t


def _axes(axis, ndim: int, allow_tuple: bool) -> tuple[int, ...]:
    a = coerce.fval(axis)
    if isinstance(a, Const) and a.value is None:
        return tuple(range(ndim))
    if isinstance(a, TupleV) or (isinstance(a, Const) and isinstance(a.value, tuple)):
        if not allow_tuple:
            raise TileTypeError("Expected an integer constant or None for axis")
        raw = [coerce.const_int(i, "axis") for i in coerce.tuple_items(a, "axis")]
    else:
        raw = [coerce.const_int(a, "axis")]
    out = []
    for r in raw:
        n = coerce.normalize_axis(r, ndim)
        if n in out:
            raise TileTypeError(f"Repeated reduction axis {n}")
        out.append(n)
    return tuple(sorted(out))


def _keepdims(k) -> bool:
    v = coerce.fval(k)
    if not (isinstance(v, Const) and isinstance(v.value, bool)):
        raise TileTypeError("Expected a boolean constant for keepdims")
    return v.value


def _reduce(fn, x, axis, keepdims, *, rounding_mode=None, flush_to_zero=False,
            propagate_nan=False):
    t = _input(x)
    axes = _axes(axis, len(t.shape), True)
    kd = _keepdims(keepdims)
    if rounding_mode is not None:
        if not t.dtype.is_float:
            raise TileTypeError("Rounding mode can only be used for unrestricted float types")
    rounding = _rounding(rounding_mode, "add" if fn in ("sum", "prod") else fn, t.dtype) \
        if rounding_mode is not None else None
    ftz = _ftz(flush_to_zero, "add", t.dtype)
    nan = coerce.const_bool(coerce.fval(propagate_nan), "propagate_nan")
    return current().emit_value(ops.Reduce(fn, t.value, axes, kd, nan, rounding, ftz))


@tile_op
def sum(x, /, axis=None, *, keepdims=False, rounding_mode=None, flush_to_zero=False):
    """Sum over ``axis`` (None: all), without widening the dtype (R-RED-1..4).

    >>> s = ct.sum(t, axis=1)                 # (M, N) -> (M,)
    """
    return _reduce("sum", x, axis, keepdims, rounding_mode=rounding_mode,
                   flush_to_zero=flush_to_zero)


@tile_op
def prod(x, /, axis=None, *, keepdims=False, rounding_mode=None, flush_to_zero=False):
    """Product over ``axis`` (R-RED-1..4)."""
    return _reduce("prod", x, axis, keepdims, rounding_mode=rounding_mode,
                   flush_to_zero=flush_to_zero)


@tile_op
def max(x, /, axis=None, *, keepdims=False, flush_to_zero=False, propagate_nan=False):
    """Maximum over ``axis``; NaNs ignored unless ``propagate_nan`` (R-RED-5)."""
    return _reduce("max", x, axis, keepdims, flush_to_zero=flush_to_zero,
                   propagate_nan=propagate_nan)


@tile_op
def min(x, /, axis=None, *, keepdims=False, flush_to_zero=False, propagate_nan=False):
    """Minimum over ``axis``; NaNs ignored unless ``propagate_nan`` (R-RED-5)."""
    return _reduce("min", x, axis, keepdims, flush_to_zero=flush_to_zero,
                   propagate_nan=propagate_nan)


def _arg(fn, x, axis, keepdims, propagate_nan):
    t = _input(x)
    a = coerce.fval(axis)
    ax = None if isinstance(a, Const) and a.value is None else _axes(a, len(t.shape), False)[0]
    kd = _keepdims(keepdims)
    nan = coerce.const_bool(coerce.fval(propagate_nan), "propagate_nan")
    return current().emit_value(ops.ArgReduce(fn, t.value, ax, kd, nan))


@tile_op
def argmax(x, /, axis=None, *, keepdims=False, propagate_nan=False):
    """Index of the first maximum along ``axis`` (None: flat row-major index), int32 (R-RED-6)."""
    return _arg("argmax", x, axis, keepdims, propagate_nan)


@tile_op
def argmin(x, /, axis=None, *, keepdims=False, propagate_nan=False):
    """Index of the first minimum along ``axis``, int32 (R-RED-6)."""
    return _arg("argmin", x, axis, keepdims, propagate_nan)


_ = builtins

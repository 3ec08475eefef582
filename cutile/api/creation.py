"""Tile factories: ``full``, ``zeros``, ``ones``, ``arange``, ``astile`` and dtype calls (§11)."""

from __future__ import annotations

from typing import Any

from .. import dtypes as dt
from ..dtypes import DType
from ..errors import TileTypeError
from ..ir import ops
from ..lang import coerce
from ..lang.context import current
from ..lang.registry import register_resolver, tile_op
from ..lang.values import Const, FVal, TileV, TupleV, describe
from .classes import Tile
from .elementwise import astype_value, binary, require_dtype


def _shape(shape) -> tuple:
    return coerce.const_shape(coerce.fval(shape))


def _fill(shape: tuple, value: FVal, dtype: DType) -> TileV:
    if isinstance(value, Const):
        if not value.is_number:
            raise TileTypeError(f"Expected a scalar fill value, got {describe(value)}")
        return coerce.constant(value.value, dtype, shape)          # R-FACT-2: strict rules
    if not isinstance(value, TileV) or value.shape != ():
        raise TileTypeError(f"Expected a scalar fill value, got {describe(value)}")
    t = astype_value(value, dtype)
    return coerce.broadcast(coerce.to_tile(t), shape)


@tile_op
def full(shape: int | tuple[int, ...], fill_value: Tile | int | float, dtype: DType) -> Tile:
    """A tile of ``shape`` filled with ``fill_value`` converted to ``dtype`` (R-FACT-1/2).

    >>> acc = ct.full((64, 64), 0, dtype=ct.float32)
    """
    return _fill(_shape(shape), coerce.fval(fill_value), require_dtype(dtype))


@tile_op
def zeros(shape: int | tuple[int, ...], dtype: DType) -> Tile:
    """A tile of zeros (R-FACT-3)."""
    return _fill(_shape(shape), Const(0), require_dtype(dtype))


@tile_op
def ones(shape: int | tuple[int, ...], dtype: DType) -> Tile:
    """A tile of ones (R-FACT-3)."""
    return _fill(_shape(shape), Const(1), require_dtype(dtype))


@tile_op
def arange(size: int, /, *, dtype: DType, start: int = 0, step: int = 1) -> Tile:
    """``[start, start+step, ...]`` of constant power-of-two length ``size`` (R-FACT-4).

    >>> idx = ct.arange(8, dtype=ct.int32)     # [0, 1, ..., 7]
    """
    n = coerce.const_int(coerce.fval(size), "size")
    if n <= 0 or n & (n - 1):
        raise TileTypeError(f"arange(): Result tile shape must be power of 2, got {n}")
    d = require_dtype(dtype)
    base_dtype = d if d.is_integral else dt.int32
    if d.is_bool or d.is_restricted:
        raise TileTypeError(f"arange(): unsupported dtype {d.name}")
    iota = current().emit_value(ops.Iota(n, base_dtype))
    t = coerce.convert(iota, d)
    st, sp = coerce.fval(start), coerce.fval(step)
    # start and step convert to dtype first (so a float step with an int dtype truncates).
    sp_d = astype_value(sp, d)
    st_d = astype_value(st, d)
    if not (isinstance(sp_d, Const) and sp_d.value == 1):
        t = binary("mul", t, sp_d, fusible=False)
    if not (isinstance(st_d, Const) and st_d.value == 0):
        t = binary("add", t, st_d, fusible=False)
    return t


def _nested(value: FVal, path: str):
    """Shape and flat leaves of a (nested) tuple of scalars (R-FACT-5)."""
    if coerce.is_scalar(value):
        return (), [value]
    if not isinstance(value, TupleV) and not (isinstance(value, Const)
                                              and isinstance(value.value, tuple)):
        raise TileTypeError(f"Expected scalar elements at {path}")
    items = coerce.tuple_items(value, "astile")
    n = len(items)
    if n == 0 or n & (n - 1):
        raise TileTypeError(f"Tuple length {n} at {path} is not a power of 2")
    shapes, leaves = [], []
    for i, it in enumerate(items):
        s, lv = _nested(it, f"{path}[{i}]")
        shapes.append(s)
        leaves.extend(lv)
    if any(s != shapes[0] for s in shapes):
        raise TileTypeError(f"Tuple has non-uniform inner shapes at {path}")
    return (n,) + shapes[0], leaves


@tile_op
def astile(value: int | float | tuple[Any, ...], /, *, dtype: DType) -> Tile:
    """A tile from a scalar or a (nested) tuple of scalars (R-FACT-5).

    >>> t = ct.astile(((1, 2), (3, 4)), dtype=ct.int32)
    """
    d = require_dtype(dtype)
    v = coerce.fval(value)
    if isinstance(v, TileV) and v.shape != ():
        raise TileTypeError("Expected a scalar or (possibly nested) tuple of scalars")
    shape, leaves = _nested(v, "value")
    if shape == ():
        return coerce.to_tile(astype_value(leaves[0], d))
    if all(isinstance(x, Const) for x in leaves):
        import numpy as np
        vals = [dt.convert_constant(x.value, d) for x in leaves]
        arr = np.array(vals, dtype=d.np_dtype if d.has_numpy else None).reshape(shape)
        return current().emit_value(ops.Constant(arr, d, shape))
    # Runtime elements: build from scalars with one-hot selects (rare, small tiles).
    parts = [coerce.to_tile(astype_value(x, d)) for x in leaves]
    flat = len(parts)
    iota = current().emit_value(ops.Iota(flat, dt.int32))
    result = coerce.broadcast(parts[0], (flat,))
    for i, p in enumerate(parts[1:], start=1):
        cond = current().emit_value(ops.Compare("eq", iota.value,
                                                coerce.constant(i, dt.int32, (flat,)).value))
        result = current().emit_value(ops.Select(cond.value, coerce.broadcast(p, (flat,)).value,
                                                 result.value))
    return current().emit_value(ops.Reshape(result.value, shape))


def dtype_call(dtype: DType, args, kwargs) -> FVal:
    """``ct.int16(5)``: a strictly typed constant, or a conversion of a runtime scalar
    (R-CONST-4/5)."""
    if kwargs or len(args) != 1:
        raise TileTypeError(f"{dtype.name}(): expects exactly one positional argument")
    if dtype is dt.float4_e2m1fn:
        raise TileTypeError(f"Cannot call an object of type {dtype.name}")
    v = args[0]
    if isinstance(v, Const) and isinstance(v.value, str) and dtype.is_float:
        # ct.float32("-inf"), as Python's float("-inf"): a constant string of a number
        try:
            v = Const(float(v.value))
        except ValueError:
            raise TileTypeError(f"{dtype.name}(): could not convert string {v.value!r} to a "
                                f"float") from None
    if isinstance(v, Const):
        if not v.is_number:
            raise TileTypeError(f"{dtype.name}(): Expected a scalar, got {describe(v)}")
        return Const(dt.convert_constant(v.value, dtype), dtype)
    if isinstance(v, TileV) and v.shape != ():
        raise TileTypeError(f"{dtype.name}(): Expected a scalar, got {describe(v)}")
    return astype_value(v, dtype)


def dtype_default(dtype: DType) -> FVal:
    """``ct.int32()``: the zero of the dtype, as ``int()`` is 0 (strictly typed)."""
    return Const(dt.convert_constant(False if dtype is dt.bool_ else 0, dtype), dtype)


def _dtype_handler(f):
    """A dtype called in tile code (``ct.int16(5)``, ``np.float32(x)``, ``ct.int32()``): the
    registry's resolver for the open family of dtype objects."""
    if isinstance(f, (bool, int, float, str)):
        return None
    dtype = dt.normalize_dtype(f)
    if dtype is None:
        return None

    def call(args, kwargs) -> FVal:
        if not args and not kwargs and dtype is not dt.float4_e2m1fn:
            return dtype_default(dtype)
        return dtype_call(dtype, args, kwargs)
    return call


register_resolver(_dtype_handler)

"""Parameter constraints of a kernel signature (1.7's ``cuda.tile.compilation`` classes)."""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Union

from .. import dtypes as dt


def _dtype(x) -> dt.DType:
    if not isinstance(x, dt.DType):
        raise TypeError(f"Expected a DType, got {x!r}")
    return x


def _per_axis(value, ndim: int, name: str, default, check) -> tuple:
    if value is None:
        return (default,) * ndim
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value,) * ndim
    value = tuple(value)
    if len(value) != ndim:
        raise ValueError(f"Length of `{name}` {value} doesn't match ndim={ndim}")
    for i, v in enumerate(value):
        check(i, v, name)
    return value


def _optional_int(i, v, name):
    if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
        raise TypeError(f"Element #{i} of `{name}` must be None or int, got {v!r}")


def _positive_int(i, v, name):
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise ValueError(f"Element #{i} of `{name}` must be a positive int, got {v!r}")


@dataclass(frozen=True, init=False)
class ScalarConstraint:
    """A runtime scalar parameter of ``dtype``."""

    dtype: dt.DType

    def __init__(self, dtype):
        object.__setattr__(self, "dtype", _dtype(dtype))


@dataclass(frozen=True, init=False)
class ArrayConstraint:
    """An array parameter: dtype, rank, index dtype and optional layout assumptions (per axis:
    constant stride/shape, divisibility, stride lower bound; aliasing groups).  cutile's
    executors read shapes and strides at run time, so the assumptions only key the signature.
    """

    dtype: dt.DType
    ndim: int
    index_dtype: dt.DType
    stride_lower_bound_incl: tuple
    alias_groups: tuple
    may_alias_internally: bool
    stride_constant: tuple
    shape_constant: tuple
    stride_divisible_by: tuple
    shape_divisible_by: tuple
    base_addr_divisible_by: int

    def __init__(self, dtype, ndim: int, *, index_dtype=dt.int32,
                 stride_lower_bound_incl: Sequence | int | None = None,
                 alias_groups: Sequence[str] = (), may_alias_internally: bool = False,
                 stride_constant: Sequence | None = None, shape_constant: Sequence | None = None,
                 stride_divisible_by: Sequence[int] | int = 1,
                 shape_divisible_by: Sequence[int] | int = 1, base_addr_divisible_by: int = 1):
        if isinstance(ndim, bool) or not isinstance(ndim, int):
            raise TypeError(f"Expected an integer for `ndim`, got {ndim!r}")
        if ndim < 0:
            raise ValueError("`ndim` cannot be negative")
        if index_dtype not in (dt.int32, dt.int64):
            raise ValueError(f"`index_dtype` must be int32 or int64, got {index_dtype}")
        if isinstance(alias_groups, str) or not all(isinstance(g, str) for g in alias_groups):
            raise TypeError("`alias_groups` must be a sequence of strings")
        if isinstance(base_addr_divisible_by, bool) or not isinstance(base_addr_divisible_by,
                                                                      int) \
                or base_addr_divisible_by <= 0:
            raise ValueError("`base_addr_divisible_by` must be a positive int")
        vals = {
            "dtype": _dtype(dtype), "ndim": ndim, "index_dtype": index_dtype,
            "stride_lower_bound_incl": _per_axis(stride_lower_bound_incl, ndim,
                                                 "stride_lower_bound_incl", None, _optional_int),
            "alias_groups": tuple(alias_groups), "may_alias_internally": bool(may_alias_internally),
            "stride_constant": _per_axis(stride_constant, ndim, "stride_constant", None,
                                         _optional_int),
            "shape_constant": _per_axis(shape_constant, ndim, "shape_constant", None,
                                        _optional_int),
            "stride_divisible_by": _per_axis(stride_divisible_by, ndim, "stride_divisible_by", 1,
                                             _positive_int),
            "shape_divisible_by": _per_axis(shape_divisible_by, ndim, "shape_divisible_by", 1,
                                            _positive_int),
            "base_addr_divisible_by": base_addr_divisible_by}
        for what in ("stride", "shape"):        # a constant must meet its own divisibility
            for i, (c, d) in enumerate(zip(vals[f"{what}_constant"],
                                           vals[f"{what}_divisible_by"])):
                if c is not None and c % d:
                    raise ValueError(f"{what}_constant[{i}] = {c} is not divisible by {d} "
                                     f"({what}_divisible_by[{i}])")
        for k, v in vals.items():
            object.__setattr__(self, k, v)


@dataclass(frozen=True, init=False)
class ListConstraint:
    """A list-of-arrays parameter; every element satisfies ``element``."""

    element: ArrayConstraint
    alias_groups: tuple
    elements_may_alias: bool

    def __init__(self, element: ArrayConstraint, *, alias_groups: Sequence[str] = (),
                 elements_may_alias: bool = False):
        if not isinstance(element, ArrayConstraint):
            raise TypeError(f"ListConstraint needs an ArrayConstraint element, got {element!r}")
        object.__setattr__(self, "element", element)
        object.__setattr__(self, "alias_groups", tuple(alias_groups))
        object.__setattr__(self, "elements_may_alias", bool(elements_may_alias))


@dataclass(frozen=True, eq=False)
class ConstantConstraint:
    """The value of a ``ct.Constant`` parameter (``bool``, ``int``, ``float``; cutile also
    takes a DType).  ``1``, ``True`` and ``1.0`` differ; NaN equals itself."""

    value: object

    def __post_init__(self):
        if not isinstance(self.value, (bool, int, float, dt.DType)):
            raise TypeError(f"Unexpected constant value type {type(self.value).__name__}")

    def __eq__(self, other) -> bool:
        if type(other) is not ConstantConstraint or type(self.value) is not type(other.value):
            return False
        if isinstance(self.value, float):
            return struct.pack("<d", self.value) == struct.pack("<d", other.value)
        return self.value == other.value

    def __hash__(self) -> int:
        v = self.value
        return hash((type(v), struct.pack("<d", v) if isinstance(v, float) and math.isnan(v)
                     else v))


@dataclass(frozen=True, init=False)
class TupleConstraint:
    """A tuple parameter: one constraint per item (plain values and tuples are shorthand)."""

    items: tuple

    def __init__(self, items: Sequence):
        object.__setattr__(self, "items", tuple(to_constraint(x) for x in items))


ParameterConstraint = Union[ScalarConstraint, ArrayConstraint, ListConstraint,  # noqa: UP007
                            TupleConstraint, ConstantConstraint]
_CONSTRAINTS = (ScalarConstraint, ArrayConstraint, ListConstraint, TupleConstraint,
                ConstantConstraint)


def to_constraint(c) -> ParameterConstraint:
    """A constraint, with the shorthands: a bool/int/float/DType is a ConstantConstraint and a
    tuple a TupleConstraint."""
    if isinstance(c, _CONSTRAINTS):
        return c
    if isinstance(c, (bool, int, float, dt.DType)):
        return ConstantConstraint(c)
    if isinstance(c, tuple):
        return TupleConstraint(c)
    raise TypeError(f"Can't interpret {c!r} as a parameter constraint")

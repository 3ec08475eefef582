"""Kernel parameter annotations (R-CONST-2, R-LAUNCH-4): ``ct.Constant[T]``,
``ct.ScalarInt64``, ``ct.IndexedWithInt64`` and the ``typing.Annotated`` metadata classes
behind them.  Their own module, below both ``kernel.py`` (which declares kernels) and
``launch_args.py`` (which reads the annotations to classify a launch's arguments)."""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from . import dtypes as dt

T = TypeVar("T")


class ConstantAnnotation:
    """``typing.Annotated`` metadata: the parameter is embedded as a compile-time constant."""

    def __repr__(self) -> str:
        return "ConstantAnnotation()"


@dataclass(frozen=True)
class ScalarAnnotation:
    dtype: Any


class ArrayAnnotation:
    """Array parameter options: index dtype (int32/int64) and the axes whose extent
    (``static_shape_dims``) or stride (``static_stride_dims``, in elements) the kernel is
    specialised on: they read as constants in tile code (``static_eval``, ``static_assert``);
    negative axes count from the end, as 1.7."""

    def __init__(self, index_dtype=dt.int32, static_shape_dims=(), static_stride_dims=()):
        d = dt.normalize_dtype(index_dtype)
        if d not in (dt.int32, dt.int64):
            raise ValueError(f"index_dtype must be int32 or int64, got {index_dtype!r}")
        for name, dims in (("static_shape_dims", static_shape_dims),
                           ("static_stride_dims", static_stride_dims)):
            if not isinstance(dims, tuple):
                raise TypeError(f"`{name}` must be a tuple of integers")
            for i, a in enumerate(dims):
                if isinstance(a, bool) or not isinstance(a, int):
                    raise TypeError(f"Element #{i} of `{name}` must be int, got {a!r}")
        self.index_dtype = d
        self.static_shape_dims = tuple(static_shape_dims)
        self.static_stride_dims = tuple(static_stride_dims)


class ListAnnotation:
    """``typing.Annotated`` metadata for a list-of-arrays parameter (R-LAUNCH-4, R-PY-4):
    ``Annotated[list, ct.ListAnnotation(element=ct.ArrayAnnotation(index_dtype=ct.int64))]``.
    As in 1.7, ``element`` is required (keyword-only): an ``ArrayAnnotation`` or an
    ``Annotated`` type holding exactly one (``ct.IndexedWithInt64``).  A list argument needs no
    annotation at all."""

    def __init__(self, *, element):
        if typing.get_origin(element) is Annotated:
            found = [m for m in element.__metadata__ if isinstance(m, ArrayAnnotation)]
            if len(found) != 1:
                raise TypeError(f"`element` must contain exactly one ArrayAnnotation, found "
                                f"{len(found)} in {element!r}")
            element = found[0]
        if not isinstance(element, ArrayAnnotation):
            raise TypeError(f"ListAnnotation(element=...) expects an ArrayAnnotation, got "
                            f"{type(element).__name__}")
        self.element = element

    def __repr__(self) -> str:
        return f"ListAnnotation(element={self.element!r})"


Constant = Annotated[T, ConstantAnnotation()]
ScalarInt64 = Annotated[int, ScalarAnnotation(dt.int64)]
IndexedWithInt64 = Annotated[T, ArrayAnnotation(index_dtype=dt.int64)]

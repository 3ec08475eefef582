"""Checking a launch's grid (R-LAUNCH-1/2) and classifying its arguments into a specialisation
signature and runtime values (R-LAUNCH-3).

Arrays specialise on dtype and rank, scalars on kind, ``ct.Constant`` parameters on value.
The runtime values (arrays and scalars, flattened from tuples) are handed to the executor.
"""

from __future__ import annotations

import dataclasses
import enum
import sys
import typing
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import dtypes as dt
from .annotations import ArrayAnnotation, ConstantAnnotation, ListAnnotation, ScalarAnnotation
from .device_arrays import describe as describe_device_array
from .host_arrays import as_host_array


@dataclass(frozen=True)
class ArgSpec:
    kind: str                      # "array" | "scalar" | "const" | "tuple" | "list" | "dataclass"
    dtype: Any = None
    ndim: int = 0
    index_dtype: Any = dt.int32
    value: Any = None
    items: tuple = ()
    static_shape: tuple = ()
    static_strides: tuple = ()     # strides in elements known at compile time (None: runtime)


@dataclass
class Spec:
    key: tuple
    params: list[ArgSpec]
    leaves: list = field(default_factory=list)


def check_grid(grid) -> tuple[int, int, int]:
    """A launch grid checked as cuda.tile checks it, padded to three ints (every executor)."""
    if not isinstance(grid, tuple):
        raise TypeError("Grid must be a tuple")
    if len(grid) > 3:
        raise ValueError("Grid dimensions must be at most 3")
    out = []
    for i, g in enumerate(grid):
        if isinstance(g, bool) or not isinstance(g, (int, np.integer)):
            raise TypeError(f"Grid[{i}] must be an integer")
        g = int(g)
        if g < 0:
            raise ValueError(f"Grid[{i}] must be non-negative")
        if g > 2 ** 24 - 1:
            raise ValueError(f"Grid[{i}] exceeds 24-bit limit: max={2 ** 24 - 1}, got={g}. "
                             "Use multiple kernel launches for larger workloads.")
        out.append(g)
    while len(out) < 3:
        out.append(1)
    return tuple(out)


def _annotation_meta(ann) -> list:
    if typing.get_origin(ann) is typing.Annotated:
        return list(ann.__metadata__)
    if isinstance(ann, (ArrayAnnotation, ListAnnotation)):    # used bare as the annotation
        return [ann]
    return []


def _is_constant(ann) -> bool:
    return any(isinstance(m, ConstantAnnotation) for m in _annotation_meta(ann))


@dataclass(frozen=True)
class ParamPlan:
    """What a parameter's annotation says, worked out once per kernel (not per launch)."""
    ann: Any
    constant: bool
    scalar_dtype: Any          # ct.ScalarAnnotation dtype for integer scalars, else None
    index_dtype: Any           # ct.ArrayAnnotation index dtype (int32 by default)
    static_shape_dims: tuple = ()      # ct.ArrayAnnotation axes specialised on their extent
    static_stride_dims: tuple = ()     # ... and on their stride


def _contains_scalar_annotation(ann) -> bool:
    """Whether a ``ct.ScalarAnnotation`` (``ct.ScalarInt64``...) sits anywhere in ``ann``."""
    if any(isinstance(m, ScalarAnnotation) for m in _annotation_meta(ann)):
        return True
    return any(_contains_scalar_annotation(a) for a in typing.get_args(ann)
               if a is not Ellipsis and not isinstance(a, (str, int)))


def param_plan(ann) -> ParamPlan:
    if _is_constant(ann) and _contains_scalar_annotation(ann):
        # as 1.7: a scalar annotation gives the dtype of a runtime scalar, a constant has none
        raise TypeError("Constant annotation cannot be combined with "
                        "ScalarAnnotation/ScalarInt64: a ScalarAnnotation (e.g. ct.ScalarInt64) "
                        "applies only to a non-constant scalar parameter, not inside "
                        "ct.Constant[...]")
    scalar, index, shape_dims, stride_dims = None, dt.int32, (), ()
    for m in _annotation_meta(ann):
        if isinstance(m, ListAnnotation):
            m = m.element
        if isinstance(m, ScalarAnnotation):
            scalar = m.dtype
        if isinstance(m, ArrayAnnotation):
            index = m.index_dtype
            shape_dims, stride_dims = m.static_shape_dims, m.static_stride_dims
    return ParamPlan(ann, _is_constant(ann), scalar, index, shape_dims, stride_dims)


_SUB_PLANS: dict = {}


def _sub_plan(ann) -> ParamPlan:
    try:
        plan = _SUB_PLANS.get(ann)
    except TypeError:                                    # an unhashable annotation
        return param_plan(ann)
    if plan is None:
        plan = _SUB_PLANS[ann] = param_plan(ann)
    return plan


class IndexOverflowError(OverflowError, ValueError):
    """An extent or stride beyond int32 on an int32-indexed array: 1.7 raises OverflowError
    (a ValueError too, as cutile raised before)."""


def _array_spec(path: str, d, shape: tuple, plan: ParamPlan, dtype_text,
                strides: tuple = (), itemsize: int = 1) -> ArgSpec:
    """``strides`` in bytes: an int32-indexed array (the default, R-ARRAY-2) must have every
    extent and every stride in elements below 2**31, else OverflowError at launch (as 1.7)."""
    if d is None:
        raise TypeError(f"{path}: arrays of dtype {dtype_text} are not supported")
    if plan.index_dtype is dt.int32:
        if any(s >= 2 ** 31 for s in shape):
            raise IndexOverflowError(f"{path}: extent >= 2**31 needs ct.IndexedWithInt64 "
                                     f"(shape {tuple(shape)})")
        if any(abs(int(st)) // max(itemsize, 1) >= 2 ** 31 for st in strides):
            raise IndexOverflowError(
                f"{path}: a stride of {[int(st) // max(itemsize, 1) for st in strides]} "
                f"elements does not fit in int32; annotate the parameter ct.IndexedWithInt64")
    steps = tuple(int(st) // max(itemsize, 1) for st in strides) or \
        tuple(int(np.prod(shape[i + 1:])) for i in range(len(shape)))
    return ArgSpec("array", dtype=d, ndim=len(shape), index_dtype=plan.index_dtype,
                   static_shape=_static(plan.static_shape_dims, shape, "static_shape_dims"),
                   static_strides=_static(plan.static_stride_dims, steps, "static_stride_dims"))


def _static(dims: tuple, values: tuple, what: str) -> tuple:
    """``values`` at the annotated axes ``dims`` (negative from the end), None elsewhere."""
    out: list = [None] * len(values)
    seen = set()
    for a in dims:
        if not -len(values) <= a < len(values):
            raise ValueError(f"{what} contains axis {a}, out of range for an array of rank "
                             f"{len(values)}")
        a %= len(values)
        if a in seen:
            raise ValueError(f"{what} contains duplicate axis {a}")
        seen.add(a)
        out[a] = int(values[a])
    return tuple(out)


def _tuple_items(ann) -> tuple | None:
    """The item annotations of a fixed-length ``tuple[...]`` annotation (inside
    ``Annotated``/``ct.Constant`` too), or None (no annotation, ``tuple``, ``tuple[T, ...]``)."""
    while typing.get_origin(ann) is typing.Annotated:
        ann = typing.get_args(ann)[0]
    if typing.get_origin(ann) is not tuple:
        return None
    items = typing.get_args(ann)
    return None if not items or Ellipsis in items else items


def _check_tuple_length(x: tuple, plan: ParamPlan, path: str) -> tuple | None:
    """R-LAUNCH (as 1.7): a tuple argument must have the length its annotation says."""
    items = _tuple_items(plan.ann)
    if items is not None and len(items) != len(x):
        raise TypeError(f"Invalid {path}: Received a tuple of length {len(x)} for a parameter "
                        f"annotated as a tuple of length {len(items)}")
    return items


def _classify(x, plan: ParamPlan, path: str, leaves: list) -> ArgSpec:
    if type(x) is np.ndarray and not plan.constant:     # the common cases first
        leaves.append(x)
        return _array_spec(path, dt.from_numpy(x.dtype), x.shape, plan, x.dtype, x.strides,
                           x.itemsize)
    torch = sys.modules.get("torch")
    if torch is not None and not plan.constant and isinstance(x, torch.Tensor):
        # the other common case, before the dataclass/list/tuple tests (every launch pays
        # them): a CUDA tensor described once; a CPU tensor goes on to the host-array path
        ref = describe_device_array(x)
        if ref is not None:
            leaves.append(ref)
            return _array_spec(path, dt.from_numpy(ref.dtype), ref.shape, plan, ref.dtype,
                               ref.strides, ref.itemsize)
    if plan.constant:
        if isinstance(x, (bool, int, float, str, type(None), dt.DType, enum.Enum)):
            return ArgSpec("const", value=x)
        if isinstance(x, np.generic):
            return ArgSpec("const", value=x.item())
        if dataclasses.is_dataclass(x) and not isinstance(x, type) and \
                type(x).__dataclass_params__.frozen:     # (cutile) R-PY-10 as a constant
            return ArgSpec("const", value=x)
        if isinstance(x, tuple):
            _check_tuple_length(x, plan, path)
            return ArgSpec("tuple", items=tuple(_classify(v, plan, f"item #{i} of {path}", leaves)
                                                for i, v in enumerate(x)))
        raise TypeError(f"Invalid {path}: Could not interpret object of type "
                        f"'{type(x).__name__}' as a constant.")
    if isinstance(x, list):
        return _list_spec(x, plan, path, leaves)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return _dataclass_spec(x, path, leaves)
    if isinstance(x, tuple):
        if type(x) is not tuple:
            raise TypeError(f"Invalid {path}: '{type(x).__name__}' is a subclass of 'tuple'. "
                            "Only plain tuples are accepted.")
        inner = _check_tuple_length(x, plan, path) or ()
        out = []
        for i, item in enumerate(x):
            sub = _sub_plan(inner[i] if len(inner) == len(x) else None)
            out.append(_classify(item, sub, f"item #{i} of {path}", leaves))
        return ArgSpec("tuple", items=tuple(out))
    if isinstance(x, (bool, np.bool_)):
        leaves.append(np.array(bool(x), dtype=np.bool_))
        return ArgSpec("scalar", dtype=dt.bool_)
    if isinstance(x, (int, np.integer)):
        want = plan.scalar_dtype or dt.int32
        if isinstance(x, np.integer):
            want = dt.from_numpy(x.dtype) or want
        lo, hi = dt.int_range(want)
        if not lo <= int(x) <= hi:
            raise OverflowError(f"{path}: integer {int(x)} does not fit in {want.name}")
        leaves.append(np.array(int(x), dtype=want.np_dtype))
        return ArgSpec("scalar", dtype=want)
    if isinstance(x, (float, np.floating)):
        d = dt.from_numpy(x.dtype) if isinstance(x, np.floating) else dt.float32
        leaves.append(np.array(x, dtype=d.np_dtype))
        return ArgSpec("scalar", dtype=d)
    if isinstance(x, np.generic):                       # ml_dtypes' bfloat16/float8 scalars
        d = dt.from_numpy(x.dtype)
        if d is not None and d.is_float:
            leaves.append(np.array(x, dtype=x.dtype))
            return ArgSpec("scalar", dtype=d)
    # A device array (Numba, CuPy, PyTorch): described once and handed to the executor as
    # is (the Numba backend uses it in place; the interpreter copies it through the host).
    ref = describe_device_array(x)
    if ref is not None:
        leaves.append(ref)
        return _array_spec(path, dt.from_numpy(ref.dtype), ref.shape, plan, ref.dtype,
                           ref.strides, ref.itemsize)
    arr = as_host_array(x)
    if arr is not None:
        leaves.append(arr)
        return _array_spec(path, dt.from_numpy(arr.dtype), arr.shape, plan, arr.dtype,
                           arr.strides, arr.itemsize)
    raise TypeError(f"Invalid {path}: Objects of type '{type(x).__name__}' are not supported.")


def _list_spec(x: list, plan: ParamPlan, path: str, leaves: list) -> ArgSpec:
    """A list of arrays (R-LAUNCH-3, R-PY-4): each array a parameter of its own; the length,
    the common dtype and the rank are part of the specialisation."""
    if not x:
        raise TypeError(f"Empty lists are not supported as kernel arguments ({path})")
    items = []
    for i, item in enumerate(x):
        if isinstance(item, (list, tuple, bool, int, float, np.generic)) or \
                dataclasses.is_dataclass(item):
            raise TypeError(f"Invalid item #{i} of {path}: lists may hold arrays only, got "
                            f"{type(item).__name__}")
        items.append(_classify(item, plan, f"item #{i} of {path}", leaves))
    if len({a.dtype for a in items}) > 1:
        raise TypeError(f"Arrays in list vary in data type ({path})")
    if len({a.ndim for a in items}) > 1:
        raise TypeError(f"Arrays in list vary in rank ({path})")
    for what, attr in (("shape", "static_shape"), ("stride", "static_strides")):
        for axis, got in enumerate(zip(*(getattr(a, attr) for a in items))):
            if len(set(got)) > 1:
                raise ValueError(f"Arrays in list vary in static {what} at axis {axis} "
                                 f"({path}: {', '.join(map(str, got))}; the annotation makes "
                                 f"it one compile-time value)")
    return ArgSpec("list", items=tuple(items))


def _dataclass_spec(x, path: str, leaves: list) -> ArgSpec:
    """A frozen dataclass instance: its fields travel like the items of a tuple (arrays and
    numbers at runtime; strings, None, dtypes and enum members as constants; R-PY-10)."""
    cls = type(x)
    if not cls.__dataclass_params__.frozen:
        raise TypeError(f"Only frozen dataclasses are supported as kernel arguments ({path}: "
                        f"{cls.__name__})")
    items = []
    for f in dataclasses.fields(x):
        v = getattr(x, f.name)
        if isinstance(v, (str, type(None), dt.DType, enum.Enum)):
            items.append(ArgSpec("const", value=v))
        else:
            items.append(_classify(v, _sub_plan(None), f"field {f.name!r} of {path}", leaves))
    return ArgSpec("dataclass", value=cls, items=tuple(items))


def classify_args(kernel, args: tuple) -> Spec:
    names = kernel.param_names
    if len(args) != len(names):
        sig = f"{kernel.__name__}({', '.join(names)})"
        if len(args) < len(names):
            missing = ", ".join(repr(n) for n in names[len(args):])
            detail = f"no value for {missing}"
        else:
            detail = f"{len(args) - len(names)} argument(s) too many"
        raise TypeError(f"Kernel expects {len(names)} argument{'' if len(names) == 1 else 's'} "
                        f"but {len(args)} "
                        f"{'was' if len(args) == 1 else 'were'} given: kernel {sig} got "
                        f"{detail} (the fourth argument of ct.launch is the tuple of all its "
                        f"arguments)")
    plans = kernel.__dict__.get("_param_plans")
    if plans is None:
        anns = kernel.annotations()
        plans = kernel._param_plans = [param_plan(anns.get(n)) for n in names]
    leaves: list = []
    params = [_classify(a, plan, f"kernel argument #{i}", leaves)
              for i, (plan, a) in enumerate(zip(plans, args))]
    key = tuple(_key(p) for p in params)
    return Spec(key, params, leaves)


def _key(p: ArgSpec):
    if p.kind in ("tuple", "list"):
        return (p.kind, tuple(_key(i) for i in p.items))
    if p.kind == "dataclass":
        return ("dataclass", p.value, tuple(_key(i) for i in p.items))
    if p.kind == "const":
        return ("const", type(p.value), p.value)
    if p.kind == "array":
        return (p.kind, p.dtype, p.ndim, p.index_dtype, p.static_shape, p.static_strides)
    return (p.kind, p.dtype, p.ndim, p.index_dtype)

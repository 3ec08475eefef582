"""Classifying launch arguments into a specialisation signature and runtime values (R-LAUNCH-3).

Arrays specialise on dtype and rank, scalars on kind, ``ct.Constant`` parameters on value.
The runtime values (arrays and scalars, flattened from tuples) are handed to the executor.
"""

from __future__ import annotations

import enum
import typing
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import dtypes as dt


@dataclass(frozen=True)
class ArgSpec:
    kind: str                      # "array" | "scalar" | "const" | "tuple"
    dtype: Any = None
    ndim: int = 0
    index_dtype: Any = dt.int32
    value: Any = None
    items: tuple = ()
    static_shape: tuple = ()


@dataclass
class Spec:
    key: tuple
    params: list[ArgSpec]
    leaves: list = field(default_factory=list)


def _annotation_meta(ann) -> list:
    if typing.get_origin(ann) is typing.Annotated:
        return list(ann.__metadata__)
    return []


def _is_constant(ann) -> bool:
    from .kernel import ConstantAnnotation
    return any(isinstance(m, ConstantAnnotation) for m in _annotation_meta(ann))


def as_host_array(x) -> np.ndarray | None:
    """A NumPy view of ``x`` without copying, or None when ``x`` is not a host array."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "__cuda_array_interface__"):
        return None
    if hasattr(x, "__array_interface__") or (hasattr(x, "__array__") and hasattr(x, "shape")):
        try:
            a = np.asarray(x)
        except Exception:
            return None
        if a.base is None and not hasattr(x, "__array_interface__"):
            # np.asarray had to copy: writes to the copy would be lost, so refuse.
            raise TypeError(f"{type(x).__name__} converts to NumPy only by copying; pass a "
                            "NumPy array (or an object NumPy can view without a copy)")
        return a
    return None


def _classify(x, ann, path: str, leaves: list) -> ArgSpec:
    from .kernel import ArrayAnnotation, ScalarAnnotation
    meta = _annotation_meta(ann)
    if _is_constant(ann):
        if isinstance(x, (bool, int, float, str, type(None), dt.DType, enum.Enum)):
            return ArgSpec("const", value=x)
        if isinstance(x, np.generic):
            return ArgSpec("const", value=x.item())
        if isinstance(x, tuple):
            return ArgSpec("tuple", items=tuple(_classify(i, ann, path, leaves) for i in x))
        raise TypeError(f"Could not interpret object of type {type(x).__name__} as a constant "
                        f"({path})")
    if isinstance(x, tuple):
        if type(x) is not tuple:
            raise TypeError(f"Only plain tuples are accepted ({path})")
        inner = typing.get_args(ann)
        out = []
        for i, item in enumerate(x):
            sub = inner[i] if len(inner) == len(x) else None
            out.append(_classify(item, sub, f"item #{i} of {path}", leaves))
        return ArgSpec("tuple", items=tuple(out))
    if isinstance(x, (bool, np.bool_)):
        leaves.append(np.array(bool(x), dtype=np.bool_))
        return ArgSpec("scalar", dtype=dt.bool_)
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        want = dt.int32
        for m in meta:
            if isinstance(m, ScalarAnnotation):
                want = m.dtype
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
    arr = as_host_array(x)
    if arr is not None:
        d = dt.from_numpy(arr.dtype)
        if d is None:
            raise TypeError(f"{path}: arrays of dtype {arr.dtype} are not supported")
        index_dtype = dt.int32
        for m in meta:
            if isinstance(m, ArrayAnnotation):
                index_dtype = m.index_dtype
        if index_dtype is dt.int32 and any(s >= 2 ** 31 for s in arr.shape):
            raise ValueError(f"{path}: extent >= 2**31 needs ct.IndexedWithInt64")
        leaves.append(arr)
        return ArgSpec("array", dtype=d, ndim=arr.ndim, index_dtype=index_dtype,
                       static_shape=(None,) * arr.ndim)
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        # A device array (Numba, CuPy, PyTorch): handed to the executor as is (the Numba
        # backend uses it in place; the interpreter copies it through the host).
        d = dt.from_numpy(np.dtype(cai["typestr"]))
        if d is None:
            raise TypeError(f"{path}: arrays of dtype {cai['typestr']} are not supported")
        shape = tuple(int(s) for s in cai["shape"])
        index_dtype = dt.int32
        for m in meta:
            if isinstance(m, ArrayAnnotation):
                index_dtype = m.index_dtype
        if index_dtype is dt.int32 and any(s >= 2 ** 31 for s in shape):
            raise ValueError(f"{path}: extent >= 2**31 needs ct.IndexedWithInt64")
        leaves.append(x)
        return ArgSpec("array", dtype=d, ndim=len(shape), index_dtype=index_dtype,
                       static_shape=(None,) * len(shape))
    raise TypeError(f"Invalid {path}: Objects of type '{type(x).__name__}' are not supported.")


def classify_args(kernel, args: tuple) -> Spec:
    names = kernel.param_names
    if len(args) != len(names):
        raise TypeError(f"Kernel expects {len(names)} arguments but {len(args)} "
                        f"{'was' if len(args) == 1 else 'were'} given")
    anns = kernel.annotations()
    leaves: list = []
    params = [_classify(a, anns.get(n), f"kernel argument #{i}", leaves)
              for i, (n, a) in enumerate(zip(names, args))]
    key = tuple(_key(p) for p in params)
    return Spec(key, params, leaves)


def _key(p: ArgSpec):
    if p.kind == "tuple":
        return ("tuple", tuple(_key(i) for i in p.items))
    if p.kind == "const":
        return ("const", type(p.value), p.value)
    return (p.kind, p.dtype, p.ndim, p.index_dtype)

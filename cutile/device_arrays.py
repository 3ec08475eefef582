"""Device array arguments (Numba device arrays, CuPy arrays, PyTorch CUDA tensors), described
once per launch without importing Numba.

A launch reads each device array's pointer, shape, strides and dtype exactly once, into a
``DeviceArrayRef``.  That is the cheap part of a launch when done directly: PyTorch builds its
``__cuda_array_interface__`` dict in Python on every access, and Numba's ``as_cuda_array``
builds a whole device-array object, each costing tens of microseconds, which is more than the
GPU needs for a small kernel.  The executors take the description from here: the Numba
backend packs kernel parameters from it, the interpreter copies through the host using its
``__cuda_array_interface__`` (which it re-exports, so any CUDA-array consumer accepts it).
"""

from __future__ import annotations

import math
import sys

import numpy as np


class DeviceArrayRef:
    """Pointer, shape, strides (bytes) and NumPy dtype of one device array; keeps ``obj``
    (the caller's array) alive for the launch."""

    __slots__ = ("obj", "ptr", "shape", "strides", "dtype", "readonly")

    def __init__(self, obj, ptr: int, shape: tuple, strides: tuple, dtype: np.dtype,
                 readonly: bool = False):
        self.obj, self.ptr, self.shape, self.strides = obj, ptr, shape, strides
        self.dtype, self.readonly = dtype, readonly

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def __cuda_array_interface__(self) -> dict:
        typestr = self.dtype.str      # ml_dtypes' types give "<V2", "<V1", even "<f1"
        return {"version": 3, "shape": self.shape, "strides": self.strides,
                "typestr": typestr, "data": (self.ptr, self.readonly)}

    def element_strides(self) -> tuple:
        return tuple(s // self.dtype.itemsize for s in self.strides)

    def __repr__(self) -> str:
        return (f"DeviceArrayRef({type(self.obj).__name__}, ptr=0x{self.ptr:x}, "
                f"shape={self.shape}, dtype={self.dtype})")


_TORCH_DTYPES: dict = {}


def _torch_dtype(tdt) -> np.dtype | None:
    d = _TORCH_DTYPES.get(tdt)
    if d is None:
        name = str(tdt).rsplit(".", 1)[-1]
        if name.startswith(("bfloat16", "float8", "float4")):
            import ml_dtypes
            if not hasattr(ml_dtypes, name):
                return None
            d = np.dtype(getattr(ml_dtypes, name))
        else:
            try:
                d = np.dtype({"bool": "bool"}.get(name, name))
            except TypeError:
                return None
        _TORCH_DTYPES[tdt] = d
    return d


def _c_strides(shape: tuple, itemsize: int) -> tuple:
    out, s = [], itemsize
    for d in reversed(shape):
        out.append(s)
        s *= d
    return tuple(reversed(out))


def describe(x) -> DeviceArrayRef | None:
    """A ``DeviceArrayRef`` for ``x``, or None when ``x`` is not a device array."""
    if type(x) is DeviceArrayRef:
        return x
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        if not x.is_cuda:
            return None
        d = _torch_dtype(x.dtype)
        if d is not None:
            item = d.itemsize
            return DeviceArrayRef(x, x.data_ptr(), tuple(x.shape),
                                  tuple(s * item for s in x.stride()), d)
    try:
        cai = x.__cuda_array_interface__
    except AttributeError:
        return _from_cuda_dlpack(x)
    d = np.dtype(cai["typestr"])
    shape = tuple(int(s) for s in cai["shape"])
    strides = cai.get("strides")
    strides = _c_strides(shape, d.itemsize) if strides is None else tuple(int(s) for s in strides)
    ptr, readonly = cai["data"]
    return DeviceArrayRef(x, int(ptr or 0), shape, strides, d, bool(readonly))


_DL_CUDA = (2, 13)          # kDLCUDA, kDLCUDAManaged


def _from_cuda_dlpack(x) -> DeviceArrayRef | None:
    """A CUDA array that offers only DLPack (no ``__cuda_array_interface__``, e.g. JAX): read
    through PyTorch's or CuPy's zero-copy ``from_dlpack``, whichever is installed."""
    dev = getattr(x, "__dlpack_device__", None)
    if dev is None or not hasattr(x, "__dlpack__"):
        return None
    try:
        kind = int(dev()[0])
    except Exception:
        return None
    if kind not in _DL_CUDA:
        return None
    import importlib
    for name in ("torch", "cupy"):
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        try:
            view = mod.from_dlpack(x)
        except Exception as e:
            raise TypeError(f"{type(x).__name__}: its CUDA DLPack export cannot be read "
                            f"({name}.from_dlpack: {e})") from None
        ref = describe(view)
        if ref is None:
            raise TypeError(f"{type(x).__name__}: {name}.from_dlpack did not give a CUDA array")
        return ref
    raise TypeError(f"{type(x).__name__} is a CUDA array offering only DLPack; reading it "
                    "needs PyTorch or CuPy (or pass an object with __cuda_array_interface__)")

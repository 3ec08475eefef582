"""The parameter interface of a generated kernel: its Numba signature and the packed launch values.

Why not just call Numba's dispatcher: ``dispatcher[grid, block, stream](*args)`` types every
argument, converts every CUDA array with ``as_cuda_array`` and builds a launch configuration
on every call.  On the H100 that costs ~60 us plus ~100 us per PyTorch tensor, more than the
GPU needs for a 2**26-element vector add (benchmarks/launch_overhead.py).  So:

- a generated kernel is compiled eagerly for one signature per specialisation
  (``argument_types``): every array is typed with layout ``"A"`` (any strides), so
  C-contiguous, transposed and sliced arrays share one compiled kernel;
- a launch packs the parameters itself (``Packer``) from ``DeviceArrayRef`` descriptions and
  calls ``cuda.core.launch`` directly.  The packing follows Numba's kernel ABI (an array is
  meminfo, parent, nitems, itemsize, data, shape..., strides... in bytes; scalars are ctypes
  values); ``Packer.verify`` checks it against Numba's own ``_prepare_args`` on the first launch
  of every kernel, and a kernel whose check fails is launched through the dispatcher instead.
"""

from __future__ import annotations

import ctypes

import numpy as np

from .. import dtypes as dt
from ..device_arrays import DeviceArrayRef, describe
from ..ir.types import ArrayType
from .smem import NP_DTYPE


def _numba_scalar(d: dt.DType):
    from numba.cuda import types
    from numba.cuda.np import numpy_support
    if d is dt.bfloat16 or storage_bits(d) == 8:
        return types.float32                  # bfloat16/float8 values live in float32 registers
    return numpy_support.from_dtype(d.np_dtype)


def _numba_element(d: dt.DType):
    from numba.cuda import types
    from numba.cuda.np import numpy_support
    if d is dt.bfloat16:
        return types.uint16                   # bfloat16 arrays travel as their bits
    if storage_bits(d) == 8:
        return types.uint8                    # float8/float4 arrays: one byte per value
    return numpy_support.from_dtype(d.np_dtype)


def storage_bits(d: dt.DType) -> int | None:
    """Bits of the unsigned integer a non-Numba float array travels as (None: native)."""
    if d is dt.bfloat16:
        return 16
    if d.is_restricted and d is not dt.tfloat32:
        return 8
    return None


def storage_itemsize(d: dt.DType) -> int:
    """Bytes per element of a ``d`` array in generated code."""
    bits = storage_bits(d)
    return bits // 8 if bits else d.np_dtype.itemsize


def argument_types(ir, n_strides: int, layouts: tuple | None = None,
                   assert_buffer: bool = False, scratch: tuple = (),
                   tensor_maps: bool = False) -> tuple:
    """Numba types of the generated kernel's parameters, in order: the kernel's arrays and
    scalars, the three grid extents, the array strides the kernel queries, the address of
    the operands' TMA tensor maps (``tensor_maps``: ``tma.py``), the ``assert_``
    record (``assert_buffer``), then one workspace array per cast of ``scratch``.  ``layouts``
    gives each array's Numba layout ("C": C-contiguous, addresses computed from the shape;
    "A": any strides); all "A" by default."""
    from numba.cuda import types
    from numba.cuda.np import numpy_support

    out = []
    arrays = iter(layouts or ())
    for p in ir.params:
        if isinstance(p.type, ArrayType):
            out.append(types.Array(_numba_element(p.type.dtype), p.type.ndim,
                                   next(arrays, "A")))
        else:
            out.append(_numba_scalar(p.type.dtype))
    out += [types.int32] * 3 + [types.int64] * n_strides
    if tensor_maps:
        out.append(types.int64)
    if assert_buffer:                   # ``aerr``: the assert_ failure record (lower/debug.py)
        out.append(types.Array(types.int64, 1, "C"))
    for cast in scratch:                # ``gs_<cast>``: the global workspace (smem.py)
        out.append(types.Array(numpy_support.from_dtype(np.dtype(NP_DTYPE[cast])), 2, "C"))
    return tuple(out)


def _scalar_packer(nbty):
    """ctypes conversion of one scalar, as Numba's ``_prepare_args`` does it."""
    from numba.cuda import types
    if nbty == types.boolean:
        return bool
    if nbty == types.float16:
        return lambda v: ctypes.c_uint16(int(np.float16(v).view(np.uint16)))
    if nbty == types.float32:
        return lambda v: ctypes.c_float(float(v))
    if nbty == types.float64:
        return lambda v: ctypes.c_double(float(v))
    if isinstance(nbty, types.Integer):
        c = getattr(ctypes, f"c_{nbty}")
        return lambda v: c(int(v))
    raise TypeError(f"no parameter packing for {nbty}")


def layout(ref: DeviceArrayRef) -> str:
    """"C" when the array is C-contiguous (dimensions of extent 1 may have any stride, as in
    NumPy), else "A".  Numba computes a "C" array's addresses from its shape, which lets NVVM
    fold the index arithmetic (a third faster f32 matmul on the H100 than with "A")."""
    expect = ref.dtype.itemsize
    for d, st in zip(reversed(ref.shape), reversed(ref.strides)):
        if d != 1 and st != expect:
            return "A"
        expect *= d
    return "C" if ref.size else "A"


_dummies: dict = {}


def _dummy(dtype: np.dtype) -> int:
    """A one-element device buffer: an empty array's kernel parameter points there, so the
    clamped lanes of a (masked-off) load read valid memory."""
    buf = _dummies.get(dtype)
    if buf is None:
        from numba import cuda
        buf = _dummies.setdefault(dtype, cuda.device_array(1, dtype=dtype))
    return buf.__cuda_array_interface__["data"][0]


def refs(args: list) -> list:
    """The launch arguments with every device array as a DeviceArrayRef (empty arrays
    re-pointed at a dummy); scalars as they are."""
    out = []
    for a in args:
        if isinstance(a, np.ndarray):
            out.append(a)                         # a scalar (0-d host value)
            continue
        ref = describe(a)
        if ref is None:
            out.append(a)
            continue
        if ref.size == 0 or not ref.ptr:
            ref = DeviceArrayRef(ref.obj, _dummy(ref.dtype), ref.shape, ref.strides, ref.dtype)
        out.append(ref)
    return out


class Packer:
    """Packs one launch's parameters for a compiled kernel with ``argtypes``."""

    def __init__(self, argtypes: tuple):
        from numba.cuda import types
        self.argtypes = argtypes
        self.kinds = [("array", None) if isinstance(t, types.Array)
                      else ("scalar", _scalar_packer(t)) for t in argtypes]

    def pack(self, values: list) -> list:
        """Kernel parameters for ``values``: array refs, scalars, grid, strides (in order)."""
        out = []
        for (kind, conv), v in zip(self.kinds, values):
            if kind == "array":
                item = v.dtype.itemsize
                out += (0, 0, v.size, item, v.ptr)
                out += v.shape
                out += v.strides
            else:
                out.append(conv(v[()] if isinstance(v, np.ndarray) else v))
        return out

    def verify(self, kernel, values: list, stream) -> bool:
        """Whether ``pack`` gives what Numba's own argument preparation gives."""
        from numba import cuda
        theirs: list = []
        for ty, v in zip(self.argtypes, values):
            if isinstance(v, DeviceArrayRef):
                cai = dict(v.__cuda_array_interface__)
                d = dt.from_numpy(v.dtype)
                if d is not None and storage_bits(d):
                    cai["typestr"] = f"<u{storage_bits(d) // 8}"
                v = cuda.from_cuda_array_interface(cai, owner=v, sync=False)
            elif isinstance(v, np.ndarray):
                v = v[()]
                d = dt.from_numpy(v.dtype)
                if ty == _numba_scalar(dt.float32) and d is not None and storage_bits(d):
                    v = np.float32(v)                 # bfloat16/float8 scalars: float32
            kernel._prepare_args(ty, v, stream, [], theirs)
        ours = self.pack(values)
        if len(ours) != len(theirs):
            return False
        for a, b in zip(ours, theirs):
            if isinstance(b, ctypes._SimpleCData):
                if type(a) is not type(b) or a.value != b.value:
                    return False
            elif a != b or type(a) is not type(b) and not isinstance(a, int | bool):
                return False
        return True

"""Launch-path pieces of the Numba backend that need no GPU: describing device arrays once per
launch (cutile/device_arrays.py) and packing kernel parameters in Numba's ABI
(cutile/numba_backend/params.py; on a GPU every launch checks the packing against Numba's own
on first use, see params.Packer.verify)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import cutile as ct
from cutile import dtypes as dt
from cutile.device_arrays import DeviceArrayRef, describe


class _CAI:
    def __init__(self, shape, typestr, strides=None, ptr=0x1000):
        self.__cuda_array_interface__ = {"version": 3, "shape": shape, "typestr": typestr,
                                         "strides": strides, "data": (ptr, False)}


def test_describe_cai_c_contiguous_and_strided():
    r = describe(_CAI((3, 4), "<f4"))
    assert (r.ptr, r.shape, r.strides, r.dtype) == (0x1000, (3, 4), (16, 4), np.float32)
    r = describe(_CAI((3, 4), "<i2", strides=(2, 12)))
    assert r.strides == (2, 12) and r.element_strides() == (1, 6) and r.size == 12
    assert describe(np.zeros(3)) is None                     # host arrays are not described
    assert describe(r) is r


def test_described_array_reexports_interface():
    r = DeviceArrayRef(None, 0x2000, (5,), (4,), np.dtype(np.float32))
    cai = r.__cuda_array_interface__
    assert cai["data"] == (0x2000, False) and cai["shape"] == (5,) and cai["strides"] == (4,)


def test_pack_follows_numba_abi():
    pytest.importorskip("numba")
    from numba.cuda import types

    from cutile.numba_backend.params import Packer
    argtypes = (types.Array(types.float32, 2, "A"), types.int32, types.float16, types.boolean,
                types.float32, types.int32, types.int32, types.int32, types.int64)
    p = Packer(argtypes)
    arr = DeviceArrayRef(None, 0x3000, (3, 4), (4, 12), np.dtype(np.float32))
    vals = [arr, np.array(7, np.int32), np.array(1.5, np.float16), np.array(True),
            np.array(2.0, dt.bfloat16.np_dtype), np.int32(2), np.int32(1), np.int32(1),
            np.int64(3)]
    out = p.pack(vals)
    assert out[:9] == [0, 0, 12, 4, 0x3000, 3, 4, 4, 12]     # meminfo, parent, n, item, ptr…
    assert isinstance(out[9], ctypes.c_int32) and out[9].value == 7
    assert isinstance(out[10], ctypes.c_uint16) and out[10].value == 0x3E00   # 1.5 as f16 bits
    assert out[11] is True
    assert isinstance(out[12], ctypes.c_float) and out[12].value == 2.0      # bf16 scalar
    assert [v.value for v in out[13:]] == [2, 1, 1, 3]
    assert isinstance(out[-1], ctypes.c_int64)


def test_argument_types_are_any_layout():
    pytest.importorskip("numba")
    from cutile.numba_backend.params import argument_types

    @ct.kernel
    def k(a, x, out, T: ct.Constant[int]):
        ct.store(out, (0,), (ct.load(a, (0,), (T,)) + x).astype(ct.bfloat16))

    ir = k.compile(k.specialize((np.zeros(4, dt.bfloat16.np_dtype), 1.0,
                                 np.zeros(4, dt.bfloat16.np_dtype), 4)))
    tys = argument_types(ir, 1)
    assert [str(t) for t in tys] == ["array(uint16, 1d, A)", "float32", "array(uint16, 1d, A)",
                                     "int32", "int32", "int32", "int64"]


def test_layout_c_only_when_addresses_follow_the_shape():
    from cutile.numba_backend.params import layout
    f4 = np.dtype(np.float32)
    assert layout(DeviceArrayRef(None, 1, (3, 4), (16, 4), f4)) == "C"
    assert layout(DeviceArrayRef(None, 1, (3, 4), (4, 12), f4)) == "A"        # transposed
    assert layout(DeviceArrayRef(None, 1, (3, 4), (32, 4), f4)) == "A"        # row slice
    assert layout(DeviceArrayRef(None, 1, (1, 4), (999, 4), f4)) == "C"       # extent-1 dim
    assert layout(DeviceArrayRef(None, 1, (0, 4), (16, 4), f4)) == "A"        # empty

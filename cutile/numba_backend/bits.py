"""Bit patterns of register values, for ``bitcast`` and ``pack_to_bytes``/``unpack_from_bytes``.

``to_bits`` gives an element's pattern as an unsigned integer of its width (float4: the code
in the low nibble of a u8), ``from_bits`` the register value of a pattern, exactly as the
interpreter reinterprets bytes, NaN payloads included.  Registers hold bfloat16/float8/float4
as float32, so those go through their storage encoding (``exprs.to_storage``; a float8 NaN
carries its byte in the float32 payload, see ``minifloat.py``); float16 registers are
reinterpreted in place by ``f16_as_u16``/``u16_as_f16``: an LLVM bitcast of the ``half`` on
the GPU, a NumPy view under the simulator (no arithmetic, which would quieten or
canonicalise a NaN).
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from . import exprs


def sim_f16_as_u16(v):
    return np.array(v, dtype=np.float16).view(np.uint16)[()]


def sim_u16_as_f16(b):
    return np.array(int(b) & 0xFFFF, dtype=np.uint16).view(np.float16)[()]


def _retype(builder, v, want):
    """``v`` as the LLVM type ``want`` of the same 16 bits: numba-cuda's data model holds a
    float16 value as an ``i16`` (not ``half``), in which case there is nothing to do; a
    bitcast where the types differ (NVIDIA's test_pack_unpack on an H200: storing a ``half``
    into a float16 variable's ``i16`` slot failed to compile)."""
    return v if v.type == want else builder.bitcast(v, want)


def _make_f16_as_u16():
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    @intrinsic
    def f16_as_u16(typingctx, v):
        if v != types.float16:
            return None

        def codegen(context, builder, sig, args):
            return _retype(builder, args[0], context.get_value_type(types.uint16))

        return types.uint16(types.float16), codegen

    return f16_as_u16


def _make_u16_as_f16():
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    @intrinsic
    def u16_as_f16(typingctx, b):
        if not isinstance(b, types.Integer):
            return None

        def codegen(context, builder, sig, args):
            v = context.cast(builder, args[0], sig.args[0], types.uint16)
            return _retype(builder, v, context.get_value_type(types.float16))

        return types.float16(b), codegen

    return u16_as_f16


_device: dict | None = None


def functions(simulator: bool) -> dict:
    """The names generated kernels call, for the GPU or the simulator."""
    global _device
    if simulator:
        return {"f16_as_u16": sim_f16_as_u16, "u16_as_f16": sim_u16_as_f16}
    if _device is None:
        _device = {"f16_as_u16": _make_f16_as_u16(), "u16_as_f16": _make_u16_as_f16()}
    return _device


_UINT = {4: dt.uint8, 8: dt.uint8, 16: dt.uint16, 32: dt.uint32, 64: dt.uint64}


def container(d: dt.DType) -> dt.DType:
    """The unsigned dtype that holds ``d``'s bit pattern."""
    return _UINT[d.bitwidth]


def to_bits(x: str, d: dt.DType) -> str:
    u = exprs.cast(container(d))
    if d.is_integral:
        return f"{u}({x})"
    if d in (dt.float32, dt.tfloat32):
        return f"u32(libdevice.float_as_int({x}))"
    if d is dt.float64:
        return f"u64(libdevice.double_as_longlong({x}))"
    if d is dt.float16:
        return f"f16_as_u16({x})"
    return f"{u}({exprs.to_storage(x, d)})"          # bfloat16, float8, float4


def from_bits(b: str, d: dt.DType) -> str:
    if d.is_integral:
        return f"{exprs.cast(d)}({b})"
    if d in (dt.float32, dt.tfloat32):
        return f"libdevice.int_as_float(i32({b}))"
    if d is dt.float64:
        return f"libdevice.longlong_as_double(i64({b}))"
    if d is dt.float16:
        return f"u16_as_f16({b})"
    return exprs.from_storage(b, d)

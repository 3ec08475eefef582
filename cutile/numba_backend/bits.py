"""Bit patterns of register values, for ``bitcast`` and ``pack_to_bytes``/``unpack_from_bytes``.

``to_bits`` gives an element's pattern as an unsigned integer of its width (float4: the code
in the low nibble of a u8), ``from_bits`` the register value of a pattern.  Registers hold
bfloat16/float8/float4 as float32 (exact), so those go through their storage encoding
(``exprs.to_storage``); float16 goes through ``f16_bits``/``f16_from_bits`` below (exact for
every non-NaN value; a float16 NaN becomes the canonical quiet NaN 0x7E00 with its sign —
the one place the backend's bits may differ from the interpreter's, which keeps payloads).
"""

from __future__ import annotations

from .. import dtypes as dt
from . import exprs

DEVICE_SOURCE = '''
def f16_bits(v):
    s = 0x8000 if math.copysign(1.0, v) < 0 else 0
    if v != v:
        return s | 0x7E00
    return mf_bits(v, 10, -14, 15, 0x8000, 0x7E00, 0x7C00)


def f16_from_bits(b):
    b = int(b)
    e = (b >> 10) & 31
    m = b & 1023
    if e == 31:
        v = math.inf if m == 0 else math.nan
    elif e == 0:
        v = math.ldexp(float(m), -24)
    else:
        v = math.ldexp(float(m + 1024), e - 25)
    return -v if (b >> 15) & 1 else v
'''

DEVICE_FUNCTIONS = ("f16_bits", "f16_from_bits")

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
        return f"u16(f16_bits(f64({x})))"
    return f"{u}({exprs.to_storage(x, d)})"          # bfloat16, float8, float4


def from_bits(b: str, d: dt.DType) -> str:
    if d.is_integral:
        return f"{exprs.cast(d)}({b})"
    if d in (dt.float32, dt.tfloat32):
        return f"libdevice.int_as_float(i32({b}))"
    if d is dt.float64:
        return f"libdevice.longlong_as_double(i64({b}))"
    if d is dt.float16:
        return f"f16(f16_from_bits(u32({b})))"
    return exprs.from_storage(b, d)

"""float8 (e4m3fn, e5m2, e8m0fnu, e5m3fnu) and float4 (e2m1fn) on the Numba backend.

Numba has no such types, and restricted floats take no arithmetic (R-DTYPE-3): they are
loaded, stored, gathered, selected, reshaped, converted and fed to ``mma``.  So, as for
bfloat16:

- a value lives in a float32 register (every value of these formats is exact in float32;
  2**-127 of e8m0 is a float32 subnormal);
- an array travels as its bytes (uint8; float4 one value per byte, as ml_dtypes stores it);
  a load decodes through a 256-entry table built from ml_dtypes (so the decoding is the
  interpreter's by construction), a store encodes the exact value (``mf_bits``);
- a NaN byte decodes to a quiet float32 NaN of its sign whose low 8 payload bits are the byte
  itself, and a store of such a NaN writes that byte back, so loads, stores, ``where``,
  reshapes and ``pack_to_bytes``/``bitcast`` keep every NaN encoding, as the interpreter's
  byte arrays do (e5m2 has six).  A NaN made by a conversion has no byte (its low payload is
  0) and encodes as the interpreter's conversion does: the format's NaN with the sign;
  conversions out of the format first drop the byte (``conversions._convert_minifloat``);
- a conversion into the format rounds the value as the interpreter does
  (``interp/numerics.convert``): to nearest even, e4m3fn/e5m2 saturating to the largest finite
  value (``.satfinite``, also for infinities), e2m1 saturating with NaN -> -0.0 (ml_dtypes);
  e8m0 takes RZ or RP only.  The rounding runs in float64 on the exact source value (64-bit
  integers beyond 2**53 saturate every format except e8m0, which takes them through
  libdevice's directed int64 -> float64 conversion in the same direction).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import dtypes as dt


@dataclass(frozen=True)
class Format:
    name: str
    mbits: int          # explicit mantissa bits
    emin: int           # exponent of the smallest normal
    bias: int
    sign: int           # sign bit of the stored byte
    maxf: float         # largest finite value
    nan_bits: int       # what NaN encodes to
    nan_value: float    # what NaN converts to
    inf_bits: int       # what +inf encodes to (formats with infinities), else -1


FORMATS = {
    "float8_e4m3fn": Format("float8_e4m3fn", 3, -6, 7, 0x80, 448.0, 0x7F, float("nan"), -1),
    "float8_e5m2": Format("float8_e5m2", 2, -14, 15, 0x80, 57344.0, 0x7E, float("nan"), 0x7C),
    "float4_e2m1fn": Format("float4_e2m1fn", 1, 0, 1, 0x8, 6.0, 0x8, -0.0, -1),
    # unsigned: no sign bit; conversions clamp negative values to 0 (mf_round_u)
    "float8_e5m3fnu": Format("float8_e5m3fnu", 3, -14, 15, 0, dt.E5M3_MAX, 0xFF, float("nan"),
                             -1),
}
E8M0 = "float8_e8m0fnu"
NAMES = (*FORMATS, E8M0)


def is_minifloat(d: dt.DType) -> bool:
    return d.name in NAMES


def decode_table(d: dt.DType) -> np.ndarray:
    """float32 value of every byte (float4: of its low four bits), from ml_dtypes."""
    codes = np.arange(256, dtype=np.uint8)
    if d is dt.float8_e5m3fnu:                 # no ml_dtypes type: cutile's own decoder
        vals = dt.e5m3_decode(codes).astype(np.float32)
    elif d is dt.float4_e2m1fn:
        vals = (codes & np.uint8(0xF)).view(d.np_dtype).astype(np.float32)
    else:
        vals = codes.view(d.np_dtype).astype(np.float32)
    nan = np.isnan(vals)
    bits = vals.view(np.uint32)
    bits[nan] = (bits[nan] & np.uint32(0x80000000)) | np.uint32(NAN32) | codes[nan]
    return vals


TABLE_DTYPES = (dt.float8_e4m3fn, dt.float8_e5m2, dt.float4_e2m1fn, dt.float8_e8m0fnu,
                dt.float8_e5m3fnu)


def table_name(d: dt.DType) -> str:
    return f"MFDEC_{d.name}"


def tables() -> dict:
    """Decode tables for the generated kernels' namespace (constant arrays on the GPU)."""
    return {table_name(d): decode_table(d) for d in TABLE_DTYPES}


def local_name(d: dt.DType) -> str:
    """The kernel's local binding of ``d``'s decode table (``table_bindings``)."""
    return f"mfd_{d.name}"


def load(ref: str, d: dt.DType) -> str:
    """An array byte read as its float32 value (through the kernel's local table)."""
    return f"{local_name(d)}[u32({ref}) & u32(255)]"


def table_bindings(body: str) -> list[str]:
    """``local = TABLE`` lines for the decode tables ``body`` reads.  Numba makes a constant
    array at every read of a global array, so a kernel that indexed the global at each load
    carried one 1 KiB copy per site: an f8 128x128x64 mma tile went over the 64 KiB
    constant bank (ptxas: "too much global constant data"); bound once, there is one."""
    return [f"{local_name(d)} = {table_name(d)}" for d in
            TABLE_DTYPES if f"{local_name(d)}[" in body]


NAN32 = 0x7FC00000          # the quiet float32 NaN a NaN byte decodes to (with sign and byte)


def store(val: str, d: dt.DType) -> str:
    """A float32 register value (exact in the format) as the byte to store."""
    if d.name == E8M0:
        byte, sign, nanb = f"mf_e8m0_bits(f64({val}))", 0, 0xFF
    else:
        f = FORMATS[d.name]
        byte = (f"mf_bits(f64({val}), {f.mbits}, {f.emin}, {f.bias}, {f.sign}, {f.nan_bits}, "
                f"{f.inf_bits})")
        sign, nanb = f.sign, f.nan_bits
    return f"u8(mf_nan_byte(u32(libdevice.float_as_int({val})), {sign}, {nanb}, {byte}))"


def drop_nan_byte(x: str) -> str:
    """A register value of the format with a NaN's byte cleared (every other value has its
    low 8 float32 bits clear already): the NaN a conversion out of the format gives."""
    return f"libdevice.int_as_float(i32(u32(libdevice.float_as_int({x})) & u32(0xFFFFFF00)))"


def convert_to(x64: str, d: dt.DType, mode: str | None) -> str:
    """float32 register value of ``d`` nearest (per mode) to the exact float64 ``x64``."""
    if d.name == E8M0:
        return f"f32(mf_e8m0_round({x64}, {1 if mode == 'ru' else 0}))"
    f = FORMATS[d.name]
    nan = "math.nan" if f.nan_value != f.nan_value else repr(f.nan_value)
    fn = "mf_round" if f.sign else "mf_round_u"
    return f"f32({fn}({x64}, {f.mbits}, {f.emin}, {f.maxf!r}, {nan}))"


# Device functions, exec'd into the kernels' namespace (rt.namespace) and compiled by Numba
# with the kernel (plain Python under the simulator).  All arithmetic below is exact: scaling
# by powers of two and the 2**52 trick for round-to-nearest-even of a small non-negative value.
DEVICE_SOURCE = '''
def mf_round(v, MB, EMIN, MAXF, NANV):
    if v != v:
        return NANV
    a = abs(v)
    if a >= MAXF:
        r = MAXF
    else:
        m, e = math.frexp(a)
        qe = max(e - 1, EMIN) - MB
        t = math.ldexp(a, -qe)
        t = (t + 4503599627370496.0) - 4503599627370496.0
        r = min(math.ldexp(t, qe), MAXF)
    return math.copysign(r, v)


def mf_round_u(v, MB, EMIN, MAXF, NANV):
    if v != v:
        return NANV
    if v <= 0.0:
        return 0.0
    if v >= MAXF:
        return MAXF
    m, e = math.frexp(v)
    qe = max(e - 1, EMIN) - MB
    t = math.ldexp(v, -qe)
    t = (t + 4503599627370496.0) - 4503599627370496.0
    return min(math.ldexp(t, qe), MAXF)


def mf_bits(v, MB, EMIN, BIAS, SIGN, NANB, INFB):
    if v != v:
        return NANB
    s = SIGN if math.copysign(1.0, v) < 0 else 0
    a = abs(v)
    if a == math.inf:
        return s | INFB
    if a == 0.0:
        return s
    m, e = math.frexp(a)
    if e - 1 < EMIN:
        return s | int(math.ldexp(a, MB - EMIN))
    return s | ((e - 1 + BIAS) << MB) | (int(math.ldexp(a, MB - e + 1)) - (1 << MB))


def mf_nan_byte(b, SIGN, NANB, other):
    if (b & 0x7F800000) != 0x7F800000 or (b & 0x7FFFFF) == 0:
        return other
    if (b & 0xFF) != 0:
        return b & 0xFF
    if b >> 31:
        return SIGN | NANB
    return NANB


def mf_e8m0_round(v, UP):
    if not (v > 0.0 and v < math.inf):
        return math.nan
    m, e = math.frexp(v)
    k = e - 1
    if UP != 0 and m != 0.5:
        k = e
    if k > 127:
        return math.nan
    return math.ldexp(1.0, max(k, -127))


def mf_e8m0_bits(v):
    if v != v:
        return 255
    m, e = math.frexp(v)
    return e - 1 + 127
'''

DEVICE_FUNCTIONS = ("mf_round", "mf_round_u", "mf_bits", "mf_nan_byte", "mf_e8m0_round",
                    "mf_e8m0_bits")

"""The names generated source gives dtype casts, shared by the source builders and the runtime.

Generated source names every dtype cast (``f32(x)``, ``i8(x)``).  ``CASTS`` maps an IR dtype's
name to that short name (``exprs.cast``); ``NUMPY_TYPES`` maps the short name to the NumPy
scalar constructor bound to it in the kernels' namespace (``rt.namespace``), which Numba
compiles as a conversion.  A module of its own because the expression builders (``exprs``,
``conversions``) and the namespace of the runtime (``rt``) both need the table, and the
builders sit below the runtime.
"""

from __future__ import annotations

import numpy as np

CASTS = {
    "bool_": "b1", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "float16": "f16",
    "float32": "f32", "float64": "f64", "tfloat32": "f32",
    # bfloat16 values live in float32 registers (always exactly representable in bfloat16);
    # bfloat16 arrays travel as their uint16 bit patterns (see exprs.from_storage).
    "bfloat16": "f32",
    # float8/float4 likewise: float32 registers, byte arrays (see minifloat.py)
    "float8_e4m3fn": "f32", "float8_e5m2": "f32", "float8_e8m0fnu": "f32",
    "float4_e2m1fn": "f32", "float8_e5m3fnu": "f32",
}

NUMPY_TYPES = {
    "b1": np.bool_, "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "f16": np.float16,
    "f32": np.float32, "f64": np.float64,
}

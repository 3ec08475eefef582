"""The namespace generated kernels run in: casts, ``libdevice`` and ``cuda``.

Generated source names every dtype cast (``f32(x)``, ``i8(x)``: NumPy scalar constructors, which
Numba compiles as conversions) and calls every operation whose rounding matters through
``libdevice`` (``fmul_rn``: a multiply NVVM cannot contract into an FMA; ``fmaf``: a fused one;
``fdiv_rn``, ``fsqrt_rn``, ``expf`` ...).  On the GPU ``libdevice`` is Numba's binding of
NVIDIA's libdevice.  Under the CUDA simulator the kernel is plain Python, where libdevice does
not exist: ``SimLibdevice`` provides the same functions computed with NumPy, with the exact
(correctly rounded) results the interpreter defines, so the simulator checks the generated
program's structure and integer/float plumbing bit for bit.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

CASTS = {
    "bool_": "b1", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "float16": "f16",
    "float32": "f32", "float64": "f64", "tfloat32": "f32",
}

_NP = {"b1": np.bool_, "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
       "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "f16": np.float16,
       "f32": np.float32, "f64": np.float64}

F32, F64 = np.float32, np.float64


def _fma32_exact(a, b, c):
    """float32 ``a*b + c`` rounded once: exact product in float64, TwoSum, round-to-odd."""
    a, b, c = float(a), float(b), float(c)
    p = a * b                                   # exact: 24 + 24 bits
    if not (math.isfinite(p) and math.isfinite(c)):
        return F32(F64(p) + F64(c))
    s = p + c
    bb = s - p
    e = (p - (s - bb)) + (c - bb)
    if e != 0 and math.isfinite(s):
        bits = np.array(s, F64).view(np.int64)
        if bits & 1 == 0:                       # round to odd: move toward the remainder
            s = float(np.nextafter(F64(s), F64(math.inf if e > 0 else -math.inf)))
    return F32(s)


def _fma64_exact(a, b, c):
    a, b, c = float(a), float(b), float(c)
    if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(c)):
        return F64(F64(a) * F64(b) + F64(c))
    q = Fraction(a) * Fraction(b) + Fraction(c)
    if q == 0:
        return F64(F64(a) * F64(b) + F64(c))
    try:
        return F64(float(q))
    except OverflowError:
        return F64(math.inf if q > 0 else -math.inf)


def _d2f_rz(a):
    a = F64(a)
    r = F32(a)
    if np.isfinite(a) and abs(F64(r)) > abs(a):
        r = np.nextafter(r, F32(0))
    return r


def _via64(fn, out):
    def f(*args):
        return out(fn(*[F64(x) for x in args]))
    f.__name__ = getattr(fn, "__name__", "f")
    return f


class SimLibdevice:
    """libdevice functions for the simulator (host Python, exact where libdevice is exact;
    transcendentals as the interpreter computes them: in float64, rounded once)."""

    fmul_rn = staticmethod(lambda a, b: F32(a) * F32(b))
    dmul_rn = staticmethod(lambda a, b: F64(a) * F64(b))
    fdiv_rn = staticmethod(lambda a, b: F32(a) / F32(b))
    ddiv_rn = staticmethod(lambda a, b: F64(a) / F64(b))
    fsqrt_rn = staticmethod(lambda a: np.sqrt(F32(a)))
    dsqrt_rn = staticmethod(lambda a: np.sqrt(F64(a)))
    fmaf = staticmethod(_fma32_exact)
    fma = staticmethod(_fma64_exact)
    floorf = staticmethod(lambda a: np.floor(F32(a)))
    floor = staticmethod(lambda a: np.floor(F64(a)))
    ceilf = staticmethod(lambda a: np.ceil(F32(a)))
    ceil = staticmethod(lambda a: np.ceil(F64(a)))
    fmodf = staticmethod(lambda a, b: np.fmod(F32(a), F32(b)))
    fmod = staticmethod(lambda a, b: np.fmod(F64(a), F64(b)))
    double2float_rz = staticmethod(lambda a: _d2f_rz(a))
    float_as_int = staticmethod(lambda a: F32(a).view(np.int32))
    int_as_float = staticmethod(lambda i: np.int32(i).view(np.float32))


for _name, _fn in {"exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2,
                   "sin": np.sin, "cos": np.cos, "tan": np.tan, "sinh": np.sinh,
                   "cosh": np.cosh, "tanh": np.tanh, "pow": np.power,
                   "atan2": np.arctan2}.items():
    setattr(SimLibdevice, _name + "f", staticmethod(_via64(_fn, F32)))
    setattr(SimLibdevice, _name, staticmethod(_via64(_fn, F64)))


def simulator() -> bool:
    """Whether numba.cuda is the CUDA simulator (decided when numba.cuda was imported)."""
    from numba.cuda import config as cfg
    return bool(getattr(cfg, "ENABLE_CUDASIM", False))


def namespace() -> dict:
    """Globals for exec'ing generated kernel source."""
    from numba import cuda
    ns = {"cuda": cuda, "np": np, "math": math}
    ns.update(_NP)
    if simulator():
        ns["libdevice"] = SimLibdevice
    else:
        from numba.cuda import libdevice
        ns["libdevice"] = libdevice
    return ns

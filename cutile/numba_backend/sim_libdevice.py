"""libdevice for the CUDA simulator: the functions generated source calls through ``libdevice``.

Generated source calls every operation whose rounding matters through ``libdevice``
(``fmul_rn``: a multiply NVVM cannot contract into an FMA; ``fmaf``: a fused one; ``fdiv_rn``,
``fsqrt_rn``, ``expf`` ...).  On the GPU that is Numba's binding of NVIDIA's libdevice.  Under
the simulator the kernel is plain Python, where libdevice does not exist: ``SimLibdevice``
provides the same functions computed with NumPy, with the exact (correctly rounded) results the
interpreter defines, so the simulator checks the generated program's structure and
integer/float plumbing bit for bit.  ``rt.namespace`` binds it.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..semantics.power import power

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
    if not (math.isfinite(a) and math.isfinite(b)):
        return F64(F64(a) * F64(b) + F64(c))       # the product is inf/NaN exactly
    if not math.isfinite(c):
        return F64(c)       # a finite exact product (even past float64's range) + inf/NaN
    q = Fraction(a) * Fraction(b) + Fraction(c)
    if q == 0:
        return F64(F64(a) * F64(b) + F64(c))
    try:
        return F64(float(q))
    except OverflowError:
        return F64(math.inf if q > 0 else -math.inf)


def _bracket(q: Fraction, fmt) -> tuple:
    """(largest fmt value <= q, smallest fmt value >= q) for a finite exact value q."""
    try:
        r = fmt(float(q))
    except OverflowError:
        r = fmt(math.inf if q > 0 else -math.inf)
    if math.isinf(r):
        big = np.nextafter(r, fmt(0))
        return (big, r) if r > 0 else (r, big)
    fr = Fraction(float(r))
    if fr == q:
        return r, r
    if fr < q:
        return r, np.nextafter(r, fmt(math.inf))
    return np.nextafter(r, fmt(-math.inf)), r


def _directed(exact, fmt, mode):
    """A libdevice ``*_rz/_rd/_ru`` function computed exactly: ``exact(*args)`` returns the
    exact result as a Fraction, or a (non-finite / exactly representable) float."""
    def f(*args):
        q = exact(*args)
        if not isinstance(q, Fraction):
            return fmt(q)
        lo, hi = _bracket(q, fmt)
        if mode == "rd":
            return lo
        if mode == "ru":
            return hi
        return lo if q > 0 else hi          # rz
    return f


def _exact_binary(op):
    def ex(a, b):
        a, b = float(a), float(b)
        if not (math.isfinite(a) and math.isfinite(b)):
            with np.errstate(all="ignore"):
                return {"add": F64(a) + F64(b), "sub": F64(a) - F64(b),
                        "mul": F64(a) * F64(b), "div": F64(a) / F64(b)}[op]
        if op == "div" and b == 0:
            with np.errstate(all="ignore"):
                return F64(a) / F64(b)
        fa, fb = Fraction(a), Fraction(b)
        q = {"add": lambda: fa + fb, "sub": lambda: fa - fb, "mul": lambda: fa * fb,
             "div": lambda: fa / fb}[op]()
        if q == 0:                               # IEEE zero signs
            if op in ("mul", "div"):
                return F64(a) * F64(b) if op == "mul" else F64(a) / F64(b)
            return None                          # decided by the caller (mode dependent)
        return q
    return ex


def _zero_sum(a, b, op, mode, fmt):
    """Sign of an exact zero sum/difference: -0 under round-down unless both are +0 ..."""
    b2 = -float(b) if op == "sub" else float(b)
    if float(a) == 0 and b2 == 0:
        neg = math.copysign(1, float(a)) < 0 and math.copysign(1, b2) < 0
        if mode == "rd":
            neg = math.copysign(1, float(a)) < 0 or math.copysign(1, b2) < 0
        return fmt(-0.0 if neg else 0.0)
    return fmt(-0.0 if mode == "rd" else 0.0)


def _directed_binary(op, fmt, mode):
    ex = _exact_binary(op)
    rnd = _directed(lambda a, b: ex(a, b), fmt, mode)

    def f(a, b):
        q = ex(a, b)
        if q is None:
            return _zero_sum(a, b, op, mode, fmt)
        return rnd(a, b)
    return f


def _fma_directed(a, b, c, mode):
    a, b, c = float(a), float(b), float(c)
    if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(c)):
        return F32(F64(a) * F64(b) + F64(c))
    q = Fraction(a) * Fraction(b) + Fraction(c)
    if q == 0:       # IEEE 754 6.3: an exact zero sum is -0 under RD unless both addends are +0
        p = F64(a) * F64(b)
        both_plus = not math.copysign(1.0, p) < 0 and not math.copysign(1.0, c) < 0
        if mode == "rd" and not (p == 0 and c == 0 and both_plus):
            return F32(-0.0)
        return F32(p + F64(c))
    return _directed(lambda: q, F32, mode)()


def _exact_sqrt(a):
    a = float(a)
    if not math.isfinite(a) or a <= 0:
        with np.errstate(all="ignore"):
            return np.sqrt(F64(a))
    r = math.sqrt(a)                              # correctly rounded float64
    fr, fa = Fraction(r), Fraction(a)
    if fr * fr == fa:
        return r
    # sqrt(a) lies strictly between two float64 neighbours of r: a Fraction close enough for
    # bracketing in float32/float64 (r differs from sqrt(a) by < 1 ulp of float64)
    lo, hi = (r, float(np.nextafter(r, math.inf))) if fr * fr < fa else \
        (float(np.nextafter(r, -math.inf)), r)
    return (Fraction(lo) + Fraction(hi)) / 2      # exact midpoint stands in (never a tie)


def _exact_int(i):
    return Fraction(int(i))


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


def _float_to_int_rz(bits: int, signed: bool):
    """libdevice's ``*_rz`` float -> integer conversion (``cvt.rzi``): toward zero, saturated
    to the destination's range, NaN -> 0."""
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    out = getattr(np, f"{'' if signed else 'u'}int{bits}")

    def f(a):
        a = float(a)
        if math.isnan(a):
            return out(0)
        if math.isinf(a):
            return out(hi if a > 0 else lo)
        return out(min(max(math.trunc(a), lo), hi))
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
    truncf = staticmethod(lambda a: np.trunc(F32(a)))
    copysignf = staticmethod(lambda a, b: np.copysign(F32(a), F32(b)))
    floor = staticmethod(lambda a: np.floor(F64(a)))
    ceilf = staticmethod(lambda a: np.ceil(F32(a)))
    ceil = staticmethod(lambda a: np.ceil(F64(a)))
    fmodf = staticmethod(lambda a, b: np.fmod(F32(a), F32(b)))
    fmod = staticmethod(lambda a, b: np.fmod(F64(a), F64(b)))
    fmaf_rd = staticmethod(lambda a, b, c: _fma_directed(a, b, c, "rd"))
    fmaf_ru = staticmethod(lambda a, b, c: _fma_directed(a, b, c, "ru"))
    float_as_int = staticmethod(lambda a: F32(a).view(np.int32))
    int_as_float = staticmethod(lambda i: np.int32(i).view(np.float32))
    double_as_longlong = staticmethod(lambda a: F64(a).view(np.int64))
    longlong_as_double = staticmethod(lambda i: np.int64(i).view(np.float64))


for _src in ("float", "double"):
    for _dst, (_bits, _signed) in (("int", (32, True)), ("uint", (32, False)),
                                   ("ll", (64, True)), ("ull", (64, False))):
        setattr(SimLibdevice, f"{_src}2{_dst}_rz", staticmethod(_float_to_int_rz(_bits, _signed)))

for _m in ("rz", "rd", "ru"):
    for _op, _nm in (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("div", "div")):
        setattr(SimLibdevice, f"f{_nm}_{_m}", staticmethod(_directed_binary(_op, F32, _m)))
        if _op != "sub":
            setattr(SimLibdevice, f"d{_nm}_{_m}", staticmethod(_directed_binary(_op, F64, _m)))
    setattr(SimLibdevice, f"fsqrt_{_m}", staticmethod(_directed(_exact_sqrt, F32, _m)))
    setattr(SimLibdevice, f"dsqrt_{_m}", staticmethod(_directed(_exact_sqrt, F64, _m)))
    setattr(SimLibdevice, f"double2float_{_m}",
            staticmethod(_directed(lambda a: Fraction(float(a)) if math.isfinite(a) and
                                   float(F32(a)) != float(a) else a, F32, _m)))
    for _src in ("int2float", "uint2float", "ll2float", "ull2float"):
        setattr(SimLibdevice, f"{_src}_{_m}", staticmethod(_directed(_exact_int, F32, _m)))
    for _src in ("ll2double", "ull2double"):
        setattr(SimLibdevice, f"{_src}_{_m}", staticmethod(_directed(_exact_int, F64, _m)))

for _name, _fn in {"exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2,
                   "sin": np.sin, "cos": np.cos, "tan": np.tan, "sinh": np.sinh,
                   "cosh": np.cosh, "tanh": np.tanh, "pow": power,
                   "atan2": np.arctan2}.items():
    setattr(SimLibdevice, _name + "f", staticmethod(_via64(_fn, F32)))
    setattr(SimLibdevice, _name, staticmethod(_via64(_fn, F64)))
SimLibdevice.rsqrtf = staticmethod(_via64(lambda a: 1.0 / np.sqrt(a), F32))

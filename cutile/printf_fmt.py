"""The ``printf`` format language of ``ct.printf``/``ct.print`` (R-PRINT-1..3), host side.

One place for: parsing and validating a C format string, translating a literal f-string spec
to a C conversion, expanding a tile argument into its bracketed element list (R-PRINT-2), and
formatting one value the way the GPU's C ``printf`` does.  The interpreter and the Numba
backend under the simulator render lines with ``render``; the backend on a GPU passes the
expanded format (``device_format``) to ``vprintf``.  Imports no numba.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from .errors import TileTypeError

INT_TYPES = "diuoxX"
FLOAT_TYPES = "eEfFgGaA"
_SPEC = re.compile(r"%([-+ #0]*)(\d*)(?:\.(\d*))?(hh|h|ll|l|L|j|z|t)?(.)?", re.S)


@dataclass(frozen=True)
class Spec:
    """One conversion ``%[flags][width][.precision][length]type``."""

    flags: str
    width: str
    precision: str | None
    type: str

    def c_text(self) -> str:
        """The conversion as the device receives it: ints as 64-bit, floats as double."""
        prec = "" if self.precision is None else "." + self.precision
        length = "ll" if self.type in INT_TYPES else ""
        return f"%{self.flags}{self.width}{prec}{length}{self.type}"


def parse(fmt: str) -> list:
    """Literal strings and ``Spec``s of a C format string (R-PRINT-1 errors)."""
    out: list = []
    lit: list[str] = []
    i = 0
    while i < len(fmt):
        c = fmt[i]
        if c != "%":
            lit.append(c)
            i += 1
            continue
        if fmt.startswith("%%", i):
            lit.append("%")
            i += 2
            continue
        m = _SPEC.match(fmt, i)
        t = m.group(5)
        if t is None:
            raise TileTypeError(f"Invalid format string {fmt!r}: incomplete conversion at the end")
        if t in "cspn":
            raise TileTypeError(f"Specifier {t} in {m.group(0)} is not supported")
        if t not in INT_TYPES + FLOAT_TYPES:
            raise TileTypeError(f"Invalid format string {fmt!r}: unknown conversion "
                                f"{m.group(0)!r}")
        if lit:
            out.append("".join(lit))
            lit = []
        out.append(Spec(m.group(1), m.group(2), m.group(3), t))
        i = m.end()
    if lit:
        out.append("".join(lit))
    return out


def check_args(pieces: list, dtypes: list) -> None:
    """Conversion count and kind against the argument dtypes (R-PRINT-1)."""
    specs = [p for p in pieces if isinstance(p, Spec)]
    if len(specs) > len(dtypes):
        raise TileTypeError(f"Not enough arguments for format string: {len(specs)} "
                            f"conversions, {len(dtypes)} arguments")
    if len(specs) < len(dtypes):
        raise TileTypeError(f"Too many arguments for format string: {len(specs)} "
                            f"conversions, {len(dtypes)} arguments")
    for i, (s, d) in enumerate(zip(specs, dtypes)):
        ok = s.type in FLOAT_TYPES if d.is_float else s.type in INT_TYPES
        if not ok:
            raise TileTypeError(f"Format %{s.type} for arg #{i} got unexpected type {d.name}")


def default_spec(dtype) -> Spec:
    """R-PRINT-3: the conversion ``print`` uses for a tile of ``dtype``."""
    if dtype.is_float:
        return Spec("", "", None, "f")
    if dtype.is_bool or dtype.is_signed:
        return Spec("", "", None, "d")
    return Spec("", "", None, "u")


_PY_SPEC = re.compile(r"^(?:(.)?([<>^]))?([-+ ])?(#)?(0)?(\d+)?(?:\.(\d+))?([a-zA-Z%])?$")


def from_python_spec(spec: str, dtype) -> Spec:
    """A literal f-string spec ``[<>^][+ -][#][0][width][.precision][type]`` as a C
    conversion (R-PRINT-3).  Centre alignment has no printf form: it right-aligns."""
    m = _PY_SPEC.match(spec)
    if m is None or (m.group(1) not in (None, " ")):
        raise TileTypeError(f"Format spec {spec!r} cannot be translated to printf: expected "
                            f"[<>^][+ -][#][0][width][.precision][type]")
    _fill, align, sign, alt, zero, width, prec, t = m.groups()
    flags = ("-" if align == "<" else "") + (sign if sign in ("+", " ") else "") \
        + ("#" if alt else "") + ("0" if zero else "")
    if t is None:
        t = default_spec(dtype).type if prec is None or not dtype.is_float else "g"
    if t not in INT_TYPES + FLOAT_TYPES or (dtype.is_float != (t in FLOAT_TYPES)):
        raise TileTypeError(f"Format spec {spec!r} is incompatible with dtype {dtype.name}")
    if dtype.is_float is False and t in "di" and not dtype.is_signed and not dtype.is_bool:
        t = "u"
    return Spec(flags, width or "", prec, t)


# -- expansion of tile arguments (R-PRINT-2) --------------------------------------------------
def expand(pieces: list, shapes: list) -> list:
    """Literals and ``(spec, arg, flat index)`` with every tile argument written out as its
    nested ``[a, b, ...]`` list (row-major); 0-D arguments stay bare."""
    out: list = []
    arg = 0
    for p in pieces:
        if not isinstance(p, Spec):
            out.append(p)
            continue
        shape = tuple(shapes[arg])
        counter = iter(range(int(np.prod(shape, dtype=np.int64))))

        def nest(dims, a=arg, s=p, it=counter):
            if not dims:
                out.append((s, a, next(it)))
                return
            out.append("[")
            for j in range(dims[0]):
                if j:
                    out.append(", ")
                nest(dims[1:])
            out.append("]")

        nest(shape)
        arg += 1
    return out


def device_format(expanded: list) -> tuple[str, list]:
    """(C format string, [(spec, arg, flat index)]) of an expanded line, for ``vprintf``."""
    text, refs = [], []
    for p in expanded:
        if isinstance(p, str):
            text.append(p.replace("%", "%%"))
        else:
            text.append(p[0].c_text())
            refs.append(p)
    return "".join(text), refs


# -- formatting one value as C printf does ----------------------------------------------------
def _hexfloat(x: float, spec: Spec) -> str:
    if math.isinf(x) or math.isnan(x):
        s = ("-" if x < 0 else "") + ("inf" if math.isinf(x) else "nan")
    else:
        h = float(x).hex()                      # '-0x1.8000000000000p+1'
        sign = "-" if h.startswith("-") else ""
        mant, exp = h.lstrip("-")[2:].split("p")
        lead, _, frac = mant.partition(".")
        if spec.precision is not None:
            p = int(spec.precision or 0)
            frac = (frac + "0" * p)[:p]         # truncation; C rounds (only differs off-grid)
        else:
            frac = frac.rstrip("0")
        s = f"{sign}0x{lead}{'.' + frac if frac or '#' in spec.flags else ''}p{exp}"
        if "+" in spec.flags and not sign:
            s = "+" + s
        elif " " in spec.flags and not sign:
            s = " " + s
    if spec.type == "A":
        s = s.upper()
    w = int(spec.width or 0)
    return s.ljust(w) if "-" in spec.flags else s.rjust(w)


def format_value(spec: Spec, value, dtype) -> str:
    """``value`` (a NumPy scalar of ``dtype``) through ``spec`` as the device printf would:
    integers travel as 64-bit (sign- or zero-extended), floats as double."""
    t = spec.type
    prec = "" if spec.precision is None else "." + (spec.precision or "0")
    if t in FLOAT_TYPES:
        x = float(value)
        if t in "aA":
            return _hexfloat(x, spec)
        s = ("%" + spec.flags + spec.width + prec + t) % x
        if math.isnan(x) and x != x:            # C prints "-nan" for a negative NaN
            if np.signbit(np.float64(x)):
                s = s.replace("nan", "-nan").replace("NAN", "-NAN")
        return s
    bits = 8 if dtype.is_bool else dtype.bitwidth
    v = device_int(spec, int(value), bits)
    if t in "diu":
        return ("%" + spec.flags + spec.width + prec + "d") % v
    if t == "o":
        digits = format(v, "o")
        if spec.precision is not None:
            digits = digits.rjust(int(spec.precision or 0), "0")
        if "#" in spec.flags and not digits.startswith("0"):
            digits = "0" + digits
        w = int(spec.width or 0)
        if "-" in spec.flags:
            return digits.ljust(w)
        if "0" in spec.flags and spec.precision is None:
            return digits.rjust(w, "0")
        return digits.rjust(w)
    flags = spec.flags if v != 0 else spec.flags.replace("#", "")   # C: %#x of 0 is "0"
    return ("%" + flags + spec.width + prec + t) % v


def device_int(spec: Spec, v: int, bits: int) -> int:
    """The integer C printf sees: ``u o x X`` read the value's ``bits`` as unsigned; ``d i``
    read it as a signed 64-bit integer (a uint64 above 2**63 prints negative, as in C)."""
    if spec.type in "uoxX":
        return v % (1 << bits)
    return v - (1 << 64) if v >= 1 << 63 else v


def render(pieces: list, values: list, dtypes: list) -> str:
    """The full text of one ``printf`` call: ``values`` are NumPy arrays (one per argument)."""
    shapes = [np.shape(v) for v in values]
    flat = [np.asarray(v).reshape(-1) for v in values]
    out = []
    for p in expand(pieces, shapes):
        if isinstance(p, str):
            out.append(p)
        else:
            spec, a, k = p
            out.append(format_value(spec, flat[a][k], dtypes[a]))
    return "".join(out)

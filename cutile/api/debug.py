"""Debugging and launch-control utilities: ``printf``, ``print`` (and the builtin ``print``),
``assert_`` and the programmatic-dependent-launch hints (spec §21.1, §21.2, R-EXEC-8).

``print`` renders its arguments at compile time as far as they are constant (Python's own
``str``/``repr``) and leaves one printf conversion per runtime tile; both ``print`` and
``printf`` then emit one ``Print`` op whose C format string the executors share
(``cutile/printf_fmt.py``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .. import dtypes as dt
from .. import printf_fmt as pf
from ..errors import TileTypeError
from ..frontend import coerce
from ..frontend.context import current
from ..frontend.values import ArrayV, Const, FmtV, FVal, TileV, TupleV, describe
from ..ir import ops
from ._registry import tile_op
from .classes import Tile


# -- runtime strings (f-strings over tiles) ---------------------------------------------------
def _escape(text: str, quote: str) -> str:
    """``text`` as it appears inside a ``repr`` quoted with ``quote``."""
    out = []
    for c in text:
        if c == "\\" or c == quote:
            out.append("\\" + c)
        elif c.isprintable():
            out.append(c)
        else:
            out.append(repr(c)[1:-1])
    return "".join(out)


def str_parts(v: FVal, nested: bool = False) -> list:
    """``str(v)`` (``repr`` when ``nested`` inside a tuple) as literal and tile parts
    (R-PRINT-3/4): constants print as Python prints them, tiles with the inferred format."""
    if isinstance(v, Const):
        return [repr(v.value) if nested else str(v.value)]
    if isinstance(v, TileV):
        return [(v, pf.default_spec(v.dtype))]
    if isinstance(v, FmtV):
        if not nested:
            return list(v.parts)
        literal = "".join(p for p in v.parts if isinstance(p, str))
        quote = repr(literal + "0")[0]  # Python's choice; runtime parts are numbers
        return [quote] + [_escape(p, quote) if isinstance(p, str) else p
                          for p in v.parts] + [quote]
    if isinstance(v, TupleV):
        out: list = ["("]
        for i, item in enumerate(v.items):
            if i:
                out.append(", ")
            out.extend(str_parts(item, nested=True))
        out.append(",)" if len(v.items) == 1 else ")")
        return out
    raise TileTypeError(f"Cannot print {describe(v)}")


def make_string(parts: list) -> FVal:
    """A constant string when every part is literal, else a ``FmtV``."""
    merged: list = []
    for p in parts:
        if isinstance(p, str) and merged and isinstance(merged[-1], str):
            merged[-1] += p
        elif not (isinstance(p, str) and p == ""):
            merged.append(p)
    if all(isinstance(p, str) for p in merged):
        return Const("".join(merged))
    return FmtV(tuple(merged))


def format_field(v: FVal, spec: str | None) -> list:
    """One ``{value:spec}`` field of an f-string (R-PRINT-3/4)."""
    if isinstance(v, Const):
        val = v.value
        if dataclasses.is_dataclass(val) and type(val).__format__ is not object.__format__:
            raise TileTypeError("Formatting dataclass values with custom __format__() is not "
                                "supported")
        if isinstance(val, tuple) and spec:
            raise TileTypeError("cannot apply format spec to a tuple value")
        return [format(val, spec or "")]
    if isinstance(v, TileV):
        return [(v, pf.from_python_spec(spec, v.dtype) if spec else pf.default_spec(v.dtype))]
    if spec:
        what = "a tuple" if isinstance(v, TupleV) else f"a value of type {v.kind}"
        raise TileTypeError(f"cannot apply format spec to {what} value")
    return str_parts(v)


def concat(a: FVal, b: FVal) -> FVal:
    """``a + b`` of two strings (a constant when both are, else a formatted string)."""
    return make_string(str_parts(a) + str_parts(b))


def is_string(v: FVal) -> bool:
    return isinstance(v, FmtV) or (isinstance(v, Const) and isinstance(v.value, str))


def _string_arg(v, what: str) -> list:
    v = coerce.fval(v)
    if not is_string(v):
        raise TileTypeError(f"Expected a constant string or an f-string for {what}, got "
                            f"{describe(v)}")
    return str_parts(v)


def _emit_print(pieces: list) -> None:
    """Turn literal and tile parts into one ``Print`` op (literal ``%`` escaped)."""
    fmt, args = [], []
    for p in pieces:
        if isinstance(p, str):
            fmt.append(p.replace("%", "%%"))
        else:
            t, spec = p
            fmt.append(f"%{spec.flags}{spec.width}"
                       f"{'' if spec.precision is None else '.' + spec.precision}{spec.type}")
            args.append(t.value)
    current().emit(ops.Print("".join(fmt), tuple(args)))


# -- the ops -----------------------------------------------------------------------------------
@tile_op
def printf(format: str, *args: Any) -> None:
    """C-style formatted print, one line per block and call (R-PRINT-1/2/5).

    ``format`` is a constant string with ``%[flags][width][.precision][length]type``
    conversions; a tile argument prints as a bracketed list of its elements.

    >>> ct.printf("tile[%d]:%.5f\\n", ct.bid(0), t)
    """
    f = coerce.fval(format)
    if not (isinstance(f, Const) and isinstance(f.value, str)):
        raise TileTypeError(f"Expected a string constant for format, got {describe(f)}")
    pieces = pf.parse(f.value)
    tiles = []
    for i, a in enumerate(args):
        a = coerce.fval(a)
        if not (isinstance(a, TileV) or coerce.is_number_const(a)):
            raise TileTypeError(f"printf argument #{i} must be a tile or a scalar, got "
                                f"{describe(a)}")
        tiles.append(coerce.to_tile(a) if isinstance(a, Const) else a)
    pf.check_args(pieces, [t.dtype for t in tiles])
    out, k = [], 0
    for p in pieces:
        if isinstance(p, str):
            out.append(p)
        else:
            out.append((tiles[k], p))
            k += 1
    _emit_print(out)


@tile_op
def print(*args: Any, sep: str = " ", end: str = "\n") -> None:
    """Python-style print of tiles and compile-time values (R-PRINT-3..5); the builtin
    ``print`` in tile code is the same.  f-strings may carry literal format specs.

    >>> ct.print(f"tile[{ct.bid(0)}]: {t:.3f}", sep="")
    """
    sep_parts = _string_arg(sep, "sep")
    parts: list = []
    for i, a in enumerate(args):
        if i:
            parts.extend(sep_parts)
        a = coerce.fval(a)
        if isinstance(a, ArrayV):
            raise TileTypeError(f"Cannot print {describe(a)}; load a tile from it first")
        parts.extend(str_parts(a))
    parts.extend(_string_arg(end, "end"))
    _emit_print([p for p in parts if not (isinstance(p, str) and p == "")])


@tile_op
def assert_(cond: Tile | bool, /, message: str | None = None) -> None:
    """Fail the launch if any element of the bool tile ``cond`` is False (R-ASSERT-1/2).

    >>> ct.assert_(t >= 0, "negative input")
    """
    c = coerce.fval(cond)
    if not (isinstance(c, TileV) or coerce.is_number_const(c)):
        raise TileTypeError(f"Type of condition must be bool, got {describe(c)}")
    d = coerce.value_dtype(c)
    if not d.is_bool:
        raise TileTypeError(f"Type of condition must be bool, got {d.name}")
    m = coerce.fval(message)
    if not (isinstance(m, Const) and (m.value is None or isinstance(m.value, str))):
        raise TileTypeError(f"Expected a constant string or None for message, got "
                            f"{describe(m)}")
    t = coerce.to_tile(c, dt.bool_) if isinstance(c, Const) else c
    current().emit(ops.Assert(t.value, m.value))


@tile_op
def grid_dependency_control_wait() -> None:
    """Programmatic dependent launch: wait for the preceding grid's results (R-EXEC-8).
    Affects scheduling only; a no-op on both cutile executors.

    >>> ct.grid_dependency_control_wait()
    """
    return None


@tile_op
def grid_dependency_control_launch_dependents() -> None:
    """Programmatic dependent launch: let the next grid on the stream start (R-EXEC-8).
    Affects scheduling only; a no-op on both cutile executors.

    >>> ct.grid_dependency_control_launch_dependents()
    """
    return None


def builtin_print(comp, args, kwargs, env):
    """The builtin ``print`` inside tile code is ``ct.print`` (R-PRINT-3)."""
    from ..frontend.calls import call_op
    return call_op(print, args, kwargs)


"""Runtime strings: constant strings and f-strings over tiles (``FmtV``), as ``print`` and
``printf`` take them (R-PRINT-3/4).  The value model's own operations on strings, shared by the
walker (f-strings, ``+`` of strings, ``str.join``) and by ``ct.print``/``ct.printf``
(``cutile/api/debug.py``): each part is a literal string or a (tile, printf spec) pair."""

from __future__ import annotations

import dataclasses
import inspect
import types

from .. import printf_fmt as pf
from ..errors import TileTypeError
from .context import current
from .values import Const, DataclassV, FmtV, FVal, TileV, TupleV, describe


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
    if isinstance(v, DataclassV):
        return _dataclass_parts(v, nested)
    raise TileTypeError(f"Cannot print {describe(v)}")


def _method(cls: type, name: str):
    return next(b.__dict__[name] for b in cls.__mro__ if name in b.__dict__)


def _dataclass_parts(v: DataclassV, nested: bool) -> list:
    """``str(v)`` (``repr`` when nested) of a dataclass value, as Python picks (R-PRINT-3): a
    user ``__str__`` for ``str``, else the user's ``__repr__``, else the one ``dataclass``
    generates (the fields with ``repr=True``), else ``<Name object>`` (no address: there is
    none in tile code).  User methods are inlined like helpers."""
    cls = v.cls
    if not nested:
        f = _method(cls, "__str__")
        if f is not object.__str__:
            return _user_string(f, v, "__str__")
    f = _method(cls, "__repr__")
    if f is object.__repr__:
        return [f"<{cls.__qualname__} object>"]
    if getattr(inspect.unwrap(f), "__code__", None) is not None and \
            inspect.unwrap(f).__code__.co_filename == "<string>":   # made by ``dataclass``
        out: list = [cls.__qualname__ + "("]
        shown = [fld.name for fld in dataclasses.fields(cls) if fld.repr]
        for i, name in enumerate(shown):
            out.append((", " if i else "") + name + "=")
            out.extend(str_parts(v.fields[name], nested=True))
        return out + [")"]
    return _user_string(f, v, "__repr__")


def _user_string(f, v: DataclassV, name: str) -> list:
    if not isinstance(f, types.FunctionType):
        raise TileTypeError(f"{v.cls.__name__}.{name} must be a plain function to be used in "
                            "tile code")
    r = current().compiler.inline_function(f, [v], {}, None)
    if not is_string(r):
        raise TileTypeError(f"{name} returned non-string (type {describe(r)})")
    return str_parts(r)


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
            raise TileTypeError("cannot apply format spec to a value of type tuple")
        return [format(val, spec or "")]
    if isinstance(v, TileV):
        return [(v, pf.from_python_spec(spec, v.dtype) if spec else pf.default_spec(v.dtype))]
    if isinstance(v, DataclassV) and v.cls.__format__ is not object.__format__:
        raise TileTypeError("Formatting dataclass values with custom __format__() is not "
                            "supported")
    if spec:
        raise TileTypeError(f"cannot apply format spec to a value of type {v.kind}")
    return str_parts(v)


def concat(a: FVal, b: FVal) -> FVal:
    """``a + b`` of two strings (a constant when both are, else a formatted string)."""
    return make_string(str_parts(a) + str_parts(b))


def is_string(v: FVal) -> bool:
    return isinstance(v, FmtV) or (isinstance(v, Const) and isinstance(v.value, str))

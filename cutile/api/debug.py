"""Debugging and launch-control utilities: ``printf``, ``print`` (and the builtin ``print``),
``assert_`` and the programmatic-dependent-launch hints (spec §21.1, §21.2, R-EXEC-8).

``print`` renders its arguments at compile time as far as they are constant (Python's own
``str``/``repr``) and leaves one printf conversion per runtime tile; both ``print`` and
``printf`` then emit one ``Print`` op whose C format string the executors share
(``cutile/printf_fmt.py``).
"""

from __future__ import annotations

from typing import Any

from .. import dtypes as dt
from .. import printf_fmt as pf
from ..errors import TileTypeError
from ..ir import ops
from ..lang import coerce
from ..lang.context import current
from ..lang.registry import tile_op
from ..lang.strings import is_string, str_parts
from ..lang.values import ArrayV, Const, TileV, describe
from .classes import Tile


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

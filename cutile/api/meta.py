"""Compile-time metaprogramming and hints (§21.3, §21.4): the public names.

``static_eval``, ``static_assert``, ``static_iter`` and ``static_exception`` read their
argument's *source*, so the compiler handles them before evaluating arguments
(``frontend/static.py``); the functions here only mark them and refuse host calls (R-PY-7).
``ensure_constant`` and ``assume_divisible_by`` are ordinary operations on compile-time values.
"""

from __future__ import annotations

from typing import Any

from ..errors import TileStaticAssertionError, TileStaticEvalError, TileTypeError
from ..lang import context
from ..lang.registry import tile_op
from ..lang.values import Const, TileV, TupleV, describe
from .classes import Tile


def _device_only(kind: str):
    def deco(f):
        def stub(*args, **kwargs):
            if context.in_static_eval():
                raise TileStaticEvalError(f"{f.__name__}() cannot be used inside "
                                          f"{context.static_place()}.")
            raise RuntimeError("Device functions can only be called from device code.")
        stub.__name__ = stub.__qualname__ = f.__name__
        stub.__doc__ = f.__doc__
        stub.__module__ = f.__module__
        stub._cutile_static = kind
        return stub
    return deco


@_device_only("eval")
def static_eval(expr, /):
    """Evaluate ``expr`` with host Python at compile time; runtime values appear as proxies
    with ``shape``/``dtype``/``ndim`` and arithmetic (R-META-1).

    >>> n = ct.static_eval(len(SIZES) * 2)
    """


@_device_only("assert")
def static_assert(condition, message=None, /):
    """Fail compilation with ``TileStaticAssertionError`` unless ``condition`` (a compile-time
    bool evaluated like ``static_eval``) holds (R-META-2).

    >>> ct.static_assert(TILE % 16 == 0, f"TILE={TILE} must be a multiple of 16")
    """


@_device_only("iter")
def static_iter(iterable, /):
    """Unroll a ``for`` loop (or a tuple comprehension) at compile time over a host iterable of
    at most 1000 items; the loop variable is a constant in each copy of the body (R-META-3).

    >>> for k in ct.static_iter(range(3)): acc += ct.load(x, (k,), (16,))
    """


@_device_only("exception")
def static_exception(exc, /):
    """Only as ``raise ct.static_exception(exc)``: when the compiler reaches the statement,
    ``exc`` (a host Python exception instance, evaluated like ``static_eval``) fails the
    compilation as ``ct.StaticException`` at that line (R-META-5).

    >>> if N > 128: raise ct.static_exception(ValueError(f"N={N} is too large"))
    """


def _is_constant(v) -> bool:
    if isinstance(v, Const):
        return True
    return isinstance(v, TupleV) and all(_is_constant(i) for i in v.items)


@tile_op
def ensure_constant(value: Any, /) -> Any:
    """Return ``value`` if it is a compile-time constant, else raise
    ``TileStaticAssertionError`` (R-META-4).

    >>> if ct.ensure_constant(N > 1): ...
    """
    if not _is_constant(value):
        raise TileStaticAssertionError(
            "Argument of ensure_constant() is not a compile-time constant (got "
            f"{describe(value)}); pass a ct.Constant parameter or a literal")
    return value


@tile_op
def assume_divisible_by(x: Tile | int, divisor: int) -> Tile | int:
    """Promise that the integer scalar ``x`` is a multiple of ``divisor``; returns ``x``
    (R-HINT-1).  A false promise about a runtime value is undefined behaviour.

    >>> n = ct.assume_divisible_by(n, 16)
    """
    is_int_const = isinstance(x, Const) and isinstance(x.value, int) and not isinstance(
        x.value, bool)
    is_int_tile = isinstance(x, TileV) and x.shape == () and x.dtype.is_integral \
        and not x.dtype.is_bool
    if not (is_int_const or is_int_tile):
        raise TileTypeError(f"assume_divisible_by() requires an integer scalar, got "
                            f"{describe(x)}")
    d = divisor.value if isinstance(divisor, Const) else None
    if not isinstance(d, int) or isinstance(d, bool) or d < 1:
        raise TileTypeError(f"assume_divisible_by() requires a positive divisor constant, "
                            f"got {describe(divisor)}")
    if is_int_const and x.value % d:
        raise TileTypeError(f"assume_divisible_by({x.value}, {d}) contradicts a known constant")
    return x

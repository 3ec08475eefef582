"""The one registry of compile-time implementations, and ``tile_op``.

Tile code calls Python callables: ``ct`` operations, ``operator.*`` (what ``a + b``, ``a < b``,
``-a``, ``a[i]`` mean), builtins (``len``, ``range``, ``min``, ``print``, ...) and dtypes; it
reads attributes and calls methods of tiles, arrays and views.  Each of these is registered
here, keyed by the callable (or by value class and attribute name), by the module of
``cutile/api`` that implements it, when that module is imported.  The AST walker
(``cutile/frontend``) resolves operators, attributes, subscripts and calls through ``lookup``,
``attribute`` and ``call_method`` and never names an ``api`` function; ``api`` never imports
the walker.

``tile_op`` marks a user-facing function as callable from tile code and registers it.  The
decorated object keeps the documented signature (so calls bind with Python's rules,
R-PY-14) and the docstring; called from host code it raises as cuda.tile does (R-PY-7),
unless it has a host implementation (``cdiv``); called by host code inside ``static_eval``
it goes to the hook the walker installs (``set_static_call``).
"""

from __future__ import annotations

import ast
import enum
import functools
import inspect
import operator
from collections.abc import Callable
from typing import Any, Generic, ParamSpec, TypeVar, overload

from ..errors import TileError, TileTypeError
from .context import in_static_eval
from .values import BoundMethod, Const, FVal

P = ParamSpec("P")
R = TypeVar("R")


class TileOp(Generic[P, R]):
    """A cuTile operation.  ``impl`` runs at compile time on frontend values and emits IR.

    Generic in ``impl``'s parameters and result, so that an editor or a type checker sees
    ``ct.add(x: Tile | int | float, y: ..., /) -> Tile`` rather than an opaque object;
    ``inspect.signature`` and ``help`` read ``__wrapped__`` and ``__annotations__``."""

    def __init__(self, impl: Callable[P, R], host: Callable[..., R] | None = None,
                 name: str | None = None):
        functools.update_wrapper(self, impl)
        self.impl = impl
        self.host = host
        self.op_name = name or impl.__name__
        self.signature = inspect.signature(impl)
        # help(ct.load) shows an instance's docstring, not a signature: put the call first
        self.__doc__ = f"{_call_text(self.op_name, self.signature)}\n\n" \
                       f"{inspect.cleandoc(impl.__doc__ or '')}"

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        if in_static_eval():                 # pure ops only (frontend/static.py)
            return _STATIC_CALL[0](self, args, kwargs)
        if self.host is not None:
            return self.host(*args, **kwargs)
        raise RuntimeError("Device functions can only be called from device code.")

    def __repr__(self) -> str:
        return f"<cutile op {self.op_name}>"

    def invoke(self, args, kwargs) -> FVal:
        """Run the op on frontend values from tile code, binding with Python's rules
        (R-PY-14); ``None`` results become ``Const(None)``."""
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TileTypeError(f"{self.op_name}(): {e}") from None
        try:
            result = self.impl(*bound.args, **bound.kwargs)
        except TileError as e:
            if e.arg is not None and e.arg in self.signature.parameters:   # as 1.7 words it
                e.message = f'Invalid argument "{e.arg}" of {self.op_name}(): {e.message}'
                e.arg = None
            raise
        return Const(None) if result is None else result


def _call_text(name: str, sig: inspect.Signature) -> str:
    """``ct.load(array, /, index, shape, *, order='C', padding_mode=ct.PaddingMode....)``:
    the call as a user writes it (the annotations are in ``__annotations__``)."""
    params = list(sig.parameters.values())
    parts = []
    for i, p in enumerate(params):
        before = params[i - 1].kind if i else None
        if p.kind is p.KEYWORD_ONLY and before not in (p.KEYWORD_ONLY, p.VAR_POSITIONAL):
            parts.append("*")
        text = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name
        if p.default is not p.empty:
            d = p.default
            text += "=" + (f"ct.{type(d).__name__}.{d.name}" if isinstance(d, enum.Enum)
                           else repr(d))
        parts.append(text)
        after = params[i + 1].kind if i + 1 < len(params) else None
        if p.kind is p.POSITIONAL_ONLY and after is not p.POSITIONAL_ONLY:
            parts.append("/")
    return f"ct.{name}({', '.join(parts)})"


@overload
def tile_op(impl: Callable[P, R], *, host: Callable[..., R] | None = None,
            name: str | None = None) -> TileOp[P, R]: ...


@overload
def tile_op(impl: None = None, *, host: Callable[..., R] | None = None,
            name: str | None = None) -> Callable[[Callable[P, R]], TileOp[P, R]]: ...


def tile_op(impl: Callable[P, R] | None = None, *, host: Callable[..., R] | None = None,
            name: str | None = None) -> TileOp[P, R] | Callable[[Callable[P, R]], TileOp[P, R]]:
    """``@tile_op`` or ``@tile_op(host=..., name=...)``: wrap ``impl`` in a ``TileOp`` that
    keeps its signature, annotations and docstring."""
    if impl is None:
        return lambda f: tile_op(f, host=host, name=name)
    op = TileOp(impl, host=host, name=name)
    register(op, op.invoke)
    _OPS_BY_NAME.setdefault(op.op_name, op)
    return op


# -- the registry ------------------------------------------------------------------------------
Handler = Callable[[list, dict], Any]      # (args, kwargs) of frontend values -> FVal

_CALLS: dict[int, tuple[object, Handler]] = {}   # id(callable) -> (callable, handler)
_RESOLVERS: list[Callable[[object], Handler | None]] = []
_ATTRIBUTES: dict[tuple[type, str], Callable[[FVal], FVal | None]] = {}
_METHODS: dict[tuple[type, str], Callable[..., Any]] = {}
_OPS_BY_NAME: dict[str, TileOp] = {}
_STATIC_CALL: list[Callable] = [lambda op, args, kwargs: _no_static_hook(op)]


def _no_static_hook(op):
    raise RuntimeError(f"{op.op_name}() called in static_eval without the frontend loaded")


def register(fn: object, handler: Handler) -> None:
    """Make ``fn(*args, **kwargs)`` in tile code run ``handler(args, kwargs)``.  Keyed by
    identity, so any object (unhashable ones included) can be a key; the key is kept alive."""
    _CALLS[id(fn)] = (fn, handler)


def register_resolver(resolver: Callable[[object], Handler | None]) -> None:
    """For open families of callables (dtypes, including NumPy's and torch's): ``resolver(fn)``
    returns the handler, or None when ``fn`` is not of its family."""
    _RESOLVERS.append(resolver)


def lookup(fn: object) -> Handler | None:
    """The handler of the callable ``fn``, or None (not a registered callable)."""
    hit = _CALLS.get(id(fn))
    if hit is not None and hit[0] is fn:
        return hit[1]
    for resolve in _RESOLVERS:
        h = resolve(fn)
        if h is not None:
            return h
    return None


def op_named(name: str) -> TileOp | None:
    """The ``ct`` operation called ``name`` (for "use ct.<name>" hints), or None."""
    return _OPS_BY_NAME.get(name)


def register_attribute(cls: type, name: str, getter: Callable[[FVal], FVal | None]) -> None:
    """``obj.name`` for values of class ``cls``: ``getter(obj)`` (None: not an attribute of
    this particular value, e.g. ``.dtype`` of a constant that is not a number)."""
    _ATTRIBUTES[(cls, name)] = getter


def register_method(cls: type, name: str, fn: Callable[..., Any]) -> None:
    """``obj.name(...)`` for values of class ``cls``: ``obj.name`` is a ``BoundMethod`` and the
    call binds ``fn(obj, *args, **kwargs)`` with Python's rules."""
    _METHODS[(cls, name)] = fn
    _ATTRIBUTES.setdefault((cls, name), lambda obj: BoundMethod(obj, name))


def attribute(obj: FVal, name: str) -> FVal | None:
    """``obj.name`` through the registry, or None (no such registered attribute)."""
    getter = _ATTRIBUTES.get((type(obj), name))
    return None if getter is None else getter(obj)


def has_method(cls: type, name: str) -> bool:
    return (cls, name) in _METHODS


def call_method(m: BoundMethod, args, kwargs) -> FVal:
    """Call a registered method of a value (``t.astype(...)``, ``a.tiled_view(...)``)."""
    fn = _METHODS[(type(m.obj), m.name)]
    try:
        bound = inspect.signature(fn).bind(m.obj, *args, **kwargs)
    except TypeError as e:
        raise TileTypeError(f"{m.name}(): {e}") from None
    result = fn(*bound.args, **bound.kwargs)
    return Const(None) if result is None else result


def call(fn: object, *args: FVal) -> FVal:
    """``fn(*args)`` through the registry (the walker's operators: ``call(operator.add, a,
    b)``); refused when nothing is registered for ``fn``."""
    handler = lookup(fn)
    if handler is None:
        raise TileTypeError(f"{getattr(fn, '__name__', fn)}() is not supported")
    return handler(list(args), {})


def set_static_call(hook: Callable[[TileOp, tuple, dict], Any]) -> None:
    """The walker's ``static_eval`` support: what a ``ct`` op called by host code inside
    ``static_eval`` does (frontend/static.py installs it)."""
    _STATIC_CALL[0] = hook


# What each operator node of Python's syntax calls (the walker looks its node up here).
BINARY_OPERATORS: dict[type, Callable] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow, ast.MatMult: operator.matmul, ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.LShift: operator.lshift,
    ast.RShift: operator.rshift}
COMPARISONS: dict[type, Callable] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_,
    ast.IsNot: operator.is_not}
UNARY_OPERATORS: dict[type, Callable] = {
    ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert,
    ast.Not: operator.not_}

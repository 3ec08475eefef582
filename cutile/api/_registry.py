"""``tile_op``: marks a user-facing function as callable from tile code.

The decorated object keeps the documented signature (so calls bind with Python's rules,
R-PY-14) and the docstring; called from host code it raises as cuda.tile does (R-PY-7),
unless it has a host implementation (``cdiv``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Generic, ParamSpec, TypeVar, overload

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
        from ..frontend.context import in_static_eval
        if in_static_eval():                 # pure ops only (frontend/static.py)
            from ..frontend.static import call_op
            return call_op(self, args, kwargs)
        if self.host is not None:
            return self.host(*args, **kwargs)
        raise RuntimeError("Device functions can only be called from device code.")

    def __repr__(self) -> str:
        return f"<cutile op {self.op_name}>"


def _call_text(name: str, sig: inspect.Signature) -> str:
    """``ct.load(array, /, index, shape, *, order='C', padding_mode=ct.PaddingMode....)``:
    the call as a user writes it (the annotations are in ``__annotations__``)."""
    import enum
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
        return lambda f: TileOp(f, host=host, name=name)
    return TileOp(impl, host=host, name=name)

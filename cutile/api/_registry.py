"""``tile_op``: marks a user-facing function as callable from tile code.

The decorated object keeps the documented signature (so calls bind with Python's rules,
R-PY-14) and the docstring; called from host code it raises as cuda.tile does (R-PY-7),
unless it has a host implementation (``cdiv``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any


class TileOp:
    """A cuTile operation.  ``impl`` runs at compile time on frontend values and emits IR."""

    def __init__(self, impl: Callable, host: Callable | None = None, name: str | None = None):
        functools.update_wrapper(self, impl)
        self.impl = impl
        self.host = host
        self.op_name = name or impl.__name__
        self.signature = inspect.signature(impl)

    def __call__(self, *args: Any, **kwargs: Any):
        from ..frontend.context import in_static_eval
        if in_static_eval():                 # pure ops only (frontend/static.py)
            from ..frontend.static import call_op
            return call_op(self, args, kwargs)
        if self.host is not None:
            return self.host(*args, **kwargs)
        raise RuntimeError("Device functions can only be called from device code.")

    def __repr__(self) -> str:
        return f"<cutile op {self.op_name}>"


def tile_op(impl: Callable | None = None, *, host: Callable | None = None, name: str | None = None):
    if impl is None:
        return lambda f: TileOp(f, host=host, name=name)
    return TileOp(impl, host=host, name=name)

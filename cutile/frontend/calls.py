"""Calls in tile code: dispatching a call on the kind of callee (ct operations, dtypes,
builtins, enums, helpers to inline), binding helper arguments (R-PY-6, R-PY-14) and turning
globals into compile-time values (R-PY-8)."""

from __future__ import annotations

import ast
import enum
import types
from typing import Any

import numpy as np

from .. import dtypes as dt
from ..errors import TileTypeError, TileValueError, UnsupportedCallError
from . import pysubset
from .values import BoundMethod, Const, FuncV, FVal, TupleV, describe


def dispatch(comp, fn: FVal, args, kwargs, node, env) -> FVal:
    """Call ``fn`` (any callable value of tile code) with evaluated arguments."""
    from ..api import builtins_map, methods
    from ..api._registry import TileOp
    r = pysubset.call_value(comp, fn, args, kwargs, node, env)
    if r is not None:
        return r
    if isinstance(fn, BoundMethod):
        return methods.call_method(fn, args, kwargs)
    if isinstance(fn, FuncV):
        return comp.inline_closure(fn, args, kwargs, node)
    if not isinstance(fn, Const):
        raise TileTypeError(f"{describe(fn)} is not callable")
    f = fn.value
    if isinstance(f, TileOp):
        return call_op(f, args, kwargs)
    dtype = dt.normalize_dtype(f) if not isinstance(f, (bool, int, float, str)) else None
    if dtype is not None:
        if not args and not kwargs and dtype is not dt.float4_e2m1fn:
            return pysubset.dtype_default(dtype)
        from ..api import creation
        return creation.dtype_call(dtype, args, kwargs)
    handler = builtins_map.BUILTINS.get(id(f))
    if handler is not None:
        return handler(comp, args, kwargs, env)
    if getattr(f, "_cutile_kernel", False):
        raise TileTypeError("Tile kernels cannot be called from tile code")
    if isinstance(f, type) and issubclass(f, enum.Enum):
        return enum_call(f, args, kwargs)
    if isinstance(f, types.FunctionType):
        return comp.inline_function(f, args, kwargs, node)
    if hasattr(f, "__wrapped__") and isinstance(f.__wrapped__, types.FunctionType):
        return comp.inline_function(f.__wrapped__, args, kwargs, node)
    name = getattr(f, "__name__", type(f).__name__)
    if isinstance(f, type):
        raise UnsupportedCallError(
            f'Creating instances of type "{name}" is not supported in device code')
    module = getattr(f, "__module__", None) or ""
    if module.split(".")[0] in ("numpy", "math", "cmath"):
        raise UnsupportedCallError(_host_math_message(f, name, args, node))
    raise UnsupportedCallError(f"{name}() is not supported in device code")


def _host_math_message(f, name: str, args, node) -> str:
    """A NumPy or ``math`` function called in tile code: what to call instead, the ``ct``
    operation of the same name, or a compile-time value for constant arguments (cuda.tile
    does not fold host math either: ``ct.static_eval`` is the portable way)."""
    import cutile

    from ..api._registry import TileOp
    call = isinstance(node, ast.Call)
    written = ast.unparse(node.func) if call else name
    msg = f"{written}() is not supported in device code"
    if isinstance(getattr(cutile, name, None), TileOp):
        msg += f"; use ct.{name}(...), which works on tiles and scalars"
    else:
        msg += "; NumPy and math functions do not run in tile code (docs/language.md lists " \
               "the ct operations)"
    if call and args and all(isinstance(a, Const) for a in args):
        msg += (f"; for a compile-time constant, compute it outside the kernel or write "
                f"ct.static_eval({ast.unparse(node)})")
    return msg


def call_op(op, args, kwargs) -> FVal:
    """Bind a call to a ``ct`` operation with Python's rules (R-PY-14) and run it."""
    try:
        bound = op.signature.bind(*args, **kwargs)
    except TypeError as e:
        raise TileTypeError(f"{op.op_name}(): {e}") from None
    result = op.impl(*bound.args, **bound.kwargs)
    return Const(None) if result is None else result


def global_value(obj: Any) -> FVal:
    """A module global or closure cell as a compile-time value (R-PY-8)."""
    if isinstance(obj, FVal):
        return obj
    if isinstance(obj, np.generic):
        d = dt.from_numpy(obj.dtype)
        if d is not None:
            return Const(obj.item(), d)
    if isinstance(obj, tuple):
        return TupleV(tuple(global_value(i) for i in obj))
    if isinstance(obj, np.ndarray) or hasattr(obj, "__cuda_array_interface__") or (
            hasattr(obj, "__dlpack__") and not isinstance(obj, type)):
        mod = type(obj).__module__.split(".")[0]
        raise TileTypeError(
            f"Cannot create constant from value of type {mod}.{type(obj).__name__}")
    return Const(obj)


def enum_call(cls, args, kwargs):
    if len(args) != 1 or kwargs:
        raise TileTypeError(f"{cls.__name__}() expects one argument")
    v = args[0]
    if not isinstance(v, Const):
        raise TileTypeError(f"{cls.__name__}() expects a constant argument")
    try:
        return Const(cls(v.value))
    except ValueError as e:
        raise TileValueError(str(e)) from None


def all_args(a: ast.arguments):
    out = list(a.posonlyargs) + list(a.args) + list(a.kwonlyargs)
    if a.vararg:
        out.append(a.vararg)
    if a.kwarg:
        out.append(a.kwarg)
    return out


def bind_ast_args(fn: FuncV, args, kwargs) -> dict:
    a = fn.node.args
    pos = [x.arg for x in a.posonlyargs + a.args]
    out: dict[str, FVal] = {}
    if len(args) > len(pos) and not a.vararg:
        raise TileTypeError(f"{fn.name}(): takes {len(pos)} positional arguments but "
                            f"{len(args)} were given")
    for name, v in zip(pos, args):
        out[name] = v
    if a.vararg:
        out[a.vararg.arg] = TupleV(tuple(args[len(pos):]))
    extra = {}
    for k, v in kwargs.items():
        if k in out:
            raise TileTypeError(f"{fn.name}(): got multiple values for argument '{k}'")
        if k in pos[len(a.posonlyargs):] or k in [x.arg for x in a.kwonlyargs]:
            out[k] = v
        elif a.kwarg:
            extra[k] = v
        else:
            raise TileTypeError(f"{fn.name}(): got an unexpected keyword argument '{k}'")
    if a.kwarg:
        out[a.kwarg.arg] = Const(dict(extra))
    for name in pos + [x.arg for x in a.kwonlyargs]:
        if name not in out:
            if name in fn.defaults:
                out[name] = fn.defaults[name]
            else:
                raise TileTypeError(f"{fn.name}(): missing a required argument: '{name}'")
    return out


def chain_text(chain: tuple) -> str:
    """``k -> f -> g -> f -> ... -> g -> f (1001 calls)``: the head and tail of a chain."""
    if len(chain) <= 12:
        return " -> ".join(chain)
    return (" -> ".join(chain[:6]) + " -> ... -> " + " -> ".join(chain[-4:])
            + f" ({len(chain) - 1} nested calls)")

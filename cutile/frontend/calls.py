"""Calls in tile code: dispatching a call on the kind of callee (the registry's callables: ct
operations, dtypes, builtins, ``operator.*``; enums; helpers to inline) and binding helper
arguments (R-PY-6, R-PY-14)."""

from __future__ import annotations

import ast
import builtins
import enum
import types

from ..errors import TileTypeError, TileValueError, UnsupportedCallError
from ..lang import registry
from ..lang.values import BoundMethod, Const, FuncV, FVal, TupleV, describe
from . import dataclass_ops, debugger, pysubset


def dispatch(comp, fn: FVal, args, kwargs, node, env) -> FVal:
    """Call ``fn`` (any callable value of tile code) with evaluated arguments."""
    r = pysubset.call_value(comp, fn, args, kwargs, node, env)
    if r is not None:
        return r
    if isinstance(fn, BoundMethod):
        return registry.call_method(fn, args, kwargs)
    if isinstance(fn, FuncV):
        return comp.inline_closure(fn, args, kwargs, node)
    if not isinstance(fn, Const):
        raise TileTypeError(f"Cannot call an object of type {describe(fn)}: it is not callable")
    f = fn.value
    r = _walker_builtin(comp, f, args, kwargs, env)
    if r is not None:
        return r
    handler = registry.lookup(f)         # ct ops, dtypes, builtins, operator.*
    if handler is not None:
        return handler(args, kwargs)
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


def _walker_builtin(comp, f, args, kwargs, env) -> FVal | None:
    """Builtins that need the walker (None: not one of them, or not this case): ``len`` and
    ``divmod`` of a dataclass run its ``__len__``/``__divmod__`` (1.7); ``breakpoint()`` and
    ``pdb.set_trace()`` see the live variables (frontend/debugger.py)."""
    if f is builtins.len and len(args) == 1 and not kwargs:
        return dataclass_ops.length(comp, args[0])
    if f is builtins.divmod and len(args) == 2 and not kwargs:
        return dataclass_ops.binop(comp, "divmod", args[0], args[1])
    hook = debugger.HANDLERS.get(id(f))
    return None if hook is None else hook(comp, args, kwargs, env)


def _host_math_message(f, name: str, args, node) -> str:
    """A NumPy or ``math`` function called in tile code: what to call instead, the ``ct``
    operation of the same name, or a compile-time value for constant arguments (cuda.tile
    does not fold host math either: ``ct.static_eval`` is the portable way)."""
    call = isinstance(node, ast.Call)
    written = ast.unparse(node.func) if call else name
    msg = f"{written}() is not supported in device code"
    if registry.op_named(name) is not None:
        msg += f"; use ct.{name}(...), which works on tiles and scalars"
    else:
        msg += "; NumPy and math functions do not run in tile code (docs/language.md lists " \
               "the ct operations)"
    if call and args and all(isinstance(a, Const) for a in args):
        msg += (f"; for a compile-time constant, compute it outside the kernel or write "
                f"ct.static_eval({ast.unparse(node)})")
    return msg


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

"""Building the typed IR of one kernel specialisation (R-CONV-4: fully checked before running)."""

from __future__ import annotations

import dataclasses
import sys
import threading

from ..errors import TileError, TileInternalError
from ..ir.core import Builder, KernelIR, Region, Value
from ..ir.passes import fuse_fma
from ..ir.types import ArrayType, TileType
from ..lang.context import CompileContext, compiling
from ..lang.values import ArrayV, Const, DataclassV, ListV, TileV, TupleV
from .compiler import MAX_INLINE_DEPTH, FunctionCompiler
from .env import Env
from .source import closure_values, parse_function

_recursion = {"users": 0, "saved": 0}
_recursion_lock = threading.Lock()


def _deep_recursion(delta: int) -> None:
    """Helpers are inlined recursively (about 40 Python frames per level): while any thread
    compiles, Python's recursion limit leaves room for the documented inlining depth, so a
    runaway recursion reports TileRecursionError (R-PY-6) rather than RecursionError."""
    with _recursion_lock:
        if delta > 0 and _recursion["users"] == 0:
            _recursion["saved"] = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_recursion["saved"], 80 * MAX_INLINE_DEPTH))
        _recursion["users"] += delta
        if delta < 0 and _recursion["users"] == 0:
            sys.setrecursionlimit(_recursion["saved"])


def _param_value(spec, name: str, params: list[Value]):
    if spec.kind == "const":
        return Const(spec.value)
    if spec.kind == "tuple":
        return TupleV(tuple(_param_value(s, name, params) for s in spec.items))
    if spec.kind == "list":
        return ListV(tuple(_param_value(s, name, params) for s in spec.items))
    if spec.kind == "dataclass":
        names = [f.name for f in dataclasses.fields(spec.value)]
        return DataclassV(spec.value, {n: _param_value(s, name, params)
                                       for n, s in zip(names, spec.items)})
    if spec.kind == "array":
        v = Value(ArrayType(spec.dtype, spec.ndim, spec.index_dtype), name)
        params.append(v)
        return ArrayV(v, spec.static_shape, spec.static_strides)
    v = Value(TileType(spec.dtype), name)
    params.append(v)
    return TileV(v)


def build_kernel(kernel, spec, *, watch: dict | None = None) -> KernelIR:
    """The IR of ``kernel`` for ``spec``; ``watch`` ({line: names} in the kernel's file) adds
    ``cutile.debug.trace`` watchpoints."""
    func = kernel.function
    node, src = parse_function(func)
    ctx = CompileContext(Builder())
    if watch is not None:
        ctx.watch, ctx.watch_file = watch, src.filename
    params: list[Value] = ctx.params
    env = Env()
    for name, p in zip(kernel.param_names, spec.params):
        env.vars[name] = _param_value(p, name, params)
    closure = closure_values(func)
    body = Region()
    _deep_recursion(+1)
    try:
        with compiling(ctx), ctx.builder.open(body):
            fc = FunctionCompiler(ctx, node, src, func.__globals__, closure, None, is_kernel=True)
            fc.run_body(node.body, env)
    except TileError:
        raise
    except RecursionError as e:
        raise TileInternalError(f"compilation recursed too deeply: {e}") from None
    finally:
        _deep_recursion(-1)
    # one name per IR parameter (a tuple, list or dataclass argument gives several)
    ir = KernelIR(func.__name__, params, [p.hint for p in params], body, src.loc(node))
    if watch is not None:
        ir.watch_live = ctx.watch_live        # cutile.debug.trace checks the names against it
    fuse_fma(ir)
    return ir

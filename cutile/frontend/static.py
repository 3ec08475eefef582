"""Compile-time metaprogramming (§21.3): ``static_eval``, ``static_assert``, ``static_iter``.

These read their argument's source: the expression runs in host Python at compile time with
the function's globals and locals, constants appearing as plain values and runtime values as
``Proxy`` objects (R-META-1).  ``static_iter`` unrolls a ``for`` body once per item (R-META-3).
"""

from __future__ import annotations

import ast
from typing import Any

from ..errors import (
    TileError,
    TileStaticAssertionError,
    TileStaticEvalError,
    TileSyntaxError,
    TileTypeError,
)
from .context import static_evaluation
from .values import ArrayV, Const, DataclassV, FVal, TileV, TupleV, describe

MAX_STATIC_ITER = 1000
_NO_VALUE = "Symbolic tile has no concrete value"


class Proxy:
    """A runtime value seen from ``static_eval``: compile-time attributes and arithmetic."""

    __slots__ = ("_fval",)

    def __init__(self, fval: FVal):
        object.__setattr__(self, "_fval", fval)

    def __getattr__(self, name: str):
        from ..api import methods
        if name.startswith("__"):
            raise AttributeError(name)
        fv = self._fval
        if isinstance(fv, DataclassV) and name in fv.fields:
            return to_host(fv.fields[name])
        if isinstance(fv, (TileV, ArrayV)) and name in ("shape", "dtype", "ndim"):
            return to_host(methods.get_attribute(fv, name))    # array extents: proxies
        raise TileStaticEvalError(f"{describe(fv)}.{name} cannot be used inside static_eval()")

    def __repr__(self) -> str:
        fv = self._fval                     # as 1.7 prints them in static_assert messages
        if isinstance(fv, TileV):
            return f"<tile[{fv.dtype.name}, {fv.shape}]>"
        if isinstance(fv, ArrayV):
            return f"<array[{fv.dtype.name}, {fv.ndim}d]>"
        return f"<{describe(fv)}>"

    __str__ = __repr__

    def __bool__(self):
        raise TileStaticEvalError(_NO_VALUE)

    __index__ = __int__ = __float__ = __len__ = __iter__ = __bool__

    def __getitem__(self, idx):
        if isinstance(self._fval, TupleV):
            return to_host(self._fval.items[idx])
        raise TileStaticEvalError(f"{describe(self._fval)} cannot be indexed inside "
                                  "static_eval()")


def _binary(name: str, swap: bool = False):
    def f(self, other):
        from ..api import elementwise
        a, b = to_fval(self), to_fval(other)
        if swap:
            a, b = b, a
        return to_host(elementwise.apply_operator(name, a, b))
    return f


def _compare(name: str):
    def f(self, other):
        from ..api import elementwise
        return to_host(elementwise.apply_compare(name, to_fval(self), to_fval(other)))
    return f


for _py, _ast in (("add", "Add"), ("sub", "Sub"), ("mul", "Mult"), ("truediv", "Div"),
                  ("floordiv", "FloorDiv"), ("mod", "Mod"), ("pow", "Pow"),
                  ("matmul", "MatMult"), ("and", "BitAnd"), ("or", "BitOr"),
                  ("xor", "BitXor"), ("lshift", "LShift"), ("rshift", "RShift")):
    setattr(Proxy, f"__{_py}__", _binary(_ast))
    setattr(Proxy, f"__r{_py}__", _binary(_ast, swap=True))
for _py, _ast in (("lt", "Lt"), ("le", "LtE"), ("gt", "Gt"), ("ge", "GtE"), ("eq", "Eq"),
                  ("ne", "NotEq")):
    setattr(Proxy, f"__{_py}__", _compare(_ast))
Proxy.__hash__ = object.__hash__
Proxy.__neg__ = lambda self: to_host(_unary("USub", self))
Proxy.__invert__ = lambda self: to_host(_unary("Invert", self))


def _unary(name, p):
    from ..api import elementwise
    return elementwise.apply_unary(name, to_fval(p))


def to_host(v: FVal) -> Any:
    """A frontend value as static_eval's host code sees it."""
    if isinstance(v, Const):
        if isinstance(v.value, dict):
            return {k: to_host(x) if isinstance(x, FVal) else x for k, x in v.value.items()}
        return v.value
    if isinstance(v, TupleV):
        return tuple(to_host(i) for i in v.items)
    return Proxy(v)


def to_fval(x: Any) -> FVal:
    """A static_eval result back in tile code: a constant or a proxied value (R-META-1)."""
    from .calls import global_value
    if isinstance(x, Proxy):
        return x._fval
    if isinstance(x, FVal):
        return x
    if isinstance(x, (tuple, list)) and any(isinstance(i, Proxy) for i in x):
        return TupleV(tuple(to_fval(i) for i in x))
    return global_value(x)


# -- evaluation -------------------------------------------------------------------------------
def _namespace(comp, env) -> dict:
    ns: dict[str, Any] = {}
    for name, v in comp.closure.items():
        ns[name] = to_host(v) if isinstance(v, FVal) else v
    for name, v in env.vars.items():
        if name.isidentifier() and v.kind != "invalid":
            ns[name] = to_host(v)
    return ns


def host_eval(comp, node: ast.expr, env, what: str = "static_eval") -> Any:
    """Run one expression of tile code with host Python (R-META-1)."""
    from .context import in_static_eval
    if in_static_eval():
        raise TileStaticEvalError(f"{what}() cannot be used inside static_eval()")
    for n in ast.walk(node):
        if isinstance(n, ast.NamedExpr):
            raise TileSyntaxError(f"{what}(): attempted to modify a local variable with ':='")
    expr = ast.Expression(body=node)
    ast.fix_missing_locations(expr)
    code = compile(expr, comp.src.filename, "eval")
    try:
        with static_evaluation():
            return eval(code, comp.globals, _namespace(comp, env))  # noqa: S307 - R-META-1
    except TileError:
        raise
    except Exception as e:
        raise TileStaticEvalError(f"Exception was raised inside {what}(): "
                                  f"{type(e).__name__}: {e}") from e


def static_kind(fn: FVal) -> str | None:
    """'eval' / 'assert' / 'iter' when ``fn`` is one of the source-reading builtins."""
    if isinstance(fn, Const):
        return getattr(fn.value, "_cutile_static", None)
    return None


def call(comp, kind: str, node: ast.Call, env) -> FVal:
    """A call of static_eval / static_assert / static_iter in tile code."""
    if isinstance(node.func, ast.Name) and node.func.id in comp.locals:
        raise TileSyntaxError(f"static_{kind}() must be used directly, not through a variable")
    if kind == "eval":
        if len(node.args) != 1 or node.keywords or isinstance(node.args[0], ast.Starred):
            raise TileSyntaxError("static_eval() expects a single expression")
        return to_fval(host_eval(comp, node.args[0], env))
    if kind == "assert":
        return _static_assert(comp, node, env)
    raise TileSyntaxError("static_iter() is only allowed as the iterable of a for loop or of a "
                          "tuple comprehension")


def _static_assert(comp, node, env) -> FVal:
    if not 1 <= len(node.args) <= 2 or node.keywords or any(
            isinstance(a, ast.Starred) for a in node.args):
        raise TileSyntaxError("static_assert(cond, msg=None, /)")
    cond = to_fval(host_eval(comp, node.args[0], env, "static_assert"))
    if not isinstance(cond, Const):
        raise TileTypeError("static_assert() condition must be a compile-time constant, got "
                            f"{describe(cond)}")
    value = cond.value
    if type(value).__name__ == "bool_":      # numpy.bool_ from a NumPy comparison
        value = bool(value)
    if not isinstance(value, bool):
        raise TileTypeError(f"static_assert() condition must be a boolean, got "
                            f"{type(value).__name__} {value!r}")
    if value:
        return Const(None)
    msg = host_eval(comp, node.args[1], env, "static_assert") if len(node.args) == 2 else None
    text = "" if msg is None else str(msg)
    raise TileStaticAssertionError("Static assertion failed" + (f": {text}" if text else ""))


def iter_items(comp, node: ast.expr, env) -> list[FVal] | None:
    """The items of ``static_iter(...)`` when ``node`` is such a call, else None."""
    if not isinstance(node, ast.Call):
        return None
    fn = comp.expr(node.func, env)
    if static_kind(fn) != "iter":
        return None
    if isinstance(node.func, ast.Name) and node.func.id in comp.locals:
        raise TileSyntaxError("static_iter() must be used directly, not through a variable")
    if len(node.args) != 1 or node.keywords:
        raise TileSyntaxError("static_iter() expects a single iterable")
    iterable = host_eval(comp, node.args[0], env, "static_iter")
    items = []
    try:
        with static_evaluation():
            it = iter(iterable)
            for x in it:
                if len(items) == MAX_STATIC_ITER:
                    raise TileStaticEvalError(
                        f"Maximum number of iterations ({MAX_STATIC_ITER}) has been reached")
                items.append(x)
    except TileError:
        raise
    except Exception as e:
        raise TileStaticEvalError(f"Exception was raised inside static_iter(): "
                                  f"{type(e).__name__}: {e}") from e
    return [to_fval(x) for x in items]


_FORBIDDEN = {ast.Break: "Break", ast.Continue: "Continue", ast.Return: "Return"}


def check_static_body(comp, body: list[ast.stmt]) -> None:
    """R-META-3 / R-CF-9: no break, continue or return in a static_iter loop's body."""
    def go(n, in_loop):
        for kind, word in _FORBIDDEN.items():
            if isinstance(n, kind) and (kind is ast.Return or not in_loop):
                raise TileSyntaxError(
                    f"{word} in a for loop with static_iter() is not supported", comp.loc(n))
        if isinstance(n, (ast.FunctionDef, ast.Lambda, ast.ClassDef)):
            return
        inner = in_loop or isinstance(n, (ast.For, ast.While))
        for c in ast.iter_child_nodes(n):
            go(c, inner)
    for s in body:
        go(s, False)


def static_for(comp, s: ast.For, items: list[FVal], env) -> None:
    """Unroll ``for target in static_iter(...)``: the body once per item (R-META-3)."""
    if s.orelse:
        raise TileSyntaxError("'for-else' is not supported")
    check_static_body(comp, s.body)
    for item in items:
        comp.assign(s.target, item, env)
        comp.run_body(s.body, env)
        if not env.live:
            break


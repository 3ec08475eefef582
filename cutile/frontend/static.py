"""Compile-time metaprogramming (§21.3): ``static_eval``, ``static_assert``, ``static_iter``.

These read their argument's source: the expression runs in host Python at compile time with
the function's globals and locals, constants appearing as plain values and runtime values as
``Proxy`` objects (R-META-1).  ``static_iter`` unrolls a ``for`` body once per item (R-META-3).
"""

from __future__ import annotations

import ast
import dataclasses
import operator
from typing import Any

from ..errors import (
    StaticException,
    TileError,
    TileStaticAssertionError,
    TileStaticEvalError,
    TileSyntaxError,
    TileTypeError,
)
from ..lang import registry
from ..lang.context import in_static_eval, static_evaluation, static_place
from ..lang.values import ArrayV, BoundMethod, Const, DataclassV, FVal, TileV, TupleV, describe
from .dataclass_ops import from_instance
from .source import global_value

MAX_STATIC_ITER = 1000
_NO_VALUE = "Symbolic tile has no concrete value"


class Proxy:
    """A runtime value seen from ``static_eval``: compile-time attributes and arithmetic."""

    __slots__ = ("_fval",)

    def __init__(self, fval: FVal):
        object.__setattr__(self, "_fval", fval)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        fv = self._fval
        if isinstance(fv, (TileV, ArrayV)) and name in ("shape", "dtype", "ndim") or \
                isinstance(fv, ArrayV) and name == "strides":
            return to_host(registry.attribute(fv, name))    # array extents: proxies
        if isinstance(fv, (TileV, ArrayV)):
            try:
                m = registry.attribute(fv, name)
            except TileError:
                m = None
            if isinstance(m, BoundMethod):   # returned to tile code, called there (1.7)
                return Proxy(m)
        raise TileStaticEvalError(f"{describe(fv)}.{name} cannot be used inside "
                                  f"{static_place()}")

    def __repr__(self) -> str:
        fv = self._fval                     # as 1.7 prints them in static_assert messages
        if isinstance(fv, TileV):
            return f"<tile[{fv.dtype.name}, {fv.shape}]>"
        if isinstance(fv, ArrayV):
            dims = ["?" if d is None else str(d) for d in fv.static_shape]
            shape = f"({dims[0]},)" if len(dims) == 1 else f"({', '.join(dims)})"
            return f"<array[{fv.dtype.name}, {shape}]>"
        return f"<{describe(fv)}>"

    __str__ = __repr__

    # A runtime value has no host value: a ValueError, which static_eval reports as
    # StaticException("Exception was raised inside ... (ValueError: Symbolic tile ...)") (1.7)
    def __bool__(self):
        raise ValueError(f"{_NO_VALUE} and thus cannot be converted to boolean")

    def __index__(self):
        raise ValueError(f"{_NO_VALUE} and thus cannot be converted to an integer")

    __int__ = __index__

    def __float__(self):
        raise ValueError(f"{_NO_VALUE} and thus cannot be converted to a float")

    def __len__(self):
        raise ValueError(f"{_NO_VALUE} and thus has no length")

    def __iter__(self):
        raise ValueError(f"{_NO_VALUE} and thus cannot be iterated")

    def __call__(self, *args, **kwargs):
        fv = self._fval
        what = f"{fv.name}()" if isinstance(fv, BoundMethod) else describe(fv)
        raise TileStaticEvalError(f"{what} cannot be called inside {static_place()}")

    def __getitem__(self, idx):
        if isinstance(self._fval, TupleV):
            return to_host(self._fval.items[idx])
        raise TileStaticEvalError(f"{describe(self._fval)} cannot be indexed inside "
                                  "static_eval()")


def _binary(fn, swap: bool = False):
    """The dunder of a Proxy for the operator function ``fn`` (``operator.add``): the
    registered operator on the values, as in tile code."""
    def f(self, other):
        a, b = to_fval(self), to_fval(other)
        if swap:
            a, b = b, a
        return to_host(registry.call(fn, a, b))
    return f


for _fn in registry.BINARY_OPERATORS.values():
    _py = _fn.__name__.rstrip("_")                       # and_ -> and
    setattr(Proxy, f"__{_py}__", _binary(_fn))
    setattr(Proxy, f"__r{_py}__", _binary(_fn, swap=True))
for _fn in (operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne):
    setattr(Proxy, f"__{_fn.__name__}__", _binary(_fn))
Proxy.__hash__ = object.__hash__
Proxy.__neg__ = lambda self: to_host(registry.call(operator.neg, to_fval(self)))
Proxy.__invert__ = lambda self: to_host(registry.call(operator.invert, to_fval(self)))


# ct operations that static_eval may call on constants and proxies: the pure arithmetic and
# comparisons (1.7 marks the same ones); they emit IR for proxied runtime values.
SAFE_OPS = frozenset({
    "matmul", "add", "sub", "mul", "truediv", "floordiv", "pow", "mod", "divmod",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_lshift", "bitwise_rshift",
    "bitwise_not", "minimum", "maximum", "cdiv", "greater", "greater_equal", "less",
    "less_equal", "equal", "not_equal", "negative"})


def call_op(op, args, kwargs) -> Any:
    """A ``ct`` operation called by host code inside static_eval (``TileOp.__call__``)."""
    if op.op_name not in SAFE_OPS:
        raise TileStaticEvalError(f"{op.op_name}() cannot be called inside {static_place()}")
    return to_host(op.invoke([to_fval(a) for a in args],
                             {k: to_fval(v) for k, v in kwargs.items()}))


registry.set_static_call(call_op)


def to_host(v: FVal) -> Any:
    """A frontend value as static_eval's host code sees it."""
    if isinstance(v, Const):
        if isinstance(v.value, dict):
            return {k: to_host(x) if isinstance(x, FVal) else x for k, x in v.value.items()}
        return v.value
    if isinstance(v, TupleV):
        return tuple(to_host(i) for i in v.items)
    if isinstance(v, DataclassV):        # an instance of the class (isinstance, methods work)
        inst = object.__new__(v.cls)
        for name, f in v.fields.items():
            object.__setattr__(inst, name, to_host(f))
        return inst
    return Proxy(v)


def to_fval(x: Any) -> FVal:
    """A static_eval result back in tile code: a constant or a proxied value (R-META-1)."""
    if isinstance(x, Proxy):
        return x._fval
    if isinstance(x, FVal):
        return x
    if isinstance(x, (tuple, list)) and any(isinstance(i, Proxy) for i in x):
        return TupleV(tuple(to_fval(i) for i in x))
    if isinstance(x, (list, set, bytearray)):    # mutable host containers are no values
        raise TileTypeError(f"Cannot create constant from value of type {type(x).__name__}.")
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return from_instance(x, to_fval)      # fields may hold proxies (runtime values)
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


_PLACES = {"static_iter": "static_iter() iterable"}    # as 1.7 names where host code runs


def host_eval(comp, node: ast.expr, env, what: str = "static_eval", part: str = "") -> Any:
    """Run one expression of tile code with host Python (R-META-1); an exception it raises
    becomes ``StaticException`` naming ``what``'s ``part`` as 1.7 does ("static_assert()
    condition", "static_iter() iterable", ...)."""
    if in_static_eval():
        raise TileStaticEvalError(f"{what}() cannot be used inside {static_place()}.")
    for n in ast.walk(node):
        if isinstance(n, ast.NamedExpr):
            raise TileSyntaxError(f"{what}() expression attempted to modify a local variable "
                                  f"'{n.target.id}' with ':=' (host code may only read them)")
        if isinstance(n, ast.Name) and getattr(env.vars.get(n.id), "kind", "") == "invalid":
            comp._located(n, comp.lookup, n.id, env, n)   # unbound: tile code's own error
    expr = ast.Expression(body=node)
    ast.fix_missing_locations(expr)
    code = compile(expr, comp.src.filename, "eval")
    try:
        with static_evaluation(_PLACES.get(what, f"{what}()")):
            return eval(code, comp.globals, _namespace(comp, env))  # noqa: S307 - R-META-1
    except TileError:
        raise
    except Exception as e:
        where = f"{what}() {part}".rstrip()
        raise StaticException(f"Exception was raised inside {where} ({_type_and_str(e)})") from e


def _type_and_str(e: BaseException) -> str:
    text = str(e)
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def static_kind(fn: FVal) -> str | None:
    """'eval' / 'assert' / 'iter' / 'exception' when ``fn`` is one of the source-reading
    builtins."""
    if isinstance(fn, Const):
        return getattr(fn.value, "_cutile_static", None)
    return None


def call(comp, kind: str, node: ast.Call, env) -> FVal:
    """A call of static_eval / static_assert / static_iter / static_exception in tile code."""
    if isinstance(node.func, ast.Name) and node.func.id in comp.locals:
        raise TileSyntaxError(f"static_{kind}() must be used directly by name, e.g. "
                              f"ct.static_{kind}()")
    if kind == "eval":
        if len(node.args) != 1 or node.keywords or isinstance(node.args[0], ast.Starred):
            raise TileSyntaxError("static_eval() expects a single expression")
        return to_fval(host_eval(comp, node.args[0], env))
    if kind == "assert":
        return _static_assert(comp, node, env)
    if kind == "exception":
        raise TileSyntaxError("static_exception() is only allowed after `raise`, e.g. "
                              "`raise ct.static_exception(ValueError('message'))`")
    raise TileSyntaxError("static_iter() is only allowed as iterable in a `for` loop or a tuple "
                          "comprehension, i.e. `for i in ct.static_iter(...)`")


def _static_assert(comp, node, env) -> FVal:
    if not 1 <= len(node.args) <= 2 or node.keywords or any(
            isinstance(a, ast.Starred) for a in node.args):
        raise TileSyntaxError("static_assert(cond, msg=None, /) expects one or two positional "
                              "arguments")
    cond = to_fval(host_eval(comp, node.args[0], env, "static_assert", "condition"))
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
    msg = None
    if len(node.args) == 2:
        msg = host_eval(comp, node.args[1], env, "static_assert", "message")
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
        raise TileSyntaxError("static_iter() must be used directly by name, e.g. "
                              "ct.static_iter()")
    if len(node.args) != 1 or node.keywords:
        raise TileSyntaxError("static_iter() expects a single iterable")
    iterable = host_eval(comp, node.args[0], env, "static_iter", "iterable")
    with static_evaluation(_PLACES["static_iter"]):
        try:
            it = iter(iterable)
        except TileError:
            raise
        except Exception as e:
            raise TileTypeError(f"Invalid static_iter() iterable{_colon(e)}") from e
        items = []
        while True:
            try:
                x = next(it)
            except StopIteration:
                break
            except TileError:
                raise
            except Exception as e:
                raise TileTypeError(f"Error was raised while obtaining item #{len(items)} from "
                                    f"the static_iter() iterable{_colon(e)}") from e
            if len(items) == MAX_STATIC_ITER:
                raise TileStaticEvalError(
                    f"Maximum number of iterations ({MAX_STATIC_ITER}) has been reached while "
                    "unpacking the static_iter() iterable")
            items.append(x)
    out = []
    for i, x in enumerate(items):
        try:
            out.append(to_fval(x))
        except TileTypeError as e:
            raise TileStaticEvalError(f"Invalid item #{i} of static_iter() iterable: "
                                      f"{e.message}") from None
    return out


def _colon(e: BaseException) -> str:
    return f": {e}" if str(e) else ""


def stmt_raise(comp, s: ast.Raise, env) -> None:
    """``raise ct.static_exception(exc)``: reaching it fails the compilation with
    ``StaticException`` at this line (R-META-5); any other ``raise`` is refused."""
    if s.cause is not None:
        raise TileSyntaxError("'raise from' syntax is not supported", comp.loc(s.cause))
    node = s.exc
    if not (isinstance(node, ast.Call) and static_kind(comp.expr(node.func, env)) == "exception"):
        raise TileSyntaxError("Raised exception must be wrapped in static_exception(), e.g. "
                              "`raise ct.static_exception(ValueError('message'))`")
    if isinstance(node.func, ast.Name) and node.func.id in comp.locals:
        raise TileSyntaxError("static_exception() must be used directly by name, e.g. "
                              "ct.static_exception()")
    if len(node.args) != 1 or node.keywords or isinstance(node.args[0], ast.Starred):
        raise TileSyntaxError("static_exception() expects a single expression")
    exc = host_eval(comp, node.args[0], env, "static_exception", "expression")
    if not isinstance(exc, BaseException):
        raise StaticException(f"Exception was raised inside static_exception() expression "
                              f"(TypeError: '{type(exc).__name__}' is not derived from "
                              "'BaseException')")
    err = StaticException(f"Exception was raised at compile time ({_type_and_str(exc)})")
    err.__cause__ = exc
    raise err


_FORBIDDEN = {ast.Break: "Break in", ast.Continue: "Continue in", ast.Return: "Returning from"}


def check_static_body(comp, body: list[ast.stmt]) -> None:
    """R-META-3 / R-CF-9: no break, continue or return in a static_iter loop's body."""
    def go(n, in_loop):
        for kind, word in _FORBIDDEN.items():
            if isinstance(n, kind) and (kind is ast.Return or not in_loop):
                text = ("Returning from a for loop is not supported (here a static_iter() "
                        "loop)" if kind is ast.Return else
                        f"{word} a for loop with static_iter() is not supported")
                raise TileSyntaxError(text, comp.loc(n))
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


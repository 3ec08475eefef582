"""Python constructs of tile code beyond expressions and control flow (§23): ``with`` and
``@contextmanager`` helpers, tuple comprehensions, dataclasses, ``**kwargs`` dicts and lists of
arrays.  Kept apart from ``compiler.py`` so that the core interpreter of the AST stays small;
every function here receives the ``FunctionCompiler`` running the code.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import dataclasses
import inspect
import operator
import types

from ..errors import TileSyntaxError, TileTypeError
from ..ir.core import Region
from ..lang import coerce, registry
from ..lang.strings import is_string, make_string, str_parts
from ..lang.values import (
    BoundMethod,
    Const,
    ContextV,
    DataclassV,
    FVal,
    Invalid,
    ListV,
    TileV,
    TupleV,
    describe,
)
from . import dataclass_ops
from .source import global_value
from .static import iter_items

_CM_HELPER_CODE = contextlib.contextmanager(lambda: iter(())).__code__


# -- dicts (R-PY-5) ---------------------------------------------------------------------------
def is_dict(v: FVal) -> bool:
    return isinstance(v, Const) and isinstance(v.value, dict)


def dict_items(v: FVal, what: str) -> dict:
    if not is_dict(v):
        raise TileTypeError(f"Expected a dict after **, got {describe(v)}")
    return {k: coerce.fval(x) for k, x in v.value.items()}


def _dict_key(d: dict, key: FVal) -> str:
    if not (isinstance(key, Const) and isinstance(key.value, str)):
        raise TileTypeError(f"Dictionary keys must be constant strings, got {describe(key)}")
    return key.value


def dict_get(d: FVal, args, kwargs) -> FVal:
    if kwargs or not 1 <= len(args) <= 2:
        raise TileTypeError("dict.get(key, default=None, /)")
    key = _dict_key(d.value, args[0])
    if key in d.value:
        return coerce.fval(d.value[key])
    return args[1] if len(args) == 2 else Const(None)


def contains(item: FVal, container: FVal) -> FVal | None:
    """``"k" in d`` for a kwargs dict (None: not a dict, use the tuple rule)."""
    if not is_dict(container):
        return None
    return Const(_dict_key(container.value, item) in container.value)


# -- lists of arrays (R-PY-4) -----------------------------------------------------------------
def list_item(comp, lst: ListV, idx: FVal, env) -> FVal:
    """``lst[i]``: a constant index picks the array; a runtime one becomes a chain of ``If``s
    choosing among the arrays (an out-of-range index is UB: it picks the last array)."""
    if isinstance(idx, Const):
        i = idx.value
        if isinstance(i, bool) or not isinstance(i, int):
            raise TileTypeError(f"List indices must be integers, got {describe(idx)}")
        n = len(lst.items)
        if not -n <= i < n:
            raise TileTypeError(f"Index {i} is out of range for a list of length {n}")
        return lst.items[i]
    if not (isinstance(idx, TileV) and idx.shape == () and idx.dtype.is_integral
            and not idx.dtype.is_bool):
        raise TileTypeError(f"List indices must be integer scalars, got {describe(idx)}")
    def choose(k: int, e) -> None:
        if k == len(lst.items) - 1:
            e.vars["<item>"] = lst.items[k]
            return
        cond = comp.to_cond(registry.call(operator.eq, idx, Const(k)))
        comp._branch(cond, lambda b: b.vars.__setitem__("<item>", lst.items[k]),
                     lambda b: choose(k + 1, b), e)

    tmp = env.copy()
    choose(0, tmp)
    return tmp.vars["<item>"]


# -- dataclasses (R-PY-10; construction in dataclass_ops.py) -------------------------------
def attribute(comp, obj: FVal, name: str) -> FVal | None:
    """``obj.name`` for dataclass values and dicts (None: not handled here)."""
    if is_dict(obj) and name == "get":
        return BoundMethod(obj, "get")
    if not isinstance(obj, DataclassV):
        return None
    if name in obj.fields:
        return obj.fields[name]
    attr = inspect.getattr_static(obj.cls, name, None)
    if isinstance(attr, property) and attr.fget is not None:
        return comp.inline_function(attr.fget, [obj], {}, None)
    if isinstance(attr, types.FunctionType):
        return BoundMethod(obj, name)
    if isinstance(attr, staticmethod):
        return Const(attr.__func__)
    if attr is None:
        raise TileTypeError(f"{obj.cls.__name__} has no attribute {name!r}")
    return global_value(getattr(obj.cls, name))


def call_method(comp, m: BoundMethod, args, kwargs, node) -> FVal | None:
    if is_dict(m.obj) and m.name == "get":
        return dict_get(m.obj, args, kwargs)
    if isinstance(m.obj, DataclassV):
        f = getattr(m.obj.cls, m.name)
        if f.__code__ is _CM_HELPER_CODE:       # a @contextmanager method (1.7)
            return ContextV(f.__wrapped__, (m.obj, *args), dict(kwargs))
        return comp.inline_function(f, [m.obj, *args], kwargs, node)
    return None


def _dunder(comp, obj: DataclassV, name: str, args, node) -> FVal:
    fn = getattr(obj.cls, name, None)
    if not isinstance(fn, types.FunctionType):
        if name == "__call__":
            raise TileTypeError(f"Cannot call an object of type {obj.cls.__name__}: it "
                                f"defines no __call__")
        raise TileTypeError(f"{obj.cls.__name__} is not subscriptable")
    return comp.inline_function(fn, [obj, *args], {}, node)


def subscript(comp, obj: FVal, idx: FVal, env) -> FVal | None:
    if isinstance(obj, ListV):
        return list_item(comp, obj, idx, env)
    if isinstance(obj, DataclassV):
        return _dunder(comp, obj, "__getitem__", [idx], None)
    return None


# -- calls ------------------------------------------------------------------------------------
def call_value(comp, fn: FVal, args, kwargs, node, env) -> FVal | None:
    """Calls handled by this module (None: let the compiler handle it)."""
    if isinstance(fn, DataclassV):
        return _dunder(comp, fn, "__call__", args, node)
    if isinstance(fn, BoundMethod):
        return call_method(comp, fn, args, kwargs, node)
    if not isinstance(fn, Const):
        return None
    f = fn.value
    if isinstance(f, types.FunctionType) and f.__code__ is _CM_HELPER_CODE:
        return ContextV(f.__wrapped__, tuple(args), dict(kwargs))
    if isinstance(f, type) and dataclasses.is_dataclass(f):
        return dataclass_ops.make_dataclass(comp, f, args, kwargs, node)
    if f is dataclasses.replace:
        return dataclass_ops.replace(comp, args, kwargs, env)
    if isinstance(f, types.MethodType) and isinstance(f.__func__, types.FunctionType) and \
            dataclasses.is_dataclass(f.__self__):        # a method of a global instance
        return comp.inline_function(f.__func__, [coerce.fval(f.__self__), *args], kwargs, node)
    if f is builtins.sum:
        if len(args) != 1 or kwargs:
            raise TileTypeError("sum() in tile code takes one tuple")
        return _sum(coerce.tuple_items(args[0], "sum()"))
    if isinstance(f, types.BuiltinMethodType) and f.__name__ == "join" and \
            isinstance(f.__self__, str):
        return str_join(f.__self__, args, kwargs)
    if f is builtins.dict:
        if args:
            raise TileTypeError("dict() in tile code takes keyword arguments only")
        return Const(dict(kwargs))
    return None


def str_join(sep: str, args, kwargs) -> FVal:
    """``sep.join(strings)`` (1.7): a tuple of constant strings or f-strings."""
    if len(args) != 1 or kwargs:
        raise TileTypeError("str.join() takes exactly one argument")
    parts: list = []
    for i, item in enumerate(coerce.tuple_items(args[0], "str.join()")):
        if not is_string(item):
            raise TileTypeError(f"str.join(): sequence item {i}: expected a string, got "
                                f"{describe(item)}")
        parts += ([sep] if i else []) + str_parts(item)
    return make_string(parts)


def _sum(items) -> FVal:
    acc: FVal = Const(0)
    for x in items:
        acc = registry.call(operator.add, acc, x)
    return acc


# -- comprehensions (R-PY-2/3) ----------------------------------------------------------------
def genexp_call(comp, fn: FVal, node: ast.Call, env) -> FVal | None:
    """``tuple(<genexp>)`` and ``sum(<genexp>)`` over ``static_iter`` iterables."""
    if not (isinstance(fn, Const) and fn.value in (builtins.tuple, builtins.sum)
            and len(node.args) == 1 and isinstance(node.args[0], ast.GeneratorExp)
            and not node.keywords):
        return None
    items = comprehension(comp, node.args[0], env)
    return TupleV(tuple(items)) if fn.value is builtins.tuple else _sum(items)


def comprehension(comp, g: ast.GeneratorExp, env) -> list[FVal]:
    """The items of a comprehension.  As in Python it has one scope of its own (a copy of the
    enclosing one) in which every ``for`` rebinds its variables: a lambda made inside reads
    them when called, so lambdas kept past their iteration all see the last values."""
    out: list[FVal] = []
    scope = env.copy()
    for gen in g.generators:            # local to the comprehension, unbound until assigned
        for n in ast.walk(gen.target):
            if isinstance(n, ast.Name):
                scope.vars[n.id] = Invalid(n.id, f"Undefined variable {n.id} used: it is a "
                                                 "variable of the comprehension, not bound yet")

    def level(k: int) -> None:
        if k == len(g.generators):
            out.append(comp.expr(g.elt, scope))
            return
        gen = g.generators[k]
        if gen.is_async:
            raise TileSyntaxError("Unsupported syntax: async comprehension")
        items = iter_items(comp, gen.iter, env if k == 0 else scope)
        if items is None:
            raise TileSyntaxError("All iterables in a tuple comprehension must be wrapped in "
                                  "ct.static_iter()", comp.loc(gen.iter))
        for item in items:
            comp.assign(gen.target, item, scope)
            keep = True
            for cond in gen.ifs:
                c = comp.to_cond(comp.expr(cond, scope))
                if not isinstance(c, Const):
                    raise TileTypeError("Tuple comprehension if-conditions must be statically "
                                        "known: the tuple's length is fixed at compile time",
                                        comp.loc(cond))
                keep = keep and bool(c.value)
            if keep:
                level(k + 1)

    level(0)
    return out


# -- return inside a loop of a helper (R-CF-10) -----------------------------------------------
RET_FLAG, RET_VALUE = "<returned>", "<return value>"


class RetFound(BaseException):
    """Raised by a ``return`` during the discovery run of a loop (see ``loop_with_return``).
    A BaseException so that the error wrapping of ``_located`` lets it through."""

    def __init__(self, value: FVal):
        self.value = value


def _zero_like(v: FVal) -> FVal:
    """A runtime value of ``v``'s type (the return slot before anything is returned)."""
    if isinstance(v, Const) and v.is_number:
        v = coerce.to_tile(v)
    if isinstance(v, TileV):
        return coerce.constant(0, v.dtype, v.shape)
    if isinstance(v, TupleV):
        return TupleV(tuple(_zero_like(i) for i in v.items))
    if isinstance(v, Const):
        return v
    raise TileSyntaxError(f"Returning {describe(v)} from inside a loop of a helper is not "
                          "supported; return it after the loop")


def loop_with_return(comp, s: ast.stmt, rest: list, env) -> bool:
    """A ``for``/``while`` of a helper whose body returns: the return stores its value in a
    carried slot, sets a carried flag and breaks; after the loop an enclosing loop breaks too,
    and the outermost one becomes ``if flag: return slot`` else the rest of the body.
    Returns True when ``rest`` was compiled here."""
    outermost = RET_FLAG not in env.vars
    if outermost:
        # Discovery: compile the loop once into a discarded region to learn the type of the
        # first value returned, so the slot can be carried from loop entry (R-CF-7).
        probe = env.copy()
        comp.discovering = True
        try:
            with comp.ctx.builder.open(Region()):
                comp.stmt(s, probe)
            found = None
        except RetFound as r:
            found = r.value
        finally:
            comp.discovering = False
        if found is None:
            comp.stmt(s, env)
            return False
        env.vars[RET_FLAG] = coerce.to_tile(Const(False))
        env.vars[RET_VALUE] = _zero_like(found)
    comp.stmt(s, env)
    if not env.live:
        return False
    flag = env.vars[RET_FLAG]
    if not outermost:
        comp._branch(flag, lambda e: comp._loop_exit("break", e), lambda e: None, env)
        return False

    def returned(e):
        e.term, e.ret = "return", e.vars[RET_VALUE]

    if _endless(s):          # `while True:` left only by return: the rest is unreachable
        returned(env)
        return True

    def not_returned(e):
        slot = e.vars.pop(RET_VALUE)
        del e.vars[RET_FLAG]
        comp.run_body(rest, e)
        if e.term == "return":           # constants returned later take the slot's dtypes
            e.ret = _like(e.ret, slot)

    comp._branch(flag, returned, not_returned, env)
    return True


def _endless(s: ast.stmt) -> bool:
    """A ``while <true constant>:`` with no ``break`` of its own."""
    if not (isinstance(s, ast.While) and isinstance(s.test, ast.Constant) and s.test.value):
        return False

    def breaks(n) -> bool:
        if isinstance(n, ast.Break):
            return True
        if isinstance(n, (ast.For, ast.While, ast.FunctionDef, ast.Lambda)):
            return False
        return any(breaks(c) for c in ast.iter_child_nodes(n))
    return not any(breaks(b) for b in s.body)


def return_in_loop(comp, value: FVal, env) -> None:
    """``return value`` inside a loop of a helper: fill the slot, set the flag, break."""
    if comp.discovering:
        raise RetFound(value)
    slot = env.vars.get(RET_VALUE)
    if slot is None:
        raise TileSyntaxError("Returning from inside this loop of a helper is not supported "
                              "(return after the loop)")
    env.vars[RET_VALUE] = _like(value, slot)
    env.vars[RET_FLAG] = coerce.to_tile(Const(True))
    comp._loop_exit("break", env)


def _like(v: FVal, slot: FVal) -> FVal:
    """``v`` converted to the slot's type where it is a constant (R-CAST-2)."""
    if isinstance(v, Const) and v.is_number and isinstance(slot, TileV):
        return coerce.to_tile(coerce.implicit_cast(v, slot.dtype, "returned value")
                              if v.is_loose else v)
    if isinstance(v, TupleV) and isinstance(slot, TupleV) and len(v.items) == len(slot.items):
        return TupleV(tuple(_like(a, b) for a, b in zip(v.items, slot.items)))
    return v

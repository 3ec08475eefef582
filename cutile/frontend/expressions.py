"""Expressions of the tile-code compiler: one ``expr_<Node>`` handler per Python AST node.

Each handler evaluates an expression over frontend values at compile time (constants fold;
runtime values emit IR through the ops the registry, ``lang.registry``, maps each operator,
attribute and subscript to); names resolve through the path's variables,
the helper's closure, its module globals and builtins.  Unsupported syntax is refused with a
``TileSyntaxError`` that says what to write instead.  Calls go to ``calls.dispatch``.
``ExpressionCompiler`` is a part of ``compiler.FunctionCompiler``.
"""

from __future__ import annotations

import ast
import builtins
import operator

from ..errors import TileInternalError, TileSyntaxError, TileTypeError
from ..lang import coerce, registry
from ..lang.strings import format_field, make_string
from ..lang.values import Const, FVal, Invalid, TupleV, describe
from . import calls, dataclass_ops, pysubset, static
from .env import Env
from .source import global_value


def _module_name(m) -> str:
    """A module as 1.7 names it: cutile itself is ``cuda.tile`` (the language it implements,
    the name users match on); any other module by its own name."""
    return "cuda.tile" if m.__name__ in ("cutile", "cuda.tile") else m.__name__


class ExpressionCompiler:
    """The expressions of ``FunctionCompiler`` (which supplies ``loc``, ``_located``,
    ``condition``, ``to_cond``, ``_branch``, ``_make_closure``, ``locals``, ``closure`` and
    ``globals``)."""

    def expr(self, node, env: Env) -> FVal:
        meth = getattr(self, "expr_" + type(node).__name__, None)
        if meth is None:
            raise TileSyntaxError(f"Unsupported syntax: {type(node).__name__} expression",
                                  self.loc(node))
        return self._located(node, meth, node, env)

    def expr_Constant(self, node, env):
        if isinstance(node.value, complex):
            raise TileTypeError("Complex numbers are not supported")
        return Const(node.value)

    def expr_Name(self, node, env):
        return self.lookup(node.id, env, node)

    def lookup(self, name: str, env: Env, node) -> FVal:
        v = env.vars.get(name)
        if v is not None:
            if isinstance(v, Invalid):
                if "depends on path" in v.reason:
                    raise TileTypeError(v.reason)
                if "every path" in v.reason:     # a TileTypeError in 1.7 (R-CF-8)
                    raise TileTypeError(f"Use of potentially undefined variable `{name}`: it "
                                        f"{v.reason} (undefined variable {name})")
                raise TileSyntaxError(v.reason if "ndefined" in v.reason
                                      else f"Undefined variable {name} used: {v.reason}")
            return v
        if name in self.locals:
            raise TileSyntaxError(f"Undefined variable {name} used")
        if name in self.closure:
            c = self.closure[name]
            return c if isinstance(c, FVal) else global_value(c)
        if name in self.globals:
            return global_value(self.globals[name])
        if hasattr(builtins, name):
            return Const(getattr(builtins, name))
        raise TileSyntaxError(f"Undefined variable {name} used")

    def expr_Tuple(self, node, env):
        items: list[FVal] = []
        for e in node.elts:
            if isinstance(e, ast.Starred):
                v = self.expr(e.value, env)
                items.extend(coerce.tuple_items(v, "starred item"))
            else:
                items.append(self.expr(e, env))
        return TupleV(tuple(items))

    # what each container construct is called, and what to write instead
    _CONTAINERS = {
        ast.List: ("list displays", "use a tuple"),
        ast.ListComp: ("list comprehensions",
                       "use tuple(... for x in ct.static_iter(...)) or a for loop"),
        ast.Dict: ("dict displays", "use a tuple, or separate variables"),
        ast.DictComp: ("dict comprehensions", "use a tuple, or separate variables"),
        ast.Set: ("set displays", "use a tuple"),
        ast.SetComp: ("set comprehensions",
                      "use tuple(... for x in ct.static_iter(...)) or a for loop"),
    }

    def expr_List(self, node, env):
        what, instead = self._CONTAINERS[type(node)]
        raise TileSyntaxError(f"Unsupported syntax: {what} are not supported in tile code; "
                              f"{instead}")

    expr_ListComp = expr_Dict = expr_Set = expr_DictComp = expr_SetComp = expr_List

    def expr_GeneratorExp(self, node, env):
        raise TileSyntaxError("Unsupported syntax: generator expressions are only accepted as "
                              "tuple(... for x in ct.static_iter(...)) or sum(...)")

    def expr_NamedExpr(self, node, env):
        raise TileSyntaxError("Unsupported syntax: ':=' is not supported")

    def expr_Lambda(self, node, env):
        return self._make_closure(node, "<lambda>", env)

    def expr_Attribute(self, node, env):
        return self.attribute(self.expr(node.value, env), node.attr)

    def attribute(self, obj: FVal, name: str) -> FVal:
        """``obj.name``: dataclass fields and dict methods here, value attributes through the
        registry, other constants (modules, classes, ...) as host Python reads them."""
        r = pysubset.attribute(self, obj, name)
        if r is None:
            r = registry.attribute(obj, name)
        if r is not None:
            return r
        if isinstance(obj, Const):
            try:
                value = getattr(obj.value, name)
            except AttributeError:
                what = (f"Module '{_module_name(obj.value)}'"
                        if type(obj.value).__name__ == "module" else describe(obj))
                raise TileTypeError(f"{what} has no attribute '{name}'") from None
            return global_value(value)
        raise TileTypeError(f"{describe(obj)} has no attribute '{name}'")

    def expr_Subscript(self, node, env):
        obj = self.expr(node.value, env)
        idx = self.expr(node.slice, env)
        r = pysubset.subscript(self, obj, idx, env)
        return r if r is not None else registry.call(operator.getitem, obj, idx)

    def expr_Slice(self, node, env):
        parts = [self.expr(p, env) if p is not None else Const(None)
                 for p in (node.lower, node.upper, node.step)]
        for p in parts:
            if not isinstance(p, Const):
                raise TileTypeError("Slice bounds must be compile-time constants")
        return Const(slice(*(p.value for p in parts)))

    def expr_BinOp(self, node, env):
        left = self.expr(node.left, env)
        right = self.expr(node.right, env)
        return self.binop(type(node.op), left, right)

    def binop(self, op_type, left: FVal, right: FVal) -> FVal:
        """``left <op> right``: a dataclass's dunder, else the registered operator (which
        also joins strings and tuples)."""
        r = dataclass_ops.binop(self, op_type.__name__, left, right)
        if r is not None:
            return r
        return registry.call(registry.BINARY_OPERATORS[op_type], left, right)

    def expr_UnaryOp(self, node, env):
        v = self.expr(node.operand, env)
        return registry.call(registry.UNARY_OPERATORS[type(node.op)], v)

    def expr_BoolOp(self, node, env):
        is_and = isinstance(node.op, ast.And)
        return self._boolop(node.values, is_and, env)

    def _boolop(self, values, is_and: bool, env) -> FVal:
        first = self.condition(values[0], env)
        if len(values) == 1:
            return first
        if isinstance(first, Const):
            if first.value != is_and:         # short-circuits: False for and, True for or
                return Const(bool(first.value))
            return self._boolop(values[1:], is_and, env)
        out = {}

        def rest(e):
            out["v"] = self._boolop(values[1:], is_and, e)
            e.vars["<bool>"] = out["v"]

        def short(e):
            e.vars["<bool>"] = Const(not is_and)

        tmp = env.copy()
        if is_and:
            self._branch(first, rest, short, tmp)
        else:
            self._branch(first, short, rest, tmp)
        result = tmp.vars["<bool>"]
        if isinstance(result, Invalid):
            raise TileInternalError("boolean operator merge failed")
        return result

    def expr_Compare(self, node, env):
        left = self.expr(node.left, env)
        result: FVal | None = None
        for op, comp in zip(node.ops, node.comparators):
            right = self.expr(comp, env)
            r = self.compare(type(op), left, right)
            # chained comparisons: ``and`` of conditions already bool
            result = r if result is None else registry.call(operator.and_, result, r)
            left = right
        return result

    def compare(self, op_type, left: FVal, right: FVal) -> FVal:
        """One comparison: ``in`` on a kwargs dict, a dataclass's dunder, else the registered
        operator (``in`` is ``operator.contains`` with the operands swapped)."""
        member = op_type in (ast.In, ast.NotIn)
        r = pysubset.contains(left, right) if member else None
        if r is not None:
            return Const(r.value == (op_type is ast.In))
        r = dataclass_ops.compare(self, op_type.__name__, left, right)
        if r is not None:
            return r
        if not member:
            return registry.call(registry.COMPARISONS[op_type], left, right)
        r = registry.call(operator.contains, right, left)
        if op_type is ast.In:
            return r
        return Const(not r.value) if isinstance(r, Const) else registry.call(operator.not_, r)

    def expr_IfExp(self, node, env):
        cond = self.condition(node.test, env)
        if isinstance(cond, Const):
            return self.expr(node.body if cond.value else node.orelse, env)
        tmp = env.copy()
        self._branch(cond, lambda e: e.vars.__setitem__("<ifexp>", self.expr(node.body, e)),
                     lambda e: e.vars.__setitem__("<ifexp>", self.expr(node.orelse, e)), tmp)
        return self.lookup("<ifexp>", tmp, node)

    def expr_JoinedStr(self, node, env):
        """f-strings: constant fields format at compile time; tiles stay runtime parts that
        ``ct.print`` prints (R-PRINT-3/4)."""
        parts: list = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
                continue
            if v.conversion != -1:
                raise TileSyntaxError("!r, !s, !a conversions are not supported in f-strings "
                                      "in tile code", self.loc(v))
            spec = None
            if v.format_spec is not None:
                if any(not isinstance(p, ast.Constant) for p in v.format_spec.values):
                    raise TileSyntaxError("format spec must be a literal string",
                                          self.loc(v.format_spec))
                spec = "".join(str(p.value) for p in v.format_spec.values)
            parts.extend(format_field(self.expr(v.value, env), spec))
        return make_string(parts)

    def expr_Call(self, node, env):
        fn = self.expr(node.func, env)
        kind = static.static_kind(fn)
        if kind is not None:
            return static.call(self, kind, node, env)
        r = pysubset.genexp_call(self, fn, node, env)
        if r is not None:
            return r
        args: list[FVal] = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                v = self.expr(a.value, env)
                if not isinstance(v, TupleV) and not (isinstance(v, Const)
                                                      and isinstance(v.value, tuple)):
                    raise TileTypeError("Expected a tuple after *")
                args.extend(coerce.tuple_items(v, "*args"))
            else:
                args.append(self.expr(a, env))
        kwargs: dict[str, FVal] = {}
        for k in node.keywords:
            if k.arg is None:                 # f(**d), R-PY-5
                for name, v in pysubset.dict_items(self.expr(k.value, env), "**").items():
                    if name in kwargs:
                        raise TileTypeError(f"got multiple values for keyword argument {name!r}")
                    kwargs[name] = v
                continue
            if k.arg in kwargs:
                raise TileTypeError(f"got multiple values for keyword argument {k.arg!r}")
            kwargs[k.arg] = self.expr(k.value, env)
        return self.call(fn, args, kwargs, node, env)

    def call(self, fn: FVal, args, kwargs, node, env) -> FVal:
        self.ctx.compiler = self  # (user combiners of reduce/scan compile through it)
        return calls.dispatch(self, fn, args, kwargs, node, env)

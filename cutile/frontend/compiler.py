"""Abstract interpretation of a tile function's AST into the typed IR.

Statements run once at compile time over frontend values; runtime values become IR ops.
Control flow on constants is folded (R-CF-3); on runtime values it becomes structured IR
(``If``/``For``/``Loop``) with merged variables (R-CF-7).  Helper calls are inlined with a
caller chain for error locations (R-PY-6).
"""

from __future__ import annotations

import ast
import builtins
import inspect
import operator
import types
from typing import Any

from .. import dtypes as dt
from ..errors import (
    Loc,
    TileError,
    TileInternalError,
    TileRecursionError,
    TileSyntaxError,
    TileTypeError,
    TileValueError,
)
from ..ir import ops
from ..ir.core import Region, Value
from . import calls, coerce, contexts, dataclass_ops, flow, pysubset, static
from .calls import bind_ast_args, chain_text, global_value
from .context import CompileContext
from .loops import CarryMismatch, LoopCompiler, _LoopInfo, contains_return
from .source import SourceInfo, assigned_names, closure_values, parse_function
from .values import (
    ArrayV,
    Const,
    FuncV,
    FVal,
    Invalid,
    TileV,
    TupleV,
    describe,
)

MAX_INLINE_DEPTH = 1000
_DEAD = ("break", "continue", "return-op", "dead")   # terminations that leave the region


class Env:
    """Variables of one control-flow path and how the path ended (``term``)."""

    __slots__ = ("vars", "term", "ret")

    def __init__(self, vars: dict | None = None):
        self.vars: dict[str, FVal] = dict(vars or {})
        self.term: str | None = None     # None, "break", "continue", "return-op", "dead", "return"
        self.ret: FVal | None = None     # helper return value when term == "return"

    def copy(self) -> Env:
        return Env(self.vars)

    @property
    def live(self) -> bool:
        return self.term not in _DEAD


class FunctionCompiler(LoopCompiler):
    """Compiles one function body (the kernel or an inlined helper) in a context."""

    def __init__(self, ctx: CompileContext, node, src: SourceInfo, pyglobals: dict,
                 closure: dict, caller: Loc | None, is_kernel: bool, depth: int = 0):
        self.ctx = ctx
        self.node = node
        self.src = src
        self.globals = pyglobals
        self.closure = closure
        self.caller = caller
        self.is_kernel = is_kernel
        self.depth = depth
        body = node.body if isinstance(node.body, list) else [node.body]
        self.locals = assigned_names(body) | {a.arg for a in calls.all_args(node.args)}
        self.loops: list[_LoopInfo] = []
        self.managers: list = []          # entered ``with`` helpers (contexts._Manager)
        self.chain: tuple = (src.func_name,)   # inlined calls leading here (R-PY-6)
        self.discovering = False          # see pysubset.loop_with_return

    # -- locations and errors ------------------------------------------------------------------
    def loc(self, node) -> Loc:
        return self.src.loc(node, self.caller)

    def _located(self, node, fn, *args):
        prev = self.ctx.loc
        self.ctx.loc = self.loc(node)
        try:
            return fn(*args)
        except TileError as e:
            if e.loc is None:
                e.loc = self.loc(node)
            raise
        except (RecursionError, KeyboardInterrupt, CarryMismatch):
            raise                   # CarryMismatch: control flow of _loop (a retry)
        except Exception as e:  # our bug: report it at the user's line (R-ERR-4)
            raise TileInternalError(f"{type(e).__name__}: {e}", self.loc(node)) from e
        finally:
            self.ctx.loc = prev

    # -- statements ----------------------------------------------------------------------------
    def run_body(self, stmts: list[ast.stmt], env: Env) -> Env:
        stmts = list(stmts)
        i = 0
        while i < len(stmts):
            if not env.live or env.term == "return":
                break
            s = stmts[i]
            rest = stmts[i + 1:]
            if (not self.is_kernel and isinstance(s, ast.If) and rest and contains_return(s)):
                # Early return from a helper: the rest of the block runs only on the paths that
                # did not return, so push it into both branches (each stops at its return).
                s = ast.If(test=s.test, body=s.body + rest, orelse=s.orelse + rest)
                ast.copy_location(s, stmts[i])
                rest = []
                stmts = stmts[:i + 1]
            if (not self.is_kernel and isinstance(s, ast.With) and rest
                    and isinstance(rest[-1], ast.Return) and contains_return(s)):
                # A return inside a helper's `with`: the rest of the block (it ends with a
                # return) moves into the body as its last statement, after the cleanup, so the
                # If rule above pushes it into the paths that did not return.
                s = contexts.with_rest(s, rest)
                rest = []
                stmts = stmts[:i + 1]
            if (not self.is_kernel and not self.discovering
                    and isinstance(s, (ast.For, ast.While)) and contains_return(s)):
                if self._located(s, pysubset.loop_with_return, self, s, rest, env):
                    break                          # the rest ran on the no-return path
                i += 1
                continue
            self._located(s, self.stmt, s, env)
            if self.ctx.watch is not None and env.live:
                self._watch(s, env)
            i += 1
        return env

    def _watch(self, s: ast.stmt, env: Env) -> None:
        """``cutile.debug.trace``: record the watched names after a watched line."""
        loc = self.loc(s)
        wanted = self.ctx.watch.get(loc.line) if loc.filename == self.ctx.watch_file else None
        if wanted is not None:
            from .debugger import emit_watch
            self._located(s, emit_watch, self, loc.line, wanted, env)

    def stmt(self, s: ast.stmt, env: Env) -> None:
        meth = getattr(self, "stmt_" + type(s).__name__, None)
        if meth is None:
            raise TileSyntaxError(f"Unsupported syntax: {type(s).__name__} statement")
        meth(s, env)

    def stmt_Pass(self, s, env):
        pass

    def stmt_Expr(self, s, env):
        if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
            return  # docstring
        self.expr(s.value, env)

    def stmt_Assign(self, s, env):
        value = self.expr(s.value, env)
        for target in s.targets:
            self.assign(target, value, env)

    def stmt_AnnAssign(self, s, env):
        if s.value is not None:
            self.assign(s.target, self.expr(s.value, env), env)

    def stmt_AugAssign(self, s, env):
        if not isinstance(s.target, ast.Name):
            return self.assign(s.target, Const(None), env)
        cur = self.lookup(s.target.id, env, s.target)
        value = self.expr(s.value, env)
        self.assign(s.target, self._located(s, self.binop, type(s.op), cur, value), env)

    def assign(self, target, value: FVal, env: Env) -> None:
        if isinstance(target, ast.Name):
            env.vars[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            if any(isinstance(t, ast.Starred) for t in target.elts):
                raise TileSyntaxError("Unsupported syntax: starred assignment target")
            items = self._unpack(value, len(target.elts))
            for t, v in zip(target.elts, items):
                self.assign(t, v, env)
        elif isinstance(target, ast.Subscript):
            obj = self.expr(target.value, env)
            if dataclass_ops.setitem(self, obj, self.expr(target.slice, env), value):
                return
            if isinstance(obj, ArrayV):
                raise TileTypeError("Arrays do not support item assignment. Use store() to "
                                    "write a tile into an array")
            if isinstance(obj, TileV):
                raise TileTypeError("Tiles are immutable: item assignment is not supported")
            if isinstance(obj, TupleV):
                raise TileTypeError("Tuples are immutable: item assignment is not supported")
            raise TileTypeError(f"{describe(obj)} does not support item assignment")
        elif isinstance(target, ast.Attribute):
            raise TileTypeError("Cannot assign attributes: objects in tile code are immutable")
        else:
            raise TileSyntaxError(f"Unsupported syntax: assignment to {type(target).__name__}")

    def _unpack(self, value: FVal, n: int) -> tuple:
        if isinstance(value, Const) and isinstance(value.value, tuple):
            value = coerce.fval(value.value)
        if not isinstance(value, TupleV):
            raise TileTypeError(f"Cannot unpack {describe(value)}")
        if len(value.items) > n:
            raise TileValueError(f"Too many values to unpack (expected {n}, "
                                 f"got {len(value.items)})")
        if len(value.items) < n:
            raise TileValueError(f"Too few values to unpack (expected {n}, "
                                 f"got {len(value.items)})")
        return value.items

    def stmt_FunctionDef(self, s, env):
        if s.decorator_list:
            raise TileSyntaxError("Decorators on nested functions are not supported",
                                  self.loc(s.decorator_list[0]))
        env.vars[s.name] = self._make_closure(s, s.name, env)

    def _make_closure(self, node, name, env) -> FuncV:
        defaults = {}
        args = node.args
        pos = args.posonlyargs + args.args
        for a, d in zip(pos[len(pos) - len(args.defaults):], args.defaults):
            defaults[a.arg] = self.expr(d, env)
        for a, d in zip(args.kwonlyargs, args.kw_defaults):
            if d is not None:
                defaults[a.arg] = self.expr(d, env)
        return FuncV(node, name, dict(self.closure), self.globals, self.src, defaults, env)

    def stmt_Return(self, s, env):
        value = self.expr(s.value, env) if s.value is not None else Const(None)
        if self.is_kernel and not (isinstance(value, Const) and value.value is None):
            raise TileTypeError("Tile kernels cannot return values")
        contexts.exit_through(self, "return")
        if self.is_kernel:
            self.ctx.emit(ops.Return())
            env.term = "return-op"
            return
        if self.loops:
            return pysubset.return_in_loop(self, value, env)
        env.term = "return"
        env.ret = value

    def stmt_If(self, s, env):
        cond = self.condition(s.test, env)
        if isinstance(cond, Const):
            self.run_body(s.body if cond.value else s.orelse, env)
            return
        self._branch(cond, lambda e: self.run_body(s.body, e),
                     lambda e: self.run_body(s.orelse, e), env)

    def stmt_With(self, s, env):
        contexts.stmt_with(self, s, env)

    def stmt_AfterWith(self, s, env):
        contexts.after_with(self, s, env)

    def stmt_EnterWith(self, s, env):
        contexts.enter_with(self, s, env)

    def stmt_ExitWith(self, s, env):
        contexts.exit_with(self, s, env)

    def stmt_Raise(self, s, env):
        static.stmt_raise(self, s, env)

    # -- branches ------------------------------------------------------------------------------
    def _branch(self, cond: TileV, then_fn, else_fn, env: Env) -> None:
        b = self.ctx.builder
        then_r, else_r = Region(), Region()
        env_t, env_e = env.copy(), env.copy()
        with b.open(then_r):
            then_fn(env_t)
        with b.open(else_r):
            else_fn(env_e)
        branches = [(then_r, env_t), (else_r, env_e)]
        live = [(r, e) for r, e in branches if e.live]
        if not live:
            self.ctx.emit(ops.If(cond.value, then_r, else_r, ()))
            env.term = "dead"
            return
        returned = [e.term == "return" for _, e in live]
        if any(returned) and not all(returned):
            raise TileInternalError("helper return on some paths only")
        names = sorted(set().union(*(e.vars for _, e in live)))
        # (name, skeleton, template, per-branch leaf producers)
        merged: list[tuple[str, Any, FVal, list]] = []
        result_env: dict[str, FVal] = {}
        items = [(n, [e.vars.get(n) for _, e in live]) for n in names]
        if all(returned):
            items.append(("<return>", [e.ret for _, e in live]))
        for name, vals in items:
            first = vals[0]
            if all(v is first for v in vals):
                result_env[name] = first
                continue
            if any(v is None for v in vals):
                result_env[name] = Invalid(name, "is not defined on every path")
                continue
            plan = self._merge_plan(vals, live)
            if plan is None:
                what = "Type of return value" if name == "<return>" else f"Type of {name}"
                result_env[name] = Invalid(name, f"{what} depends on path taken")
                if name == "<return>":
                    raise TileTypeError("Type of return value depends on path taken")
                continue
            merged.append((name, plan[0], plan[1], plan[2]))
        for bi, (r, _) in enumerate(live):
            with b.open(r):
                leaves = [v for m in merged for v in m[3][bi]()]
                self.ctx.emit(ops.Yield(tuple(leaves)))
        types = []
        for m in merged:
            skel = m[1]
            types.extend(flow.leaf_types(skel))
        op = self.ctx.emit(ops.If(cond.value, then_r, else_r, tuple(types)))
        results = list(op.results)
        for name, skel, template, _ in merged:
            n = len(flow.leaf_types(skel))
            val = flow.unflatten(skel, results[:n], template)
            results = results[n:]
            result_env[name] = val
        ret = result_env.pop("<return>", None)
        env.vars = result_env
        if all(returned):
            env.term, env.ret = "return", ret
        else:
            env.term = None

    def _merge_plan(self, vals: list[FVal], live):
        """How values of one name on several live paths merge: (skeleton, template,
        per-branch leaf producers) or None when they cannot."""
        flats = [flow.flatten(v) for v in vals]
        skel0 = flats[0][0]
        if all(flow.same_skeleton(f[0], skel0) for f in flats):
            return skel0, vals[0], [(lambda lv=f[1]: lv) for f in flats]
        agg = flow.split_aggregate(vals)
        if agg is not None:
            # tuples, dataclasses and closures merge item by item (R-CF-7, R-PROMO-7 per item)
            head, items, rebuild = agg
            parts = [self._merge_plan([it[k] for it in items], live)
                     for k in range(len(items[0]))]
            if any(p is None for p in parts):
                return None
            producers = [(lambda b=b: [x for p in parts for x in p[2][b]()])
                         for b in range(len(vals))]
            return head + (tuple(p[0] for p in parts),), rebuild([p[1] for p in parts]), \
                producers
        if all(flow.materializable(v) or (isinstance(v, TileV) and v.shape == ())
               for v in vals):
            # R-PROMO-7: differing constants (or a constant and a runtime scalar) merge into
            # one runtime scalar; loose constants take the runtime scalar's dtype if they fit.
            runtime = {v.dtype for v in vals if isinstance(v, TileV)}
            dts = {(v.dtype or dt.loose_dtype(v.value)) for v in vals
                   if isinstance(v, Const) and not (runtime and v.is_loose)}
            dts |= runtime
            if len(dts) != 1:
                return None
            dtype = dts.pop()
            if runtime:
                skel = flow.Leaf(ops.Constant(0, dtype, ()).infer()[0])
                producers = [(lambda v=v: [v.value] if isinstance(v, TileV) else
                              [coerce.implicit_cast(v, dtype, "merged value").value])
                             for v in vals]
                return skel, TileV(Value(skel.type)), producers
            skel = flow.Leaf(ops.Constant(0, dtype, ()).infer()[0])
            producers = [(lambda v=v: [coerce.constant(v.value, dtype).value]) for v in vals]
            return skel, TileV(Value(skel.type)), producers
        return None

    def condition(self, node, env) -> FVal:
        return self._located(node, self.to_cond, self.expr(node, env))

    def to_cond(self, v: FVal) -> FVal:
        """R-CF-2: scalars only, converted with ``bool_(c)``; constants fold."""
        if isinstance(v, Const):
            return Const(bool(v.value))
        if isinstance(v, TileV):
            if v.shape != ():
                raise TileTypeError(f"Expected a scalar value as condition, got {describe(v)}")
            from ..api.elementwise import _operand
            _operand(v, "Condition", arithmetic=False)      # no foreign pointer (§7)
            return coerce.convert(v, dt.bool_)
        if isinstance(v, (TupleV,)):
            return Const(len(v.items) > 0)
        raise TileTypeError(f"Expected a scalar value as condition, got {describe(v)}")

    # -- expressions ---------------------------------------------------------------------------
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
        obj = self.expr(node.value, env)
        from ..api import methods
        r = pysubset.attribute(self, obj, node.attr)
        return r if r is not None else methods.get_attribute(obj, node.attr)

    def expr_Subscript(self, node, env):
        obj = self.expr(node.value, env)
        idx = self.expr(node.slice, env)
        from ..api import methods
        r = pysubset.subscript(self, obj, idx, env)
        return r if r is not None else methods.subscript(obj, idx)

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
        from ..api import debug, elementwise
        if op_type is ast.Add and debug.is_string(left) and debug.is_string(right):
            return debug.concat(left, right)        # constant or formatted strings
        r = dataclass_ops.binop(self, op_type.__name__, left, right)
        if r is not None:
            return r
        if isinstance(left, TupleV) or isinstance(right, TupleV):
            if op_type is ast.Add and isinstance(left, TupleV) and isinstance(right, TupleV):
                return TupleV(left.items + right.items)
            raise TileTypeError("Operator is not supported for tuples")
        return elementwise.apply_operator(op_type.__name__, left, right)

    def expr_UnaryOp(self, node, env):
        v = self.expr(node.operand, env)
        from ..api import elementwise
        if isinstance(node.op, ast.Not):
            c = self.to_cond(v)
            if isinstance(c, Const):
                return Const(not c.value)
            return elementwise.logical_not(c)
        return elementwise.apply_unary(type(node.op).__name__, v)

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
        from ..api import elementwise
        left = self.expr(node.left, env)
        result: FVal | None = None
        for op, comp in zip(node.ops, node.comparators):
            right = self.expr(comp, env)
            r = pysubset.contains(left, right) if isinstance(op, (ast.In, ast.NotIn)) else None
            if r is not None:
                r = Const(r.value == isinstance(op, ast.In))
            else:
                r = dataclass_ops.compare(self, type(op).__name__, left, right)
            if r is None:
                r = elementwise.apply_compare(type(op).__name__, left, right)
            result = r if result is None else elementwise.logical_and(result, r)
            left = right
        return result

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
        from ..api import debug
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
            parts.extend(debug.format_field(self.expr(v.value, env), spec))
        return debug.make_string(parts)

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

    # -- inlining ------------------------------------------------------------------------------
    def _check_depth(self, name: str = "<helper>"):
        if self.depth + 1 > MAX_INLINE_DEPTH:
            raise TileRecursionError(
                f"Maximum recursion depth ({MAX_INLINE_DEPTH}) exceeded while inlining "
                f"{name}(); helpers are inlined, so a recursion must end at compile time "
                f"(on constant arguments). Call chain: {chain_text(self.chain + (name,))}")

    def inline_function(self, f: types.FunctionType, args, kwargs, node) -> FVal:
        self._check_depth(f.__name__)
        fnode, src = parse_function(f)
        closure = closure_values(f)
        try:
            bound = inspect.signature(f, follow_wrapped=False).bind(*args, **kwargs)
        except TypeError as e:
            raise TileTypeError(f"{f.__name__}(): {e}") from None
        bound.apply_defaults()
        params = {k: coerce.fval(v) for k, v in bound.arguments.items()}
        return self._inline(fnode, src, f.__globals__, closure, params)

    def inline_closure(self, fn: FuncV, args, kwargs, node) -> FVal:
        self._check_depth(fn.name)
        params = bind_ast_args(fn, args, kwargs)
        closure = dict(fn.closure)
        if fn.scope is not None:
            closure.update((k, v) for k, v in fn.scope.vars.items() if not k.startswith("<"))
        return self._inline(fn.node, fn.source, fn.globals, closure, params)

    def _inline(self, fnode, src, pyglobals, closure, params) -> FVal:
        sub = FunctionCompiler(self.ctx, fnode, src, pyglobals, closure, self.ctx.loc,
                               is_kernel=False, depth=self.depth + 1)
        sub.chain = self.chain + (getattr(fnode, "name", "<lambda>"),)
        env = Env(params)
        if isinstance(fnode, ast.Lambda):
            return sub.expr(fnode.body, env)
        body = list(fnode.body)
        if not body or not isinstance(body[-1], ast.Return):
            ret = ast.Return(value=None)
            ast.copy_location(ret, body[-1] if body else fnode)
            body.append(ret)
        sub.run_body(body, env)
        if env.term != "return":
            raise TileInternalError("helper function did not return")
        return env.ret


# -- helpers ---------------------------------------------------------------------------------------
_ = operator  # operator.* functions are mapped in api.builtins_map

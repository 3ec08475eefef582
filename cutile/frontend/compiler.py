"""Abstract interpretation of a tile function's AST into the typed IR.

Statements run once at compile time over frontend values; runtime values become IR ops.
Control flow on constants is folded (R-CF-3); on runtime values it becomes structured IR
(``If``/``For``/``Loop``) with merged variables (R-CF-7).  Helper calls are inlined with a
caller chain for error locations (R-PY-6).  This module holds the statements, assignment and
inlining; ``FunctionCompiler`` gathers its parts: ``expressions.py`` (expressions),
``branches.py`` (runtime ``if`` and conditions) and ``loops.py`` (loops).
"""

from __future__ import annotations

import ast
import inspect
import types

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
from ..lang import coerce
from ..lang.context import CompileContext
from ..lang.values import (
    ArrayV,
    Const,
    FuncV,
    FVal,
    TileV,
    TupleV,
    describe,
)
from . import contexts, dataclass_ops, pysubset, static
from .branches import BranchCompiler
from .calls import bind_ast_args, chain_text
from .debugger import emit_watch
from .env import Env
from .expressions import ExpressionCompiler
from .loops import CarryMismatch, LoopCompiler, LoopInfo, contains_return
from .source import SourceInfo, all_args, assigned_names, closure_values, parse_function

MAX_INLINE_DEPTH = 1000


class FunctionCompiler(LoopCompiler, BranchCompiler, ExpressionCompiler):
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
        self.locals = assigned_names(body) | {a.arg for a in all_args(node.args)}
        self.loops: list[LoopInfo] = []
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
        if isinstance(s.target, ast.Subscript):
            cur = self.expr(s.target, env)      # Python reads x[i] first (1.7: arrays refuse it)
        elif not isinstance(s.target, ast.Name):
            return self.assign(s.target, Const(None), env)
        else:
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

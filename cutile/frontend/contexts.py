"""``with`` and ``@contextlib.contextmanager`` helpers in tile code (R-PY-12).

Entering compiles the helper up to its one reachable ``yield`` (which may sit in a
``try: … finally:`` or inside a ``with`` of the helper); the code after it is the cleanup,
compiled again at every exit of the block: normal exit, ``break``/``continue`` of a loop
around it, ``return`` (innermost first).  A helper's ``return`` inside a ``with`` moves the
statements after the block to the end of its body (``AfterWith``).
"""

from __future__ import annotations

import ast
import inspect

from ..errors import TileSyntaxError, TileTypeError
from ..lang import coerce
from ..lang.values import Const, ContextV, FVal, describe
from .env import Env
from .source import closure_values, parse_function


class _Manager:
    """An entered ``@contextmanager`` helper: its compiler, its variables after the code
    before ``yield``, and the code after it (the cleanup)."""

    def __init__(self, sub, env, post, loop_depth):
        self.sub = sub
        self.env = env
        self.pre = env.copy()
        self.post = post
        self.loop_depth = loop_depth

    def cleanup(self, keep: bool = True) -> None:
        """Compile the code after ``yield`` once more at this exit (each exit path gets its
        own copy of the variables as the yield left them: normal exit, break, continue,
        return).  With ``keep`` (paths that go on using what the helper yielded: normal exit,
        return) the helper's variables become the cleanup's, so a yielded closure sees what
        the cleanup assigned (1.7)."""
        work = self.pre.copy()
        self.sub.run_body(self.post, work)
        if keep:
            self.env.vars.clear()
            self.env.vars.update(work.vars)


class EnterWith(ast.stmt):
    """The entering half of a ``with`` around a context manager's ``yield``."""

    _fields = ()

    def __init__(self, w: ast.With):
        super().__init__()
        self.items = w.items
        self.entered: list = []
        ast.copy_location(self, w)


class ExitWith(ast.stmt):
    """The leaving half (in the cleanup): the inner managers' cleanups, innermost first."""

    _fields = ()

    def __init__(self, enter: EnterWith):
        super().__init__()
        self.enter = enter
        ast.copy_location(self, enter)


def enter_with(comp, s: EnterWith, env) -> None:
    for item in s.items:
        cm = comp.expr(item.context_expr, env)
        m, value = comp._located(item.context_expr, enter, comp, cm, env)
        s.entered.append(m)
        if item.optional_vars is not None:
            comp.assign(item.optional_vars, value, env)


def exit_with(comp, s: ExitWith, env) -> None:
    for m in reversed(s.enter.entered):
        m.cleanup()


def _split(stmts: list, y) -> tuple[list, list] | None:
    """(code before, code after) the yield ``y`` among ``stmts``: a statement of the list, or
    inside a ``try: … finally:`` (the finally joins the cleanup) or a ``with`` (entered before
    the yield, left in the cleanup)."""
    for i, s in enumerate(stmts):
        if isinstance(s, ast.Expr) and s.value is y:
            return stmts[:i], stmts[i + 1:]
        if isinstance(s, ast.Try) and not s.handlers and not s.orelse:
            r = _split(s.body, y)
            if r is not None:
                return stmts[:i] + r[0], r[1] + s.finalbody + stmts[i + 1:]
        if isinstance(s, ast.With):
            r = _split(s.body, y)
            if r is not None:
                e = EnterWith(s)
                return stmts[:i] + [e] + r[0], r[1] + [ExitWith(e)] + stmts[i + 1:]
    return None


def _split_at_yield(comp, fnode, name: str):
    yields = _reachable_yields(fnode.body)
    if len(yields) != 1:
        what = "no reachable `yield` statement" if not yields else f"{len(yields)} yields"
        raise TileTypeError(f"Context manager {name}() must have one `yield` statement, "
                            f"found {what}")
    for n in _walk_no_defs(fnode):
        if isinstance(n, ast.Return):
            raise TileSyntaxError("Returning from a generator-based context manager is not "
                                  "supported", comp.loc(n))
    y = yields[0]
    if isinstance(y, ast.YieldFrom):
        raise TileSyntaxError("Unsupported syntax: 'yield from'")
    r = _split(list(fnode.body), y)
    if r is None:
        raise TileTypeError(f"The yield of context manager {name}() must be a statement of its "
                            "body outside of loops and conditional statements")
    return r[0], y, r[1]


def _walk_no_defs(fnode):
    todo = list(fnode.body)
    while todo:
        n = todo.pop()
        yield n
        if not isinstance(n, (ast.FunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(n))


_JUMPS = (ast.Break, ast.Continue, ast.Return, ast.Raise)


def _reachable_yields(stmts: list) -> list:
    """The yields of a statement list, leaving out code after a break/continue/return in
    the same list (dead code, as 1.7 does)."""
    out: list = []
    for s in stmts:
        for _name, value in ast.iter_fields(s):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                out += _reachable_yields(value)
            elif isinstance(value, list) and value and isinstance(value[0], ast.excepthandler):
                for h in value:
                    out += _reachable_yields(h.body)
            elif isinstance(value, ast.AST) and not isinstance(s, (ast.FunctionDef,
                                                                  ast.ClassDef)):
                out += [n for n in _walk_expr(value) if isinstance(n, (ast.Yield,
                                                                      ast.YieldFrom))]
        if isinstance(s, _JUMPS):
            break
    return out


def _walk_expr(node):
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        if not isinstance(n, ast.Lambda):
            todo.extend(ast.iter_child_nodes(n))


def enter(comp, cm: FVal, env) -> tuple[_Manager, FVal]:
    if not isinstance(cm, ContextV):
        raise TileTypeError(f"'with' in tile code needs a @contextlib.contextmanager helper, "
                            f"got {describe(cm)}")
    if cm.entered:
        raise TileTypeError("A context manager object cannot be entered twice")
    cm.entered.append(True)
    f = cm.func
    comp._check_depth(f.__name__)
    fnode, src = parse_function(f)
    pre, y, post = _split_at_yield(comp, fnode, f.__name__)
    try:
        bound = inspect.signature(f).bind(*cm.args, **cm.kwargs)
    except TypeError as e:
        raise TileTypeError(f"{f.__name__}(): {e}") from None
    bound.apply_defaults()
    sub = type(comp)(comp.ctx, fnode, src, f.__globals__, closure_values(f),
                           comp.ctx.loc, is_kernel=False, depth=comp.depth + 1)
    sub_env = Env({k: coerce.fval(v) for k, v in bound.arguments.items()})
    sub.run_body(pre, sub_env)
    value = sub.expr(y.value, sub_env) if y.value is not None else Const(None)
    return _Manager(sub, sub_env, post, len(comp.loops)), value


def stmt_with(comp, s: ast.With, env) -> None:
    """``with a() as x, b():``: enter in order, run the body, clean up innermost first."""
    entered = []
    after = getattr(s, "after", None)
    if after is not None:
        after.entered = entered
    try:
        for item in s.items:
            cm = comp.expr(item.context_expr, env)
            m, value = comp._located(item.context_expr, enter, comp, cm, env)
            entered.append(m)
            comp.managers.append(m)
            if item.optional_vars is not None:
                comp.assign(item.optional_vars, value, env)
        comp.run_body(s.body, env)
    finally:
        for _ in entered:
            comp.managers.pop()
    if env.live and env.term != "return":
        for m in reversed(entered):
            m.cleanup()


class AfterWith(ast.stmt):
    """The statements after a helper's ``with`` whose body returns on some paths, moved to
    the end of the body: they run after the block's cleanup (``with_rest``)."""

    _fields = ()

    def __init__(self, rest: list, loc_from: ast.stmt):
        super().__init__()
        self.rest = rest
        self.entered: list = []
        ast.copy_location(self, loc_from)


def with_rest(s: ast.With, rest: list) -> ast.With:
    after = AfterWith(rest, rest[0])
    w = ast.With(items=s.items, body=list(s.body) + [after], type_comment=None)
    w.after = after
    return ast.copy_location(w, s)


def after_with(comp, s: AfterWith, env) -> None:
    """Leave the block (its cleanups, innermost first), then run the statements after it
    outside it."""
    for m in reversed(s.entered):
        m.cleanup()
    saved = comp.managers
    comp.managers = [m for m in saved if m not in s.entered]
    try:
        comp.run_body(s.rest, env)
    finally:
        comp.managers = saved


def exit_through(comp, kind: str) -> None:
    """Compile the cleanups that a ``break``/``continue`` (innermost loop) or a ``return``
    (whole function) leaves, innermost first."""
    depth = len(comp.loops)
    for m in reversed(comp.managers):
        if kind != "return" and m.loop_depth < depth:
            break
        m.cleanup(keep=kind == "return")

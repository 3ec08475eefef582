"""Loops of the tile-code compiler: ``for`` over ``range``, ``while``, ``break``/``continue``.

A loop becomes an IR ``For``/``Loop`` whose carried values are the variables assigned in the
body that exist on entry (R-CF-7: each keeps its type; numeric constants materialise,
R-CONST-7).  The body is compiled, and compiled again when that reveals a carry to change:
a variable whose type changes is dropped (then invalid after the loop), a tuple/dataclass whose
constant items change carries them as runtime values, and in a ``while True:`` left only by
``break`` a variable first assigned in the body and defined at every break is carried from
zero placeholders so it lives after the loop (R-CF-8).  ``LoopCompiler`` is a part of
``compiler.FunctionCompiler``.
"""

from __future__ import annotations

import ast

from .. import dtypes as dt
from ..errors import TileSyntaxError, TileTypeError
from ..ir import ops
from ..ir.core import Region, Value, walk
from ..ir.types import TileType
from ..lang import coerce
from ..lang.values import Const, FVal, Invalid, RangeV, TileV, describe
from . import contexts, flow, pysubset, static
from .env import Env
from .source import assigned_names


class LoopInfo:
    """What the compiler tracks about one loop being compiled: the carried names and
    skeletons, the kind, and the variables at each break."""

    def __init__(self, names: list[str], skels: list, kind: str):
        self.names = names
        self.skels = skels
        self.kind = kind
        self.always = False           # `while True`: the body runs, and leaves only by break
        self.breaks: list[dict] = []  # the variables at each `break` of this loop
        self.placeholders: dict = {}  # promoted name -> its loop-argument leaves
        self.path_dependent: set = set()  # new names whose values at the breaks cannot merge


class CarryMismatch(Exception):
    """A carried variable left the loop body with another skeleton: ``_loop`` retries."""

    def __init__(self, name: str):
        self.name = name


class _Promote(Exception):
    """Variables first assigned in a `while True` body and defined at every `break`: the
    loop is compiled again carrying them (from placeholders), so they live after it."""

    def __init__(self, values: dict):
        self.values = values


class LoopCompiler:
    """The loop statements of ``FunctionCompiler`` (which supplies ``run_body``, ``condition``,
    ``ctx``, ``loops`` and ``_merge_plan``)."""

    def stmt_Break(self, s, env):
        self._loop_exit("break", env)

    def stmt_Continue(self, s, env):
        self._loop_exit("continue", env)

    def _loop_exit(self, kind: str, env: Env) -> None:
        if not self.loops:
            raise TileSyntaxError(f"'{kind}' outside a loop")
        info = self.loops[-1]
        contexts.exit_through(self, kind)
        if kind == "break":
            info.breaks.append(dict(env.vars))
        leaves = self._carry_leaves(info, env)
        self.ctx.emit(ops.Break(tuple(leaves)) if kind == "break" else ops.Continue(tuple(leaves)))
        env.term = kind

    def stmt_For(self, s, env):
        items = static.iter_items(self, s.iter, env)
        if items is not None:
            return static.static_for(self, s, items, env)
        if s.orelse:
            raise TileSyntaxError("'for-else' is not supported")
        it = self.expr(s.iter, env)
        if not isinstance(it, RangeV):
            raise TileTypeError(f"Expected a range object, got {describe(it)}")
        if not isinstance(s.target, ast.Name):
            raise TileSyntaxError("The target of a range loop must be a single name")
        start, stop, step = (coerce.to_tile(v, None) for v in (it.start, it.stop, it.step))
        self._loop(s, env, "for", (start, stop, step))

    def stmt_While(self, s, env):
        if s.orelse:
            raise TileSyntaxError("'while-else' is not supported")
        self._loop(s, env, "while", None)

    def _loop(self, s, env: Env, kind: str, bounds) -> None:
        target = s.target.id if kind == "for" else None
        candidates = [n for n in sorted(assigned_names(s.body))
                      if n in env.vars and n != target and not isinstance(env.vars[n], Invalid)]
        if pysubset.RET_FLAG in env.vars and contains_return(s):   # helper return slots
            candidates += [pysubset.RET_FLAG, pysubset.RET_VALUE]
        dropped: set[str] = set()
        deep: set[str] = set()      # tuples/dataclasses whose constant items become runtime
        promoted: dict = {}         # `while True`: first assigned in the body, set at every break
        while True:
            carried = [n for n in candidates if n not in dropped]
            try:
                self._loop_attempt(s, env, kind, bounds, carried, dropped, deep, promoted)
                return
            except _Promote as p:
                promoted.update(p.values)
            except CarryMismatch as m:
                if m.name in promoted:
                    raise TileTypeError(f"Type of `{m.name}` depends on path taken") from None
                if m.name not in deep and flow.has_constants(env.vars[m.name]):
                    deep.add(m.name)
                else:
                    dropped.add(m.name)

    def _placeholder(self, v: FVal) -> FVal:
        """A value shaped like ``v`` (tile leaves only), built where the loop starts from zero
        constants: the entry value of a promoted variable, never read."""
        skel, leaves = flow.flatten(flow.materialize(v, True))
        zeros = [self.ctx.emit_value(ops.Constant(dt.convert_constant(0, x.type.dtype),
                                                  x.type.dtype, tuple(x.type.shape))).value
                 for x in leaves]
        return flow.unflatten(skel, zeros, v)

    def _loop_attempt(self, s, env, kind, bounds, carried, dropped, deep, promoted) -> None:
        b = self.ctx.builder
        inits, skels, templates = [], [], []
        entry = {n: env.vars[n] for n in carried}
        for n, v in promoted.items():
            carried = carried + [n]
            entry[n] = self._placeholder(v)
        for n in carried:
            # R-CONST-7: carried constants materialise (inside aggregates once they change)
            v = flow.materialize(entry[n], n in deep or n in promoted)
            skel, leaves = flow.flatten(v)
            skels.append(skel)
            templates.append(v)
            inits.extend(leaves)
        args = [Value(x.type) for x in inits]
        body = Region(args)
        env_b = env.copy()
        if kind == "for":
            iv = Value(bounds[0].type)
            iv.hint = target_hint = s.target.id
            body.args.insert(0, iv)
            env_b.vars[target_hint] = TileV(iv)
        info = LoopInfo(carried, skels, kind)
        pos = 0
        for n, skel, tmpl in zip(carried, skels, templates):
            k = len(flow.leaf_types(skel))
            env_b.vars[n] = flow.unflatten(skel, args[pos:pos + k], tmpl)
            if n in promoted:
                info.placeholders[n] = args[pos:pos + k]
            pos += k
        for n in dropped:
            env_b.vars[n] = Invalid(n, f"Type of loop-carried variable {n} changes inside the "
                                       "loop (it must keep its type on loop entry)")
        new_names = assigned_names(s.body) - set(env.vars)
        for n in new_names:
            env_b.vars.pop(n, None)          # promoted ones too: unset on loop entry
        self.loops.append(info)
        try:
            with b.open(body):
                try:
                    if kind == "while":
                        self._while_test(s.test, env_b, info)
                    if env_b.live:
                        self.run_body(s.body, env_b)
                    if env_b.live:
                        self.ctx.emit(ops.Yield(tuple(self._carry_leaves(info, env_b))))
                    self._promotions(info, new_names, promoted)
                except CarryMismatch as m:
                    if m.name in promoted:
                        raise                    # _loop reports it
                    if m.name not in deep and flow.has_constants(env.vars[m.name]):
                        raise                    # retried with its constant items runtime
                    if _uses_any(body, _arg_slice(args, carried, skels, m.name)):
                        raise TileTypeError(
                            f"Type of loop-carried variable {m.name} changes inside the loop; "
                            "it must keep the type it had on loop entry (depends on path taken)"
                        ) from None
                    raise
        finally:
            self.loops.pop()
        if kind == "for":
            start, stop, step = bounds
            op = self.ctx.emit(ops.For(start.value, stop.value, step.value, tuple(inits), body))
        else:
            op = self.ctx.emit(ops.Loop(tuple(inits), body))
        self._after_loop(env, info, op, carried, skels, templates, dropped, new_names, promoted)

    def _after_loop(self, env, info: LoopInfo, op, carried, skels, templates, dropped,
                    new_names: set, promoted: dict) -> None:
        """The variables after the loop: the carried ones from its results, the dropped,
        path-dependent and body-only ones invalid, the constants every break agrees on."""
        results = list(op.results)
        for n, skel, tmpl in zip(carried, skels, templates):
            k = len(flow.leaf_types(skel))
            env.vars[n] = flow.unflatten(skel, results[:k], tmpl)
            results = results[k:]
        for n in dropped:
            env.vars[n] = Invalid(n, f"Type of `{n}` depends on path taken")
        for n in info.path_dependent:
            env.vars[n] = Invalid(n, f"Type of `{n}` depends on path taken")
        for n in new_names - set(promoted) - info.path_dependent:
            env.vars[n] = Invalid(n, f"Undefined variable {n}: it is first assigned inside a "
                                     "loop body, " + (
                                         "and not before every break that leaves it"
                                         if info.always else "which may run zero times"))
        if info.always:
            # `while True` is left only by break: a variable holding the same constant at
            # every break is that constant after the loop (as 1.7 folds it)
            for n in set(carried) | new_names:
                same = flow.same_constant([br.get(n) for br in info.breaks])
                if same is not None:
                    env.vars[n] = same

    def _promotions(self, info: LoopInfo, new_names: set, promoted: dict) -> None:
        """Raise _Promote for the new names of a `while True` body that every break defines
        (with a runtime value: the same constant at every break needs no carry)."""
        if not info.always or not info.breaks:
            return
        want = {}
        for n in sorted(new_names - set(promoted)):
            vals = [br.get(n) for br in info.breaks]
            if any(v is None or isinstance(v, Invalid) for v in vals):
                continue
            if flow.same_constant(vals) is not None:
                continue
            plan = self._merge_plan(vals, None)     # R-CF-7: the breaks' values must merge
            if plan is None:
                info.path_dependent.add(n)
                continue
            skel, leaves = flow.flatten(plan[1])
            if flow.plain_data(skel) and all(isinstance(x.type, TileType) for x in leaves):
                want[n] = plan[1]             # its placeholder is built before the loop
        if want:
            raise _Promote(want)

    def _while_test(self, test, env, info) -> None:
        cond = self.condition(test, env)
        if isinstance(cond, Const):
            if not cond.value:
                self.ctx.emit(ops.Break(tuple(self._carry_leaves(info, env))))
                env.term = "break"
            else:
                info.always = True
            return
        b = self.ctx.builder
        then_r, else_r = Region(), Region()
        with b.open(then_r):
            self.ctx.emit(ops.Yield(()))
        with b.open(else_r):
            self.ctx.emit(ops.Break(tuple(self._carry_leaves(info, env))))
        self.ctx.emit(ops.If(cond.value, then_r, else_r, ()))

    def _carry_leaves(self, info: LoopInfo, env: Env) -> list[Value]:
        out = []
        for n, skel in zip(info.names, info.skels):
            v = env.vars.get(n)
            if (v is None or isinstance(v, Invalid)) and n in info.placeholders:
                out.extend(info.placeholders[n])      # not yet assigned: passes through
                continue
            if v is None or isinstance(v, Invalid):
                raise CarryMismatch(n)
            s2, leaves = flow.flatten(flow.fit(v, skel))
            if not flow.same_skeleton(s2, skel):
                raise CarryMismatch(n)
            out.extend(leaves)
        return out


def _arg_slice(args, carried, skels, name) -> list[Value]:
    pos = 0
    for n, s in zip(carried, skels):
        k = len(flow.leaf_types(s))
        if n == name:
            return args[pos:pos + k]
        pos += k
    return []


def _uses_any(region: Region, values: list[Value]) -> bool:
    ids = {id(v) for v in values}
    for op in walk(region):
        for o in op.operands():
            if id(o) in ids:
                return True
    return False


def contains_return(node) -> bool:
    for n in ast.walk(node):
        if isinstance(n, ast.Return):
            return True
    return False

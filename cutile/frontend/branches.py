"""Runtime branches of the tile-code compiler: ``if`` on a runtime condition, and conditions.

A branch on a runtime scalar becomes an IR ``If`` whose regions are both compiled; the
variables of the paths that stay live are merged into its results (R-CF-7: the same skeleton,
item by item for tuples, dataclasses and closures; differing constants and runtime scalars
into one runtime scalar, R-PROMO-7).  Conditions are scalars converted with ``bool_``
(R-CF-2); constant ones fold in the callers.  ``BranchCompiler`` is a part of
``compiler.FunctionCompiler``.
"""

from __future__ import annotations

from typing import Any

from .. import dtypes as dt
from ..errors import TileInternalError, TileSyntaxError, TileTypeError
from ..ir import ops
from ..ir.core import Region, Value
from ..lang import coerce
from ..lang.values import Const, FVal, Invalid, TileV, describe
from . import flow
from .env import Env


def _path_dependent(what: str, vals: list) -> str:
    """1.7's words for values that do not merge, the else path's value first as there."""
    return (f"Type of {what} depends on path taken: {describe(vals[-1])} (else path) vs. "
            f"{describe(vals[0])} (if path)")


class BranchCompiler:
    """The branch merging and conditions of ``FunctionCompiler`` (which supplies ``ctx``,
    ``expr`` and ``_located``)."""

    def _branch(self, cond: TileV, then_fn, else_fn, env: Env) -> None:
        if self.ctx.combiner:                    # R-RED-9: before the arms' own errors
            raise TileSyntaxError(f"Branching inside {self.ctx.combiner} body is not "
                                  "supported")
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
                if name == "<return>":
                    raise TileTypeError(_path_dependent("return value", vals))
                result_env[name] = Invalid(name, _path_dependent(f"`{name}`", vals))
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
        return coerce.condition(v)

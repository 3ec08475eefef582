"""Lowering of structured control flow: For -> ``for ... in range``, Loop -> ``while go:``,
If -> ``if/else``, and the Yield/Continue/Break/Return terminators (handled in ``Gen``).

Loop is deliberately not ``while True:``.  Numba (0.68, CPU and CUDA alike) miscompiles the
CPython 3.12 bytecode of a ``while True:`` loop whose ``break`` branch assigns a variable that
the fall-through path also assigns: the compiled loop never exits.  Testing a variable that
is always true gives ordinary loop bytecode, which Numba compiles correctly.

Conditions and bounds are scalars, replicated in every thread, so every branch is taken by the
whole block and barriers inside loops and branches are legal (R-EXEC-3).  Loop-carried values
live in the same variables across iterations; ``Yield``/``Continue``/``Break`` assign them in
parallel (a tuple assignment, so swaps are safe) and the loop's results are those variables.
"""

from __future__ import annotations

from ...ir import ops
from ..barriers import BarrierState
from ..exprs import cast
from ..registry import lower
from ..values import LoopFrame
from . import matmul_tc


def _carried(g, args, inits):
    lays = [g.natural(a) for a in args]
    names = [g.value_names(a, lay) for a, lay in zip(args, lays)]
    g.parallel_assign(names, lays, inits)
    for a, lay, n in zip(args, lays, names):
        g.bind(a, lay, n)
    frame = LoopFrame(names, lays)
    return frame


@lower(ops.For)
def for_(g, op):
    start, stop, step = (g.scalar(v) for v in (op.start, op.stop, op.step))
    iv = op.body.args[0]
    frame = _carried(g, op.body.args[1:], op.inits)
    raw = g.tmp("i")
    ivname = g.vname(iv)
    ivcast = cast(iv.type.dtype)

    def bind():
        g.line(f"{ivname} = {ivcast}({raw})")
        g.alias(iv, g.scalar_layout(), [ivname])

    pipes = g.mma.pipelined_in(op)
    copied = [m for m in pipes if not g.mma.tma_ring(m)]    # TMA rings: the producer's loads
    for mma in copied:                      # issue the first iteration's operand copies
        matmul_tc.prologue(g, mma, g.mma.staging_plan(mma), op)
    g.emit_loop(f"for {raw} in range({start}, {stop}, {step}):", frame, op.body, bind,
                normal_exit=True)
    if copied:
        g.line("cp_async_wait_all()")       # the copies issued for the iteration after the last
    if pipes:
        if not g.loops:                     # no iteration of an outer loop stages them again
            for mma in pipes:
                g.smem.retire(matmul_tc.pipelined_buffers(g, mma, g.mma.staging_plan(mma)))
    deferred = {g.mma.deferred_wait(m) for m in pipes} - {None}
    for j, (r, lay, n) in enumerate(zip(op.results, frame.layouts, frame.names)):
        if j in deferred:                   # the last wgmmas, left in flight by the loop
            n = matmul_tc.wait_after_loop(g, op, list(n))
        g.bind(r, lay, n)


@lower(ops.Loop)
def loop(g, op):
    frame = _carried(g, op.body.args, op.inits)
    go = g.tmp("go")
    g.line(f"{go} = True")
    g.emit_loop(f"while {go}:", frame, op.body, lambda: None, normal_exit=False)
    for r, lay, n in zip(op.results, frame.layouts, frame.names):
        g.bind(r, lay, n)


@lower(ops.If)
def if_(g, op):
    cond = g.scalar(op.cond)
    lays = [g.natural(r) for r in op.results]
    names = [g.value_names(r, lay) for r, lay in zip(op.results, lays)]
    start = g.bar.copy()
    states = []
    g.line(f"if {cond}:")
    for region, head in ((op.then, None), (op.orelse, "else:")):
        if head is not None:
            if not region.ops:
                states.append(start.copy())
                continue
            g.line(head)
        g.bar = start.copy()
        g.push_scope()
        with g.e.indent():
            mark = g.e.mark()

            def on_yield(y):
                g.parallel_assign(names, lays, y.values)

            g.emit_region(region, on_yield)
            g.e.ensure_body(mark)
        g.pop_scope()
        states.append(g.bar)
    live = [s for s in states if s is not None]
    if live:
        out = BarrierState()
        for s in live:
            out = out.join(s)
        g.bar = out
    else:
        g.bar = None
    for r, lay, n in zip(op.results, lays, names):
        g.bind(r, lay, n)

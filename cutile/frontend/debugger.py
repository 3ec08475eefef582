"""Compiling the debugger's hooks: ``breakpoint()`` / ``pdb.set_trace()`` and ``trace``
watchpoints become ops that carry the live names at that point (docs/debugging.md)."""

from __future__ import annotations

import pdb

from ..errors import TileTypeError
from ..ir import ops
from ..lang.context import current
from ..lang.values import ArrayV, Const, TileV, TupleV


def _layout(v, values: list):
    """How to rebuild ``v`` at run time (None: not inspectable, e.g. a helper function)."""
    if isinstance(v, (TileV, ArrayV)):
        values.append(v.value)
        return ("v", len(values) - 1)
    if isinstance(v, TupleV):
        items = tuple(_layout(i, values) for i in v.items)
        return None if any(i is None for i in items) else ("t", items)
    if isinstance(v, Const) and isinstance(v.value, (bool, int, float, str, type(None), tuple)):
        return ("c", v.value)
    if isinstance(v, Const):
        return ("c", v.value)
    return None


def live_names(env) -> tuple[tuple, tuple, tuple]:
    """(names, layout, values) of the variables of ``env`` that can be shown."""
    names, layout, values = [], [], []
    for name, v in env.vars.items():
        lay = _layout(v, values)
        if lay is not None:
            names.append(name)
            layout.append(lay)
    return tuple(names), tuple(layout), tuple(values)


def emit_breakpoint(comp, args, kwargs, env):
    """``breakpoint()`` in tile code: the interpreter stops here in pdb (R-DEBUG, cutile)."""
    if args or kwargs:
        raise TileTypeError("breakpoint() in tile code takes no arguments")
    names, layout, values = live_names(env)
    current().emit(ops.Breakpoint(names, layout, values))
    return Const(None)


def emit_watch(comp, line: int, wanted: tuple, env) -> None:
    """After the statement on a watched ``line``: record the named variables (``trace``)."""
    names, layout, values = live_names(env)
    current().watch_live.setdefault(line, set()).update(names)    # for trace's name check
    keep = [i for i, n in enumerate(names) if not wanted or n in wanted]
    current().emit(ops.Watch(line, tuple(names[i] for i in keep),
                             tuple(layout[i] for i in keep), values))


HANDLERS = {id(breakpoint): emit_breakpoint, id(pdb.set_trace): emit_breakpoint}

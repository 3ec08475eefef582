"""Debugger ops (interpreter only): a stop at ``breakpoint()`` and a watchpoint of ``trace``.

Both carry the live names of the kernel (or helper) at that point: ``layout`` says how to
rebuild each name's value from ``values`` (runtime tiles, scalars, arrays) and compile-time
constants, so tuples stay tuples.  Neither has results or changes state.
"""

from __future__ import annotations

from ..core import Op, opdef


@opdef("debugger")
class Breakpoint(Op):
    names: tuple            # variable names, in definition order
    layout: tuple           # per name: ("v", k) | ("c", value) | ("t", (layout, ...))
    values: tuple           # runtime values referenced by ("v", k)

    def infer(self):
        return []


@opdef("debugger")
class Watch(Op):
    line: int               # the watched line of the user's source
    names: tuple
    layout: tuple
    values: tuple

    def infer(self):
        return []

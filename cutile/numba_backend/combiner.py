"""Emits a reduce/scan combiner region (``ReduceFn``/``ScanFn`` ``body``) as straight-line
register code, once per combine site.

The region's 0-d arguments are bound to the given variables and its ops lowered by their own
lowerings (the frontend admits only elementwise, creation and index ops and size-1 shape ops,
none of which touches shared memory, so no barrier can land in per-thread code); the yielded
values are copied to fresh variables because the next emission reuses the region's names.
"""

from __future__ import annotations

from ..errors import TileInternalError, TileUnsupportedFeatureError
from ..ir import ops
from ..ir.core import Region


def emit(g, region: Region, lhs, rhs) -> tuple:
    """Code computing ``func(*lhs, *rhs)``; returns the result variables."""
    lay = g.scalar_layout()
    mark = g.e.mark()
    for a, name in zip(region.args, list(lhs) + list(rhs)):
        g.alias(a, lay, [name])
    out = None
    for op in region.ops:
        if isinstance(op, ops.Yield):
            out = []
            for v in op.values:
                t = g.tmp("cb")
                g.line(f"{t} = {g.scalar(v)}")
                out.append(t)
            break
        if op.results and op.result.type.size != 1:
            raise TileUnsupportedFeatureError(            # the frontend admits none of these
                f"{type(op).__name__} of shape {op.result.type.shape} inside a reduce/scan "
                "body is not supported by the numba backend", op.loc)
        g.emit_op(op)
    if out is None:
        raise TileInternalError("combiner region without a yield")
    if any(ln.strip() == g.barrier_line() for ln in g.e.lines[mark:]):
        # combine sites sit in per-thread code: a barrier there could deadlock the block
        raise TileInternalError("numba backend: a combiner region needed a barrier")
    return tuple(out)

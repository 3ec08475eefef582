"""The debugger ops on the Numba backend: refused at compile time (they stop in pdb / record
values on the host, which a GPU kernel cannot do); run the kernel on the interpreter."""

from __future__ import annotations

from ...errors import TileUnsupportedFeatureError
from ...ir import ops
from ..registry import lower


@lower(ops.Breakpoint)
def breakpoint_(gen, op):
    raise TileUnsupportedFeatureError(
        "breakpoint() / pdb.set_trace() in a kernel works on the interpreter only: the Numba "
        "backend cannot stop a GPU kernel in pdb. Run the launch with CUTILE_BACKEND=interp "
        "(or inside `with cutile.executors.backend('interp'):`), or remove the call", op.loc)


@lower(ops.Watch)
def watch(gen, op):
    raise TileUnsupportedFeatureError(
        "cutile.debug.trace runs on the interpreter only (the Numba backend has no host "
        "callback to record values)", op.loc)

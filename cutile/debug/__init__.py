"""Debugging kernels on the interpreter: pdb at ``breakpoint()``, chosen blocks, traces of
named variables, and access maps (docs/debugging.md).

- ``breakpoint()`` / ``pdb.set_trace()`` in a kernel or helper stops there on the interpreter,
  at the user's line, with the live names (tiles as NumPy arrays, scalars, ``bid``) in pdb;
  ``c`` continues to the next stop; ``q`` aborts the launch (``LaunchAborted``, a
  ``bdb.BdbQuit``).  ``break_in(blocks)`` (or ``CUTILE_BREAK_BLOCKS``) limits the stops to
  some blocks.  The Numba backend refuses a kernel with ``breakpoint()``.
- ``launch(grid, kernel, args, blocks=[(3, 0)])`` runs only some blocks of a launch.
- ``trace(kernel, grid, args, watch={line: names})`` records, per block, the named variables
  after the statement on each watched line (no source change).
- ``access_map(kernel, grid, args)`` records which block read and wrote each element of each
  array argument; ``.render_text()`` / ``.render_png(path)`` draw it.
"""

from __future__ import annotations

from ..interp.rules.debugger import LaunchAborted
from .api import AccessMap, Trace, access_map, break_in, launch, trace

__all__ = ["AccessMap", "LaunchAborted", "Trace", "access_map", "break_in", "launch",
           "trace"]

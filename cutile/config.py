"""Every environment knob of cutile, read in one place.

- ``CUTILE_BACKEND``: ``interp`` (default while no GPU backend is usable), ``numba`` or ``auto``.
- ``CUTILE_STRICT``: ``1`` (default) makes the interpreter raise ``UndefinedBehaviorError`` on
  detected undefined behaviour; ``0`` degrades to the documented fallbacks (R-UB §6.6).
- ``CUTILE_DUMP_IR``: ``1`` prints each specialised kernel's IR when it is compiled.
"""

from __future__ import annotations

import os


def backend() -> str:
    return os.environ.get("CUTILE_BACKEND", "auto").strip().lower() or "auto"


def strict() -> bool:
    return os.environ.get("CUTILE_STRICT", "1").strip() not in ("0", "false", "no")


def dump_ir() -> bool:
    return os.environ.get("CUTILE_DUMP_IR", "0").strip() not in ("0", "", "false", "no")


def shuffle_blocks() -> int | None:
    """``CUTILE_SHUFFLE_BLOCKS=<seed>`` runs the interpreter's blocks in a shuffled order."""
    v = os.environ.get("CUTILE_SHUFFLE_BLOCKS", "").strip()
    return int(v) if v else None

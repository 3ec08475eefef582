"""The exact NumPy interpreter: the semantics oracle of cutile (runs every block of the grid)."""

from __future__ import annotations

import threading

_loaded = False
_lock = threading.Lock()


def load_rules() -> None:
    """Import the rule modules (one per IR section) so they register with the machine."""
    global _loaded
    if _loaded:
        return
    with _lock:             # concurrent first launches must not see a half-filled table
        from . import (  # noqa: F401
            advanced_indexing,
            atomic,
            control,
            creation,
            debug,
            debugger,
            elementwise,
            index,
            matmul,
            memory,
            pointer,
            reduce,
            scan,
            shape,
        )
        _loaded = True

"""Lowering rules: one function per IR op class, ``fn(gen, op)``, in per-section modules.

Mirrors the interpreter's ``@rule`` table (``cutile/interp/machine.py:RULES``): the table is a
plain dict keyed by op class and a missing entry is a ``TileUnsupportedFeatureError`` naming the
op and the backend.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

LOWERINGS: dict[type, Callable] = {}

_loaded = False
_lock = threading.Lock()


def lower(*op_classes):
    """Register the lowering of IR op classes: ``fn(gen, op)`` emits source through ``gen``."""

    def wrap(fn):
        for cls in op_classes:
            LOWERINGS[cls] = fn
        return fn

    return wrap


def load_lowerings() -> dict[type, Callable]:
    global _loaded
    if not _loaded:
        with _lock:
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
    return LOWERINGS

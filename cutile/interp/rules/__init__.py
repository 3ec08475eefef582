"""The interpreter's per-block rules, one module per IR section (the sections of ``ir/ops/``
and ``numba_backend/lower/``; ``combine.py`` runs the combiner regions of reduce and scan).

Each module registers its rules with ``core.rule``; importing this package imports them all,
so ``RULES`` below is the full table (``spec_tests/test_backend_registry.py`` checks it has the
keys of the op table).  Rules import only the vocabulary (``core``, ``undetermined``,
``memory_model``, ``races``, the numerics) and each other, never the driver or ``batch/``.
"""

from __future__ import annotations

from ..core import RULES  # noqa: F401  (the full table, once the sections below are loaded)
from . import (  # noqa: F401  (each registers its rules on import)
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

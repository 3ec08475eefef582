"""Lowering rules: one function per IR op class, ``fn(gen, op)``, in per-section modules.

Each section module registers its functions in ``registry.LOWERINGS`` (``@lower``) on import;
importing this package imports every section, so the table is complete once it is loaded.
The sections stand on ``registry.py`` and ``values.py`` (the value types they share with the
generator), never on ``codegen.py``, which imports this package.
"""

from __future__ import annotations

from collections.abc import Callable

from ..registry import LOWERINGS
from . import (  # noqa: F401  (each section registers its lowerings on import)
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


def load_lowerings() -> dict[type, Callable]:
    """The table of every op's lowering (complete: the sections were imported with this
    package)."""
    return LOWERINGS

"""The lowering registry: IR op class -> ``fn(gen, op)``, the function that emits its source.

Mirrors the interpreter's ``@rule`` table (``cutile/interp/machine.py:RULES``): a plain dict
keyed by op class; a missing entry is a ``TileUnsupportedFeatureError`` naming the op and the
backend (``codegen.Gen.emit_op``).  The section modules of ``lower/`` register with ``@lower``
when they are imported (``lower/__init__.py`` imports them all); a module of its own so that
the lowerings and the generator both stand on it and the lowerings never import the generator.
"""

from __future__ import annotations

from collections.abc import Callable

LOWERINGS: dict[type, Callable] = {}


def lower(*op_classes):
    """Register the lowering of IR op classes: ``fn(gen, op)`` emits source through ``gen``."""

    def wrap(fn):
        for cls in op_classes:
            LOWERINGS[cls] = fn
        return fn

    return wrap

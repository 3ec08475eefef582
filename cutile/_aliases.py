"""1.7's private module paths that kernels copied from TileGym import from
(``cuda.tile._stub``, ``cuda.tile._datatype``): each such cutile module forwards every name to
the public ``cutile`` one, so nothing is defined twice."""

from __future__ import annotations

import cutile


def forwarding_getattr(module: str):
    """A module ``__getattr__`` (PEP 562) resolving names on ``cutile``."""
    def __getattr__(name: str):
        if not name.startswith("__"):
            try:
                return getattr(cutile, name)
            except AttributeError:
                pass
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    return __getattr__

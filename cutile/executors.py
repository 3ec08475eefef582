"""Choosing the executor for a launch (``CUTILE_BACKEND``, ``set_backend``)."""

from __future__ import annotations

from . import config

_override: str | None = None


def set_backend(name: str | None) -> None:
    """Select ``"interp"``, ``"numba"`` or ``"auto"`` for later launches (``None``: use the
    ``CUTILE_BACKEND`` environment variable)."""
    if name not in (None, "interp", "numba", "auto"):
        raise ValueError(f"unknown backend {name!r}; expected 'interp', 'numba' or 'auto'")
    global _override
    _override = name


def selected() -> str:
    name = _override or config.backend()
    if name == "auto":
        return "interp"
    return name


def run(ir, grid, spec, stream) -> None:
    name = selected()
    if name == "interp":
        from .interp.machine import run_kernel
        run_kernel(ir, grid, spec.leaves)
        return
    from .numba_backend import run as numba_run
    numba_run(ir, grid, spec.leaves, stream)

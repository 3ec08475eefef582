"""``_is_implicit_cast_ok``: cutile's implicit-cast rule (R-CAST-1)."""

from __future__ import annotations

from cutile.dtypes import can_cast_implicitly

from ...placeholder import fallback_getattr

__getattr__ = fallback_getattr("cuda.tile._ir.cast_ops")


def _is_implicit_cast_ok(src, dst) -> bool:
    return can_cast_implicitly(src, dst)

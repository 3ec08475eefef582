"""``to_dtype``: cutile's dtype normalisation (ct dtypes, torch/NumPy dtypes)."""

from __future__ import annotations

from cutile.dtypes import normalize_dtype

from ...placeholder import fallback_getattr

__getattr__ = fallback_getattr("cuda.tile._ir.typing_support")


def to_dtype(x):
    d = normalize_dtype(x)
    if d is None:
        raise TypeError(f"not a cuTile dtype: {x!r}")
    return d

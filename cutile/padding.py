"""What the out-of-bounds lanes of a padded load hold (R-PAD-1), for every executor.

One table, read by the frontend (``load_advanced_indexing``'s padding operand), the Numba
backend (the value a checked load selects out of bounds) and the interpreter.

``UNDETERMINED`` reads 0 here: R-PAD-1 allows any value, and cutile picks one that is finite
and the same on every executor.  The real cuTile 1.7 gives small finite garbage (bit patterns
such as 3, 4, 5, ... or 0x00007FA0, i.e. denormals for floats; measured on an H200,
docs/decisions.md), so kernels that cancel those lanes with a ``where`` or a product by zero,
as NVIDIA's attention kernels do, get finite results; a NaN fill would break them.  The
interpreter in strict mode (the default) does not use this value: it poisons the lanes
(``interp/memory_model.poison_fill``) and raises R-UB-2 when a result relies on them
(R-PAD-3); with ``CUTILE_STRICT=0`` it reads them as the backend does, from here.
"""

from __future__ import annotations

import math

import numpy as np

from . import dtypes as dt
from .enums import PaddingMode

__all__ = ["float_fill", "padding_fill", "padding_value"]

# The value of each mode as a Python number (R-PAD-1; UNDETERMINED: cutile's choice, above).
_VALUES = {
    PaddingMode.UNDETERMINED: 0, PaddingMode.ZERO: 0, PaddingMode.NEG_ZERO: -0.0,
    PaddingMode.NAN: math.nan, PaddingMode.POS_INF: math.inf, PaddingMode.NEG_INF: -math.inf,
}


def padding_value(padding: PaddingMode) -> int | float:
    """The fill of ``padding`` as a Python number (``0`` for ZERO and UNDETERMINED)."""
    return _VALUES[padding]


def padding_fill(dtype, padding: PaddingMode) -> np.generic:
    """The fill of ``padding`` as a scalar of ``dtype``.

    Float fills go through NumPy/ml_dtypes conversion, so formats without inf (float8_e4m3fn)
    get that format's own conversion result (NaN).
    """
    dtype = np.dtype(dtype)
    if padding in (PaddingMode.ZERO, PaddingMode.UNDETERMINED):
        return np.zeros((), dtype)[()]
    # R-PAD-2 (cutile): the type checker rejects the float-only modes for int/bool arrays.
    assert dtype.kind not in "biu", f"padding mode {padding} on non-float dtype {dtype}"
    return float_fill(_VALUES[padding], dtype)


def float_fill(value: float, dtype) -> np.generic:
    """``value`` converted to the float ``dtype`` (float8_e5m3fnu through its own encoder)."""
    dtype = np.dtype(dtype)
    if dtype == dt.E5M3_NP:          # no infinities or negatives: those fills become NaN
        return dt.e5m3_encode(np.array(value), satfinite=False)[()]
    return np.array(value).astype(dtype)[()]

"""``pow`` as C99 defines it (Annex F.9.4.4), the one both executors compute (R-MATH-10).

NumPy's ``np.power`` is C's ``pow`` only when the exponent is an array: with a scalar
exponent of 0.5 it takes ``sqrt`` (NumPy 2.4), so ``pow(-0.0, 0.5)`` gives -0.0 and
``pow(-inf, 0.5)`` NaN, where C (and libdevice's ``powf``/``pow`` on the GPU) give +0.0 and
+inf.  The interpreter's tiles and the simulator's libdevice scalars reach NumPy by
different paths, so both call this instead: the exponent is always passed as an array, and
the special cases of a zero or negative-infinite base are set by C's table, not NumPy's.
"""

from __future__ import annotations

import numpy as np

_F64 = np.float64
_BIG = 2.0 ** 53            # from here on every float64 is an even integer


def power(x, y) -> np.ndarray:
    """``x ** y`` in float64, elementwise, with C99's special cases: ``pow(±0, y)`` is +0
    (y > 0) or +inf (y < 0) unless y is an odd integer (then ±0 / ±inf keep x's sign), and
    ``pow(-inf, y)`` is +inf (y > 0) or +0 (y < 0) unless y is an odd integer (-inf / -0)."""
    x, y = np.broadcast_arrays(np.asarray(x, _F64), np.asarray(y, _F64))
    y = np.array(y)                                   # an array exponent: C's pow in NumPy
    with np.errstate(all="ignore"):
        r = np.power(x, y)
        odd = (np.abs(y) < _BIG) & (np.mod(y, 2.0) == 1.0)
    zero, ninf = x == 0.0, x == -np.inf
    r = np.where(zero & (y > 0) & ~odd, 0.0, r)
    r = np.where(zero & (y < 0) & ~odd, np.inf, r)
    r = np.where(ninf & (y > 0), np.where(odd, -np.inf, np.inf), r)
    r = np.where(ninf & (y < 0), np.where(odd, -0.0, 0.0), r)
    return r

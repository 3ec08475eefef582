"""Element-by-element comparison of two executors' outputs, with per-dtype bounds.

Integers and bools compare bit for bit.  Floats compare bit for bit by default (any NaN
matches any NaN: payloads are not specified), or within ``ulps`` units in the last place, or
within ``atol + rtol*|ref|``.  A bound may be one number or a dict keyed by dtype (NumPy dtype,
cutile DType or name), so one call can hold float32 exact and float16 within 1 ulp.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import dtypes as dt
from .guarded import bits


@dataclass(frozen=True)
class Mismatch:
    """One disagreeing element: its index, both values, and the block that wrote it (when the
    reference executor could tell)."""

    array: str
    index: tuple
    expected: object
    actual: object
    block: tuple | None = None

    def __str__(self) -> str:
        by = f" (written by block {self.block})" if self.block is not None else ""
        return (f"{self.array}{list(self.index)}: {_fmt(self.expected)} vs "
                f"{_fmt(self.actual)}{by}")


def _fmt(v) -> str:
    """A value as a user reads it: Python's repr of the number, bits for floats."""
    a = np.asarray(v)
    if a.dtype.kind == "b":
        return str(bool(a))
    if a.dtype.kind in "iu":
        return str(int(a))
    return f"{float(a.astype(np.float64))!r} (0x{int(bits(a.reshape(1))[0]):0{a.itemsize * 2}x})"


def for_dtype(bound, dtype) -> float:
    """The bound that applies to ``dtype``: ``bound`` itself, or its entry in a dict keyed by
    NumPy dtypes, cutile DTypes or dtype names (0 when absent)."""
    if not isinstance(bound, dict):
        return bound or 0
    d = dt.from_numpy(np.dtype(dtype))
    for key, value in bound.items():
        if isinstance(key, str):
            if d is not None and key == d.name or key == np.dtype(dtype).name:
                return value
            continue
        kd = dt.normalize_dtype(key)
        if kd is not None and kd is d:
            return value
    return 0


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in representable values between same-dtype floats (NaN handled by caller)."""
    w = a.dtype.itemsize * 8

    def key(x):
        i = np.ascontiguousarray(x).view(f"i{a.dtype.itemsize}").astype(np.int64)
        mag = i & np.int64((1 << (w - 1)) - 1)
        return np.where(i < 0, -mag, mag)

    return np.abs(key(a) - key(b))


def disagreeing(ref: np.ndarray, got: np.ndarray, *, ulps=0, atol=0.0, rtol=0.0,
                signed_zero: bool = True) -> np.ndarray:
    """Boolean mask of the elements where ``got`` is not within the bound of ``ref``."""
    if ref.shape != got.shape or ref.dtype != got.dtype:
        raise AssertionError(f"outputs differ in shape or dtype: {ref.dtype}{list(ref.shape)} "
                             f"vs {got.dtype}{list(got.shape)}")
    d = dt.from_numpy(ref.dtype)
    if not (d is not None and d.is_float):          # bfloat16/float8 are NumPy kind "V"
        return bits(ref) != bits(got)
    ulps, atol, rtol = (for_dtype(b, ref.dtype) for b in (ulps, atol, rtol))
    r64, g64 = ref.astype(np.float64), got.astype(np.float64)
    rn, gn = np.isnan(r64), np.isnan(g64)
    bad = rn != gn
    both = ~rn & ~gn
    if atol or rtol:
        with np.errstate(invalid="ignore", over="ignore"):
            close = np.abs(r64 - g64) <= atol + rtol * np.abs(r64)
        close |= r64 == g64
        bad |= both & ~close
    elif ulps:
        bad |= both & (ulp_distance(ref, got) > ulps) & ~((r64 == 0) & (g64 == 0))
    else:
        same = bits(ref) == bits(got)
        if not signed_zero:
            same |= (r64 == 0) & (g64 == 0)
        bad |= both & ~same
    return bad


def first_mismatches(name: str, ref: np.ndarray, got: np.ndarray, bad: np.ndarray,
                     limit: int, writer=None) -> list[Mismatch]:
    """The first ``limit`` disagreeing elements as ``Mismatch`` records (``writer(index)``
    names the block that wrote an element, when known)."""
    out = []
    for idx in np.argwhere(bad)[:limit]:
        i = tuple(int(x) for x in idx)
        out.append(Mismatch(name, i, ref[i] if ref.ndim else ref[()],
                            got[i] if got.ndim else got[()],
                            writer(i) if writer is not None else None))
    return out

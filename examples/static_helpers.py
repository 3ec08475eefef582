"""Compile-time helpers in one kernel: a frozen dataclass of parameters (built in the kernel
from a global tuple of coefficients and a runtime ``scale`` argument, R-PY-10), a
``static_iter`` loop unrolled over the polynomial's coefficients (R-META-3), ``static_assert``
on a constant (R-META-2) and a ``@contextmanager`` helper that marks the block's tile as done
when its ``with`` block ends (R-PY-12).

The dataclass is not a kernel argument: cuda.tile 1.7 refuses one ("Invalid kernel argument
#3: Objects of type 'Poly' are not supported.", measured on the H100); cutile accepts it as a
superset (R-LAUNCH-3), but this example runs unchanged on both."""

from __future__ import annotations

import contextlib
import dataclasses

import numpy as np

import cutile as ct


@dataclasses.dataclass(frozen=True)
class Poly:
    """``scale * (c[0] + c[1] x + c[2] x^2 + ...)`` evaluated with Horner's rule."""

    coeffs: tuple
    scale: float

    def __call__(self, x):
        acc = ct.zeros(x.shape, dtype=ct.float32)
        for c in ct.static_iter(reversed(self.coeffs)):   # unrolled: one mul-add per coeff
            acc = acc * x + c
        return acc * self.scale


@contextlib.contextmanager
def marks_done(flags, bid):
    """Set ``flags[bid]`` once the block's work inside the ``with`` is done."""
    yield bid
    ct.store(flags, index=(bid,), tile=ct.full((1,), 1, dtype=ct.int32))


COEFFS = (0.5, -1.0, 0.25, 2.0)     # a global: frozen into the kernel at compile time (R-PY-8)


@ct.kernel
def poly_kernel(x, y, flags, scale: float, TILE: ct.Constant[int]):
    ct.static_assert(TILE % 16 == 0, f"TILE={TILE} must be a multiple of 16")
    p = Poly(coeffs=COEFFS, scale=scale)
    with marks_done(flags, ct.bid(0)) as bid:
        t = ct.load(x, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
        ct.store(y, index=(bid,), tile=p(t))


def reference(x: np.ndarray, p: Poly) -> np.ndarray:
    acc = np.zeros_like(x, dtype=np.float64)
    for c in reversed(p.coeffs):
        acc = acc * x + c
    return acc * p.scale


def run(launch=ct.launch, n: int = 10_000, tile: int = 256, rng=None) -> float:
    """Max relative error against a float64 NumPy Horner evaluation; every flag must be set."""
    rng = rng or np.random.default_rng(4)
    x = rng.uniform(-1, 1, n).astype(np.float32)
    p = Poly(coeffs=COEFFS, scale=1.5)
    y = np.full(n, np.nan, np.float32)
    blocks = ct.cdiv(n, tile)
    flags = np.zeros(blocks, np.int32)
    launch(None, (blocks,), poly_kernel, (x, y, flags, p.scale, tile))
    if not (flags == 1).all():
        return float("inf")
    ref = reference(x, p)
    return float(np.max(np.abs(y - ref) / np.maximum(np.abs(ref), 1.0)))


if __name__ == "__main__":
    print(f"static helpers: max error {run():.3g}")

"""Radix-2 FFT of each row of a (B, N) tile: decimation in time written with ``extract`` (even
and odd samples), ``cat`` (the two butterfly halves) and ``insert`` (real and imaginary parts
packed side by side).  The recursion over sizes runs at compile time (``n`` is a constant)."""

from __future__ import annotations

import math

import numpy as np

import cutile as ct


def _fft(re, im, B, n):
    """DFT of the rows of (B, n) tiles ``re``, ``im``: X = E + w*O  ||  E - w*O."""
    if n == 1:
        return re, im
    h = n // 2
    pr, pi = ct.reshape(re, (B, h, 2)), ct.reshape(im, (B, h, 2))
    er = ct.reshape(ct.extract(pr, (0, 0, 0), (B, h, 1)), (B, h))      # even samples
    ei = ct.reshape(ct.extract(pi, (0, 0, 0), (B, h, 1)), (B, h))
    orr = ct.reshape(ct.extract(pr, (0, 0, 1), (B, h, 1)), (B, h))     # odd samples
    oi = ct.reshape(ct.extract(pi, (0, 0, 1), (B, h, 1)), (B, h))
    er, ei = _fft(er, ei, B, h)
    orr, oi = _fft(orr, oi, B, h)
    ang = ct.arange(h, dtype=ct.float32) * (-2.0 * math.pi / n)
    wr, wi = ct.cos(ang), ct.sin(ang)
    tr = wr * orr - wi * oi
    ti = wr * oi + wi * orr
    return ct.cat((er + tr, er - tr), 1), ct.cat((ei + ti, ei - ti), 1)


@ct.kernel
def fft_kernel(x, out, B: ct.Constant[int], N: ct.Constant[int]):
    blk = ct.bid(0)
    re = ct.load(x, (blk, 0), (B, N))
    im = ct.zeros((B, N), ct.float32)
    fr, fi = _fft(re, im, B, N)
    packed = ct.zeros((B, 2 * N), ct.float32)
    packed = packed.insert((0, 0), fr)          # columns [0, N): real part
    packed = packed.insert((0, 1), fi)          # columns [N, 2N): imaginary part
    ct.store(out, (blk, 0), packed)


def run(launch=ct.launch, rows: int = 8, n: int = 16, rng=None) -> float:
    rng = rng or np.random.default_rng(3)
    B = 4
    x = rng.standard_normal((rows, n)).astype(np.float32)
    out = np.full((rows, 2 * n), np.nan, np.float32)
    launch(None, (rows // B,), fft_kernel, (x, out, B, n))
    ref = np.fft.fft(x.astype(np.float64), axis=1)
    got = out[:, :n] + 1j * out[:, n:]
    return float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))


if __name__ == "__main__":
    print(f"fft: max relative error {run():.3g}")

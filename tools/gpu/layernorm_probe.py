"""Layer norm variants on the GPU backend beside device copy (issue 24: layer norm >= 0.9 of
copy).  ``benchmarks/gpu.py``'s kernel, and the same kernel with the weight and bias loaded
before the row (their L2 latency under the row's DRAM latency, 32 more live registers).

    CUTILE_NUMBA_MIN_BLOCKS=4 python tools/gpu/layernorm_probe.py
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

import torch  # noqa: E402

import cutile as ct  # noqa: E402
from cutile.executors import inspect  # noqa: E402

C = ct.Constant


@ct.kernel
def ln_wbfirst(x, w, b, y, eps: float, TN: C[int]):
    row = ct.bid(0)
    g = ct.reshape(ct.load(w, (0,), (TN,)), (1, TN))
    h = ct.reshape(ct.load(b, (0,), (TN,)), (1, TN))
    t = ct.load(x, (row, 0), (1, TN))
    mean = ct.sum(t, axis=1, keepdims=True) / TN
    d = t - mean
    var = ct.sum(d * d, axis=1, keepdims=True) / TN
    ct.store(y, (row, 0), d * ct.rsqrt(var + eps) * g + h)


def timed(fn):
    """benchmarks/gpu.py's timing (cold L2, the host's launch cost hidden behind a sleep)."""
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    from gpu import bench  # lazy: benchmarks/ is not a package
    return bench(fn, torch.cuda.synchronize)


def main():
    R, N = 8192, 4096
    x = torch.randn(R, N, device="cuda")
    w, b = torch.randn(N, device="cuda"), torch.randn(N, device="cuda")
    y = torch.empty_like(x)
    gb = 2 * 4 * R * N / 1e9
    copy = gb / timed(lambda: y.copy_(x))
    ref = torch.nn.functional.layer_norm(x, (N,), w, b, 1e-5)
    stream = torch.cuda.current_stream()
    mb = os.environ.get("CUTILE_NUMBA_MIN_BLOCKS", "-")
    args = (x, w, b, y, 1e-5, N)
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    from gpu import make_kernels  # lazy: benchmarks/ is not a package
    for k in (make_kernels(ct)["layernorm"], ln_wbfirst):
        t = timed(lambda k=k: ct.launch(stream, (R,), k, args))
        ok = torch.allclose(y, ref, rtol=1e-4, atol=1e-4)
        info = inspect(k, tuple(a.cpu().numpy() if hasattr(a, "cpu") else a for a in args),
                       grid=(R,))
        print(f"min_blocks {mb:2s} {k.__name__:12s} {gb / t:7.1f} GB/s = {gb / t / copy:.3f} "
              f"of copy ({copy:.0f}); {'ok' if ok else 'WRONG'}; {info.summary()[:120]}",
              flush=True)


if __name__ == "__main__":
    main()

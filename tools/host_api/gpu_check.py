"""Host-API acceptance on the GPU machine (issue 11): prints a table of what ran and passed.

    PYTHONPATH=/tmp/np:$PWD python3 tools/host_api/gpu_check.py [--threads 8 --launches 100]

1. the concurrency stress test (threads x launches of 3 kernels, first launches included) on
   the Numba backend, every result checked exactly;
2. a PyTorch bfloat16 CUDA tensor (and one that requires grad) as arguments, compared with the
   interpreter on a CPU copy;
3. a CuPy float16 array, compared the same way;
4. ``ct.tune.exhaustive_search`` over three tile sizes on the GPU.
Rows whose library is missing say so.  Locally (no GPU) rows 2-4 report "skipped".
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "spec_tests"))

import cutile as ct  # noqa: E402
from cutile.executors import backend, gpu_usable  # noqa: E402


@ct.kernel
def twice(a, b, T: ct.Constant[int]):
    i = ct.bid(0)
    t = ct.load(a, (i,), (T,)).astype(ct.float32)
    ct.store(b, (i,), (t + t * 0.5).astype(b.dtype))


def _stress(threads: int, launches: int) -> str:
    from test_concurrency import _kernels, run_threads
    t0 = time.perf_counter()
    errors = run_threads(threads, launches, _kernels(), backend="numba")
    if errors:
        return f"FAIL: {len(errors)} threads failed, first: {errors[0]!r}"
    return f"ok ({threads}x{launches} launches, {time.perf_counter() - t0:.1f} s)"


def _compare(dev_in, dev_out, host_in, to_host) -> str:
    with backend("numba"):
        ct.launch(None, (4,), twice, (dev_in, dev_out, 16))
    host_out = np.zeros_like(host_in)
    with backend("interp"):
        ct.launch(None, (4,), twice, (host_in, host_out, 16))
    got = to_host(dev_out)
    same = got.view(np.uint16).tobytes() == host_out.view(np.uint16).tobytes()
    return "ok (bit-identical to the interpreter)" if same else \
        f"FAIL: {got[:8]} vs {host_out[:8]}"


def _torch_bf16(requires_grad: bool) -> str:
    import ml_dtypes
    import torch
    if not torch.cuda.is_available():
        return "skipped (no CUDA device for torch)"
    x = (torch.arange(64, dtype=torch.float32) / 8 - 3).to(torch.bfloat16)
    a = x.cuda().requires_grad_(requires_grad)
    b = torch.zeros(64, dtype=torch.bfloat16, device="cuda")
    host = x.view(torch.int16).numpy().view(ml_dtypes.bfloat16).copy()
    return _compare(a, b, host, lambda t: t.cpu().view(torch.int16).numpy()
                    .view(ml_dtypes.bfloat16))


def _cupy_f16() -> str:
    import cupy
    x = (np.arange(64, dtype=np.float32) / 8 - 3).astype(np.float16)
    return _compare(cupy.asarray(x), cupy.zeros(64, cupy.float16), x, cupy.asnumpy)


def _tune() -> str:
    import torch
    n = 1 << 16
    a = torch.rand(n, device="cuda")
    out = torch.empty_like(a)
    with backend("numba"):
        res = ct.tune.exhaustive_search([64, 256, 1024], torch.cuda.current_stream(),
                                        lambda t: (n // t,), twice, lambda t: (a, out, t),
                                        quiet=True)
    return "ok: " + ", ".join(f"{m.config}: {m.mean_us:.1f}+-{m.error_margin_us:.1f} us"
                              for m in res.successes)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--launches", type=int, default=100)
    args = p.parse_args()
    rows = [("stress on the Numba backend", lambda: _stress(args.threads, args.launches))]
    gpu = gpu_usable()
    for name, fn in (("torch bfloat16 CUDA tensor", lambda: _torch_bf16(False)),
                     ("torch bfloat16 CUDA tensor, requires_grad", lambda: _torch_bf16(True)),
                     ("CuPy float16 array", _cupy_f16),
                     ("ct.tune on the GPU (torch tensors)", _tune)):
        rows.append((name, fn if gpu else (lambda: "skipped (no usable CUDA GPU)")))
    print(f"device: {'GPU' if gpu else 'no GPU (Numba simulator?)'}")
    width = max(len(n) for n, _ in rows)
    for name, fn in rows:
        try:
            result = fn()
        except ImportError as e:
            result = f"skipped ({e.name} not installed)"
        except Exception:
            result = "FAIL: " + traceback.format_exc().strip().splitlines()[-1]
        print(f"| {name:<{width}} | {result} |", flush=True)


if __name__ == "__main__":
    main()

"""float8 (e4m3fn, e5m2) ``ct.mma`` into float32 on the GPU: accuracy against the exact sum,
throughput at 4096^3, and the outputs saved for a comparison of two executors.

    python tools/gpu/fp8_mma.py --executor cutile|cuda.tile [--out DIR] [--no-bench]
    python tools/gpu/fp8_mma.py --compare DIR/fp8_cutile.npz DIR/fp8_cuda.tile.npz

The same kernel source runs on ``cutile`` (Numba backend) and on the real ``cuda.tile``
(issue 24: float8 mma "compared with the real cuTile").  Inputs are made from a fixed seed by
PyTorch's float8 casts, so both executors (separate calls, even separate machines) see the
same bytes.  Per case it prints the largest ``|C - exact| / (|a| @ |b|)`` in units of
2**-23 (the exact sum in float64 of the decoded operands), which tells the accumulation
model apart: float32 accumulation in k order stays near K; Hopper's fp8 wgmma is reported
(DeepSeek-V3, sec. 3.3.2) to keep about 14 bits.  The ``probe`` case puts one product 1.0
and one tiny product 2**-j (j = 1..31) in each row, in the same 32-deep k chunk or in a
later one, and prints which j survive: the adder's width, measured.
"""

import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

CASES = [  # name, dtype, M, N, K, tiles
    ("e4m3 256x256x4096", "e4m3", 256, 256, 4096, (128, 128, 64)),
    ("e5m2 256x256x4096", "e5m2", 256, 256, 4096, (128, 128, 64)),
    ("e4m3 200x136x1000 partial", "e4m3", 200, 136, 1000, (128, 128, 64)),
    ("e4m3 128x128x64 small tiles", "e4m3", 128, 128, 64, (64, 64, 32)),
]


def make_kernel(ct):
    """``benchmarks/gpu.py``'s matmul (its float32 output: the accumulator as it is)."""
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    from gpu import make_kernels  # lazy: benchmarks/ is not a package
    return make_kernels(ct)["matmul"]


def _inputs(torch, dtype, M, N, K, seed):
    g = torch.Generator().manual_seed(seed)
    td = torch.float8_e4m3fn if dtype == "e4m3" else torch.float8_e5m2
    a = (torch.randn(M, K, generator=g) * 2).to(td)
    b = (torch.randn(K, N, generator=g) * 2).to(td)
    return a, b


def _probe_inputs(torch, dtype, far):
    """Entry (j, n): a[j,0]*b[0,n] = 1 plus one product 2**-(j+1) * 2**-n at k = 1 (the same
    32-deep k chunk) or k = 40 (``far``: the next chunk), where the format holds it."""
    td = torch.float8_e4m3fn if dtype == "e4m3" else torch.float8_e5m2
    M, N, K = 32, 16, 64
    a = torch.zeros(M, K)
    b = torch.zeros(K, N)
    a[:, 0] = 1.0
    b[0, :] = 1.0
    kk = 40 if far else 1
    for j in range(M):
        a[j, kk] = 2.0 ** -(j + 1)
    for n in range(N):
        b[kk, n] = 2.0 ** -n
    return a.to(td), b.to(td), (M, N, K)


def run(executor: str, out: str, bench: bool) -> None:
    import torch
    if executor == "cuda.tile":
        import cuda.tile as ct
    else:
        import cutile as ct
    k = make_kernel(ct)
    stream = torch.cuda.current_stream()
    saved = {}

    def launch(a, b, tiles):
        M, N = a.shape[0], b.shape[1]
        c = torch.full((M, N), float("nan"), device="cuda")
        TM, TN, TK = tiles
        grid = (-(-M // TM), -(-N // TN), 1)
        ct.launch(stream, grid, k, (a, b, c, TM, TN, TK))
        torch.cuda.synchronize()
        return c.cpu().numpy()

    for i, (name, dtype, M, N, K, tiles) in enumerate(CASES):
        a, b = _inputs(torch, dtype, M, N, K, seed=i)
        got = launch(a.cuda(), b.cuda(), tiles)
        af, bf = a.float().double().numpy(), b.float().double().numpy()
        exact, s = af @ bf, np.abs(af) @ np.abs(bf)
        rel = np.abs(got - exact) / np.where(s == 0, 1, s) / 2.0 ** -23
        print(f"{executor:9s} {name:30s} max |C-exact|/S = {rel.max():9.1f} x 2^-23, "
              f"median {np.median(rel):6.2f}, nan {int(np.isnan(got).sum())}", flush=True)
        saved[f"case{i}"] = got
    for far in (False, True):
        for dtype in ("e4m3", "e5m2"):
            a, b, (M, N, K) = _probe_inputs(torch, dtype, far)
            got = launch(a.cuda(), b.cuda(), (32, 16, 32))
            ex = a.float().double().numpy() @ b.float().double().numpy()
            e = -np.log2(np.where(ex > 1, ex - 1, 1.0))
            lost = sorted({int(v) for v in e[(ex > 1) & (got == 1.0)]})
            wrong = int(((got != ex) & ~((ex > 1) & (got == 1.0))).sum())
            print(f"{executor:9s} probe {dtype} tiny product in the {'next' if far else 'same'}"
                  f" k chunk: 1 + 2^-e lost for e in {lost} (held exactly: "
                  f"{sorted({int(v) for v in e[(ex > 1) & (got == ex)]})}); other mismatches "
                  f"{wrong}", flush=True)
            saved[f"probe_{dtype}_{int(far)}"] = got
    np.savez(os.path.join(out, f"fp8_{executor}.npz"), **saved)
    if not bench:
        return
    S = 4096
    for dtype in ("e4m3", "e5m2"):
        a, b = _inputs(torch, dtype, S, S, S, seed=99)
        a, b = a.cuda(), b.cuda()
        c = torch.empty(S, S, device="cuda")
        for TM, TN, TK in ((128, 128, 64), (128, 128, 128), (128, 256, 64)):
            grid = (S // TM, S // TN, 1)
            try:
                ct.launch(stream, grid, k, (a, b, c, TM, TN, TK))
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(20):
                    ct.launch(stream, grid, k, (a, b, c, TM, TN, TK))
                torch.cuda.synchronize()
                dt = (time.perf_counter() - t0) / 20
                print(f"{executor:9s} bench {dtype} 4096^3 {TM}x{TN}x{TK}: "
                      f"{2 * S ** 3 / dt / 1e12:7.1f} TFLOP/s", flush=True)
            except Exception as e:          # a tile shape one executor refuses: say so
                print(f"{executor:9s} bench {dtype} {TM}x{TN}x{TK}: {type(e).__name__}: "
                      f"{str(e)[:200]}", flush=True)


def compare(p: str, q: str) -> None:
    x, y = np.load(p), np.load(q)
    for key in x.files:
        a, b = x[key], y[key]
        same = np.array_equal(a, b, equal_nan=True)
        d = np.nanmax(np.abs(a - b)) if a.shape == b.shape else float("nan")
        print(f"{key:16s} {'identical' if same else f'max |diff| {d:.3g}'}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--executor", choices=("cutile", "cuda.tile"))
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--no-bench", action="store_true")
    ap.add_argument("--compare", nargs=2)
    args = ap.parse_args()
    if args.compare:
        compare(*args.compare)
    else:
        run(args.executor, args.out, not args.no_bench)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""GPU benchmark of the Numba backend next to PyTorch and the real cuTile, in one run.

    python benchmarks/gpu.py [--quick]
                             [--only vadd,softmax,mm_f32,mm_f16,mm_bf16,mm_f16_wide,bmm,layernorm,
                                     attention]
                             [--first-call-only | --no-first-call] [--timeout 300]

Workloads (the same kernel source runs on ``cutile`` and on ``cuda.tile``):

- vector add, 2**26 float32: GB/s counting 3 streams (2 reads + 1 write);
- row softmax, 8192 x 4096 float32: GB/s counting 1 read + 1 write;
- matmul 4096**3, float32 inputs (TF32 off in PyTorch) and float16 / bfloat16 inputs (float32
  accumulation): TFLOP/s;
- batched matmul 8 x 2048**3 float16 (float32 accumulation, float16 out), 128x128x32 tiles;
- layer norm 8192 x 4096 float32 (weight and bias): GB/s counting 1 read + 1 write;
- attention forward (non-causal, online softmax) at the shapes of NVIDIA's FMHA sample
  benchmark, batch 8 x 16 heads x 1024 x 1024, head dim 64, float16: TFLOP/s (4*B*H*S*S*D).

First, for each workload, the first launch in a fresh process (``first_call.py``), twice with
a new on-disk kernel cache: empty (cold: Numba compiles) and then warm (the cubin is loaded),
printed as ``<workload>: first call cold X.X s, warm Y.Y s`` (again after the table).  The
rest of the run then uses that (temporary) cache, so its own first calls are warm.

Each measurement checks correctness first (random data, poisoned outputs), then times the
median GPU time of 50 calls after a warm-up (``bench``: cold L2, the host's launch cost kept
out of the timing; ``launch_overhead.py`` measures that cost).
The table ends with the ratios numba/torch and numba/cuTile.  Missing pieces (no torch, no
cuda.tile, no GPU) are reported and skipped, never fatal.
"""

# no "from __future__ import annotations": the kernels' ct.Constant annotations must be
# evaluated objects (they refer to the ct module passed to make_kernels)

import argparse
import atexit
import os
import shutil
import sys
import tempfile
import time
import traceback

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def make_kernels(ct):
    """The benchmark kernels, written once against the cuTile API module ``ct``."""
    C = ct.Constant

    @ct.kernel
    def vadd(a, b, c, TILE: C[int]):
        bid = ct.bid(0)
        x = ct.load(a, (bid,), (TILE,))
        y = ct.load(b, (bid,), (TILE,))
        ct.store(c, (bid,), x + y)

    @ct.kernel
    def softmax(x, y, TN: C[int]):
        row = ct.bid(0)
        t = ct.load(x, (row, 0), (1, TN), padding_mode=ct.PaddingMode.NEG_INF)
        m = ct.max(t, axis=1, keepdims=True)
        e = ct.exp(t - m)
        s = ct.sum(e, axis=1, keepdims=True)
        ct.store(y, (row, 0), e / s)

    @ct.kernel
    def matmul(a, b, c, TM: C[int], TN: C[int], TK: C[int]):
        bm, bn = ct.bid(0), ct.bid(1)
        acc = ct.zeros((TM, TN), dtype=ct.float32)
        for k in range(ct.num_tiles(a, 1, (TM, TK))):
            x = ct.load(a, (bm, k), (TM, TK), padding_mode=ct.PaddingMode.ZERO)
            y = ct.load(b, (k, bn), (TK, TN), padding_mode=ct.PaddingMode.ZERO)
            acc = ct.mma(x, y, acc)
        ct.store(c, (bm, bn), acc.astype(c.dtype))

    @ct.kernel
    def bmm(a, b, c, TM: C[int], TN: C[int], TK: C[int]):
        bm, bn, z = ct.bid(0), ct.bid(1), ct.bid(2)
        acc = ct.zeros((TM, TN), dtype=ct.float32)
        for k in range(ct.num_tiles(a, 2, (1, TM, TK))):
            x = ct.load(a, (z, bm, k), (1, TM, TK), padding_mode=ct.PaddingMode.ZERO)
            y = ct.load(b, (z, k, bn), (1, TK, TN), padding_mode=ct.PaddingMode.ZERO)
            acc = ct.mma(ct.reshape(x, (TM, TK)), ct.reshape(y, (TK, TN)), acc)
        ct.store(c, (z, bm, bn), ct.reshape(acc.astype(c.dtype), (1, TM, TN)))

    @ct.kernel
    def layernorm(x, w, b, y, eps: float, TN: C[int]):
        row = ct.bid(0)
        t = ct.load(x, (row, 0), (1, TN))
        mean = ct.sum(t, axis=1, keepdims=True) / TN
        d = t - mean
        var = ct.sum(d * d, axis=1, keepdims=True) / TN
        g = ct.reshape(ct.load(w, (0,), (TN,)), (1, TN))
        h = ct.reshape(ct.load(b, (0,), (TN,)), (1, TN))
        ct.store(y, (row, 0), d * ct.rsqrt(var + eps) * g + h)

    @ct.kernel
    def attention(q, k, v, o, scale: float, TM: C[int], TN: C[int], D: C[int]):
        # non-causal attention forward, one (batch*head, query tile) per block, online softmax
        bm, bh = ct.bid(0), ct.bid(1)
        qt = ct.reshape(ct.load(q, (bh, bm, 0), (1, TM, D)), (TM, D))
        m = ct.full((TM, 1), -np.inf, dtype=ct.float32)
        den = ct.zeros((TM, 1), dtype=ct.float32)
        acc = ct.zeros((TM, D), dtype=ct.float32)
        for j in range(ct.num_tiles(k, 1, (1, TN, D))):
            kt = ct.reshape(ct.load(k, (bh, j, 0), (1, TN, D)), (TN, D))
            s = ct.mma(qt, ct.transpose(kt), ct.zeros((TM, TN), dtype=ct.float32)) * scale
            m_new = ct.maximum(m, ct.max(s, axis=1, keepdims=True))
            p = ct.exp(s - m_new)
            alpha = ct.exp(m - m_new)
            den = den * alpha + ct.sum(p, axis=1, keepdims=True)
            vt = ct.reshape(ct.load(v, (bh, j, 0), (1, TN, D)), (TN, D))
            acc = ct.mma(p.astype(q.dtype), vt, acc * alpha)
            m = m_new
        ct.store(o, (bh, bm, 0), ct.reshape((acc / den).astype(o.dtype), (1, TM, D)))

    return {"vadd": vadd, "softmax": softmax, "matmul": matmul, "bmm": bmm,
            "layernorm": layernorm, "attention": attention}


def bench(fn, sync, reps: int = 50):
    """Median GPU time of one call of ``fn``, in seconds: the kernel's time, not the host's.

    Each repetition first overwrites a 256 MB buffer (a cold L2, as ``triton.testing.do_bench``
    does), then keeps the GPU busy for ~0.5 ms (``torch.cuda._sleep``) while the host prepares
    ``fn``'s launch, and times ``fn`` between two CUDA events.  Without the wait, a launch
    whose host cost exceeds the GPU time of the work queued before it (cutile's ``ct.launch``
    costs 110-200 us of Python, see ``launch_overhead.py``; a 8192 x 4096 softmax runs in
    ~90 us) would be timed as host time.  Every implementation in the table is timed alike.
    """
    import torch
    fn()
    sync()
    flush = torch.empty(256 * 2 ** 20, dtype=torch.int8, device="cuda")
    pairs = []
    for _ in range(reps):
        flush.zero_()
        torch.cuda._sleep(1_000_000)       # cycles: ~0.5 ms at the H100/H200 clocks
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        pairs.append((s, e))
    sync()
    return float(np.median([s.elapsed_time(e) for s, e in pairs])) * 1e-3


class Row:
    def __init__(self, name, unit):
        self.name, self.unit = name, unit
        self.vals: dict[str, float | str] = {}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller problems (smoke test)")
    ap.add_argument("--only", default="vadd,softmax,mm_f32,mm_f16,mm_bf16,mm_f16_wide,bmm,"
                                              "layernorm,attention")
    ap.add_argument("--threads", type=int, default=None, help="numba threads per block")
    ap.add_argument("--first-call-only", action="store_true",
                    help="only the cold/warm first-call measurement")
    ap.add_argument("--no-first-call", action="store_true",
                    help="skip the cold/warm first-call measurement")
    ap.add_argument("--timeout", type=float, default=300.0,
                    help="seconds allowed to each first-call process")
    args = ap.parse_args(argv)
    only = set(args.only.split(","))

    try:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda is not available")
    except Exception as e:
        print(f"PyTorch with CUDA is required to allocate and time ({e}); nothing to do.")
        return 0
    first_lines = []
    if not args.no_first_call:
        from first_call import WORKLOADS, first_calls
        # one new cache folder: cold then warm per workload; this process then runs warm from
        # it too (its own first calls below are warm ones) and deletes it at exit
        d = tempfile.mkdtemp(prefix="cutile-bench-cache-")
        atexit.register(shutil.rmtree, d, True)
        res = first_calls([w for w in args.only.split(",") if w in WORKLOADS], quick=args.quick,
                          threads=args.threads, timeout=args.timeout, cache_dir=d)
        first_lines = [line for *_, line in res]
        if args.first_call_only:
            return 0
        os.environ["CUTILE_CACHE_DIR"] = d
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    import cutile
    from cutile.executors import backend, inspect
    ours = make_kernels(cutile)
    try:
        import cuda.tile as cuda_tile
        theirs = make_kernels(cuda_tile)
    except Exception as e:
        print(f"[note] real cuTile unavailable ({type(e).__name__}: {e}); its column is empty")
        cuda_tile, theirs = None, None

    dev = torch.device("cuda")
    stream = torch.cuda.current_stream()
    sync = torch.cuda.synchronize
    rows = []

    def show_inspect(kernel, targs, grid):
        """One ``[inspect]`` line: threads, shared memory, registers, occupancy and the mma
        plans (wgmma or mma.sync) of the kernel as the benchmark launched it."""
        def host(t):          # NumPy has no bfloat16: ml_dtypes' (what cutile uses)
            if not isinstance(t, torch.Tensor):
                return t
            if t.dtype is torch.bfloat16:
                import ml_dtypes
                return t.float().cpu().numpy().astype(ml_dtypes.bfloat16)
            return t.cpu().numpy()
        try:
            info = inspect(kernel, tuple(host(t) for t in targs), grid=grid,
                           threads=args.threads)
            print(f"[inspect] {info.summary()}")
        except Exception as e:  # noqa: BLE001 - a report line, not a benchmark result
            print(f"[inspect] failed: {e}")
    n_vadd = 2 ** (20 if args.quick else 26)
    R, Ncol = (1024, 4096) if args.quick else (8192, 4096)
    S = 1024 if args.quick else 4096

    def run_impls(row, impls, check, work, poison, out=None):
        """Check, then time, each implementation.  ``out``: the output tensor ``check``
        reads; an implementation that returns its result as a new tensor (PyTorch's sdpa,
        layer_norm) has it copied there for the check (not timed)."""
        for name, launch in impls:
            if launch is None:
                continue
            try:
                poison()
                t0 = time.time()
                res = launch()
                sync()
                first = time.time() - t0
                if out is not None and torch.is_tensor(res) and res.data_ptr() != out.data_ptr():
                    out.copy_(res.view(out.shape))
                err = check()
                if err:
                    row.vals[name] = f"WRONG ({err})"
                    continue
                t = bench(launch, sync)
                row.vals[name] = work / t
                if name == "numba":
                    row.vals["numba first call (s)"] = first
            except Exception as e:
                row.vals[name] = f"error: {type(e).__name__}: {str(e)[:80]}"
                traceback.print_exc(limit=2)
        rows.append(row)

    def numba_launch(grid, kernel, kargs):
        def go():
            with backend("numba", threads=args.threads):
                cutile.launch(stream, grid, kernel, kargs)
        return go

    def tile_launch(grid, kernel, kargs):
        if theirs is None:
            return None
        return lambda: cuda_tile.launch(stream, grid, kernel, kargs)

    # -- vector add --------------------------------------------------------------------------
    if "vadd" in only:
        a = torch.randn(n_vadd, device=dev)
        b = torch.randn(n_vadd, device=dev)
        c = torch.empty_like(a)
        T = 1024
        grid = (n_vadd // T,)
        ref = a + b
        row = Row(f"vector add 2^{int(np.log2(n_vadd))} f32", "GB/s")
        run_impls(row, [
            ("numba", numba_launch(grid, ours["vadd"], (a, b, c, T))),
            ("torch", lambda: torch.add(a, b, out=c)),
            ("cuTile", tile_launch(grid, theirs["vadd"], (a, b, c, T)) if theirs else None),
        ], lambda: None if torch.equal(c, ref) else "mismatch", 3 * 4 * n_vadd / 1e9,
            lambda: c.fill_(float("nan")))
        # the acceptance reference: device-to-device copy bandwidth (bytes read + written)
        row = Row(f"device copy 2^{int(np.log2(n_vadd))} f32", "GB/s")
        run_impls(row, [("torch", lambda: c.copy_(a))],
                  lambda: None if torch.equal(c, a) else "mismatch", 2 * 4 * n_vadd / 1e9,
                  lambda: c.fill_(float("nan")))

    # -- softmax -----------------------------------------------------------------------------
    if "softmax" in only:
        x = torch.randn(R, Ncol, device=dev)
        y = torch.empty_like(x)
        ref = torch.softmax(x, dim=1)
        row = Row(f"softmax {R}x{Ncol} f32", "GB/s")
        run_impls(row, [
            ("numba", numba_launch((R,), ours["softmax"], (x, y, Ncol))),
            ("torch", lambda: torch.ops.aten._softmax.out(x, 1, False, out=y)),
            ("cuTile", tile_launch((R,), theirs["softmax"], (x, y, Ncol)) if theirs else None),
        ], lambda: None if torch.allclose(y, ref, rtol=1e-5, atol=1e-7) else
            f"max err {(y - ref).abs().max().item():.3g}", 2 * 4 * R * Ncol / 1e9,
            lambda: y.fill_(float("nan")))

    # -- matmul ------------------------------------------------------------------------------
    for tag, dtype, (TM, TN, TK), tol in (("mm_f32", torch.float32, (128, 128, 32), 1e-3),
                                          ("mm_f16", torch.float16, (128, 128, 32), 2e-2),
                                          ("mm_bf16", torch.bfloat16, (128, 128, 32), 2e-2),
                                          # the wide tile the TMA ring takes (ws_plan.py)
                                          ("mm_f16_wide", torch.float16, (128, 256, 64), 2e-2)):
        if tag not in only:
            continue
        A = torch.randn(S, S, device=dev, dtype=dtype)
        B = torch.randn(S, S, device=dev, dtype=dtype)
        Cm = torch.empty(S, S, device=dev, dtype=torch.float32)
        ref = (A.float() @ B.float()) if dtype is not torch.float32 else None
        if ref is None:
            ref = A @ B
        grid = (S // TM, S // TN)
        wide = f" {TM}x{TN}x{TK}" if tag.endswith("wide") else ""
        row = Row(f"matmul {S}^3 {str(dtype).split('.')[-1]}{wide}", "TFLOP/s")

        def torch_mm(A=A, B=B, Cm=Cm):
            if A.dtype is torch.float32:
                torch.matmul(A, B, out=Cm)
            else:
                Cm.copy_(torch.matmul(A, B))

        run_impls(row, [
            ("numba", numba_launch(grid, ours["matmul"], (A, B, Cm, TM, TN, TK))),
            ("torch", torch_mm),
            ("cuTile", tile_launch(grid, theirs["matmul"], (A, B, Cm, TM, TN, TK))
             if theirs else None),
        ], lambda ref=ref, Cm=Cm, tol=tol: None
            if torch.allclose(Cm, ref, rtol=tol, atol=tol * S ** 0.5)
            else f"max err {(Cm - ref).abs().max().item():.3g}", 2 * S ** 3 / 1e12,
            lambda Cm=Cm: Cm.fill_(float("nan")))
        show_inspect(ours["matmul"], (A, B, Cm, TM, TN, TK), grid)

    # -- batched matmul, layer norm, attention forward (issue 12) -----------------------------
    if "bmm" in only:
        Z, S3 = (2, 512) if args.quick else (8, 2048)
        TM, TN, TK = 128, 128, 32
        A = torch.randn(Z, S3, S3, device=dev, dtype=torch.float16)
        B = torch.randn(Z, S3, S3, device=dev, dtype=torch.float16)
        Cb = torch.empty(Z, S3, S3, device=dev, dtype=torch.float16)
        ref = torch.bmm(A, B)
        grid = (S3 // TM, S3 // TN, Z)
        row = Row(f"batched matmul {Z}x{S3}^3 f16", "TFLOP/s")
        run_impls(row, [
            ("numba", numba_launch(grid, ours["bmm"], (A, B, Cb, TM, TN, TK))),
            ("torch", lambda: torch.bmm(A, B, out=Cb)),
            ("cuTile", tile_launch(grid, theirs["bmm"], (A, B, Cb, TM, TN, TK))
             if theirs else None),
        ], lambda: None if torch.allclose(Cb.float(), ref.float(), rtol=2e-2, atol=0.1)
            else f"max err {(Cb.float() - ref.float()).abs().max().item():.3g}",
            2 * Z * S3 ** 3 / 1e12, lambda: Cb.fill_(float("nan")))
        show_inspect(ours["bmm"], (A, B, Cb, TM, TN, TK), grid)

    if "layernorm" in only:
        x = torch.randn(R, Ncol, device=dev)
        w = torch.randn(Ncol, device=dev)
        bb = torch.randn(Ncol, device=dev)
        y = torch.empty_like(x)
        ref = torch.nn.functional.layer_norm(x, (Ncol,), w, bb, 1e-5)
        row = Row(f"layer norm {R}x{Ncol} f32", "GB/s")
        run_impls(row, [
            ("numba", numba_launch((R,), ours["layernorm"], (x, w, bb, y, 1e-5, Ncol))),
            ("torch", lambda: torch.nn.functional.layer_norm(x, (Ncol,), w, bb, 1e-5)),
            ("cuTile", tile_launch((R,), theirs["layernorm"], (x, w, bb, y, 1e-5, Ncol))
             if theirs else None),
        ], lambda: None if torch.allclose(y, ref, rtol=1e-4, atol=1e-4) else
            f"max err {(y - ref).abs().max().item():.3g}", 2 * 4 * R * Ncol / 1e9,
            lambda: y.fill_(float("nan")), out=y)

    if "attention" in only:
        # the shapes of NVIDIA's FMHA sample benchmark (batch 8, 16 heads, 1024 x 1024, d 64),
        # non-causal, float16, 64 x 64 tiles
        Bt, H, Sq, D = (2, 4, 256, 64) if args.quick else (8, 16, 1024, 64)
        TM = TN = 64
        q = torch.randn(Bt * H, Sq, D, device=dev, dtype=torch.float16)
        k = torch.randn(Bt * H, Sq, D, device=dev, dtype=torch.float16)
        v = torch.randn(Bt * H, Sq, D, device=dev, dtype=torch.float16)
        o = torch.empty_like(q)
        scale = 1.0 / D ** 0.5
        sdpa = torch.nn.functional.scaled_dot_product_attention
        ref = sdpa(q.view(Bt, H, Sq, D), k.view(Bt, H, Sq, D), v.view(Bt, H, Sq, D)).view(
            Bt * H, Sq, D)
        grid = (Sq // TM, Bt * H)
        row = Row(f"attention fwd {Bt}x{H}x{Sq}x{D} f16", "TFLOP/s")
        run_impls(row, [
            ("numba", numba_launch(grid, ours["attention"], (q, k, v, o, scale, TM, TN, D))),
            ("torch", lambda: sdpa(q.view(Bt, H, Sq, D), k.view(Bt, H, Sq, D),
                                   v.view(Bt, H, Sq, D))),
            ("cuTile", tile_launch(grid, theirs["attention"], (q, k, v, o, scale, TM, TN, D))
             if theirs else None),
        ], lambda: None if torch.allclose(o.float(), ref.float(), rtol=1e-2, atol=1e-2) else
            f"max err {(o.float() - ref.float()).abs().max().item():.3g}",
            4 * Bt * H * Sq * Sq * D / 1e12, lambda: o.fill_(float("nan")), out=o)
        show_inspect(ours["attention"], (q, k, v, o, scale, TM, TN, D), grid)

    # -- table -------------------------------------------------------------------------------
    print()
    head = f"{'workload':28} {'unit':8} {'numba':>10} {'torch':>10} {'cuTile':>10} " \
           f"{'numba/torch':>12} {'numba/cuTile':>13} {'1st call s':>10}"
    print(head)
    print("-" * len(head))
    for r in rows:
        def f(v):
            return f"{v:10.1f}" if isinstance(v, float) else f"{str(v)[:10]:>10}"
        n, t, c = (r.vals.get(k, "-") for k in ("numba", "torch", "cuTile"))
        rt = f"{n / t:12.2f}" if isinstance(n, float) and isinstance(t, float) else f"{'-':>12}"
        rc = f"{n / c:13.2f}" if isinstance(n, float) and isinstance(c, float) else f"{'-':>13}"
        first = r.vals.get("numba first call (s)", "-")
        first = f"{first:10.1f}" if isinstance(first, float) else f"{'-':>10}"
        print(f"{r.name:28} {r.unit:8} {f(n)} {f(t)} {f(c)} {rt} {rc} {first}")
    for r in rows:               # the table cuts cells at 10 characters: which column failed
        for k in ("numba", "torch", "cuTile"):
            v = r.vals.get(k)
            if isinstance(v, str):
                print(f"[{k} column] {r.name}: {v}")
    by = {r.name.split(" 2^")[0]: r.vals for r in rows}
    va, cp = by.get("vector add", {}).get("numba"), by.get("device copy", {}).get("torch")
    if isinstance(va, float) and isinstance(cp, float):
        print(f"\nvector add (numba) / device copy bandwidth = {va / cp:.2f}  (target >= 0.60)")
    for key in ("softmax", "layer norm"):
        row = next((r.vals for r in rows if r.name.startswith(key)), {})
        if isinstance(row.get("numba"), float) and isinstance(cp, float):
            print(f"{key} (numba) / device copy bandwidth = {row['numba'] / cp:.2f}")
    for r in rows:
        if r.name.startswith("matmul") and "float32" in r.name:
            n, t = r.vals.get("numba"), r.vals.get("torch")
            if isinstance(n, float) and isinstance(t, float):
                print(f"{r.name} (numba) / cuBLAS float32 = {n / t:.2f}  (target >= 0.20)")
    if first_lines:
        print("\nfirst launch in a fresh process (kernel cache cold, then warm; "
              "target: warm <= 1.0 s):")
        for line in first_lines:
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What the real cuTile's matmul is made of on this GPU: ``benchmarks/gpu.py``'s float16
matmul kernel compiled by ``cuda.tile`` (``CUDA_TILE_CACHE_DIR`` keeps its cubins) for a few
block tiles, timed as ``stage_sweep.py`` times cutile's, then each cubin's resources
(``cuobjdump -res-usage``) and the instruction mix of its SASS: wgmma (HGMMA), TMA loads
(UTMALDG) and stores (UTMASTG), cp.async (LDGSTS), mbarrier operations (SYNCS), block
barriers (BAR), register reconfiguration (USETMAXREG), plain global loads and stores.

Run on the GPU with the real cuTile importable (../shared/GPU.md, call 2):

    python3 tools/gpu/cutile_sass.py [--out DIR]
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TILES = ((128, 128, 32), (128, 256, 64), (256, 128, 32))
OPS = ("HGMMA", "UTMALDG", "UTMASTG", "UBLKCP", "LDGSTS", "SYNCS", "BAR.SYNC", "BAR.ARV",
       "USETMAXREG", "WARPGROUP", "LDG", "STG", "STS", "LDS", "LDSM", "STSM")


def cuobjdump() -> str:
    for c in ("cuobjdump", "/usr/local/cuda/bin/cuobjdump"):
        try:
            subprocess.run([c, "--version"], capture_output=True, check=True)
            return c
        except (OSError, subprocess.CalledProcessError):
            continue
    return ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", tempfile.mkdtemp()))
    ap.add_argument("--size", type=int, default=4096)
    args = ap.parse_args()
    cache = os.path.join(args.out, "cutile_cubins")
    os.makedirs(cache, exist_ok=True)
    os.environ["CUDA_TILE_CACHE_DIR"] = cache
    sys.path[:0] = [HERE, os.path.join(ROOT, "benchmarks")]
    import cuda.tile as ct
    import torch
    from gpu import make_kernels
    from probe_host import best_time
    mm = make_kernels(ct)["matmul"]
    S = args.size
    a = torch.randn(S, S, device="cuda", dtype=torch.float16)
    b = torch.randn(S, S, device="cuda", dtype=torch.float16)
    stream = torch.cuda.current_stream()
    for t in TILES:
        before = set(glob.glob(os.path.join(cache, "**", "*"), recursive=True))
        c = torch.empty(S, S, device="cuda", dtype=torch.float32)
        grid = (S // t[0], S // t[1])

        def launch(c=c, grid=grid, t=t):
            ct.launch(stream, grid, mm, (a, b, c) + t)

        dt = best_time(launch, reps=5)
        err = float((c - a.float() @ b.float()).abs().max())
        new = sorted(set(glob.glob(os.path.join(cache, "**", "*"), recursive=True)) - before)
        print(f"== cuTile matmul {'x'.join(map(str, t))}: {2 * S ** 3 / dt / 1e12:.0f} TFLOP/s "
              f"(max err {err:.3g}); new cache files: {[os.path.basename(f) for f in new]}",
              flush=True)
        tool = cuobjdump()
        for f in new:
            if not os.path.isfile(f) or not tool:
                continue
            res = subprocess.run([tool, "-res-usage", f], capture_output=True, text=True)
            for line in (res.stdout + res.stderr).splitlines():
                if "REG" in line or "Function" in line:
                    print("  " + line.strip())
            sass = subprocess.run([tool, "-sass", f], capture_output=True, text=True).stdout
            if not sass:
                print(f"  {os.path.basename(f)}: no SASS ({res.stderr.strip()[:200]})")
                continue
            counts = {op: len(re.findall(rf"\b{re.escape(op)}\b", sass)) for op in OPS}
            print("  " + " ".join(f"{k}={v}" for k, v in counts.items() if v))
            for m in sorted(set(re.findall(r"HGMMA\.\S+", sass)))[:6]:
                print("   ", m)
            with open(f + ".sass", "w") as fh:
                fh.write(sass)
    return 0


if __name__ == "__main__":
    sys.exit(main())

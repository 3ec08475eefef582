"""The wgmma probe without a GPU (``wgmma_probe.py --offline``, issue 24): every kernel's PTX
through NVVM, retargeted to sm_90a and assembled by ptxas; one resource line per kernel.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile

from numba import cuda

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def offline(kernels: dict) -> int:
    """Build the PTX of every kernel in ``kernels`` (``wgmma_probe.all_kernels``) with
    numba's compile_ptx (no GPU), retarget it to sm_90a and assemble it with ``ptxas
    -arch=sm_90a -v``; print one resource line per kernel.  Exit status 1 when any kernel
    fails to build or assemble."""
    sys.path.insert(0, os.path.join(ROOT, "spec_tests"))
    from diff import ptxcheck
    tk = ptxcheck.toolkit()
    if tk is None or not tk["ptxas"]:
        print("no CUDA toolkit with libNVVM and ptxas (set CUDA_HOME)")
        return 2
    ptxcheck._setup_numba(tk)
    failed = 0
    with tempfile.TemporaryDirectory() as d:
        for name, spec in kernels.items():
            fn, sig = spec[0], spec[1]
            bounds = spec[2] if len(spec) > 2 else None
            try:
                ptx, _ = cuda.compile_ptx(fn, sig, cc=(9, 0), launch_bounds=bounds)
            except Exception as e:  # noqa: BLE001 - reported per kernel
                print(f"{name}: NVVM FAILED {type(e).__name__}: {str(e)[:2000]}")
                failed += 1
                continue
            ptx = re.sub(r"^\.target sm_90\b", ".target sm_90a", ptx, flags=re.M)
            path = os.path.join(d, f"{name}.ptx")
            with open(path, "w") as f:
                f.write(ptx)
            r = subprocess.run([tk["ptxas"], "-arch=sm_90a", "-v", path, "-o", path + ".o"],
                               capture_output=True, text=True)
            log = (r.stdout + r.stderr).strip().splitlines()
            counts = {op: ptx.count(op)
                      for op in ("wgmma.mma_async", "cp.async.bulk.tensor", "mbarrier.")}
            ops = " ".join(f"{k.rstrip('.')}={v}" for k, v in counts.items() if v)
            if r.returncode != 0:
                failed += 1
                print(f"{name}: PTXAS FAILED")
                print("\n".join("  " + line for line in log))
                continue
            used = [line.split("info    : ", 1)[-1] for line in log if "Used" in line
                    or "bytes stack frame" in line]
            # ptxas says "(C7515) Potential Performance Loss: wgmma.mma_async instructions
            # are serialized ..." as an info line when it cannot pipeline the wgmmas
            warn = [line for line in log if "warning" in line.lower()
                    or "Performance" in line or "serialized" in line]
            print(f"{name:20s} {' | '.join(used)}   [{ops}]")
            for w in warn:
                print(f"{'':20s} {w}")
    print("offline:", "ok" if not failed else f"{failed} kernel(s) failed")
    return 1 if failed else 0

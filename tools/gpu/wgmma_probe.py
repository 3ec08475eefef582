"""Probe (H100/H200, sm_90a): what Hopper's asynchronous tensor-core path reaches from Numba,
measured before any of it goes into the backend (issue 24).  Each part is a small kernel and
a host check; the last lines printed are a table.

1. ``wgmma.mma_async`` m64nNk16 f32 += f16 * f16 (N = 64 / 128 / 256) with A and B in
   shared memory, 128-byte swizzled, through 64-bit matrix descriptors: an exact check of
   small-integer matrices against NumPy (one k16 step, and a K loop over two 64-wide
   blocks), then the throughput of many warpgroups issuing wgmma on resident tiles.
2. TMA: a ``CUtensorMap`` (2-D float16, 128-byte swizzle, 64 x 64 box) encoded on the host
   with ``cuTensorMapEncodeTiled``, ``cp.async.bulk.tensor`` loads completing on an
   ``mbarrier``: an exact check of the landed tiles (and of zero fill out of bounds), then a
   TMA load -> TMA store copy's GB/s against a device-to-device copy.
3. A mini GEMM: TMA loads into a 3-stage mbarrier ring feeding wgmma (128 x 256 tiles, two
   consumer warpgroups), checked against NumPy and timed at 4096^3 float16.
4. ``gemmws``: that GEMM in the forms a backend could take (``probe_gemm_ws.py``: 3/4-stage
   warp-specialised rings with the wgmma wait deferred, and rings without a producer warp).
5. ``deep``: the real cuTile's shape at 128 x 128 x 32 (``probe_gemm_deep.py``: one producer
   and one consumer warpgroup, a deep ring of 64-byte swizzled TMA tiles).

How the inline PTX gets in: ``numba.cuda.extending.intrinsic``s emitting llvmlite
``InlineAsm`` (as ``cutile/numba_backend/ptx.py`` and ``shared/probes/tc_probe.py``).  Layout
facts (swizzle, descriptor bits, accumulator fragment) are the backend's, in the forms these
kernels need from ``hopper_layout.py``.

The sm_90a target.  ``wgmma`` needs sm_90a; numba-cuda 0.30 already compiles a launched
kernel for the arch-specific target: ``CUDACodeLibrary._ensure_cc`` (numba/cuda/codegen.py)
turns the device's (9, 0) into (9, 0, "a") when no cc is given, so NVVM gets
``-arch=compute_90a``, the PTX says ``.target sm_90a`` and the linker builds sm_90a.  The
probe checks this on the GPU (``target`` line of the table).  Only ``compile_ptx`` with an
explicit ``cc=(9, 0)`` (and ``NUMBA_FORCE_CUDA_CC``, which cannot carry the suffix) give
``.target sm_90``; the ``--offline`` mode therefore edits that line to ``sm_90a`` before
``ptxas -arch=sm_90a`` (with NVRTC present, ``cc=(9, 0, "a")`` works too).

Usage: on the GPU machine ``source tools/gpu/setup.sh; python3 tools/gpu/wgmma_probe.py``
(``--n 64 128 256``, ``--skip-gemm``); without a GPU ``CUDA_HOME=/usr/local/cuda python3
tools/gpu/wgmma_probe.py --offline`` builds every kernel's PTX and prints ptxas' resources.

The probe's modules (siblings in ``tools/gpu``, no package): this driver (command line,
the list of kernels, the parts in order, the summary); ``probe_ptx.py`` (the inline-PTX
intrinsics), ``probe_device.py`` (sizes and device functions the kernels share),
``probe_host.py`` (compiling, launching, timing, tensor maps, result lines), one module per
part with its kernels and host check (``probe_wgmma.py``, ``probe_layouts.py``,
``probe_tma.py``, ``probe_gemm.py``) and ``probe_offline.py`` (``--offline``); the layout
facts are ``hopper_layout.py``'s.
"""

from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

if "--offline" in sys.argv:             # before numba reads its configuration
    os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
    os.environ.setdefault("NUMBA_FORCE_CUDA_CC", "9.0")

import numpy as np  # noqa: E402
from numba import cuda  # noqa: E402
from probe_device import LAYOUT_NS, NS  # noqa: E402
from probe_gemm import gemm_kernels, probe_gemm  # noqa: E402
from probe_gemm_deep import gemm_deep_kernels, probe_gemm_deep  # noqa: E402
from probe_gemm_ws import gemm_ws_kernels, probe_gemm_ws  # noqa: E402
from probe_host import ALL, RESULTS  # noqa: E402
from probe_layouts import make_layout_kernels, probe_layouts  # noqa: E402
from probe_offline import offline  # noqa: E402
from probe_tma import probe_tma_check, probe_tma_copy, tma_kernels  # noqa: E402
from probe_wgmma import make_wgmma_kernels, probe_wgmma  # noqa: E402


def all_kernels(ns=NS):
    """name -> (python function, argument types[, launch bounds]) of every probe kernel."""
    out = {}
    for n in ns:
        out.update(make_wgmma_kernels(n))
    for n in LAYOUT_NS:
        out.update(make_layout_kernels(n))
    out.update(tma_kernels())
    out.update(gemm_kernels())
    out.update(gemm_ws_kernels())
    out.update(gemm_deep_kernels())
    return out


def run_gpu(args) -> int:
    import numba
    ALL.update(all_kernels(tuple(args.n)))
    dev = cuda.get_current_device()
    print("numba", numba.__version__, "numba-cuda", getattr(cuda, "__version__", "?"),
          "device", dev.name, "cc", dev.compute_capability, "SMs", dev.MULTIPROCESSOR_COUNT)
    rng = np.random.default_rng(0)
    parts = set(args.parts.split(","))
    if args.skip_gemm:
        parts.discard("gemm")
    if "wgmma" in parts:
        for n in args.n:
            probe_wgmma(n, rng)
    if "layouts" in parts:
        probe_layouts(rng)
    if "tma" in parts:
        probe_tma_check()
    if "copy" in parts:
        probe_tma_copy()
    if "gemm" in parts:
        probe_gemm()
    if "gemmws" in parts:
        probe_gemm_ws()
    if "deep" in parts:
        probe_gemm_deep()
    print("\n== summary ==")
    for k, v in RESULTS:
        print(f"{k:58s} {v}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--offline", action="store_true",
                    help="no GPU: build PTX, assemble for sm_90a, print ptxas resources")
    ap.add_argument("--n", type=int, nargs="+", default=list(NS), choices=NS,
                    help="wgmma N values to probe")
    ap.add_argument("--skip-gemm", action="store_true")
    ap.add_argument("--parts", default="wgmma,layouts,tma,copy,gemm,gemmws,deep",
                    help="comma-separated parts to run (a wrong barrier or descriptor can hang "
                         "a kernel: run each part under `timeout` in its own process)")
    args = ap.parse_args()
    if args.offline:
        return offline(all_kernels(tuple(args.n)))
    return run_gpu(args)


if __name__ == "__main__":
    sys.exit(main())

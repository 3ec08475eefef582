"""A generated kernel compiled without Numba's frontend: the direct path (issue 26).

Numba's bytecode analysis, typing and lowering were 80-90 % of a kernel's compile time.  On a
GPU, ``compile.Compiled.variant`` asks here first: the generated source (the same text the
simulator runs) is typed and translated to NVVM IR by ``nvvm/`` (Numba's typing rules, Numba's
kernel ABI), compiled with the libNVVM and libdevice numba-cuda uses, assembled by the
toolkit's ``ptxas`` as one whole program (``_whole_program_cubin``; where there is no
``ptxas``, linked as numba-cuda links: LTO-IR through nvJitLink, else PTX), and loaded as a
``cuda.core`` kernel; ``params.Packer`` packs its launches as it packs Numba's kernels.  A
kernel the translator does not cover (``Unsupported``) or that fails to build goes through
Numba's ``cuda.jit`` as before; ``stats`` counts both, with the reasons, and
``Compiled.path`` says which one a kernel took (``kernel.inspect``).
``CUTILE_NUMBA_DIRECT=0`` turns the direct path off.
"""

from __future__ import annotations

import collections
import functools
import os
import shutil
import subprocess
import tempfile
import threading
import time

from .. import config
from ..compile_stages import add, stage
from .nvvm import emit, nvvmc
from .nvvm.types import FROM_NAME, Array, Scalar, Unsupported


class Stats:
    """Variants compiled by each path in this process, and why kernels fell back."""

    def __init__(self):
        self.direct = 0
        self.fallbacks: collections.Counter = collections.Counter()
        self._lock = threading.Lock()

    def note(self, reason: str | None) -> None:
        with self._lock:
            if reason is None:
                self.direct += 1
            else:
                self.fallbacks[reason] += 1

    def __repr__(self) -> str:
        fb = sum(self.fallbacks.values())
        why = "; ".join(f"{n}x {r}" for r, n in self.fallbacks.most_common(5))
        return f"direct: {self.direct}, through Numba: {fb}" + (f" ({why})" if why else "")


stats = Stats()


def wanted(lineinfo: bool) -> bool:
    """Whether to try the direct path: on a GPU, not asked off, and without line information
    (the translator writes no debug metadata: ``CUTILE_NUMBA_LINEINFO`` takes Numba's path)."""
    return config.numba_direct() and not lineinfo


def param_types(argtypes: tuple) -> list:
    """The translator's parameter types for Numba argument types (``params.argument_types``)."""
    from numba.cuda import types
    out = []
    for t in argtypes:
        name = str(t.dtype if isinstance(t, types.Array) else t)
        if name not in FROM_NAME:
            raise Unsupported(f"parameter of type {t}")
        if isinstance(t, types.Array):
            out.append(Array(FROM_NAME[name], t.ndim, t.layout))
        else:
            out.append(Scalar(FROM_NAME[name]))
    return out


def compile_variant(source: str, fn_name: str, argtypes: tuple, bounds: tuple | None,
                    cc: tuple):
    """(cubin ObjectCode, kernel handle) of the generated kernel ``fn_name`` for ``argtypes``
    on compute capability ``cc`` (``(9, 0, "a")``: the sm_90a target, for wgmma); raises
    ``Unsupported`` for what the translator does not
    cover (anything else it raises is a failure to build: the caller falls back too)."""
    from numba.cuda.cudadrv import devices
    from numba.cuda.cudadrv.driver import _have_nvjitlink, _Linker
    from numba.cuda.cudadrv.nvvm import LibDevice
    bounds = tuple(bounds or ())
    with stage("direct translate"):
        llvm_ir = emit.translate(source, fn_name, param_types(argtypes), *bounds[:2])
    cubin = None
    if _ptxas() is not None:
        with stage("direct nvvm"):
            ptx = nvvmc.to_ptx(llvm_ir, LibDevice().get(), cc)
        cubin = _whole_program_cubin(ptx, cc)
    if cubin is not None:
        from cuda.core import ObjectCode
        try:
            with stage("module load"):
                devices.get_context()           # Numba's context current, as for its modules
                obj = ObjectCode.from_cubin(cubin, name=fn_name)
                return obj, obj.get_kernel(fn_name)
        except Exception:       # noqa: BLE001 - a cubin this driver refuses (newer ptxas)
            pass                # link it as numba-cuda does instead
    lto = bool(_have_nvjitlink())               # as numba-cuda's cuda.jit does by default
    with stage("direct nvvm"):
        out = (nvvmc.to_ltoir if lto else nvvmc.to_ptx)(llvm_ir, LibDevice().get(), cc)
    linker = _Linker(cc=cc, lto=lto)            # numba-cuda's: the same link as its kernels
    if lto:
        linker.add_ltoir(out, name=f"<cutile-direct:{fn_name}>")
    else:
        linker.add_ptx(out.encode(), name=f"<cutile-direct:{fn_name}>")
    obj = linker.complete()                     # (benchmarks/compile.py times it as "ptxas")
    with stage("module load"):
        devices.get_context()                   # Numba's context current, as for its modules
        return obj, obj.get_kernel(fn_name)


@functools.cache
def _ptxas() -> str | None:
    """The CUDA toolkit's ``ptxas`` (``PATH``, ``CUDA_HOME``/``CUDA_PATH``), or None."""
    found = shutil.which("ptxas")
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")):
        if found is None and root and os.path.isfile(os.path.join(root, "bin", "ptxas")):
            found = os.path.join(root, "bin", "ptxas")
    return found


def _whole_program_cubin(ptx: str, cc: tuple) -> bytes | None:
    """``ptx`` assembled by ``ptxas`` as one whole program, or None when it cannot (an older
    ``ptxas`` than the PTX, say: the caller links as numba-cuda does).

    Why not nvJitLink: it assembles PTX as relocatable code (``ptxas -c``), where the float16
    matmul takes 160 registers (1 block per SM, 282 TFLOP/s on an H200) against 124 whole-
    program (317); numba-cuda gets 124 by linking LTO-IR, whose link took 0.37 s of that
    kernel's 0.64 s compile on the H200, ``ptxas`` about 0.1 s."""
    w, c = time.perf_counter(), time.process_time()
    with tempfile.TemporaryDirectory(prefix="cutile-ptxas-") as d:
        src, out = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        try:
            r = subprocess.run([_ptxas(), f"-arch=sm_{''.join(map(str, cc))}", "-O3", src,
                                "-o", out],
                               capture_output=True, timeout=600)
        except (OSError, subprocess.SubprocessError):
            return None
        add("ptxas", time.perf_counter() - w, time.process_time() - c)
        if r.returncode != 0 or not os.path.exists(out):
            return None
        with open(out, "rb") as f:
            return f.read()

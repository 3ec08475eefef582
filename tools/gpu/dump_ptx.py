"""Both compile paths' PTX of one benchmark kernel on the GPU machine, for diffing offline
(issue 26: PTX linked by nvJitLink gave the float16 matmul 160 registers there, whole-program
ptxas and numba-cuda's LTO-IR link 124; the script links both PTXs through nvJitLink and
assembles them with ptxas).

    python3 tools/gpu/dump_ptx.py OUTDIR
"""
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [ROOT, os.path.join(ROOT, "benchmarks")]
from gpu import make_kernels  # noqa: E402  (benchmarks/gpu.py: the benchmark's matmul)

import cutile as ct  # noqa: E402


def main(out):
    from numba.cuda.cudadrv.driver import _Linker
    from numba.cuda.cudadrv.nvvm import LibDevice

    from cutile.numba_backend import direct
    from cutile.numba_backend.codegen import kernel_fn_name
    from cutile.numba_backend.compile import compile_kernel, full_tiles
    from cutile.numba_backend.nvvm import emit, nvvmc
    from cutile.numba_backend.params import argument_types
    from cutile.numba_backend.threads import choose_threads
    os.makedirs(out, exist_ok=True)
    n = 4096
    args = (np.zeros((n, n), np.float16), np.zeros((n, n), np.float16),
            np.zeros((n, n), np.float32), 128, 128, 32)
    matmul = make_kernels(ct)["matmul"]
    spec = matmul.specialize(args)
    ir = matmul.compile(spec)
    T = choose_threads(ir, None)
    ck = compile_kernel(ir, T, None, full_tiles(ir, T, None, spec.leaves))
    argtypes = argument_types(ir, len(ck.strides_used), ("C",) * 3, bool(ck.asserts),
                              tuple(c for c, _ in ck.scratch))
    with open(f"{out}/src.py", "w") as f:
        f.write(ck.source)
    ll = emit.translate(ck.source, kernel_fn_name(ir), direct.param_types(argtypes),
                        *(ck.bounds or ())[:2])
    ptx_d = nvvmc.to_ptx(ll, LibDevice().get(), (9, 0))
    kern = ck.dispatcher.compile(argtypes)
    ptx_n = kern.inspect_asm((9, 0))
    ll_n = kern.inspect_llvm()
    for tag, text in (("direct.ll", ll), ("direct.ptx", ptx_d), ("numba.ptx", ptx_n),
                      ("numba.ll", ll_n)):
        with open(f"{out}/{tag}", "w") as f:
            f.write(text)
    for tag, ptx in (("direct", ptx_d), ("numba", ptx_n)):
        lk = _Linker(cc=(9, 0))
        lk.add_ptx(ptx.encode())
        obj = lk.complete()
        name = [ln.split()[-1].rstrip("(") for ln in ptx.splitlines() if ".entry" in ln][0]
        regs = obj.get_kernel(name).attributes.num_regs
        p = subprocess.run(["ptxas", "-arch=sm_90", "-v", f"{out}/{tag}.ptx", "-o",
                            f"{out}/{tag}.cubin"], capture_output=True, text=True)
        print(tag, "nvJitLink regs", regs() if callable(regs) else regs, "| ptxas:",
              [ln for ln in p.stderr.splitlines() if "registers" in ln])


if __name__ == "__main__":
    main(sys.argv[1])

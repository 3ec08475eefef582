"""Both compile paths' PTX of one benchmark kernel on the GPU machine, for diffing offline
(issue 26: the direct path's float16 matmul took 160 registers there, Numba's 124).

    python3 tools/gpu/dump_ptx.py OUTDIR
"""
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
import cutile as ct  # noqa: E402
from cutile import Constant as C  # noqa: E402


@ct.kernel
def matmul(a, b, c, TM: C[int], TN: C[int], TK: C[int]):
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.zeros((TM, TN), dtype=ct.float32)
    for k in range(ct.num_tiles(a, 1, (TM, TK))):
        x = ct.load(a, (bm, k), (TM, TK), padding_mode=ct.PaddingMode.ZERO)
        y = ct.load(b, (k, bn), (TK, TN), padding_mode=ct.PaddingMode.ZERO)
        acc = ct.mma(x, y, acc)
    ct.store(c, (bm, bn), acc.astype(c.dtype))


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

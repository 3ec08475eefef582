"""Run the direct path's NVVM IR of a CUDA-free kernel on the CPU, to check its meaning
offline (issue 26).

The translator (``cutile/numba_backend/nvvm/``) was checked offline for types (against Numba's
inference) and for compiling, but what the IR computes was only seen on a GPU, where 30 % of
random programs showed an array variable assigned on two paths holding the last assignment
(found by ``progen`` on an H200).  Control flow, variables, joins, tuples, casts, integer and
float arithmetic and array addressing do not depend on the GPU: a kernel of the generated
dialect that calls nothing of ``cuda`` translates to IR that LLVM's own CPU JIT (llvmlite)
runs after retargeting the module.  ``run_ir`` calls it with Numba's kernel ABI on NumPy
arrays; ``run_python`` executes the same source as Python with the NumPy scalar types the
simulator gives the casts (``rt.NUMPY_TYPES``): the two must agree bit for bit.
"""

from __future__ import annotations

import ctypes
import re

import numpy as np

from cutile.numba_backend.nvvm import emit
from cutile.numba_backend.nvvm import types as T

_CTYPES = {"b": ctypes.c_uint8, "c": ctypes.c_int8, "s": ctypes.c_int16, "i": ctypes.c_int32,
           "l": ctypes.c_int64, "B": ctypes.c_uint8, "S": ctypes.c_uint16,
           "I": ctypes.c_uint32, "L": ctypes.c_uint64, "f": ctypes.c_float,
           "d": ctypes.c_double}
_engines: list = []                 # keep the JIT engines (and their code) alive


def _jit(llvm_ir: str, name: str):
    import llvmlite.binding as llvm
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    tm = llvm.Target.from_default_triple().create_target_machine()
    llvm_ir = re.sub(r'target triple = "[^"]*"', f'target triple = "{llvm.get_default_triple()}"',
                     llvm_ir)
    llvm_ir = re.sub(r'target datalayout = "[^"]*"', f'target datalayout = "{tm.target_data}"',
                     llvm_ir)
    mod = llvm.parse_assembly(llvm_ir)
    mod.verify()
    ee = llvm.create_mcjit_compiler(mod, tm)
    ee.finalize_object()
    _engines.append(ee)
    return ee.get_function_address(name)


def run_ir(source: str, fn: str, params: list, values: list) -> None:
    """Translate ``fn`` for ``params`` and call it on ``values`` (arrays changed in place)."""
    addr = _jit(emit.translate(source, fn, params), fn)
    args, tys = [], []
    for t, v in zip(params, values):
        if isinstance(t, T.Array):
            args += [None, None, v.size, v.itemsize, v.ctypes.data, *v.shape, *v.strides]
            tys += [ctypes.c_void_p] * 2 + [ctypes.c_int64] * 2 + [ctypes.c_void_p]
            tys += [ctypes.c_int64] * (2 * v.ndim)
        else:
            args.append(v)
            tys.append(_CTYPES[t.code])
    ctypes.CFUNCTYPE(None, *tys)(addr)(*args)


def run_python(source: str, fn: str, values: list) -> None:
    """Execute ``fn`` as Python, with the casts the simulator gives it."""
    from cutile.numba_backend.rt import NUMPY_TYPES
    ns = {"np": np, **NUMPY_TYPES}
    exec(compile(source, "<dialect>", "exec"), ns)
    with np.errstate(all="ignore"):
        ns[fn](*values)

"""``cu_printf(fmt, args)``: the device ``printf`` behind ``ct.printf``/``ct.print``.

On a GPU it is a Numba intrinsic calling CUDA's ``vprintf`` with the literal C format string
and a tuple of 64-bit integers and doubles (at most 32 per call, CUDA's limit).  Under the
simulator the kernel is plain Python: the same format is rendered on the host by
``cutile.printf_fmt`` (the interpreter's formatter) and written to ``sys.stdout``.
"""

from __future__ import annotations

import sys

import numpy as np

from .. import dtypes as dt
from .. import printf_fmt as pf

MAX_ARGS = 32          # CUDA printf accepts at most 32 arguments besides the format


def sim_printf(fmt, args=()):
    values = list(args)
    dtypes = [dt.from_numpy(np.asarray(v).dtype) for v in values]
    sys.stdout.write(pf.render(pf.parse(fmt), [np.asarray(v) for v in values], dtypes))


def make_device_printf():
    """The ``vprintf`` intrinsic (GPU only)."""
    from llvmlite import ir
    from numba.cuda import cgutils, nvvmutils, types
    from numba.cuda.extending import intrinsic

    voidptr = ir.PointerType(ir.IntType(8))

    @intrinsic
    def cu_printf(typingctx, fmt, args):
        if not isinstance(fmt, types.StringLiteral) or not isinstance(args, types.BaseTuple):
            return None
        text = fmt.literal_value
        n = len(args)

        def codegen(context, builder, sig, llargs):
            fmt_ptr = context.insert_string_const_addrspace(builder, text)
            vals = [builder.extract_value(llargs[1], i) for i in range(n)]
            if vals:
                struct = cgutils.make_anonymous_struct(builder, vals)
                buf = builder.bitcast(cgutils.alloca_once_value(builder, struct), voidptr)
            else:
                buf = ir.Constant(voidptr, None)
            builder.call(nvvmutils.declare_vprint(builder.module), (fmt_ptr, buf))
            return context.get_dummy_value()

        return types.void(fmt, args), codegen

    return cu_printf


_device: object | None = None


def cu_printf(simulator: bool):
    global _device
    if simulator:
        return sim_printf
    if _device is None:
        _device = make_device_printf()
    return _device

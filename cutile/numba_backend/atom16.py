"""16-bit float ``atomic_add`` (float16, bfloat16), which ``numba.cuda.atomic`` lacks.

``atom_add_f16(ary, idx, v)`` (a float16 array, a float16 update) and ``atom_add_bf16(ary,
idx, bits)`` (a bfloat16 array as its uint16 patterns, the update's pattern) add ``v`` to
``ary[idx]`` atomically and return the old value (pattern).  ``idx`` is an integer or a tuple
of one integer per axis, in bounds (the caller guards it).

On the GPU each is a Numba intrinsic emitting one PTX instruction on the element's generic
address: ``atom.add.noftz.f16`` (sm_70+) or ``atom.add.noftz.bf16`` (sm_90+, as for
``cuda.tile`` 1.7, R-ATOM-4): an IEEE addition rounded to nearest-even with subnormals kept
(``noftz``) -- the interpreter's rounded ``add`` per position.  ``MIN_CC`` names the compute
capability each needs (``compile.py`` refuses an older device with
``TileUnsupportedFeatureError``).  Under the simulator the kernel is plain Python: the same
rounded addition under a lock (the float32 sum of two float16/bfloat16 values, rounded once
more, is the correctly rounded sum: 24 >= 2*11 + 2 bits).
"""

from __future__ import annotations

import threading

import ml_dtypes
import numpy as np

MIN_CC = {"float16": (7, 0), "bfloat16": (9, 0)}

_lock = threading.Lock()


def sim_atom_add_f16(ary, idx, v):
    with _lock:
        old = np.float16(ary[idx])
        ary[idx] = np.float16(np.float32(old) + np.float32(v))
    return old


def sim_atom_add_bf16(ary, idx, bits):
    with _lock:
        old = np.uint16(ary[idx])
        s = np.float32(np.array(old).view(ml_dtypes.bfloat16)) + \
            np.float32(np.array(np.uint16(bits)).view(ml_dtypes.bfloat16))
        ary[idx] = np.array(ml_dtypes.bfloat16(s)).view(np.uint16)
    return old


def _make(ptx_type: str, elem):
    """The intrinsic ``(ary, idx, v) -> old`` for arrays of Numba type ``elem`` (16 bits)."""
    from llvmlite import ir
    from numba.cuda import cgutils, types
    from numba.cuda.extending import intrinsic

    text = f"atom.add.noftz.{ptx_type} $0, [$1], $2;"

    def impl(typingctx, ary, idx, v):
        if not isinstance(ary, types.Array) or ary.dtype != elem or v != elem:
            return None
        if isinstance(idx, types.Integer):
            n = 1
        elif isinstance(idx, types.BaseTuple) and all(isinstance(t, types.Integer)
                                                      for t in idx):
            n = len(idx)
        else:
            return None
        if n != ary.ndim:
            return None
        sig = elem(ary, idx, elem)

        def codegen(context, builder, signature, args):
            aryty, idxty, _ = signature.args
            arr = context.make_array(aryty)(context, builder, args[0])
            if isinstance(idxty, types.Integer):
                vals, tys = [args[1]], [idxty]
            else:
                vals, tys = cgutils.unpack_tuple(builder, args[1], n), list(idxty)
            inds = [context.cast(builder, x, t, types.intp) for x, t in zip(vals, tys)]
            ptr = cgutils.get_item_pointer(context, builder, aryty, arr, inds,
                                           wraparound=False)
            i16, i64 = ir.IntType(16), ir.IntType(64)
            val = args[2] if args[2].type == i16 else builder.bitcast(args[2], i16)
            asm = ir.InlineAsm(ir.FunctionType(i16, [i64, i16]), text, "=h,l,h,~{memory}",
                               side_effect=True)
            old = builder.call(asm, [builder.ptrtoint(ptr, i64), val])
            out = context.get_value_type(elem)
            return old if out == i16 else builder.bitcast(old, out)

        return sig, codegen

    impl.__name__ = f"atom_add_{ptx_type}"
    return intrinsic(impl)


_device: dict | None = None


def functions(simulator: bool) -> dict:
    """The names generated kernels call, for the GPU or the simulator."""
    global _device
    if simulator:
        return {"atom_add_f16": sim_atom_add_f16, "atom_add_bf16": sim_atom_add_bf16}
    if _device is None:
        from numba.cuda import types
        _device = {"atom_add_f16": _make("f16", types.float16),
                   "atom_add_bf16": _make("bf16", types.uint16)}
    return _device

"""The calls of the generated dialect in NVVM IR: CUDA built-ins, libdevice, atomics, shared
arrays and the inline-PTX intrinsics of ``ptx.py``.

Each is what numba-cuda emits for the same call: ``cuda.syncthreads`` is
``llvm.nvvm.barrier0``, ``cuda.selp`` a ``select``, ``cuda.shfl_xor_sync`` the
``llvm.nvvm.shfl.sync.i32`` butterfly (64-bit values as two halves, floats bitcast), atomics
``atomicrmw``/``cmpxchg`` (float add through NVVM's intrinsic), libdevice functions
declarations NVVM links from libdevice, and the PTX intrinsics the same inline assembly
(text and constraints from ``ptx_text.py``, which ``ptx.py`` builds its intrinsics from too).
"""

from __future__ import annotations

from llvmlite import ir

from .. import ptx_text
from . import ops
from .infer import FLOAT_CONSTANTS
from .numba_table import LIBDEVICE
from .types import FLOATS, ITEMSIZE, Array, ArrayValue, Scalar, Unsupported

__all__ = ["Calls", "FLOAT_CONSTANTS"]

_SREG = {"threadIdx": "tid", "blockIdx": "ctaid", "blockDim": "ntid", "gridDim": "nctaid"}
_RMW = {"add": "add", "sub": "sub", "and_": "and", "or_": "or", "xor": "xor",
        "exch": "xchg"}


class Calls:
    """Call lowering for an ``emit.Emitter`` ``em``."""

    def __init__(self, em):
        self.em = em
        self.b = em.b
        self.m = em.module
        self._n = 0

    def _fn(self, name: str, ret, args):
        f = self.m.globals.get(name)
        if f is None:
            f = ir.Function(self.m, ir.FunctionType(ret, args), name)
        return f

    def special(self, dotted: str):
        """``cuda.threadIdx.x`` and the like: an int32 special register."""
        _, reg, dim = dotted.split(".")
        return self.b.call(self._fn(f"llvm.nvvm.read.ptx.sreg.{_SREG[reg]}.{dim}", ops.I32,
                                    []), [])

    def shared(self, e, t: Array):
        """A ``cuda.shared.array``: an ``addrspace(3)`` global (``[0 x T]`` external for
        the dynamic one), aligned as Numba aligns it (element size, or ``alignment=``); its
        stride is the element size whatever the alignment, as Numba's."""
        n = e.args[0].value
        el = ops.lltype(t.dtype) if t.dtype != "b" else ops.I8
        align = ITEMSIZE[t.dtype]
        for k in e.keywords:
            align = k.value.value
        self._n += 1
        g = ir.GlobalVariable(self.m, ir.ArrayType(el, n), f"_cutile_smem{self._n}",
                              addrspace=3)
        g.align = align
        if n == 0:
            g.linkage = "external"
        else:
            g.linkage = "internal"
            g.initializer = ir.Constant(ir.ArrayType(el, n), None)
        data = self.b.gep(g, [ops.I32(0), ops.I32(0)])
        return ArrayValue(t, data, [ops.I64(n)], [ops.I64(ITEMSIZE[t.dtype])])

    def _args(self, e):
        return [(self.em.expr(a), self.em._t(a)) for a in e.args]

    def call(self, f: str, e, t):
        """Value of the call ``e`` of ``f`` (dotted name), typed ``t`` by ``infer``."""
        if f.startswith("libdevice."):
            ret, params = LIBDEVICE[f[10:]]
            vals = [ops.convert(self.b, v, at.code, p) for (v, at), p in zip(self._args(e),
                                                                           params)]
            fn = self._fn("__nv_" + f[10:], ops.lltype(ret), [ops.lltype(p) for p in params])
            return self.b.call(fn, vals)
        if f == "cuda.syncthreads":
            return self.b.call(self._fn("llvm.nvvm.barrier0", ir.VoidType(), []), [])
        if f == "cuda.threadfence":
            return self.b.call(self._fn("llvm.nvvm.membar.gl", ir.VoidType(), []), [])
        if f == "cuda.selp":
            (c, ct), (x, xt), (y, yt) = self._args(e)
            return self.b.select(ops.convert(self.b, c, ct.code, "b"),
                                 ops.convert(self.b, x, xt.code, t.code),
                                 ops.convert(self.b, y, yt.code, t.code))
        if f == "cuda.shfl_xor_sync":
            return self._shfl(self._args(e), t)
        if f.startswith("cuda.atomic."):
            return self._atomic(f[12:], e, t)
        return self._intrinsic(f, e, t)

    def _shfl(self, args, t: Scalar):
        (mask, mt), (v, vt), (lane, lt) = args
        v = ops.convert(self.b, v, vt.code, t.code)
        i32 = ops.I32
        fn = self._fn("llvm.nvvm.shfl.sync.i32", ir.LiteralStructType([i32, ops.I1]),
                      [i32] * 5)
        mask = _to_i32(self.b, mask, mt)
        lane = _to_i32(self.b, lane, lt)
        width = ops.BITS[t.code]
        bits = self.b.bitcast(v, ir.IntType(width)) if t.code in FLOATS else v

        def one(x):
            r = self.b.call(fn, [mask, i32(3), x, lane, i32(0x1F)])
            return self.b.extract_value(r, 0)
        if width == 32:
            out = one(bits)
        else:
            lo = one(self.b.trunc(bits, i32))
            hi = one(self.b.trunc(self.b.lshr(bits, ops.I64(32)), i32))
            out = self.b.or_(self.b.shl(self.b.zext(hi, ops.I64), ops.I64(32)),
                             self.b.zext(lo, ops.I64))
        return self.b.bitcast(out, ops.lltype(t.code)) if t.code in FLOATS else out

    def _atomic(self, op: str, e, t: Scalar):
        arr = self.em.expr(e.args[0])
        ptr = self.em.element(_Index(e.args[1]), arr)
        vals = [ops.convert(self.b, self.em.expr(a), self.em._t(a).code, t.code)
                for a in e.args[2:]]
        if op == "cas":
            r = self.b.cmpxchg(ptr, vals[0], vals[1], "monotonic", "monotonic")
            return self.b.extract_value(r, 0)
        if t.code in FLOATS:
            if op != "add" or t.code == "h":
                raise Unsupported(f"atomic {op} of {t.code}")
            name = {"f": "llvm.nvvm.atomic.load.add.f32.p0f32",
                    "d": "llvm.nvvm.atomic.load.add.f64.p0f64"}[t.code]
            return self.b.call(self._fn(name, ptr.type.pointee, [ptr.type, ptr.type.pointee]),
                               [ptr, vals[0]])
        if op in ("max", "min"):
            rmw = ("" if t.code in ops.SIGNED else "u") + op
            return self.b.atomic_rmw(rmw, ptr, vals[0], "monotonic")
        if op not in _RMW:
            raise Unsupported(f"atomic {op}")
        return self.b.atomic_rmw(_RMW[op], ptr, vals[0], "monotonic")

    def _intrinsic(self, f: str, e, t):
        """The PTX intrinsics of ``ptx.py`` as the same inline assembly."""
        asm = ptx_text.ASM.get(f)
        if asm is None and f not in ("addr_of", "lds_v2", "lds_v4"):
            raise Unsupported(f"call of {f}")
        args = self._args(e)
        if f == "addr_of":
            return self.b.ptrtoint(args[0][0].data, ops.I64)
        if f.startswith("lds_v"):
            return self._lds(int(f[-1]), args)
        text, cons, ins, outs = asm
        vals = []
        for (v, vt), kind in zip(args, ins):
            vals += self._operand(v, vt, kind, args)
        vals = [x for x in vals if x is not None]
        out_t = [ops.lltype(c) for c in outs]
        ret = (ir.LiteralStructType(out_t) if len(out_t) > 1 else
               out_t[0] if out_t else ir.VoidType())
        fnty = ir.FunctionType(ret, [v.type for v in vals])
        r = self.b.asm(fnty, text, cons, vals, side_effect=ptx_text.SIDE_EFFECT.get(f, False))
        if len(out_t) > 1:
            return tuple(self.b.extract_value(r, i) for i in range(len(out_t)))
        return r

    def _operand(self, v, vt, kind: str, args):
        """An intrinsic's operand ``kind`` (``ptx_text.ASM``): a register of a scalar code,
        ``s`` a 32-bit shared address of element ``next arg`` of a shared array, ``g`` a
        64-bit global element address, ``-`` consumed by the previous operand."""
        if kind == "-":
            return [None]
        if isinstance(vt, Array):
            self._pending = v
            return [None]
        if kind in ("s", "g"):
            arr = self._pending
            ix = ops.convert(self.b, v, vt.code, "l")
            p = self.b.gep(arr.data, [ix])
            if kind == "s":
                if arr.t.space != "shared":
                    raise Unsupported("ldmatrix/cp.async of a global array")
                return [self.b.ptrtoint(p, ops.I32)]
            if arr.t.space == "shared":             # a generic address of shared memory
                p = self.b.addrspacecast(p, p.type.pointee.as_pointer())
            return [self.b.ptrtoint(p, ops.I64)]
        if kind == "F":                        # float32 operand passed as its bits
            return [self.b.bitcast(ops.convert(self.b, v, vt.code, "f"), ops.I32)]
        if kind == "n":                        # a byte count as int32
            return [_to_i32(self.b, v, vt, signed=True)]
        return [ops.convert(self.b, v, vt.code, kind)]

    def _lds(self, n: int, args):
        (arr, _), (ix, it) = args
        if arr.t.space != "shared":
            raise Unsupported("lds of a global array")
        p = self.b.gep(arr.data, [ops.convert(self.b, ix, it.code, "l")])
        el = p.type.pointee
        vp = self.b.bitcast(p, ir.VectorType(el, n).as_pointer(3))
        vec = self.b.load(vp, align=n * max(1, ops.BITS[arr.t.dtype] // 8))
        return tuple(self.b.extract_element(vec, ops.I32(i)) for i in range(n))


class _Index:
    """An ``ast.Subscript``-like holder of one index node (atomics index like getitem)."""

    def __init__(self, node):
        self.slice = node


def _to_i32(b, v, t: Scalar, signed: bool = False):
    c = ops.base(t.code)
    if ops.BITS[c] > 32:
        return b.trunc(v, ops.I32)
    if ops.BITS[c] < 32:
        return (b.sext if signed and c in ops.SIGNED else b.zext)(v, ops.I32)
    return v


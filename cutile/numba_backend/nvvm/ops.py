"""Scalar operations in LLVM IR, computed as numba-cuda's lowering computes them.

Every operation runs at the argument types of the signature Numba picks (``types.binary``):
the operands are converted there first (``convert``: Numba's ``context.cast``), so the
integer promotion, the signed/unsigned choice of a comparison and the result of a mixed
operation are Numba's.  What the lowering adds beyond the instruction is reproduced:
integer ``//`` and ``%`` floor (Python) and give 0 for a zero divisor and for MIN // -1
(Numba's "numpy" error model, the one CUDA kernels compile with); ``-x`` and ``~x`` of a
small integer are computed at its own width, then widened; ``min``/``max`` select with the
ordered comparison (NaN handling of Python's algorithm).  No ``nsw``/``nuw`` flags: integers
wrap (R-MATH-4, ``intwrap.py``).
"""

from __future__ import annotations

from llvmlite import ir

from .types import FLOATS, INTS, Scalar, Unsupported

I1, I8, I16, I32, I64 = (ir.IntType(n) for n in (1, 8, 16, 32, 64))
LL = {"b": I1, "c": I8, "B": I8, "s": I16, "S": I16, "i": I32, "I": I32, "l": I64, "L": I64,
      "h": ir.HalfType(), "f": ir.FloatType(), "d": ir.DoubleType(), "n": I64, "N": I64,
      "T": I1}
SIGNED = set("csiln")
BITS = {"c": 8, "B": 8, "s": 16, "S": 16, "i": 32, "I": 32, "l": 64, "L": 64, "n": 64,
        "N": 64, "h": 16, "f": 32, "d": 64, "b": 1, "T": 1}


def lltype(code: str):
    return LL[code]


def base(code: str) -> str:
    return {"n": "l", "N": "L", "T": "b"}.get(code, code)


def const(t: Scalar):
    """The LLVM constant of a literal type."""
    if t.code == "N":
        return ir.Constant(I64, t.value - 2**64 if t.value >= 2**63 else t.value)
    return ir.Constant(LL[t.code], int(t.value))


class Builder(ir.IRBuilder):
    """An IRBuilder that remembers the conversions made in the current basic block: a value
    read many times (``tid``, a loop index) is widened once per block, not at every use
    (the float16 matmul's IR had 252 ``sext``s, mostly of the same few values)."""

    def __init__(self, block=None):
        super().__init__(block)
        self.converted: dict = {}       # (id(value), src, dst) -> (block, value, result)


def convert(b: Builder, v, src: str, dst: str):
    """``v`` of scalar code ``src`` as ``dst`` (Numba's ``context.cast`` between numbers)."""
    src, dst = base(src), base(dst)
    if src == dst:
        return v
    key = (id(v), src, dst)
    seen = b.converted.get(key)
    if seen is not None and seen[0] is b.block and seen[1] is v:
        return seen[2]
    out = _convert(b, v, src, dst)
    b.converted[key] = (b.block, v, out)
    return out


def _convert(b: ir.IRBuilder, v, src: str, dst: str):
    if (isinstance(v, ir.Constant) and isinstance(v.constant, int) and src in INTS
            and dst in INTS and BITS[dst] > BITS[src]):      # a widened literal: folded
        c = v.constant if src in SIGNED else v.constant % (1 << BITS[src])
        return ir.Constant(LL[dst], c)
    if dst == "b":
        if src in FLOATS:
            return b.fcmp_unordered("!=", v, ir.Constant(v.type, 0.0))
        return b.icmp_unsigned("!=", v, ir.Constant(v.type, 0))
    if src == "b":
        if dst in FLOATS:
            return b.uitofp(v, LL[dst])
        return b.zext(v, LL[dst])
    if src in INTS and dst in INTS:
        if BITS[dst] < BITS[src]:
            return b.trunc(v, LL[dst])
        if BITS[dst] == BITS[src]:
            return v
        return (b.sext if src in SIGNED else b.zext)(v, LL[dst])
    if src in INTS:
        return (b.sitofp if src in SIGNED else b.uitofp)(v, LL[dst])
    if dst in INTS:
        return (b.fptosi if dst in SIGNED else b.fptoui)(v, LL[dst])
    return (b.fpext if BITS[dst] > BITS[src] else b.fptrunc)(v, LL[dst])


_ICMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}


def compare(b, op: str, x, y, code: str):
    """``x op y`` of two ``code`` values (i1)."""
    if code in FLOATS:
        if op == "ne":
            return b.fcmp_unordered("!=", x, y)
        return b.fcmp_ordered(_ICMP[op], x, y)
    if code in SIGNED:
        return b.icmp_signed(_ICMP[op], x, y)
    return b.icmp_unsigned(_ICMP[op], x, y)


def binop(b, op: str, sig: tuple, x, y):
    """Numba's ``op`` for the signature ``sig`` = (result, left, right) codes, on operands
    already converted to the signature's argument types."""
    r, ta, tb = (base(c) for c in sig)
    if op in _ICMP:
        return compare(b, op, x, y, ta)
    if op in ("min", "max"):             # Numba's do_minmax: both at the unified type
        x, y = convert(b, x, ta, r), convert(b, y, tb, r)
        p = compare(b, "lt" if op == "min" else "gt", y, x, r)
        return b.select(p, y, x)
    if op == "truediv":
        if ta in INTS or ta == "b":
            x, y = convert(b, x, ta, r), convert(b, y, tb, r)
        return b.fdiv(x, y)
    # numba-cuda's integer and float implementations cast both operands to the result type
    x, y = convert(b, x, ta, r), convert(b, y, tb, r)
    if r in FLOATS:
        if op in ("floordiv", "mod"):
            raise Unsupported(f"float {op}")
        return {"add": b.fadd, "sub": b.fsub, "mul": b.fmul}[op](x, y)
    if op in ("floordiv", "mod"):
        return _divmod(b, r, x, y)[op == "mod"]
    if op == "rshift":
        return (b.ashr if r in SIGNED else b.lshr)(x, y)
    f = {"add": b.add, "sub": b.sub, "mul": b.mul, "and": b.and_, "or": b.or_,
         "xor": b.xor, "lshift": b.shl}[op]
    return f(x, y)


def _divmod(b, code: str, x, y):
    """Python's floor division and modulo of integers, 0 for a zero divisor and for the
    signed MIN // -1 (numba-cuda's ``_int_divmod_impl`` under the "numpy" error model).
    A positive constant divisor (tile sizes, strides: most divisions in generated code)
    needs neither guard: a power of two is a shift and a mask (exactly Python's floor and
    modulo in two's complement), any other a division fixed up when the remainder is
    negative."""
    t = x.type
    zero, one = ir.Constant(t, 0), ir.Constant(t, 1)
    d = y.constant if isinstance(y, ir.Constant) else None
    if isinstance(d, int) and not isinstance(d, bool) and 0 < d < (1 << (t.width - 1)):
        if d & (d - 1) == 0:
            k = ir.Constant(t, d.bit_length() - 1)
            return ((b.ashr if code in SIGNED else b.lshr)(x, k),
                    b.and_(x, ir.Constant(t, d - 1)))
        if code not in SIGNED:
            return b.udiv(x, y), b.urem(x, y)
        q, m = b.sdiv(x, y), b.srem(x, y)
        fix = b.icmp_signed("<", m, zero)
        return b.select(fix, b.sub(q, one), q), b.select(fix, b.add(m, y), m)
    ok = b.icmp_unsigned("!=", y, zero)
    ys = b.select(ok, y, one)                 # a divisor that cannot trap
    if code not in SIGNED:
        q, m = b.udiv(x, ys), b.urem(x, ys)
        return b.select(ok, q, zero), b.select(ok, m, zero)
    minval = ir.Constant(t, -(1 << (t.width - 1)))
    ovf = b.and_(b.icmp_signed("==", x, minval), b.icmp_signed("==", y, ir.Constant(t, -1)))
    ok = b.and_(ok, b.not_(ovf))
    ys = b.select(ok, y, one)
    q, m = b.sdiv(x, ys), b.srem(x, ys)
    fix = b.and_(b.icmp_signed("!=", m, zero),
                 b.icmp_signed("<", b.xor(ys, m), zero))
    q = b.select(fix, b.sub(q, one), q)
    m = b.select(fix, b.add(m, ys), m)
    return b.select(ok, q, zero), b.select(ok, m, zero)


def unop(b, op: str, sig: tuple, x):
    """Numba's unary ``op`` (neg, pos, invert, not, abs) for ``sig`` = (result, operand), on
    an operand already converted to the operand type."""
    r, a = base(sig[0]), base(sig[1])
    if op == "not":
        return b.not_(convert(b, x, a, "b"))
    if op == "pos":
        return convert(b, x, a, r)
    if op == "neg":
        v = b.fsub(ir.Constant(x.type, -0.0), x) if a in FLOATS else b.neg(x)
        return convert(b, v, a, r)
    if op == "invert":
        v = b.xor(x, ir.Constant(x.type, -1 if a != "b" else 1))
        return convert(b, v, a, r)
    if op == "abs":
        if a in FLOATS:
            f = b.module.declare_intrinsic("llvm.fabs", [x.type])
            return convert(b, b.call(f, [x]), a, r)
        if a not in SIGNED:
            return convert(b, x, a, r)
        v = b.select(b.icmp_signed("<", x, ir.Constant(x.type, 0)), b.neg(x), x)
        return convert(b, v, a, r)
    raise Unsupported(f"unary {op}")

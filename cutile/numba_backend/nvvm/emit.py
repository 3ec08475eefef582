"""NVVM IR for a generated kernel, from its source and ``infer.py``'s types, without Numba.

Why: Numba's Python frontend (bytecode -> IR, SSA, typing, lowering) is 80-90% of a
kernel's compile time (issue 26); the generated dialect is small enough to translate
directly.  The same source stays what the simulator runs.

- Parameters follow Numba's kernel ABI, so ``params.Packer`` packs a launch unchanged: an
  array is meminfo, parent, nitems, itemsize, data, shape..., strides... (in bytes); a bool
  travels as a byte.
- Every variable lives in an ``alloca`` per (name, LLVM type) that NVVM's mem2reg turns into
  registers; where paths meet, each incoming path converts its value to the joined type that
  ``infer`` computed (Numba's phi unification).
- An array element is raw address arithmetic (the generated code checks its own bounds):
  "C" arrays index from the shape, as Numba's "C" layout does (NVVM folds it), "A" arrays
  from the strides.  Shared arrays are ``addrspace(3)`` globals.
- Calls: ``calls.py``.  Scalar arithmetic: ``ops.py``.
"""

from __future__ import annotations

import ast
import contextlib
import gc
import threading

from llvmlite import ir

from . import calls, ops
from .infer import BINOPS, CMPOPS, UNOPS, Infer, cast_code, differing, dotted, infer
from .types import Array, ArrayValue, Scalar, Tuple, Unsupported, binary, unary

BOOL = Scalar("b")


class Emitter:
    """Translate ``fn`` (typed by ``inf``) into a kernel ``name`` of a new LLVM module."""

    def __init__(self, fn: ast.FunctionDef, inf: Infer, params: list, name: str,
                 max_threads: int | None = None, min_blocks: int | None = None):
        self.inf = inf
        self.module = ir.Module(name="cutile_nvvm")
        self.module.triple = "nvptx64-nvidia-cuda"
        self.module.data_layout = ("e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-"
                                   "i64:64:64-f32:32:32-f64:64:64-v16:16:16-v32:32:32-"
                                   "v64:64:64-v128:128:128-n16:32:64")
        argtys, self._unpack = _abi(params)
        self.func = ir.Function(self.module, ir.FunctionType(ir.VoidType(), argtys), name)
        allocas = self.func.append_basic_block("allocas")    # every alloca, then "entry"
        entry = self.func.append_basic_block("entry")
        self.b = ops.Builder(entry)
        self._allocas = ir.IRBuilder(allocas)
        self.slots: dict = {}
        self._known: dict = {}          # slot -> its value where the builder is: _load
        self._known_at = entry          # the block ``_known`` holds for
        self._stored: list = []         # every slot stored, in order (what a region wrote)
        self.objs: dict = {}            # range variables: values, not slots
        self.env: dict = {}
        self._loops: list = []          # (continue block, break block, exit env)
        self.calls = calls.Calls(self)
        for a, (t, v) in zip(fn.args.args, self._unpack(self.func.args)):
            if isinstance(t, Scalar) and t.code == "b":
                v = self.b.icmp_unsigned("!=", v, ops.I8(0))   # a bool travels as a byte
            self.set_var(a.arg, t, v)
        self.block(fn.body)
        if not self.b.block.is_terminated:
            self.b.ret_void()
        self._allocas.branch(entry)
        _annotate(self.module, self.func, max_threads, min_blocks)

    # ---- variables -------------------------------------------------------------------
    def _slot(self, name: str, t: Scalar):
        key = (name, str(ops.lltype(t.code)))
        s = self.slots.get(key)
        if s is None:
            s = self._allocas.alloca(ops.lltype(t.code), name=name)
            self.slots[key] = s
        return s

    def _raw_slot(self, key: str, llty):
        s = self.slots.get((key, str(llty)))
        if s is None:
            s = self.slots[(key, str(llty))] = self._allocas.alloca(llty, name=key)
        return s

    def set_var(self, name: str, t, v) -> None:
        self.env[name] = t
        self._put(name, t, v)

    def get_var(self, name: str):
        return self._get(name, self.env[name])

    def _put(self, key: str, t, v) -> None:
        """Store ``v`` of type ``t`` in the slots of variable ``key``: arrays (pointer, shape,
        strides) and tuples item by item, so that a variable assigned on several paths (an
        array picked by a branch) holds the value of the path taken."""
        if isinstance(t, Scalar):
            if not t.literal:               # a literal's value is its type's
                self._store(v, self._slot(key, t))
        elif isinstance(t, Tuple):
            for i, (it, iv) in enumerate(zip(t.items, v)):
                self._put(f"{key}.{i}", it, iv)
        elif isinstance(t, Array):
            for i, p in enumerate([v.data, *v.shape, *v.strides]):
                self._store(p, self._raw_slot(f"{key}.{i}", p.type))
        else:                               # a range: only ever read where it was made
            self.objs[key] = v

    def _get(self, key: str, t):
        if isinstance(t, Scalar):
            return ops.const(t) if t.literal else self._load(self._slot(key, t))
        if isinstance(t, Tuple):
            return tuple(self._get(f"{key}.{i}", it) for i, it in enumerate(t.items))
        if isinstance(t, Array):
            parts = [self._load(self._raw_slot(f"{key}.{i}", ty)) for i, ty in
                     enumerate(self._array_parts(t))]
            return ArrayValue(t, parts[0], parts[1:1 + t.ndim], parts[1 + t.ndim:])
        return self.objs[key]

    def _store(self, v, slot) -> None:
        self.b.store(v, slot)
        self._here()[slot] = v
        self._stored.append(slot)

    def _load(self, slot):
        """The slot's value: the value last stored or loaded where that still holds (a slot
        is a private ``alloca`` whose address never escapes), so a variable read many times
        costs one ``load``: 5374 of the float16 matmul's 14695 instructions were repeated
        loads, and the IR's size is what the translation, its printing and NVVM cost."""
        known = self._here()
        v = known.get(slot)
        if v is None:
            v = known[slot] = self.b.load(slot)
        return v

    def _here(self) -> dict:
        """``_known`` for the builder's block: empty in a block entered without ``_enter``."""
        if self._known_at is not self.b.block:
            self._known, self._known_at = {}, self.b.block
        return self._known

    def _enter(self, block, known: dict | None = None, drop=()) -> None:
        """Continue in ``block``, where the slot values ``known`` (minus the slots ``drop``)
        still hold: the caller knows that the block they were read or stored in dominates
        ``block`` and that no path to ``block`` stores those slots in between."""
        self.b.position_at_end(block)
        self._known = {k: v for k, v in (known or {}).items() if k not in drop}
        self._known_at = block

    def _region(self) -> tuple:
        """(values known here, a mark): ``_written(mark)`` gives the slots stored since."""
        return dict(self._here()), len(self._stored)

    def _written(self, mark: int) -> set:
        return set(self._stored[mark:])

    def _array_parts(self, t: Array) -> list:
        """LLVM types of an array variable's slots: data pointer, shape, strides."""
        el = ops.lltype(t.dtype) if t.dtype != "b" else ops.I8
        ptr = el.as_pointer(3) if t.space == "shared" else el.as_pointer()
        return [ptr] + [ops.I64] * (2 * t.ndim)

    def _converted(self, v, cur, t):
        """``v`` of type ``cur`` as type ``t`` (a join point: Numba's unification)."""
        if isinstance(cur, Scalar) and isinstance(t, Scalar):
            return ops.convert(self.b, v, cur.code, t.code)
        if isinstance(cur, Tuple) and isinstance(t, Tuple) and len(cur.items) == len(t.items):
            return tuple(self._converted(x, a, b) for x, a, b in zip(v, cur.items, t.items))
        if isinstance(cur, Array) and isinstance(t, Array) and t.layout == "A" and (
                cur.dtype, cur.ndim, cur.space) == (t.dtype, t.ndim, t.space):
            return ArrayValue(t, v.data, v.shape, v.strides)   # strides are the real ones
        raise Unsupported(f"a variable joins {cur} and {t}")

    def to_env(self, target: dict) -> None:
        """Convert the live variables to their types in ``target`` (a join point)."""
        for k in differing(target, self.env):
            cur, t = self.env.get(k), target[k]
            if cur is None or cur == t:
                continue
            self._put(k, t, self._converted(self.get_var(k), cur, t))

    # ---- statements ------------------------------------------------------------------
    def block(self, body: list) -> None:
        for s in body:
            if self.b.block.is_terminated:
                return
            m = getattr(self, "s_" + type(s).__name__)
            m(s)

    def s_Pass(self, s):
        pass

    def s_Expr(self, s):
        self.expr(s.value)

    def s_Return(self, s):
        self.b.ret_void()

    def s_Assign(self, s):
        self.assign(s.targets[0], self.expr(s.value), self.inf.types[id(s.value)])

    def assign(self, target, v, t) -> None:
        if isinstance(target, ast.Name):
            self.set_var(target.id, self.inf.types[id(target)], v)
        elif isinstance(target, ast.Tuple):
            for e, ev, et in zip(target.elts, v, t.items):
                self.assign(e, ev, et)
        else:
            arr = self.expr(target.value)
            ptr = self.element(target, arr)
            self.store(ptr, ops.convert(self.b, v, t.code, arr.t.dtype), arr.t.dtype)

    def store(self, ptr, v, code: str) -> None:
        if code == "b":
            v = self.b.zext(v, ops.I8)
        self.b.store(v, ptr, align=max(1, ops.BITS[code] // 8))

    def load(self, ptr, code: str):
        v = self.b.load(ptr, align=max(1, ops.BITS[code] // 8))
        return self.b.trunc(v, ops.I1) if code == "b" else v

    def truth(self, node):
        t = self.inf.types[id(node)]
        return ops.convert(self.b, self.expr(node), t.code, "b")

    def s_If(self, s):
        cond = self.truth(s.test)
        then, other, after = (self.func.append_basic_block(n) for n in ("then", "else", "endif"))
        self.b.cbranch(cond, then, other)
        env, join = dict(self.env), self.inf.joins[id(s)]
        known, mark = self._region()
        for blk, body in ((then, s.body), (other, s.orelse)):
            self.env = dict(env)
            self._enter(blk, known)
            self.block(body)
            if not self.b.block.is_terminated:
                self.to_env(join)
                self.b.branch(after)
        self._enter(after, known, drop=self._written(mark))
        if join is None:
            self.b.unreachable()
            self.env = env
        else:
            self.env = dict(join)

    def _loop(self, s, head_code, body_start, latch_code=None):
        """A loop: ``head_code()`` emits the test at the head (returns i1),
        ``body_start()`` the body's first assignments, ``latch_code()`` the step."""
        head_env, exit_env = self.inf.heads[id(s)], self.inf.exits[id(s)]
        head, body, latch, out, after = (self.func.append_basic_block(n) for n in (
            "head", "body", "latch", "exit", "after"))
        self.to_env(head_env)
        self.b.branch(head)
        self._enter(head)
        self.env = dict(head_env)
        self.b.cbranch(head_code(), body, out)
        in_head, _ = self._region()
        self._enter(body, in_head)
        body_start()
        self._loops.append((latch, after, head_env, exit_env))
        self.block(s.body)
        self._loops.pop()
        if not self.b.block.is_terminated:
            self.to_env(head_env)
            self.b.branch(latch)
        self.b.position_at_end(latch)
        self.env = dict(head_env)
        if latch_code:
            latch_code()
        self.b.branch(head)
        self._enter(out, in_head)
        self.env = dict(head_env)
        if exit_env is not None:
            self.to_env(exit_env)
        self.b.branch(after)
        self.b.position_at_end(after)
        self.env = dict(exit_env) if exit_env is not None else self.env

    def s_While(self, s):
        self._loop(s, lambda: self.truth(s.test), lambda: None)

    def s_For(self, s):
        rng = self.inf.types[id(s.iter)]
        code = rng.code
        args = [ops.convert(self.b, self.expr(a), self.inf.types[id(a)].code, code)
                for a in s.iter.args]
        one = ir.Constant(ops.lltype(code), 1)
        start, stop, step = (args + [one])[:3] if len(args) > 1 else (
            ir.Constant(ops.lltype(code), 0), args[0], one)
        ix = self._allocas.alloca(ops.lltype(code), name="range")
        self.b.store(start, ix)

        def test():
            i = self.b.load(ix)
            up = ops.compare(self.b, "lt", i, stop, code)
            if isinstance(step, ir.Constant):
                return up if step.constant > 0 else ops.compare(self.b, "gt", i, stop, code)
            pos = ops.compare(self.b, "gt", step, ir.Constant(step.type, 0), code)
            return self.b.select(pos, up, ops.compare(self.b, "gt", i, stop, code))

        def enter():
            self.set_var(s.target.id, Scalar(code), self.b.load(ix))

        def step_():
            self.b.store(self.b.add(self.b.load(ix), step), ix)
        self._loop(s, test, enter, step_)

    def s_Break(self, s):
        latch, after, head_env, exit_env = self._loops[-1]
        self.to_env(exit_env)
        # the exit block converts the head's variables; a break converts its own and joins
        # "after" directly
        self.b.branch(after)

    def s_Continue(self, s):
        latch, after, head_env, exit_env = self._loops[-1]
        self.to_env(head_env)
        self.b.branch(latch)

    # ---- expressions -----------------------------------------------------------------
    def expr(self, e):
        m = getattr(self, "e_" + type(e).__name__)
        return m(e)

    def _t(self, e):
        return self.inf.types[id(e)]

    def e_Constant(self, e):
        t = self._t(e)
        if t.code == "d":
            return ir.Constant(ir.DoubleType(), float(e.value))
        return ops.const(t)

    def e_Name(self, e):
        return self.get_var(e.id)

    def _operands(self, sig, nodes):
        return [ops.convert(self.b, self.expr(n), self._t(n).code, c)
                for n, c in zip(nodes, sig[1:])]

    def e_BinOp(self, e):
        op = BINOPS[type(e.op)]
        sig = binary(op, self._t(e.left), self._t(e.right))
        return ops.binop(self.b, op, sig, *self._operands(sig, (e.left, e.right)))

    def e_Compare(self, e):
        op = CMPOPS[type(e.ops[0])]
        sig = binary(op, self._t(e.left), self._t(e.comparators[0]))
        return ops.binop(self.b, op, sig, *self._operands(sig, (e.left, e.comparators[0])))

    def e_UnaryOp(self, e):
        op = UNOPS[type(e.op)]
        sig = unary(op, self._t(e.operand))
        return ops.unop(self.b, op, sig, *self._operands(sig, (e.operand,)))

    def _branches(self, test, arms, rt: Scalar):
        """A value chosen by ``test`` (i1) between lazily emitted ``arms`` (true, false)."""
        blocks = [self.func.append_basic_block(n) for n in ("t", "f")]
        after = self.func.append_basic_block("join")
        self.b.cbranch(test, *blocks)
        known, mark = self._region()
        incoming = []
        for blk, arm in zip(blocks, arms):
            self._enter(blk, known)
            v = arm()
            incoming.append((v, self.b.block))
            self.b.branch(after)
        self._enter(after, known, drop=self._written(mark))
        phi = self.b.phi(ops.lltype(rt.code))
        for v, blk in incoming:
            phi.add_incoming(v, blk)
        return phi

    def e_IfExp(self, e):
        rt = self._t(e)
        if not isinstance(rt, Scalar):          # arrays, tuples: through a variable's slots
            key = f"_ifexp{id(e)}"
            then, other, after = (self.func.append_basic_block(n) for n in ("t", "f", "join"))
            self.b.cbranch(self.truth(e.test), then, other)
            known, mark = self._region()
            for blk, n in ((then, e.body), (other, e.orelse)):
                self._enter(blk, known)
                v, t = self.expr(n), self._t(n)
                self._put(key, rt, v if t == rt else self._converted(v, t, rt))
                self.b.branch(after)
            self._enter(after, known, drop=self._written(mark))
            return self._get(key, rt)

        def arm(n):
            return lambda: ops.convert(self.b, self.expr(n), self._t(n).code, rt.code)
        return self._branches(self.truth(e.test), (arm(e.body), arm(e.orelse)), rt)

    def e_BoolOp(self, e):
        first = self.truth(e.values[0])
        if len(e.values) == 1:
            return first
        rest = ast.BoolOp(op=e.op, values=e.values[1:])
        self.inf.types[id(rest)] = BOOL
        if isinstance(e.op, ast.And):
            arms = (lambda: self.e_BoolOp(rest), lambda: first)
        else:
            arms = (lambda: first, lambda: self.e_BoolOp(rest))
        return self._branches(first, arms, BOOL)

    def e_Tuple(self, e):
        return tuple(self.expr(x) for x in e.elts)

    def e_Attribute(self, e):
        t = self._t(e)
        d = dotted(e)
        if d in calls.FLOAT_CONSTANTS:
            return ir.Constant(ir.DoubleType(), calls.FLOAT_CONSTANTS[d])
        if isinstance(t, Scalar):
            return self.calls.special(d)
        arr = self.expr(e.value)
        return tuple(arr.shape if e.attr == "shape" else arr.strides)

    def e_Subscript(self, e):
        v = self.expr(e.value)
        vt = self._t(e.value)
        if isinstance(vt, Tuple):
            return v[e.slice.value]
        if isinstance(e.slice, ast.Slice):
            lo = ops.convert(self.b, self.expr(e.slice.lower), self._t(e.slice.lower).code, "l")
            hi = ops.convert(self.b, self.expr(e.slice.upper), self._t(e.slice.upper).code, "l")
            return ArrayValue(v.t, self.b.gep(v.data, [lo]), [self.b.sub(hi, lo)], v.strides)
        t = self._t(e)
        if isinstance(t, Array):                # a sub-array: the remaining axes
            k = len(e.slice.elts) if isinstance(e.slice, ast.Tuple) else 1
            return ArrayValue(t, self.element(e, v), v.shape[k:], v.strides[k:])
        return self.load(self.element(e, v), v.t.dtype)

    def element(self, e, arr: ArrayValue):
        """Pointer to the element ``e.slice`` of ``arr`` (the first element of the sub-array
        when there are fewer indices than axes)."""
        ix = e.slice.elts if isinstance(e.slice, ast.Tuple) else [e.slice]
        idx = [ops.convert(self.b, self.expr(x), self._t(x).code, "l") for x in ix]
        idx += [ir.Constant(ops.I64, 0)] * (len(arr.shape) - len(idx))
        if arr.t.layout == "C" or arr.t.space == "shared":
            off = idx[0]
            for i, n in zip(idx[1:], arr.shape[1:]):
                off = self.b.add(self.b.mul(off, n), i)
            return self.b.gep(arr.data, [off])
        off = ir.Constant(ops.I64, 0)
        for i, st in zip(idx, arr.strides):
            off = self.b.add(off, self.b.mul(i, st))
        raw = self.b.gep(self.b.bitcast(arr.data, ops.I8.as_pointer()), [off])
        return self.b.bitcast(raw, arr.data.type)

    def e_Call(self, e):
        t = self._t(e)
        if isinstance(e.func, ast.Attribute) and e.func.attr == "view":   # infer._view
            v = self.expr(e.func.value)
            el = ops.lltype(t.dtype) if t.dtype != "b" else ops.I8
            ptr = el.as_pointer(3) if t.space == "shared" else el.as_pointer()
            return ArrayValue(t, self.b.bitcast(v.data, ptr), v.shape, v.strides)
        f = dotted(e.func)
        if f == "cuda.shared.array":
            return self.calls.shared(e, t)
        if cast_code(f):
            a = e.args[0]
            return ops.convert(self.b, self.expr(a), self._t(a).code, t.code)
        if f in ("min", "max", "abs"):
            sig = binary(f, *map(self._t, e.args)) if f != "abs" else unary(
                "abs", self._t(e.args[0]))
            vals = self._operands(sig, e.args)
            return (ops.binop(self.b, f, sig, *vals) if f != "abs"
                    else ops.unop(self.b, f, sig, *vals))
        return self.calls.call(f, e, t)


def _abi(params: list):
    """LLVM parameter types of Numba's kernel ABI and a function giving, per Python
    parameter, (name, type, value)."""
    tys = []
    for t in params:
        if isinstance(t, Array):
            el = ops.lltype(t.dtype) if t.dtype != "b" else ops.I8
            tys += [ops.I8.as_pointer()] * 2 + [ops.I64] * 2 + [el.as_pointer()]
            tys += [ops.I64] * (2 * t.ndim)
        elif isinstance(t, Scalar):
            tys.append(ops.I8 if t.code == "b" else ops.lltype(t.code))
        else:
            raise Unsupported(f"parameter of type {t}")
    return tys, lambda llargs: _unpack(params, llargs)


def _unpack(params, llargs):
    out = []
    it = iter(llargs)
    for t in params:
        if isinstance(t, Array):
            for _ in range(4):
                next(it)
            data = next(it)
            shape = [next(it) for _ in range(t.ndim)]
            strides = [next(it) for _ in range(t.ndim)]
            out.append((t, ArrayValue(t, data, shape, strides)))
        else:
            out.append((t, next(it)))
    return out


def _annotate(module, func, max_threads, min_blocks=None) -> None:
    """Mark ``func`` as a kernel (and its launch bounds: ``cuda.jit``'s ``launch_bounds``
    written as numba-cuda writes them) for NVVM."""
    i32 = ir.IntType(32)
    md = [module.add_metadata([func, ir.MetaDataString(module, "kernel"), i32(1)])]
    if max_threads:
        md.append(module.add_metadata([func, ir.MetaDataString(module, "maxntidx"),
                                       i32(max_threads)]))
    if min_blocks:
        md.append(module.add_metadata([func, ir.MetaDataString(module, "minctasm"),
                                       i32(min_blocks)]))
    nmd = module.add_named_metadata("nvvm.annotations")
    for m in md:
        nmd.add(m)
    # in ``@llvm.used``, as numba-cuda puts its kernels: a link-time-optimised link (LTO-IR
    # through nvJitLink) drops a kernel that nothing lists as used
    ptr = ir.IntType(8).as_pointer()
    used = ir.GlobalVariable(module, ir.ArrayType(ptr, 1), "llvm.used")
    used.linkage = "appending"
    used.section = "llvm.metadata"
    used.initializer = ir.Constant(ir.ArrayType(ptr, 1), [func.bitcast(ptr)])
    ver = module.add_named_metadata("nvvmir.version")
    ver.add(module.add_metadata([i32(2), i32(0), i32(3), i32(1)]))


def translate(source: str, fn_name: str, params: list, max_threads: int | None = None,
              min_blocks: int | None = None) -> str:
    """NVVM IR text of the generated kernel ``fn_name`` for parameter types ``params``
    (``types.Array`` / ``types.Scalar``) with ``cuda.jit``'s launch bounds; raises
    ``Unsupported``."""
    with _gc_paused():
        fn, inf = infer(source, fn_name, params)
        em = Emitter(fn, inf, params, fn_name, max_threads, min_blocks)
        return str(em.module)


_gc_lock = threading.Lock()
_gc_state = {"holders": 0, "was_enabled": False}


@contextlib.contextmanager
def _gc_paused():
    """Python's cyclic garbage collector off while a translation runs (back as it was when
    the last concurrent one ends).  Why: a translation allocates tens of thousands of
    llvmlite objects that all stay alive until it returns, and the collector walked them
    again and again: 40 % of the float16 matmul's translation time went to it."""
    with _gc_lock:
        if _gc_state["holders"] == 0:
            _gc_state["was_enabled"] = gc.isenabled()
            gc.disable()
        _gc_state["holders"] += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_state["holders"] -= 1
            if _gc_state["holders"] == 0 and _gc_state["was_enabled"]:
                gc.enable()

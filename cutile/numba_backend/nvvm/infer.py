"""Type inference for the generated dialect, giving every variable the type Numba gives it.

Why it must be Numba's: the generated source is what the simulator runs and what Numba
compiled until now; the direct NVVM path (``emit.py``) must compute the same values, and the
intermediate types (``int32 + int32`` is an int64 in Numba, so it does not wrap at 32 bits)
are part of those values.  The inference walks the function once in program order with an
environment name -> type, as Numba's SSA form does: an assignment gives the variable a new
type, and where paths meet (after an ``if``, at a loop head, after a loop) a variable's type is
the unification of the incoming ones (Numba's phi nodes); a loop is walked until its head
types stop changing.  Operations are typed by Numba's own tables (``types.py``).

Results, for the emitter: ``types[id(node)]`` for every expression, ``joins[id(stmt)]`` the
environment where paths meet after an ``If`` / ``IfExp`` / ``BoolOp`` (and ``heads`` /
``exits`` for loops), ``assigned[name]`` every type a variable takes (the agreement test).
Anything outside the dialect raises ``Unsupported``.
"""

from __future__ import annotations

import ast
import itertools
import operator

from .. import ptx_text
from .numba_table import LIBDEVICE
from .types import (
    CAST_CODES,
    FROM_NAME,
    ITEMSIZE,
    NONE,
    Array,
    Range,
    Scalar,
    Tuple,
    Unsupported,
    binary,
    literal,
    unary,
    unify,
)

BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv",
          ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.BitAnd: "and", ast.BitOr: "or",
          ast.BitXor: "xor", ast.LShift: "lshift", ast.RShift: "rshift"}
CMPOPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq",
          ast.NotEq: "ne"}
UNOPS = {ast.USub: "neg", ast.UAdd: "pos", ast.Invert: "invert", ast.Not: "not"}
SPECIAL = {"threadIdx", "blockIdx", "blockDim", "gridDim"}
SELP_CODES = set("dfsSiIlL")
SHFL_CODES = set("ilfd")
# PTX intrinsics of ptx.py: result element code and count (None: no result)
INTRINSICS = {"mma_f16": ("f", 4), "mma_bf16": ("f", 4), "mma_tf32": ("f", 4),
              "mma_s8": ("i", 4), "mma_u8": ("i", 4), "cp_async16": None,
              "cp_async_wait_all": None, "cp_async_commit": None, "addr_of": ("L", 0),
              **{f"cp_async_wait_group{n}": None for n in range(3)},
              **{f"ldsm{w}_x{n}{t}": ("I", n) for w in ("", "32") for n in (2, 4)
                 for t in ("", "_t")}}
# the rest of ptx_text.ASM (the wgmma family): results from its table
INTRINSICS.update({
    name: (None if not outs else (outs[0], 0) if len(outs) == 1 else (outs[0], len(outs)))
    for name, (_, _, _, outs) in ptx_text.ASM.items() if name not in INTRINSICS})
FLOAT_CONSTANTS = {"np.inf": float("inf"), "np.nan": float("nan"), "math.inf": float("inf"),
                   "math.nan": float("nan")}
ATOMICS = {"add", "sub", "max", "min", "cas", "exch", "and_", "or_", "xor"}

Env = dict


def _join(a: Env | None, b: Env | None) -> Env | None:
    if a is None:
        return None if b is None else dict(b)
    if b is None:
        return dict(a)
    out = dict(a)               # most variables hold the same type object on both paths
    for k in differing(b, a):
        out[k] = unify(a.get(k), b[k])
    return out


def differing(a: dict, b: dict) -> list:
    """The keys of ``a`` whose value is not the very object ``b`` holds for them.  Why so
    written: a kernel of hundreds of variables meets hundreds of join points, and nearly
    every variable holds the same type object on both sides; iterating in C (``map``,
    ``compress``) made these joins 5-10x cheaper than a Python loop."""
    return list(itertools.compress(a.keys(), map(operator.is_not, a.values(),
                                                 map(b.get, a.keys()))))


class Infer:
    """Types of one generated kernel function (``fn``: its ``ast.FunctionDef``) for the
    parameter types ``params`` and the module constants ``consts`` (name -> NumPy array)."""

    def __init__(self, fn: ast.FunctionDef, params: list, consts: dict | None = None):
        if len(fn.args.args) != len(params):
            raise Unsupported(f"{len(params)} parameter types for {len(fn.args.args)} "
                              "parameters")
        if consts:
            raise Unsupported("module constant tables")
        self.types: dict = {}
        self.joins: dict = {}
        self.heads: dict = {}
        self.exits: dict = {}
        self.assigned: dict = {}
        self._loops: list = []
        env = {a.arg: t for a, t in zip(fn.args.args, params)}
        for k, t in env.items():
            self.assigned.setdefault(k, set()).add(t)
        self.block(fn.body, env)

    # ---- statements ------------------------------------------------------------------
    def block(self, body: list, env: Env | None) -> Env | None:
        for s in body:
            if env is None:                         # after break/continue/return: dead
                break
            env = self.stmt(s, env)
        return env

    def stmt(self, s, env: Env) -> Env | None:
        m = getattr(self, "s_" + type(s).__name__, None)
        if m is None:
            raise Unsupported(f"statement {type(s).__name__} (line {s.lineno})")
        return m(s, env)

    def s_Pass(self, s, env):
        return env

    def s_Expr(self, s, env):
        self.expr(s.value, env)
        return env

    def s_Return(self, s, env):
        if s.value is not None:
            raise Unsupported("return with a value")
        return None

    def s_Assign(self, s, env):
        if len(s.targets) != 1:
            raise Unsupported(f"chained assignment (line {s.lineno})")
        t = self.expr(s.value, env)
        env = dict(env)
        self.bind(s.targets[0], t, env)
        return env

    def bind(self, target, t, env: Env) -> None:
        if isinstance(target, ast.Name):
            env[target.id] = t
            self.types[id(target)] = t
            self.assigned.setdefault(target.id, set()).add(t)
        elif isinstance(target, ast.Tuple):
            if not isinstance(t, Tuple) or len(t.items) != len(target.elts):
                raise Unsupported(f"unpacking a {t} into {len(target.elts)} names")
            for e, et in zip(target.elts, t.items):
                self.bind(e, et, env)
        elif isinstance(target, ast.Subscript):
            arr = self.expr(target.value, env)
            self._index(target, arr, env)
            if not isinstance(t, Scalar):
                raise Unsupported(f"storing a {t}")
        else:
            raise Unsupported(f"assignment to {type(target).__name__}")

    def s_If(self, s, env):
        self.expr(s.test, env)
        a = self.block(s.body, dict(env))
        b = self.block(s.orelse, dict(env))
        j = _join(a, b)
        self.joins[id(s)] = j
        return j

    def _loop(self, s, env: Env, enter) -> Env | None:
        """A loop's head environment by iteration to a fixpoint (``enter(head)``: the head's
        own assignments, returns the env the body starts from), and its exit."""
        head = dict(env)
        for _ in range(50):
            body_env = enter(head)
            self._loops.append(([], []))
            end = self.block(s.body, dict(body_env))
            breaks, conts = self._loops.pop()
            new = head
            for e in [end, *conts]:
                new = _join(new, e)
            if new == head:
                break
            head = new
        else:
            raise Unsupported("loop types do not settle")
        self.heads[id(s)] = head
        out = head
        for e in breaks:
            out = _join(out, e)
        self.exits[id(s)] = out
        return out

    def s_For(self, s, env):
        if s.orelse or not isinstance(s.target, ast.Name):
            raise Unsupported(f"for loop form (line {s.lineno})")
        rt = self.expr(s.iter, env)
        if not isinstance(rt, Range):
            raise Unsupported("for loop over something else than range")

        def enter(head):
            e = dict(head)
            self.bind(s.target, Scalar(rt.code), e)
            return e
        return self._loop(s, env, enter)

    def s_While(self, s, env):
        if s.orelse:
            raise Unsupported("while ... else")

        def enter(head):
            self.expr(s.test, head)
            return head
        return self._loop(s, env, enter)

    def s_Break(self, s, env):
        if not self._loops:
            raise Unsupported("break outside a loop")
        self._loops[-1][0].append(env)
        return None

    def s_Continue(self, s, env):
        if not self._loops:
            raise Unsupported("continue outside a loop")
        self._loops[-1][1].append(env)
        return None

    # ---- expressions -----------------------------------------------------------------
    def expr(self, e, env: Env):
        m = getattr(self, "e_" + type(e).__name__, None)
        if m is None:
            raise Unsupported(f"expression {type(e).__name__} (line {e.lineno})")
        t = m(e, env)
        self.types[id(e)] = t
        return t

    def e_Constant(self, e, env):
        return literal(e.value)

    def e_Name(self, e, env):
        if e.id in env:
            return env[e.id]
        raise Unsupported(f"name {e.id!r} (line {e.lineno})")

    def e_BinOp(self, e, env):
        op = BINOPS.get(type(e.op))
        if op is None:
            raise Unsupported(f"operator {type(e.op).__name__}")
        return Scalar(binary(op, self.expr(e.left, env), self.expr(e.right, env))[0])

    def e_UnaryOp(self, e, env):
        return Scalar(unary(UNOPS[type(e.op)], self.expr(e.operand, env))[0])

    def e_Compare(self, e, env):
        if len(e.ops) != 1 or type(e.ops[0]) not in CMPOPS:
            raise Unsupported(f"comparison form (line {e.lineno})")
        return Scalar(binary(CMPOPS[type(e.ops[0])], self.expr(e.left, env),
                             self.expr(e.comparators[0], env))[0])

    def e_BoolOp(self, e, env):
        t = None
        for v in e.values:
            vt = self.expr(v, env)
            if not isinstance(vt, Scalar) or vt.unlit().code != "b":
                raise Unsupported("and/or of non-bool operands")
            t = unify(t, vt)
        return t

    def e_IfExp(self, e, env):
        self.expr(e.test, env)
        return unify(self.expr(e.body, env), self.expr(e.orelse, env))

    def e_Tuple(self, e, env):
        return Tuple(tuple(self.expr(x, env) for x in e.elts))

    def e_Attribute(self, e, env):
        if dotted(e) in FLOAT_CONSTANTS:
            return Scalar("d")
        if isinstance(e.value, ast.Attribute) and dotted(e.value) in {
                f"cuda.{n}" for n in SPECIAL} and e.attr in "xyz":
            return Scalar("i")
        if e.attr in ("shape", "strides"):
            a = self.expr(e.value, env)
            if isinstance(a, Array):
                return Tuple((Scalar("l"),) * a.ndim)
        raise Unsupported(f"attribute {ast.unparse(e)} (line {e.lineno})")

    def e_Subscript(self, e, env):
        v = self.expr(e.value, env)
        if isinstance(v, Tuple):
            ix = e.slice
            if not (isinstance(ix, ast.Constant) and isinstance(ix.value, int)):
                raise Unsupported("tuple index that is not a constant")
            self.expr(ix, env)
            return v.items[ix.value]
        if isinstance(v, Array) and isinstance(e.slice, ast.Slice):
            return self._slice(e.slice, v, env)
        return self._index(e, v, env)

    def _index(self, e, arr, env) -> Scalar | Array:
        """An element, or (fewer indices than dimensions: a row of the global workspace,
        ``gs[row]``) the sub-array over the remaining axes, typed as Numba types it."""
        if not isinstance(arr, Array):
            raise Unsupported(f"subscript of {arr}")
        ix = e.slice.elts if isinstance(e.slice, ast.Tuple) else [e.slice]
        if not 1 <= len(ix) <= arr.ndim or len(ix) < arr.ndim and arr.space != "global":
            raise Unsupported(f"{len(ix)} indices into a {arr.ndim}-d array")
        for x in ix:
            t = self.expr(x, env)
            if not isinstance(t, Scalar) or t.unlit().code not in "csilBSIL":
                raise Unsupported(f"array index of type {t}")
        if len(ix) < arr.ndim:
            return Array(arr.dtype, arr.ndim - len(ix), "C" if arr.layout == "C" else "A")
        return Scalar(arr.dtype)

    def _slice(self, s: ast.Slice, arr: Array, env) -> Array:
        if arr.ndim != 1 or s.step is not None or s.lower is None or s.upper is None:
            raise Unsupported("slice form")
        for x in (s.lower, s.upper):
            if not isinstance(self.expr(x, env), Scalar):
                raise Unsupported("slice bound")
        return arr

    def e_Call(self, e, env):
        if isinstance(e.func, ast.Attribute) and e.func.attr == "view":
            return self._view(e, env)
        f = dotted(e.func)
        if f is None:
            raise Unsupported(f"call of {ast.unparse(e.func)}")
        if f == "cuda.shared.array":
            return self._shared(e)
        args = [self.expr(a, env) for a in e.args]
        if e.keywords:
            raise Unsupported(f"keyword arguments to {f}")
        return self.call(f, args, e)

    def _view(self, e, env) -> Array:
        """``a.view(np.uint32)``: the same memory as another element type of the same size
        (Numba keeps the layout then)."""
        arr = self.expr(e.func.value, env)
        name = dotted(e.args[0]) if len(e.args) == 1 else None
        code = FROM_NAME.get(name[3:]) if name and name.startswith("np.") else None
        if (not isinstance(arr, Array) or code in (None, "b") or e.keywords
                or ITEMSIZE[code] != ITEMSIZE[arr.dtype]):
            raise Unsupported(f"view form (line {e.lineno})")
        return Array(code, arr.ndim, arr.layout, arr.space)

    def _shared(self, e) -> Array:
        kw = {k.arg: k.value for k in e.keywords}
        if set(kw) - {"alignment"} or len(e.args) != 2:
            raise Unsupported("cuda.shared.array form")
        n, dt = e.args
        code = CAST_CODES.get(dotted(dt).removeprefix("dyn_")) if dotted(dt) else None
        if code is None or not isinstance(n, ast.Constant) or not isinstance(n.value, int):
            raise Unsupported("cuda.shared.array shape or dtype")
        return Array(code, 1, "C", "shared")

    def call(self, f: str, args: list, e):
        """The type of the call of ``f`` (dotted name) with argument types ``args``."""
        if cast_code(f):
            if len(args) != 1 or not isinstance(args[0], Scalar):
                raise Unsupported(f"{f} of {args}")
            return Scalar(cast_code(f))
        if f in ("min", "max") and len(args) == 2:
            return Scalar(binary(f, *args)[0])
        if f == "abs" and len(args) == 1:
            return Scalar(unary("abs", args[0])[0])
        if f == "range" and 1 <= len(args) <= 3:
            return _range(args)
        if f.startswith("libdevice."):
            sig = LIBDEVICE.get(f[10:])
            if sig is None or len(sig[1]) != len(args):
                raise Unsupported(f"{f} with {len(args)} arguments")
            return Scalar(sig[0])
        if f.startswith("cuda."):
            return self._cuda(f[5:], args)
        if f in INTRINSICS:
            r = INTRINSICS[f]
            if r is None:
                return NONE
            if r[1] == 0:
                return Scalar(r[0])
            return Tuple((Scalar(r[0]),) * r[1])
        if f in ("lds_v2", "lds_v4") and isinstance(args[0], Array):
            return Tuple((Scalar(args[0].dtype),) * int(f[-1]))
        raise Unsupported(f"call of {f} (line {e.lineno})")

    def _cuda(self, f: str, args: list):
        if f in ("syncthreads", "threadfence") and not args:
            return NONE
        if f == "selp" and len(args) == 3:
            a, b = (x.unlit() if isinstance(x, Scalar) else x for x in args[1:])
            if a != b or not isinstance(a, Scalar) or a.code not in SELP_CODES:
                raise Unsupported(f"cuda.selp of {a} and {b}")
            return a
        if f == "shfl_xor_sync" and len(args) == 3 and isinstance(args[1], Scalar):
            v = args[1].unlit()
            if v.code in SHFL_CODES:
                return v
        if f.startswith("atomic.") and f[7:] in ATOMICS and args and isinstance(
                args[0], Array):
            return Scalar(args[0].dtype)
        raise Unsupported(f"cuda.{f} of {args}")


def cast_code(f: str) -> str | None:
    """The scalar code a call of ``f`` converts to (``i32``, ``np.uint32``), or None."""
    if f.startswith("np."):
        return FROM_NAME.get(f[3:]) if f[3:] != "bool_" else "b"
    return CAST_CODES.get(f)


def _range(args: list) -> Range:
    """Numba's range state: int32 when every bound is a (non-literal) signed int of at most
    32 bits, uint64 when every bound is unsigned, else int64."""
    if not all(isinstance(a, Scalar) and a.code in "csilBSILnN" for a in args):
        raise Unsupported(f"range of {args}")
    if all(a.code in "csi" for a in args):
        return Range("i")
    if all(a.code in "BSIL" for a in args):
        return Range("L")
    return Range("l")


def dotted(e) -> str | None:
    if isinstance(e, ast.Name):
        return e.id
    if isinstance(e, ast.Attribute):
        v = dotted(e.value)
        return None if v is None else f"{v}.{e.attr}"
    return None


def infer(source: str, fn_name: str, params: list) -> tuple[ast.FunctionDef, Infer]:
    """Parse generated ``source`` and type its function ``fn_name``."""
    mod = ast.parse(source)
    fns = [f for f in mod.body if isinstance(f, ast.FunctionDef) and f.name == fn_name]
    if len(fns) != 1 or len(mod.body) != 1:
        raise Unsupported("source is not one kernel function")
    return fns[0], Infer(fns[0], params)

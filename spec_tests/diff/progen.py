"""Random valid tile *programs* for differential testing (issue 22): a Hypothesis strategy that
builds whole kernels from the op table, runs each on the interpreter and on the Numba backend
and compares every array argument afterwards.

Why programs and not shapes: the hand-written differential tests vary the shapes of fixed
kernels, so bugs that need a combination (an array variable reassigned in a loop and stored
through, a tile carried around a ``while`` with a ``break``, a gather fed by a scan) never show.

How it works:

- ``programs(cfg)`` draws a ``Program``: one pass of ``draw`` calls builds the kernel body
  statement by statement while tracking the type (dtype, shape) of every value, so the program
  is well typed and free of undefined behaviour *by construction* (guarded float->int casts and
  integer divisors, masked UNDETERMINED padding, per-block store targets, atomics whose result
  does not depend on the order).  Every choice shrinks towards the simplest form (the first
  op, float32, no nesting), so Hypothesis shrinks a failure to a small kernel.
- ``Program.source`` is the kernel as a Python source file (the frontend parses source);
  ``Program.script()`` is a runnable repro: source, inputs as exact bytes, launch, comparison.
- ``run_program`` runs both executors and classifies the outcome: ``ok``, ``mismatch``
  (outputs differ beyond the bound), ``numba-error`` (the backend raised), ``interp-error``
  (the interpreter crashed: a finding), ``ub`` / ``invalid`` (the interpreter reports undefined
  behaviour or a compile error: a *generator* bug, counted, never hidden).
- Bounds: bit for bit everywhere, except (on a GPU) the results of libdevice functions,
  which are stored as they are and compared within the documented ulps, and results of float
  ``minimum``/``maximum`` (sign of zero unspecified, R-MATH-6), compared with -0.0 == +0.0;
  such values are never fed to an op where the sign of a zero matters (a divisor, atan2, ...).

CLI (outside pytest; on a GPU or, without one, the simulator)::

    python3 -m spec_tests.diff.progen --n 2000 --seed 1 --jobs 16 [--exclude arrays,atomic]
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import sys
import traceback
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

from cutile import dtypes as dt

# --------------------------------------------------------------------------------------------
# configuration

FEATURES = ("math", "cast", "shape", "reduce", "scan", "mma", "padding", "gather", "scatter",
            "atomic", "loops", "if", "arrays", "array_loops", "array_atomics", "lists", "tuples",
            "helpers", "constants")

# first = what a failure shrinks to
DTYPES = [dt.float32, dt.int32, dt.float16, dt.bool_, dt.int64, dt.bfloat16, dt.float64,
          dt.int8, dt.int16, dt.uint8, dt.uint32, dt.uint64]
TRANSCENDENTAL = {"exp", "exp2", "log", "log2", "sin", "cos", "tan", "sinh", "cosh", "tanh",
                  "rsqrt", "pow", "atan2"}
# GPU libdevice bounds (docs/testing.md, "Bounds"): results of those functions, stored as is
ULPS = {dt.float32: 4, dt.float64: 4, dt.float16: 1, dt.bfloat16: 1}


@dataclass(frozen=True)
class Config:
    """What programs may contain and how large they get."""

    features: frozenset = frozenset(FEATURES)
    exact_math: bool = True          # transcendental functions bit for bit (the simulator)
    max_stmts: int = 6               # top-level statements
    max_depth: int = 2               # nesting of loops / ifs
    tiles: tuple = ((2, 4), (4, 4), (1, 8), (4, 2), (2, 8), (8, 2))
    max_grid: int = 2
    max_elems: int = 64              # largest tile drawn

    def has(self, f: str) -> bool:
        return f in self.features


def config_for(profile: str, *, exclude=(), simulator: bool = True) -> Config:
    """The configuration of a Hypothesis profile ("ci" small for the simulator; "gpu"/"deep"
    larger), without the excluded features."""
    feats = frozenset(f for f in FEATURES if f not in set(exclude))
    if profile in ("gpu", "deep"):
        return Config(features=feats, exact_math=simulator, max_stmts=10, max_depth=3,
                      tiles=((2, 4), (4, 8), (8, 8), (1, 16), (16, 4), (4, 16), (8, 16),
                             (16, 16), (2, 32)),
                      max_grid=4, max_elems=256)
    return Config(features=feats, exact_math=simulator)


# --------------------------------------------------------------------------------------------
# program description

@dataclass
class Val:
    """A value in scope: a tile (or scalar) with its static type, and what limits its use."""

    name: str
    dtype: dt.DType
    shape: tuple
    approx: bool = False      # a libdevice result on a GPU: stored only, compared within ulps
    zsign: bool = False       # the sign of a zero in it is unspecified (float min/max)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape)) if self.shape else 1


@dataclass
class Arr:
    """An array argument: an input (read only), an output (written per block, poisoned first)
    or an atomic target."""

    name: str
    dtype: dt.DType
    shape: tuple
    role: str                  # "in" | "out" | "atom"
    ulps: int = 0
    zsign: bool = False


@dataclass
class ListArg:
    """A list-of-arrays argument (R-PY-4): arrays of one dtype and rank."""

    name: str
    items: list


@dataclass
class Program:
    """A generated kernel: its source, its arguments and its launch."""

    helpers: list
    body: list
    params: list               # Arr | ListArg | (name, kind, value) for scalars and constants
    grid: tuple
    seed: int
    features: set = field(default_factory=set)

    @property
    def source(self) -> str:
        sig = []
        for p in self.params:
            if isinstance(p, (Arr, ListArg)):
                sig.append(p.name)
            elif p[1] == "const":
                sig.append(f"{p[0]}: ct.Constant[int]")
            else:
                sig.append(p[0])
        head = "import math\n\n" + "".join(h + "\n\n" for h in self.helpers)
        return (head + f"@ct.kernel\ndef kern({', '.join(sig)}):\n"
                + "".join(f"    {ln}\n" for ln in self.body))

    def arrays(self) -> list:
        out = []
        for p in self.params:
            if isinstance(p, Arr):
                out.append(p)
            elif isinstance(p, ListArg):
                out += p.items
        return out

    def args(self) -> tuple:
        """The launch arguments (fresh arrays every call)."""
        rng = np.random.default_rng(self.seed)
        data = {a.name: make_data(rng, a) for a in self.arrays()}
        out = []
        for p in self.params:
            if isinstance(p, Arr):
                out.append(data[p.name])
            elif isinstance(p, ListArg):
                out.append([data[a.name] for a in p.items])
            else:
                out.append(p[2])
        return tuple(out)

    def bounds(self) -> dict:
        """Per array leaf name (as run_on names it): (ulps, signed_zero)."""
        res = {}
        for p in self.params:
            items = [(p.name, p)] if isinstance(p, Arr) else \
                [(f"{p.name}[{i}]", a) for i, a in enumerate(p.items)] \
                if isinstance(p, ListArg) else []
            for n, a in items:
                res[n] = (a.ulps, not a.zsign)
        return res

    def script(self) -> str:
        """A runnable repro: the kernel, its inputs (exact bytes), the launch on both
        executors and the comparison."""
        lines = ["# repro generated by spec_tests/diff/progen.py; run from the repository root",
                 "import os", "import sys", "sys.path.insert(0, os.getcwd())",
                 "if not __import__('glob').glob('/dev/nvidia[0-9]*'):",
                 "    os.environ.setdefault('NUMBA_ENABLE_CUDASIM', '1')",
                 "import numpy as np", "import ml_dtypes  # noqa: F401", "import cutile as ct",
                 "from cutile import Constant  # noqa: F401",
                 "from spec_tests.diff.progen import compare_launch", "",
                 self.source.rstrip(), ""]
        args = self.args()

        def lit(x):
            if isinstance(x, np.ndarray):
                dn = x.dtype.name
                dexpr = f"ml_dtypes.{dn}" if dn in ("bfloat16",) else f"np.{dn}"
                return (f"np.frombuffer(bytes.fromhex('{x.tobytes().hex()}'), {dexpr})"
                        f".reshape({tuple(x.shape)!r}).copy()")
            if isinstance(x, list):
                return "[" + ", ".join(lit(a) for a in x) + "]"
            return repr(x)
        lines.append("args = (")
        for p, a in zip(self.params, args):
            name = p.name if isinstance(p, (Arr, ListArg)) else p[0]
            lines.append(f"    {lit(a)},  # {name}")
        lines.append(")")
        lines.append(f"print(compare_launch(kern, {self.grid!r}, args, {self.bounds()!r}))")
        return "\n".join(lines) + "\n"


def _np(d: dt.DType):
    return d.np_dtype


def make_data(rng, a: Arr) -> np.ndarray:
    """Contents of an array: poison for outputs (an unwritten element shows), values with the
    special cases for inputs, small integers for atomic targets."""
    from cutile.testing import poison
    npd = np.dtype(_np(a.dtype))
    if a.role == "out":
        return poison(a.shape, npd)
    n = int(np.prod(a.shape))
    if a.role == "atom":
        return rng.integers(0, 8, size=n).astype(npd).reshape(a.shape)
    if a.dtype.is_bool:
        return (rng.random(n) < 0.5).reshape(a.shape)
    if a.dtype.is_integral:
        info = np.iinfo(npd)
        wide = rng.integers(info.min, info.max, size=n, dtype=npd, endpoint=True)
        small = rng.integers(-4 if a.dtype.is_signed else 0, 9, size=n).astype(npd)
        return np.where(rng.random(n) < 0.75, small, wide).astype(npd).reshape(a.shape)
    v = rng.standard_normal(n) * 10.0 ** rng.integers(-2, 3, size=n)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 2.0])
    v = np.where(rng.random(n) < 0.12, special[rng.integers(0, len(special), size=n)], v)
    with np.errstate(all="ignore"):
        return v.astype(npd).reshape(a.shape)


# --------------------------------------------------------------------------------------------
# the generator

def _bcast(a: tuple, b: tuple):
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


def _shape_src(shape: tuple) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def _fits(c: int, d: dt.DType) -> bool:
    lo, hi = dt.int_range(d)
    return lo <= c <= hi


class _Gen:
    """One program's generation state: ``draw`` is Hypothesis's."""

    def __init__(self, draw, cfg: Config):
        self.draw, self.cfg = draw, cfg
        self.ids = itertools.count()
        self.params: list = []
        self.helpers: list = []
        self.feats: set = set()
        self.scalar_params: dict = {}
        self.pure = False                  # generating a helper body: parameters only
        tiles = [t for t in cfg.tiles if t[0] * t[1] <= cfg.max_elems]
        self.TM, self.TN = self.pick(tiles)
        self.G = self.int(1, cfg.max_grid)
        self.use_const_shape = cfg.has("constants") and self.flag()
        if self.use_const_shape:
            self.feats.add("constants")
            self.params.append(("TM", "const", self.TM))
            self.params.append(("TN", "const", self.TN))

    # -- drawing helpers (all shrink towards the first / smallest / False) --------------------
    def int(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def pick(self, seq):
        seq = list(seq)
        return seq[self.int(0, len(seq) - 1)]

    def flag(self) -> bool:
        return self.draw(st.booleans())

    def new(self, prefix: str) -> str:
        return f"{prefix}{next(self.ids)}"

    def rare(self, k: int = 4) -> bool:
        """True with probability about 1/k (shrinks to False)."""
        return self.int(0, k - 1) == k - 1

    # -- arguments ----------------------------------------------------------------------------
    def tile_src(self) -> str:
        return "(TM, TN)" if self.use_const_shape else f"({self.TM}, {self.TN})"

    def rows(self, t: int) -> int:
        """A row count whose last block tile is partial (or full), never empty."""
        return self.G * t - self.int(0, t - 1)

    def new_input(self, d: dt.DType, kind: str = "2d", wide: bool = False) -> Arr:
        TM, TN = self.TM, self.TN
        if kind == "2d":
            cols = (2 * TN if wide else TN) - self.int(0, TN - 1)
            shape = (self.rows(TM), cols)
        else:                                          # 1d, tiles of TM*TN
            shape = (self.rows(TM * TN),)
        a = Arr(self.new("x"), d, shape, "in")
        return a

    def add_param(self, p):
        self.params.append(p)
        return p

    def scalar(self, kind: str) -> Val:
        """A runtime scalar argument: n (int, small) or s (float)."""
        if kind not in self.scalar_params:
            if kind == "n":
                self.scalar_params[kind] = Val("n", dt.int32, ())
                self.params.append(("n", "int", self.int(0, 3)))
            else:
                self.scalar_params[kind] = Val("s", dt.float32, ())
                self.params.append(("s", "float", self.pick([1.5, -0.25, 3.0, 0.0])))
        return self.scalar_params[kind]

    def const_param(self) -> str:
        """A ``ct.Constant[int]`` parameter (0..3)."""
        name = self.new("C")
        self.params.append((name, "const", self.int(0, 3)))
        self.feats.add("constants")
        return name

    # -- picking values -----------------------------------------------------------------------
    def usable(self, env, pred=lambda v: True) -> list:
        return [v for v in env if not v.approx and pred(v)]

    def pick_val(self, env, pred=lambda v: True):
        c = self.usable(env, pred)
        return self.pick(c) if c else None

    def pick_dtype(self) -> dt.DType:
        # mostly the common five, the others now and then
        if self.rare(4):
            return self.pick(DTYPES)
        return self.pick(DTYPES[:5])

    # -- casts --------------------------------------------------------------------------------
    def cast(self, v: Val, to: dt.DType) -> str:
        """``v`` converted to ``to`` without undefined behaviour: NaN / out-of-range floats
        become 0 before a float->int conversion (R-UB-6)."""
        if v.dtype is to:
            return v.name
        if v.dtype.is_float and to.is_integral and not to.is_bool:
            lo, hi = dt.int_range(to)
            g = f"({v.name} > {float(lo - 1)!r}) & ({v.name} < {float(hi + 1)!r})"
            return f"ct.where({g}, {v.name}, 0).astype(ct.{to.name})"
        return f"{v.name}.astype(ct.{to.name})"

    # -- statements ---------------------------------------------------------------------------
    def emit(self, out: list, expr: str, d: dt.DType, shape: tuple, *, approx=False,
             zsign=False, prefix="v") -> Val:
        name = self.new(prefix)
        out.append(f"{name} = {expr}")
        return Val(name, d, tuple(shape), approx, zsign)

    def block(self, env: list, depth: int, n_max: int) -> list:
        """Statements (lines, nested ones indented) that extend ``env`` in place."""
        out: list = []
        for k in range(n_max):
            if k and self.int(0, 4) == 0:       # "one more?" (4 in 5; shrinks to "no")
                break
            self.statement(out, env, depth)
        return out

    def statement(self, out: list, env: list, depth: int) -> None:
        cfg = self.cfg
        kinds = ["binary", "unary", "load", "store", "where", "const"]
        if cfg.has("cast"):
            kinds.append("cast")
        if cfg.has("math"):
            kinds.append("math")
        if cfg.has("shape"):
            kinds.append("shape")
        if cfg.has("reduce"):
            kinds.append("reduce")
        if cfg.has("scan"):
            kinds.append("scan")
        if cfg.has("mma"):
            kinds.append("mma")
        if cfg.has("gather"):
            kinds.append("gather")
        if cfg.has("scatter"):
            kinds.append("scatter")
        if cfg.has("atomic"):
            kinds.append("atomic")
        if cfg.has("helpers"):
            kinds.append("helper")
        if cfg.has("tuples"):
            kinds.append("tuple")
        if depth < cfg.max_depth:
            if cfg.has("loops"):
                kinds += ["for", "while"]
            if cfg.has("if"):
                kinds.append("if")
        kind = self.pick(kinds)
        getattr(self, f"s_{kind}")(out, env, depth)

    # ---- values -----------------------------------------------------------------------------
    def operand(self, out, env) -> Val:
        """A tile to compute on: an existing one, or a fresh load (not inside a helper)."""
        v = self.pick_val(env, lambda v: v.shape != () or self.rare(3))
        if self.pure:
            return v or self.pick_val(env)
        if v is None or self.rare(5):
            return self.load(out, env)
        return v

    def s_load(self, out, env, depth):
        v = self.load(out, env)
        env.append(v)

    def load(self, out, env, d: dt.DType | None = None, kind: str | None = None) -> Val:
        """A tile load of a fresh input (or inputs chosen at run time: arrays as values)."""
        d = d or self.pick_dtype()
        TM, TN = self.TM, self.TN
        kind = kind or ("2d" if not self.rare(4) else "1d")
        pads = ["ZERO"]
        if self.cfg.has("padding"):
            pads += ["UNDETERMINED"] + (["NEG_ZERO", "NAN", "POS_INF", "NEG_INF"]
                                        if d.is_float else [])
        pad = self.pick(pads)
        if pad != "ZERO":
            self.feats.add("padding")
        if self.cfg.has("arrays") and self.rare(3):
            arrs = [self.new_input(d, kind) for _ in range(self.int(2, 3))]
            A = self.array_var(out, env, arrs)
        else:
            a = self.new_input(d, kind)
            self.add_param(a)
            A = a.name
        if kind == "2d":
            idx, shape, tshape = "(b, 0)", (TM, TN), self.tile_src()
        else:
            idx, shape, tshape = "(b,)", (TM * TN,), f"({TM * TN},)"
        pm = f"ct.PaddingMode.{pad}"
        if self.rare(4):
            expr = f"{A}.tiled_view({tshape}, padding_mode={pm}).load({idx})"
        else:
            expr = f"ct.load({A}, {idx}, {tshape}, padding_mode={pm})"
        if pad == "UNDETERMINED":       # R-PAD-3: mask the padded lanes before any use
            t = self.emit(out, expr, d, shape, prefix="u")
            if kind == "2d":
                m = (f"((b * {TM} + ct.arange({TM}, dtype=ct.int32))[:, None] < {A}.shape[0])"
                     f" & (ct.arange({TN}, dtype=ct.int32)[None, :] < {A}.shape[1])")
            else:
                m = f"(b * {TM * TN} + ct.arange({TM * TN}, dtype=ct.int32)) < {A}.shape[0]"
            fill = "False" if d.is_bool else "0"
            expr = f"ct.where({m}, {t.name}, {fill})"
        return self.emit(out, expr, d, shape)

    def s_const(self, out, env, depth):
        d = self.pick_dtype()
        shape = self.pick([(self.TM, self.TN), (self.TN,), (self.TM, 1), ()])
        k = self.pick(["full", "zeros", "ones", "arange"])
        if k == "arange" and shape and len(shape) == 1 and not d.is_bool:
            v = self.emit(out, f"ct.arange({shape[0]}, dtype=ct.{d.name})", d, shape)
        elif k in ("zeros", "ones") and shape:
            v = self.emit(out, f"ct.{k}({_shape_src(shape)}, ct.{d.name})", d, shape)
        else:
            c = self.const_for(d)
            if shape == ():
                v = self.emit(out, f"ct.{d.name}({c})", d, ())
            else:
                v = self.emit(out, f"ct.full({_shape_src(shape)}, {c}, ct.{d.name})", d, shape)
        env.append(v)

    def const_for(self, d: dt.DType) -> str:
        if d.is_bool:
            return self.pick(["True", "False"])
        if d.is_float:
            return self.pick(["1.5", "-2.0", "0.0", "-0.0", "3.25", "1e30", "0.1"])
        c = self.pick([1, 3, -2, 7, 100, -128, 65535])
        if not _fits(c, d):
            c = 1
        return str(c)

    def other(self, env, a: Val, *, allow_loose=True):
        """A second operand for ``a``: (src, dtype, shape, flags, kind) with kind one of
        "val", "loose", "strict", "scalar"; the dtype of a loose constant is None."""
        kinds = ["val"] + (["loose"] if allow_loose else []) + ["strict"] + \
            ([] if self.pure else ["scalar"])
        k = self.pick(kinds)
        if k == "val":
            b = self.pick_val(env, lambda v: _bcast(v.shape, a.shape) is not None and
                              int(np.prod(_bcast(v.shape, a.shape) or (1,)))
                              <= self.cfg.max_elems)
            if b is not None:
                return b.name, b.dtype, b.shape, b, "val"
            k = "loose" if allow_loose else "strict"
        if k == "scalar":
            opts = ["b", "n", "s"]
            if self.cfg.has("constants"):
                opts.append("C")
            which = self.pick(opts)
            if which == "b":
                return "b", dt.int32, (), None, "scalar"
            if which == "C":
                return self.const_param(), None, (), None, "loose"
            v = self.scalar(which)
            return v.name, v.dtype, (), None, "scalar"
        if k == "loose":
            if a.dtype.is_float:
                c = self.pick(["2.0", "0.5", "-1.5", "3", "1e-3"])
            elif a.dtype.is_bool:
                c = self.pick(["2", "1.5"])
            else:
                c = self.pick([2, 3, 1, 5, -3, 100])
                if not _fits(c, a.dtype):
                    c = 1
                c = str(c)
            return c, None, (), None, "loose"
        d = self.pick_dtype()
        return f"ct.{d.name}({self.const_for(d)})", d, (), None, "strict"

    @staticmethod
    def loose_result(a: dt.DType, c: str) -> dt.DType:
        """R-PROMO-4: a tile with a loose constant."""
        is_float = "." in c or "e" in c
        if a.is_float:
            return a
        if is_float:
            return dt.float32
        if a.is_bool:
            return dt.int32
        return a

    def s_binary(self, out, env, depth):
        a = self.operand(out, env)
        bsrc, bd, bshape, bval, bkind = self.other(env, a)
        shape = _bcast(a.shape, bshape)
        if bkind == "loose":
            d = self.loose_result(a.dtype, bsrc if bd is None else "1")
        else:
            d = dt.promote(a.dtype, bd)
        if d is None or shape is None:
            bsrc, bd, bshape, bval, bkind = "1", None, (), None, "loose"
            d, shape = self.loose_result(a.dtype, "1"), a.shape
        bz = bval.zsign if bval else False
        zs = a.zsign or bz
        if d.is_float:
            ops = ["+", "-", "*", "/", "min", "max", "cmp", "//", "%"]
            if self.cfg.has("math"):
                ops += ["pow", "atan2"]
        elif d.is_bool:
            ops = ["&", "|", "^", "cmp"]
        else:
            ops = ["+", "-", "*", "//", "%", "min", "max", "&", "|", "^", "<<", ">>", "cmp"]
        op = self.pick(ops)
        if a.dtype.is_bool and (bd is dt.bool_) and op not in ("&", "|", "^", "cmp"):
            op = "&"
        if op in ("/", "//", "%") and bz or op in ("atan2", "pow") and zs:
            op = "+"
        if op in ("<<", ">>") and (a.dtype.is_bool or bd is dt.bool_):
            op = "+"                       # shifts take integers on both sides
        if op in ("&", "|", "^"):
            if bkind == "loose" and (a.dtype.is_bool or bsrc in ("2.0", "0.5", "-1.5", "1e-3")
                                     or not d.is_integral):
                bsrc, bd, shape = a.name, a.dtype, a.shape
            elif bkind != "loose" and bd is not a.dtype:
                bsrc = self.cast(Val(bsrc, bd, bshape), a.dtype) if bd is not None else bsrc
            d = a.dtype
        approx = not self.cfg.exact_math and op in TRANSCENDENTAL
        if op == "cmp":
            cop = self.pick(["<", "==", "!=", ">=", ">", "<="])
            if a.dtype.is_bool and bd is dt.bool_:
                cop = self.pick(["==", "!="])
            v = self.emit(out, f"{a.name} {cop} {bsrc}", dt.bool_, shape)
        elif op in ("min", "max"):
            fn = self.pick([f"ct.{op}imum", op])
            v = self.emit(out, f"{fn}({a.name}, {bsrc})", d, shape,
                          zsign=zs or d.is_float)
        elif op in ("pow", "atan2"):
            v = self.emit(out, f"ct.{op}({a.name}, {bsrc})", d, shape, approx=approx, zsign=zs)
        elif op in ("<<", ">>"):
            bits = d.bitwidth
            if bkind == "loose":
                cnt = str(self.int(0, min(bits, 8) - 1))
            elif bd is not None and bd.is_integral and not bd.is_bool:
                cnt = f"({bsrc} & {bits - 1})"
            else:
                cnt = "1"
            v = self.emit(out, f"{a.name} {op} {cnt}", d, shape)
        elif op in ("//", "%") and d.is_integral:
            if bkind == "loose":
                c = int(bsrc) if bsrc.lstrip("-").isdigit() else 3
                if c in (0, -1) or not _fits(c, d):
                    c = 3
                den = str(c)
            elif bd is not None and bd.is_bool:
                # where(b == 0, 1, b) of a bool b is int32 (the literal): never zero instead
                den = f"({bsrc}.astype(ct.{d.name}) + 1)"
            else:
                den = f"ct.where({bsrc} == 0, 1, {bsrc})"
                if (bd is not None and bd.is_signed) or d.is_signed:
                    den = f"ct.where({bsrc} == -1, 2, {den})" if (bd and bd.is_signed) else den
            v = self.emit(out, f"{a.name} {op} {den}", d, shape)
        else:
            fn = {"+": "add", "-": "sub", "*": "mul", "/": "truediv", "//": "floordiv",
                  "%": "mod", "&": "bitwise_and", "|": "bitwise_or", "^": "bitwise_xor"}
            if self.rare(5) and op in fn:
                expr = f"ct.{fn[op]}({a.name}, {bsrc})"
            else:
                expr = f"{a.name} {op} {bsrc}"
            rd = dt.float32 if op == "/" and not d.is_float else d
            v = self.emit(out, expr, rd, shape, zsign=zs and rd.is_float)
        env.append(v)

    def s_unary(self, out, env, depth):
        a = self.operand(out, env)
        d = a.dtype
        if d.is_float:
            ops = ["-", "abs", "floor", "ceil", "isnan", "sqrt"]
        elif d.is_bool:
            ops = ["~", "abs", "-"]
        else:
            ops = ["-", "abs", "~"]
        op = self.pick(ops)
        if op == "-":
            v = self.emit(out, f"-{a.name}", dt.int32 if d.is_bool else d, a.shape,
                          zsign=a.zsign)
        elif op == "~":
            v = self.emit(out, f"~{a.name}", d, a.shape)
        elif op == "abs":
            v = self.emit(out, self.pick([f"ct.abs({a.name})", f"abs({a.name})"]), d, a.shape,
                          zsign=a.zsign)
        elif op == "isnan":
            v = self.emit(out, f"ct.isnan({a.name})", dt.bool_, a.shape)
        else:
            v = self.emit(out, f"ct.{op}({a.name})", d, a.shape, zsign=a.zsign)
        env.append(v)

    def s_math(self, out, env, depth):
        a = self.operand(out, env)
        fns = ["exp", "exp2", "log", "log2", "sin", "cos", "tanh", "sqrt", "rsqrt", "tan",
               "sinh", "cosh"]
        fn = self.pick(fns)
        if fn == "rsqrt" and a.zsign:
            fn = "exp"
        d = a.dtype if a.dtype.is_float else dt.float32
        approx = not self.cfg.exact_math and fn in TRANSCENDENTAL
        self.feats.add("math")
        env.append(self.emit(out, f"ct.{fn}({a.name})", d, a.shape, approx=approx,
                             zsign=a.zsign))

    def s_where(self, out, env, depth):
        c = self.pick_val(env, lambda v: v.dtype.is_bool)
        a = self.operand(out, env)
        if c is None:
            c = self.emit(out, f"{a.name} {self.pick(['>', '<', '!='])} 0", dt.bool_, a.shape)
        shape = _bcast(c.shape, a.shape)
        if shape is None:
            c = self.emit(out, f"{a.name} != 0", dt.bool_, a.shape)
            shape = a.shape
        bsrc, bd, bshape, bval, bkind = self.other(env, a)
        s2 = _bcast(shape, bshape)
        if bkind == "loose":
            d = self.loose_result(a.dtype, bsrc)
        else:
            d = dt.promote(a.dtype, bd)
        if d is None or s2 is None or a.dtype.is_bool and bkind == "loose":
            bsrc, d, s2, bval = a.name, a.dtype, shape, None
        zs = a.zsign or (bval.zsign if bval else False)
        env.append(self.emit(out, f"ct.where({c.name}, {a.name}, {bsrc})", d, s2, zsign=zs))

    def s_cast(self, out, env, depth):
        a = self.operand(out, env)
        to = self.pick_dtype()
        self.feats.add("cast")
        env.append(self.emit(out, self.cast(a, to), to, a.shape,
                             zsign=a.zsign and to.is_float))

    def s_shape(self, out, env, depth):
        a = self.pick_val(env, lambda v: len(v.shape) >= 1) or self.operand(out, env)
        self.feats.add("shape")
        nd, size = len(a.shape), a.size
        ops = ["reshape", "broadcast", "expand"]
        if nd >= 2:
            ops += ["transpose", "permute"]
        if size * 2 <= self.cfg.max_elems and nd >= 1:
            ops.append("cat")
        op = self.pick(ops)
        fl = dict(zsign=a.zsign)
        if op == "reshape" or nd == 0:
            # a random factorisation of the size into 1..3 powers of two
            e = int(math.log2(size)) if size else 0
            k = self.int(1, 3)
            cuts = sorted(self.int(0, e) for _ in range(k - 1))
            parts = [b - a_ for a_, b in zip([0] + cuts, cuts + [e])]
            shape = tuple(2 ** p for p in parts)
            form = self.pick([f"ct.reshape({a.name}, {_shape_src(shape)})",
                              f"{a.name}.reshape({_shape_src(shape)})"])
            v = self.emit(out, form, a.dtype, shape, **fl)
        elif op == "transpose":
            if nd == 2:
                form = self.pick([f"ct.transpose({a.name})", f"{a.name}.transpose()",
                                  f"ct.transpose({a.name}, 0, 1)"])
                v = self.emit(out, form, a.dtype, (a.shape[1], a.shape[0]), **fl)
            else:
                perm = list(range(nd))
                perm[0], perm[-1] = perm[-1], perm[0]
                v = self.emit(out, f"ct.permute({a.name}, {_shape_src(tuple(perm))})", a.dtype,
                              tuple(a.shape[p] for p in perm), **fl)
        elif op == "permute":
            perm = tuple(self.draw(st.permutations(range(nd))))
            form = self.pick([f"ct.permute({a.name}, {_shape_src(perm)})",
                              f"{a.name}.permute({_shape_src(perm)})"])
            v = self.emit(out, form, a.dtype, tuple(a.shape[p] for p in perm), **fl)
        elif op == "broadcast":
            targets = [s for s in {(self.TM, self.TN), (self.TN, self.TM), (2,) + a.shape,
                                   a.shape}
                       if _bcast(a.shape, s) == s and int(np.prod(s)) <= self.cfg.max_elems]
            shape = self.pick(sorted(targets))
            v = self.emit(out, f"ct.broadcast_to({a.name}, {_shape_src(shape)})", a.dtype,
                          shape, **fl)
        elif op == "expand":
            ax = self.int(0, nd)
            shape = a.shape[:ax] + (1,) + a.shape[ax:]
            if nd == 1 and self.flag():
                form = f"{a.name}[:, None]" if ax == 1 else f"{a.name}[None, :]"
            else:
                form = f"ct.expand_dims({a.name}, {ax})"
            v = self.emit(out, form, a.dtype, shape, **fl)
        else:  # cat
            b = self.pick_val(env, lambda v: v.shape == a.shape and v.dtype is a.dtype) or a
            ax = self.int(0, nd - 1)
            shape = a.shape[:ax] + (2 * a.shape[ax],) + a.shape[ax + 1:]
            v = self.emit(out, f"ct.cat(({a.name}, {b.name}), {ax})", a.dtype, shape,
                          zsign=a.zsign or b.zsign)
        env.append(v)

    def s_reduce(self, out, env, depth):
        a = self.pick_val(env, lambda v: len(v.shape) >= 1) or self.operand(out, env)
        if not a.shape:
            a = self.load(out, env)
        self.feats.add("reduce")
        nd = len(a.shape)
        fn = self.pick(["sum", "max", "min", "prod", "argmax", "argmin", "custom"])
        if fn == "custom" and (a.dtype.is_bool):
            fn = "sum"
        axis = self.pick([self.int(0, nd - 1), None] + ([tuple(range(nd))] if nd > 1 else []))
        if fn.startswith("arg") and isinstance(axis, tuple):
            axis = None
        keep = self.flag()
        if axis is None:
            shape = (1,) * nd if keep else ()
        else:
            axes = axis if isinstance(axis, tuple) else (axis,)
            shape = tuple(1 if i in axes else s for i, s in enumerate(a.shape) if keep or
                          i not in axes)
        d = dt.int32 if a.dtype.is_bool or fn.startswith("arg") else a.dtype
        zs = a.zsign and d.is_float or (fn in ("max", "min", "custom") and d.is_float)
        kd = ", keepdims=True" if keep else ""
        if fn == "custom":
            if a.dtype.is_float:
                op, ident = self.pick([("ct.maximum(p, q)", "-math.inf"),
                                       ("ct.minimum(p, q)", "math.inf")])
            else:
                lo, hi = dt.int_range(a.dtype)
                op, ident = self.pick([("p + q", "0"), ("ct.maximum(p, q)", str(lo)),
                                       ("p ^ q", "0"), ("p * q", "1"),
                                       ("ct.minimum(p, q)", str(hi))])
            ax = axis if isinstance(axis, int) else 0
            if not isinstance(axis, int):
                shape = tuple(1 if i == 0 else s for i, s in enumerate(a.shape) if keep or i)
            expr = f"ct.reduce({a.name}, {ax}, lambda p, q: {op}, {ident}{kd})"
        else:
            pn = ", propagate_nan=True" if fn in ("max", "min", "argmax", "argmin") and \
                a.dtype.is_float and self.rare(3) else ""
            form = self.pick([f"ct.{fn}({a.name}, {axis!r}{kd}{pn})",
                              f"ct.{fn}({a.name}, axis={axis!r}{kd}{pn})"])
            expr = form
        env.append(self.emit(out, expr, d, shape, zsign=zs))

    def s_scan(self, out, env, depth):
        a = self.pick_val(env, lambda v: len(v.shape) >= 1 and not v.dtype.is_bool)
        if a is None:
            a = self.load(out, env, dt.int32)
        self.feats.add("scan")
        ax = self.int(0, len(a.shape) - 1)
        fn = self.pick(["cumsum", "cumprod", "custom"])
        rev = ", reverse=True" if self.rare(3) else ""
        zs = a.zsign
        if fn == "custom":
            if a.dtype.is_float:
                op, ident = self.pick([("ct.maximum(p, q)", "-math.inf"),
                                       ("ct.minimum(p, q)", "math.inf")])
                zs = True
            else:
                op, ident = self.pick([("p + q", "0"), ("p ^ q", "0"), ("p * q", "1")])
            expr = f"ct.scan({a.name}, {ax}, lambda p, q: {op}, {ident}{rev})"
        else:
            expr = f"ct.{fn}({a.name}, {ax}{rev})"
        env.append(self.emit(out, expr, a.dtype, a.shape, zsign=zs))

    def s_mma(self, out, env, depth):
        self.feats.add("mma")
        x = self.pick_val(env, lambda v: len(v.shape) == 2)
        if x is None:
            x = self.load(out, env, kind="2d")
        m, k = x.shape
        y = self.pick_val(env, lambda v: len(v.shape) == 2 and k in v.shape)
        if y is None:
            y = x
        ysrc = y.name if y.shape[0] == k else f"ct.transpose({y.name})"
        n = y.shape[1] if y.shape[0] == k else y.shape[0]
        pairs = [(dt.float16, dt.float32), (dt.float32, dt.float32), (dt.float16, dt.float16),
                 (dt.float64, dt.float64), (dt.int8, dt.int32), (dt.bfloat16, dt.float32),
                 (dt.uint8, dt.int32)]
        din, dacc = self.pick(pairs)
        xs = self.cast(x, din)
        yv = Val(f"({ysrc})", y.dtype, (k, n))
        ys = self.cast(yv, din)
        zs = x.zsign or y.zsign
        if self.flag():                        # matmul: input dtype result
            v = self.emit(out, self.pick([f"ct.matmul({xs}, {ys})", f"({xs}) @ ({ys})"]), din,
                          (m, n), zsign=zs and din.is_float)
        else:
            acc = self.pick_val(env, lambda v: v.shape == (m, n))
            acc_src = self.cast(acc, dacc) if acc is not None else \
                self.pick([f"ct.zeros(({m}, {n}), ct.{dacc.name})",
                           f"ct.full(({m}, {n}), 1, ct.{dacc.name})"])
            zs = zs or (acc.zsign if acc else False)
            v = self.emit(out, f"ct.mma({xs}, {ys}, {acc_src})", dacc, (m, n),
                          zsign=zs and dacc.is_float)
        env.append(v)

    def s_gather(self, out, env, depth):
        self.feats.add("gather")
        d = self.pick_dtype()
        TM, TN = self.TM, self.TN
        two = self.flag()
        arrs = [self.new_input(d, "2d" if two else "1d")]
        if self.cfg.has("arrays") and self.rare(4):
            arrs.append(self.new_input(d, "2d" if two else "1d"))
            A = self.array_var(out, env, arrs)
        else:
            self.add_param(arrs[0])
            A = arrs[0].name

        def index(shape) -> tuple:
            iv = self.pick_val(env, lambda v: v.dtype.is_integral and not v.dtype.is_bool and
                               _bcast(v.shape, shape) is not None and len(v.shape) <= 2)
            if iv is not None and self.flag():
                return iv.name, iv.shape             # the result has the index shape
            off = self.pick([0, -1, 2, -3])
            n = shape[0] if len(shape) == 1 else shape[0] * shape[1]
            base = f"ct.arange({n}, dtype=ct.{self.pick(['int32', 'int64', 'uint32'])})"
            if n != shape[0] or len(shape) > 1:
                base = f"ct.reshape({base}, {_shape_src(shape)})"
            return f"({base} + {off})" if off and "uint" not in base else base, shape

        if two:
            ri, rs = index((TM, 1))
            ci, cs = index((1, TN))
            shape = _bcast(rs, cs)
            idx = f"({ri}, {ci})"
        else:
            idx, shape = index((TM * TN,) if self.flag() else (TN,))
        pad = self.const_for(d)
        if shape is None or int(np.prod(shape)) > self.cfg.max_elems:
            idx, shape = f"ct.arange({TN}, dtype=ct.int32) - 1", (TN,)
            if two:
                idx = f"(b, {idx})"
        mask = ""
        m = self.pick_val(env, lambda v: v.dtype.is_bool and _bcast(v.shape, shape) == shape)
        if m is not None and self.flag():
            mask = f", mask={m.name}"
        env.append(self.emit(out, f"ct.gather({A}, {idx}, padding_value={pad}{mask})", d,
                             shape))

    # ---- memory writes ------------------------------------------------------------------------
    def out_for(self, v: Val, d: dt.DType | None = None) -> tuple:
        """A fresh output for ``v`` (shape: G tiles of v along axis 0, ragged), its index."""
        d = d or v.dtype
        if v.shape == ():
            shape, idx = (self.G,), "(b,)"
        else:
            s = v.shape
            shape = (self.rows(s[0]),) + tuple(x - self.int(0, x - 1) for x in s[1:])
            idx = "(b" + ", 0" * (len(s) - 1) + ("," if len(s) == 1 else "") + ")"
        o = Arr(self.new("o"), d, shape, "out", ULPS.get(d, 0) if v.approx else 0, v.zsign)
        return o, idx

    def s_store(self, out, env, depth):
        v = self.pick_val(env, lambda v: True) if not self.rare(3) else \
            (self.pick(env) if env else None)
        if v is None:
            v = self.load(out, env)
        d = v.dtype
        if not v.approx and self.rare(4):       # implicit widening on store (R-CAST-1)
            wider = [w for w in DTYPES if w is not d and dt.can_cast_implicitly(d, w)]
            if wider:
                d = self.pick(wider)
        if self.cfg.has("arrays") and self.rare(3):
            outs = []
            o0, idx = self.out_for(v, d)
            outs.append(o0)
            for _ in range(self.int(1, 2)):
                o = Arr(self.new("o"), d, o0.shape, "out", o0.ulps, o0.zsign)
                outs.append(o)
            self.array_var(out, env, outs,
                           use=lambda A: [self.store_src(A, idx, v)])
            return
        o, idx = self.out_for(v, d)
        self.add_param(o)
        out.append(self.store_src(o.name, idx, v))

    def store_src(self, A: str, idx: str, v: Val) -> str:
        if v.shape and self.rare(5):
            return f"{A}.tiled_view({_shape_src(v.shape)}).store({idx}, {v.name})"
        return f"ct.store({A}, {idx}, {v.name})"

    def s_scatter(self, out, env, depth):
        self.feats.add("scatter")
        TM, TN = self.TM, self.TN
        v = self.pick_val(env, lambda v: _bcast(v.shape, (TM, TN)) == (TM, TN))
        if v is None:
            v = self.load(out, env)
        o = Arr(self.new("o"), v.dtype, (self.rows(TM), TN - self.int(0, TN - 1)), "out", 0,
                v.zsign)
        self.add_param(o)
        r = f"ct.arange({TM}, dtype=ct.int32)"
        if self.flag():
            r = f"({TM - 1} - {r})"
        rows = f"(b * {TM} + {r})[:, None]"
        cols = f"(ct.arange({TN}, dtype=ct.int32) + {self.pick([0, 1, -1, -2])})[None, :]"
        mask = ""
        m = self.pick_val(env, lambda w: w.dtype.is_bool and
                          _bcast(w.shape, (TM, TN)) == (TM, TN))
        if m is not None and self.flag():
            mask = f", mask={m.name}"
        out.append(f"ct.scatter({o.name}, ({rows}, {cols}), {v.name}{mask})")

    def s_atomic(self, out, env, depth):
        """Atomics whose results do not depend on the order: integer add/and/or/xor/max/min
        on shared targets (old values dropped), or any atomic on targets distinct per block
        and position (old values kept as a tile)."""
        self.feats.add("atomic")
        T = self.TN
        if self.flag():
            d = self.pick([dt.int32, dt.int64, dt.uint32, dt.uint64])
            op = self.pick(["add", "max", "min", "or", "and", "xor"])
            size = self.int(1, 2 * T)
            iv = self.pick_val(env, lambda w: w.dtype.is_integral and not w.dtype.is_bool and
                               len(w.shape) <= 2)
            idx = iv.name if iv is not None and self.flag() else \
                f"(ct.arange({T}, dtype=ct.int32) + b) % {size + 1}"
            ishape = iv.shape if idx == (iv.name if iv else None) else (T,)
            u = self.pick_val(env, lambda w: _bcast(w.shape, ishape) == ishape) if ishape \
                else None
            if u is not None:
                upd = self.cast(u, d)
            elif ishape:
                upd = f"ct.full({_shape_src(ishape)}, 3, ct.{d.name})"
            else:
                upd = f"ct.{d.name}(3)"
            tgts = [Arr(self.new("t"), d, (size,), "atom")]
            if self.cfg.has("arrays") and self.cfg.has("array_atomics") and self.rare(3):
                self.feats.add("array_atomics")
                tgts.append(Arr(self.new("t"), d, (size,), "atom"))
                self.array_var(out, env, tgts,
                               use=lambda A: [f"ct.atomic_{op}({A}, {idx}, {upd})"])
                return
            self.add_param(tgts[0])
            out.append(f"ct.atomic_{op}({tgts[0].name}, {idx}, {upd})")
            return
        # distinct targets: block b owns positions [b*T, (b+1)*T) (+ an offset off the end)
        d = self.pick([dt.int32, dt.float32, dt.int64, dt.uint32, dt.float64])
        ops = ["add", "xchg", "cas"] + (["max", "min", "and", "or", "xor"]
                                        if d.is_integral else [])
        op = self.pick(ops)
        t = Arr(self.new("t"), d, (self.rows(T),), "atom")
        self.add_param(t)
        off = self.pick([0, 1, -1])
        idx = f"b * {T} + ct.arange({T}, dtype=ct.int32) + {off}"
        u = self.pick_val(env, lambda w: _bcast(w.shape, (T,)) == (T,) and
                          (not w.dtype.is_float or d.is_float))
        upd = self.cast(u, d) if u is not None else f"ct.full(({T},), 2, ct.{d.name})"
        if op == "cas":
            expected = self.pick([f"ct.zeros(({T},), ct.{d.name})", upd])
            expr = f"ct.atomic_cas({t.name}, {idx}, {expected}, {upd})"
        else:
            expr = f"ct.atomic_{op}({t.name}, {idx}, {upd})"
        env.append(self.emit(out, expr, d, (T,)))

    # ---- arrays as values -------------------------------------------------------------------
    def cond(self, env, loopvar: str | None = None) -> str:
        """A runtime (or constant) scalar condition."""
        opts = ["bid", "n"]
        if loopvar:
            opts.append("loop")
        if self.usable(env, lambda v: v.shape != ()):
            opts.append("tile")
        if self.cfg.has("constants"):
            opts.append("const")
        k = self.pick(opts)
        if k == "bid":
            return self.pick(["b == 0", "b % 2 == 1", "b < 1"])
        if k == "n":
            n = self.scalar("n").name
            return self.pick([f"{n} > 1", f"{n} == 0", f"(b + {n}) % 2 == 0"])
        if k == "loop":
            return self.pick([f"{loopvar} == 1", f"{loopvar} % 2 == 0", f"{loopvar} >= 2"])
        if k == "const":
            return f"{self.const_param()} > 1"
        v = self.pick_val(env, lambda v: v.shape != ())
        red = self.pick(["sum", "max"]) if not v.dtype.is_bool else "sum"
        c = "0" if not v.dtype.is_float else "0.0"
        cmp = self.pick([">", "<", "=="])
        e = f"ct.{red}({v.name}) {cmp} {c}"
        if self.rare(4):
            e = f"{e} and b == 0" if self.flag() else f"({e}) or b == 1"
        return e

    def array_var(self, out, env, arrs: list, use=None) -> str:
        """An array variable that holds one of ``arrs`` chosen at run time (R-CF, arrays are
        values); returns its name.  ``use(A)`` -> lines that access through it: placed after
        the choice, or inside the loop that reassigns it."""
        self.feats.add("arrays")
        A = self.new("A")
        names = []
        if self.cfg.has("lists") and self.rare(3):
            lst = ListArg(self.new("xl" if arrs[0].role == "in" else "ol"), arrs)
            self.add_param(lst)
            self.feats.add("lists")
            names = [f"{lst.name}[{i}]" for i in range(len(arrs))]
            k = self.pick(["bid", "const"] + (["loop"] if self.cfg.has("array_loops") else []))
            if k == "bid":
                out.append(f"{A} = {lst.name}[(b + {self.int(0, 2)}) % len({lst.name})]")
            elif k == "const":
                out.append(f"{A} = {lst.name}[{self.int(0, len(arrs) - 1)}]")
            else:
                i = self.new("i")
                out.append(f"{A} = {lst.name}[0]")
                out.append(f"for {i} in range({self.bound()}):")
                out.append(f"    {A} = {lst.name}[({i} + b) % len({lst.name})]")
                if use and self.flag():
                    out += ["    " + ln for ln in use(A)]
            if use:
                out += use(A)
            return A
        for a in arrs:
            self.add_param(a)
        names = [a.name for a in arrs]
        x, y = names[0], names[1]
        k = self.pick(["if", "ifexp"] + (["loop", "swap", "break", "while"]
                                         if self.cfg.has("array_loops") else []))
        if k not in ("if", "ifexp"):
            self.feats.add("array_loops")
        inside = []
        if k == "if":
            out += [f"if {self.cond(env)}:", f"    {A} = {x}"]
            if len(names) > 2 and self.flag():
                out += [f"elif {self.cond(env)}:", f"    {A} = {names[2]}"]
            out += ["else:", f"    {A} = {y}"]
        elif k == "ifexp":
            out.append(f"{A} = {x} if {self.cond(env)} else {y}")
        elif k == "loop":
            i = self.new("i")
            out += [f"{A} = {x}", f"for {i} in range({self.bound()}):",
                    f"    if {self.cond(env, i)}:", f"        {A} = {y}"]
            inside = ["    "]
        elif k == "swap":
            i, B = self.new("i"), self.new("A")
            out += [f"{A}, {B} = {x}, {y}", f"for {i} in range({self.bound()}):",
                    f"    {A}, {B} = {B}, {A}"]
            inside = ["    "]
        elif k == "break":
            i = self.new("i")
            out += [f"{A} = {x}", f"for {i} in range({self.bound()}):",
                    f"    {A} = {names[-1]} if {i} % 2 == 0 else {y}",
                    f"    if {self.cond(env, i)}:", "        break"]
            inside = ["    "]
        else:
            w, B = self.new("w"), self.new("A")
            out += [f"{A}, {B} = {x}, {y}", f"{w} = 0", f"while {w} < {self.bound()}:",
                    f"    {w} = {w} + 1", f"    {A}, {B} = {B}, {A}",
                    f"    if {self.cond(env)}:", "        break"]
            inside = ["    "]
        if use:
            if inside and self.flag():
                # access inside the loop (before its exit test where there is one)
                lines = ["    " + ln for ln in use(A)]
                if out[-1].strip() == "break":
                    out[-2:-2] = lines
                else:
                    out += lines
            out += use(A)
        return A

    def bound(self) -> str:
        """A loop bound: a literal, the runtime n, or a Constant parameter."""
        opts = ["lit", "n"] + (["const"] if self.cfg.has("constants") else [])
        k = self.pick(opts)
        if k == "lit":
            return str(self.int(0, 3))
        if k == "n":
            return self.scalar("n").name
        return self.const_param()

    # ---- control flow -----------------------------------------------------------------------
    def coerce(self, w: Val, to: Val) -> tuple:
        """An expression of ``to``'s type (dtype, shape) from ``w`` (flags of the result)."""
        if _bcast(w.shape, to.shape) != to.shape:
            return None
        src = self.cast(w, to.dtype)
        if w.shape != to.shape:
            src = f"ct.broadcast_to({src}, {_shape_src(to.shape)})"
        return src, (w.zsign and to.dtype.is_float)

    def update(self, c: Val, env) -> tuple:
        """A new value for the carried ``c`` from the body's values: (src, zsign)."""
        w = self.pick_val(env, lambda v: v is not c and _bcast(v.shape, c.shape) == c.shape
                          and (c.zsign or not v.zsign))
        if w is None:
            if c.dtype.is_bool:
                return f"~{c.name}", False
            return f"{c.name} + {'1.0' if c.dtype.is_float else '1'}", c.zsign
        src, zs = self.coerce(w, c)
        if c.dtype.is_bool:
            op = self.pick(["^", "|", "&"])
            return f"{c.name} {op} {src}", False
        op = self.pick(["+", "*", "-", "max", "where", "="])
        if op == "=":
            return src, zs
        if op == "max":
            return f"ct.maximum({c.name}, {src})", c.zsign or zs or c.dtype.is_float
        if op == "where":
            return f"ct.where({c.name} < {src}, {src}, {c.name})", c.zsign or zs
        return f"{c.name} {op} {src}", c.zsign or zs

    def carried(self, out, env) -> list:
        """Tiles carried around a loop: fresh copies of values in scope."""
        cs = []
        for _ in range(self.int(1, 2)):
            v = self.pick_val(env, lambda v: v.shape != ())
            if v is None:
                v = self.load(out, env)
            c = self.emit(out, v.name, v.dtype, v.shape, zsign=v.zsign, prefix="c")
            # a value whose sign of zero may become unspecified in the loop is marked so now
            cs.append(c)
        return cs

    def loop_body(self, out, env, depth, cs, loopvar, indent="    ") -> list:
        inner = list(env) + cs
        at_entry = list(inner)            # what a break/continue test may read at any point
        body = self.block(inner, depth + 1, 3)
        if len(cs) == 2 and cs[0].dtype is cs[1].dtype and cs[0].shape == cs[1].shape \
                and self.cfg.has("tuples") and self.flag():
            body.append(f"{cs[0].name}, {cs[1].name} = {cs[1].name}, {cs[0].name}")
            self.feats.add("tuples")
        for c in cs:
            src, zs = self.update(c, inner)
            if zs and not c.zsign:                  # keep the flag a fixpoint: no new taint
                src, zs = (f"{c.name} + {'1.0' if c.dtype.is_float else '1'}"
                           if not c.dtype.is_bool else f"~{c.name}"), False
            body.append(f"{c.name} = {src}")
        if self.rare(3):
            kw = self.pick(["break", "continue"])
            # between two statements of the body, not inside a nested block
            cuts = [p for p in range(len(body) + 1) if p == len(body) or
                    not body[p].startswith((" ", "else", "elif"))]
            pos = self.pick(cuts)
            body[pos:pos] = [f"if {self.cond(at_entry, loopvar)}:", f"    {kw}"]
        return [indent + ln for ln in body]

    def s_for(self, out, env, depth):
        self.feats.add("loops")
        cs = self.carried(out, env)
        i = self.new("i")
        use_tiles = self.flag()
        if use_tiles:                        # K loop over the column tiles of an input
            d = self.pick_dtype()
            a = self.new_input(d, "2d", wide=True)
            self.add_param(a)
            hdr = f"for {i} in range(ct.num_tiles({a.name}, 1, {self.tile_src()})):"
            kv = Val(self.new("k"), d, (self.TM, self.TN))
            pre = [f"    {kv.name} = ct.load({a.name}, (b, {i}), {self.tile_src()}, "
                   f"padding_mode=ct.PaddingMode.ZERO)"]
            extra = [kv]
        else:
            bnd = self.bound()
            hdr = self.pick([f"for {i} in range({bnd}):", f"for {i} in range(1, {bnd}):",
                             f"for {i} in range(0, {bnd}, 2):"])
            pre, extra = [], []
        iv = Val(i, dt.int32, ())
        tup = self.cfg.has("tuples") and len(cs) == 2 and self.rare(4)
        body = self.loop_body(out, env + extra + [iv], depth, cs, i)
        if tup:                               # carry the pair as one tuple
            self.feats.add("tuples")
            p = self.new("p")
            out.append(f"{p} = ({cs[0].name}, {cs[1].name})")
            pre = [f"    {cs[0].name}, {cs[1].name} = {p}"] + pre
            body = body + [f"    {p} = ({cs[0].name}, {cs[1].name})"]
            post = [f"{cs[0].name}, {cs[1].name} = {p}"]
        else:
            post = []
        out.append(hdr)
        out += pre + body
        out += post
        env += cs

    def s_while(self, out, env, depth):
        self.feats.add("loops")
        cs = self.carried(out, env)
        w = self.new("w")
        out.append(f"{w} = {self.pick(['0', 'b'])}")
        out.append(f"while {w} < {self.bound()}:")
        out.append(f"    {w} = {w} + 1")
        out += self.loop_body(out, env + [Val(w, dt.int32, ())], depth, cs, w)
        env += cs

    def s_if(self, out, env, depth):
        self.feats.add("if")
        tgt = self.pick_val(env, lambda v: True)
        if tgt is None:
            tgt = self.load(out, env)
        r = Val(self.new("r"), tgt.dtype, tgt.shape, zsign=tgt.zsign)
        c = self.cond(env)
        branches = []
        for _ in range(2):
            inner = list(env)
            body = self.block(inner, depth + 1, 2)
            w = self.pick_val(inner[len(env):] or inner,
                              lambda v: _bcast(v.shape, r.shape) == r.shape)
            src, zs = self.coerce(w, r) if w is not None else (tgt.name, tgt.zsign)
            r.zsign |= zs
            if self.rare(6):
                body.append("return")
            else:
                body.append(f"{r.name} = {src}")
            branches.append(body)
        if branches[0][-1] == "return" and branches[1][-1] == "return":
            branches[1][-1] = f"{r.name} = {tgt.name}"
        out.append(f"if {c}:")
        out += ["    " + ln for ln in branches[0]]
        out.append("else:")
        out += ["    " + ln for ln in branches[1]]
        env.append(r)

    def s_tuple(self, out, env, depth):
        self.feats.add("tuples")
        a = self.operand(out, env)
        b = self.pick_val(env) or a
        p = self.new("p")
        out.append(f"{p} = ({a.name}, {b.name})")
        x, y = self.new("v"), self.new("v")
        if self.flag():
            out.append(f"{x}, {y} = {p}")
        else:
            out.append(f"{y}, {x} = {p}[1], {p}[0]")
        env += [Val(x, a.dtype, a.shape, zsign=a.zsign), Val(y, b.dtype, b.shape,
                                                             zsign=b.zsign)]

    def s_helper(self, out, env, depth):
        """A helper function (inlined by the frontend): pure ops on its parameters, or a load
        through an array parameter."""
        self.feats.add("helpers")
        h = self.new("h")
        deco = "@ct.function\n" if self.rare(3) else ""
        if self.flag():
            a = self.operand(out, env)
            b = self.pick_val(env) or a
            pa, pb = Val("p", a.dtype, a.shape, zsign=a.zsign), \
                Val("q", b.dtype, b.shape, zsign=b.zsign)
            inner = [pa, pb]
            lines: list = []
            self.pure = True
            try:
                for _ in range(self.int(1, 3)):
                    self.pick([self.s_binary, self.s_unary, self.s_where])(lines, inner, depth)
            finally:
                self.pure = False
            r = inner[-1]
            if r.approx:
                r = pa
            body = "".join(f"    {ln}\n" for ln in lines)
            src = f"{deco}def {h}(p, q):\n{body}    return {r.name}"
            self.helpers.append(src)
            env.append(self.emit(out, f"{h}({a.name}, {b.name})", r.dtype, r.shape,
                                 zsign=r.zsign))
            return
        d = self.pick_dtype()
        a = self.new_input(d, "2d")
        self.add_param(a)
        src = (f"{deco}def {h}(arr, blk, scale):\n"
               f"    t = ct.load(arr, (blk, 0), {_shape_src((self.TM, self.TN))}, "
               f"padding_mode=ct.PaddingMode.ZERO)\n"
               f"    return t, t * scale")
        self.helpers.append(src)
        x, y = self.new("v"), self.new("v")
        dd = d if not d.is_bool else dt.int32               # bool * 2 is int32
        out.append(f"{x}, {y} = {h}({a.name}, b, 2)")
        env += [Val(x, d, (self.TM, self.TN)), Val(y, dd, (self.TM, self.TN))]


@st.composite
def programs(draw, cfg: Config | None = None) -> Program:
    """A random valid kernel with its arguments (see the module docstring)."""
    cfg = cfg or Config()
    g = _Gen(draw, cfg)
    body: list = ["b = ct.bid(0)"]
    env: list = [Val("b", dt.int32, ())]
    for _ in range(g.int(1, 2)):                # data to compute on
        env.append(g.load(body, env))
    body += g.block(env, 0, cfg.max_stmts)
    # every value that nothing reads is stored (the others now and then): results compared
    import re
    for v in env[1:]:
        used = re.compile(rf"\b{v.name}\b")
        sink = sum(len(used.findall(ln)) for ln in body) <= 1
        if sink or v.name[0] in "cr" or g.flag():      # carried / joined: always
            o, idx = g.out_for(v)
            g.add_param(o)
            body.append(f"ct.store({o.name}, {idx}, {v.name})")
    seed = g.int(0, 2 ** 16)
    return Program(g.helpers, body, g.params, (g.G,), seed, g.feats)


# --------------------------------------------------------------------------------------------
# running and comparing

@dataclass
class Outcome:
    """What one program did: ``kind`` in ok / mismatch / numba-error / interp-error / ub /
    invalid, and a message."""

    kind: str
    message: str = ""

    @property
    def finding(self) -> bool:
        return self.kind in ("mismatch", "numba-error", "interp-error")


def compare_launch(kernel, grid, args, bounds: dict) -> str:
    """Run on the interpreter and the Numba backend; 'agree' or a report of the differences
    (every array, element by element, within ``bounds[name] = (ulps, signed_zero)``)."""
    from cutile.testing.compare import disagreeing, first_mismatches
    from cutile.testing.diff import run_on
    ref = run_on(kernel, grid, tuple(args), "interp", poison_outputs=False)
    # mma in the backend's exact mode: its default float32-FMA mode is only within R-MM-7's
    # bound of the interpreter (checked by test_diff_matmul_control), and a bound cannot
    # follow an mma result through the rest of a random program
    got = run_on(kernel, grid, tuple(args), "numba", poison_outputs=False, mma_acc="exact")
    lines = []
    bad_guard = [n for n, ok in got.guard_ok.items() if not ok]
    if bad_guard:
        lines.append(f"numba wrote outside array argument(s) {bad_guard}")
    for name, r in ref.arrays.items():
        g = got.arrays[name]
        ulps, sz = bounds.get(name, (0, True))
        bad = disagreeing(r, g, ulps=ulps, signed_zero=sz)
        if bad.any():
            lines.append(f"{name}: {int(bad.sum())} of {r.size} element(s) differ "
                         f"(ulps={ulps}, signed_zero={sz})")
            for m in first_mismatches(name, r, g, bad, 4, ref.writer.get(name)):
                lines.append(f"  {m}  [interp vs numba]")
            lines.append(f"  interp: {np.array2string(r.ravel()[:16], threshold=16)}")
            lines.append(f"  numba:  {np.array2string(g.ravel()[:16], threshold=16)}")
    return "agree" if not lines else "\n".join(lines)


def run_program(prog: Program) -> Outcome:
    """Run ``prog`` on both executors and classify the result."""
    import cutile as ct

    from .harness import kernel_from_source
    try:
        k = kernel_from_source(prog.source, "kern")
    except SyntaxError as e:
        return Outcome("invalid", f"SyntaxError: {e}")
    from cutile.testing.diff import run_on
    args = prog.args()
    try:
        run_on(k, prog.grid, args, "interp", poison_outputs=False)
    except ct.UndefinedBehaviorError as e:
        return Outcome("ub", f"{type(e).__name__}: {e}")
    except ct.TileInternalError as e:
        return Outcome("interp-error", f"{type(e).__name__}: {e}")
    except ct.TileError as e:
        return Outcome("invalid", f"{type(e).__name__}: {e}")
    except Exception as e:  # noqa: BLE001 - a crash of the interpreter is a finding
        return Outcome("interp-error", f"{type(e).__name__}: {e}\n{traceback.format_exc()}")
    try:
        rep = compare_launch(k, prog.grid, args, prog.bounds())
    except Exception as e:  # noqa: BLE001
        return Outcome("numba-error", f"{type(e).__name__}: {str(e)[:2000]}")
    return Outcome("ok") if rep == "agree" else Outcome("mismatch", rep)


def check(prog: Program) -> None:
    """Assert that ``prog`` runs the same on both executors; the message is a runnable repro.
    A program the interpreter rejects (UB, type error) fails too: a generator bug."""
    o = run_program(prog)
    if o.kind == "ok":
        return
    what = {"ub": "GENERATOR BUG (the interpreter reports undefined behaviour)",
            "invalid": "GENERATOR BUG (the program does not compile)",
            }.get(o.kind, f"EXECUTORS DISAGREE ({o.kind})")
    raise AssertionError(f"{what}\n{o.message}\n\n----- repro -----\n{prog.script()}")


# --------------------------------------------------------------------------------------------
# CLI

def _simulator() -> bool:
    from cutile.numba_backend.rt import simulator
    return simulator()


def _worker(n: int, seed: int, exclude: tuple, profile: str, show: int, outdir: str | None):
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed
    cfg = config_for(profile, exclude=exclude, simulator=_simulator())
    counts: dict = {}
    shown: dict = {}

    @hseed(seed)
    @settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(programs(cfg))
    def run(prog):
        o = run_program(prog)
        counts[o.kind] = counts.get(o.kind, 0) + 1
        if o.kind != "ok":
            key = (o.kind, o.message.splitlines()[0][:80] if o.message else "")
            shown.setdefault(key, 0)
            shown[key] += 1
            if shown[key] <= show:
                print(f"===== {o.kind} (seed {seed})\n{o.message}\n----- repro -----\n"
                      f"{prog.script()}", flush=True)
            if outdir:
                os.makedirs(outdir, exist_ok=True)
                path = os.path.join(outdir, f"{o.kind}_{seed}_{sum(counts.values())}.py")
                with open(path, "w") as f:
                    f.write(f"# {o.kind}\n" + "".join(f"# {ln}\n" for ln in
                                                      o.message.splitlines()[:20])
                            + prog.script())

    run()
    if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":   # which compile path the GPU took
        from cutile.numba_backend import direct
        counts["variants direct"] = direct.stats.direct
        for why, k in direct.stats.fallbacks.items():
            counts[f"variants numba ({why[:70]})"] = k
    return counts


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100, help="programs to run (in all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--exclude", default="", help=f"comma-separated features of {FEATURES}")
    ap.add_argument("--profile", default=None, help="ci (small) or gpu (default: gpu on a "
                    "GPU, ci on the simulator)")
    ap.add_argument("--show", type=int, default=1, help="repros printed per failure class")
    ap.add_argument("--out", default=None, help="directory for every failing repro")
    a = ap.parse_args(argv)
    if "NUMBA_ENABLE_CUDASIM" not in os.environ:
        import glob
        if not glob.glob("/dev/nvidia[0-9]*"):
            os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    exclude = tuple(x for x in a.exclude.split(",") if x)
    unknown = set(exclude) - set(FEATURES)
    if unknown:
        ap.error(f"unknown feature(s) {sorted(unknown)}; known: {FEATURES}")
    profile = a.profile or ("ci" if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" else "gpu")
    jobs = max(1, a.jobs)
    per = [a.n // jobs + (1 if w < a.n % jobs else 0) for w in range(jobs)]
    if jobs == 1:
        results = [_worker(a.n, a.seed, exclude, profile, a.show, a.out)]
    else:
        import multiprocessing as mp
        ctx = mp.get_context("spawn")
        with ctx.Pool(jobs) as pool:
            results = pool.starmap(_worker, [(per[w], a.seed * 1000 + w, exclude, profile,
                                              a.show, a.out) for w in range(jobs)])
    total: dict = {}
    for c in results:
        for k, v in c.items():
            total[k] = total.get(k, 0) + v
    variants = {k: total.pop(k) for k in list(total) if k.startswith("variants ")}
    ran = sum(total.values())
    dis = total.get("mismatch", 0)
    internal = total.get("numba-error", 0) + total.get("interp-error", 0)
    gen = total.get("ub", 0) + total.get("invalid", 0)
    print(f"programs run: {ran}  disagreements: {dis}  internal errors: {internal}  "
          f"generator bugs (ub/invalid): {gen}  by kind: {dict(sorted(total.items()))}")
    if variants:
        print("compiled variants: " + ", ".join(f"{v} {k[9:]}" for k, v in
                                                  sorted(variants.items(), key=lambda x: -x[1])))
    return 0 if dis == internal == gen == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

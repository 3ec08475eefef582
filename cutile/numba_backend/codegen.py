"""The generator: typed IR of one specialised kernel -> Python source of a ``numba.cuda.jit``
kernel (one CUDA block per tile block, ``T`` threads).

``Gen`` walks the IR in program order and calls each op's lowering (``lower/<section>.py``).
It owns what lowerings share: the value -> registers map (``TV``), layouts and the hoisted
per-thread coordinates, conversions between layouts (free register renames, or a shared-memory
exchange), shared-memory buffers (``smem.SmemPlan``) and barrier placement
(``barriers.BarrierState``), and structured control flow (``emit_region``/``emit_loop``).
"""

from __future__ import annotations

import itertools

import numpy as np

from .. import config
from ..errors import TileInternalError, TileUnsupportedFeatureError
from ..ir import ops
from ..ir.core import KernelIR, Op, Region, Value
from ..ir.effects import array_roots
from ..ir.types import ArrayType
from . import exprs, minifloat, rt, ws_plan
from . import layout as L
from .assign import Assignment
from .barriers import BarrierState
from .device_limits import device_compute_capability
from .emitter import Emitter, describe_op
from .global_order import GlobalAccesses
from .lower import load_lowerings, matmul_ws
from .lower.matmul_tc import pipelined_buffers
from .mma_plan import ffma_usable, tensor_cores_usable, wgmma_usable
from .smem import SmemPlan, smem_itemsize
from .threads import min_blocks
from .values import AV, TV, LoopFrame, row_major_strides
from .wgmma import register_cap


class Gen:
    def __init__(self, ir: KernelIR, T: int, *, mma_acc: str = "f32", shared_smem=False,
                 tensor_cores: bool | None = None, full: frozenset = frozenset(),
                 wgmma: bool | None = None):
        self.ir = ir
        # (param, rows, cols) of cp.async-staged loads whose tiles are all full (fulltile.py)
        self.full = full
        self.T = T
        self.mma_acc = mma_acc
        # tensor-core mma (inline PTX): a real GPU, float32 accumulation mode, not disabled
        if tensor_cores is None:
            tensor_cores = tensor_cores_usable(mma_acc)
        self.tensor_cores = tensor_cores
        # float32 mma by ffma.py's vectorised schedule (CUTILE_NUMBA_FFMA)
        self.ffma = ffma_usable(mma_acc)
        # cp.async operand staging and 32-bit shared addresses (CUTILE_NUMBA_CP_ASYNC)
        self.cp_async = (bool(tensor_cores) or self.ffma) and config.numba_cp_async()
        self.e = Emitter(indent=1)
        # Hopper's wgmma for float16/bfloat16 mma (an sm_90 device; CUTILE_NUMBA_WGMMA)
        if wgmma is None and tensor_cores and self.cp_async:
            wgmma = wgmma_usable(mma_acc, device_compute_capability())
        self.wgmma = bool(wgmma) and bool(tensor_cores) and self.cp_async
        cap = register_cap(T, min_blocks(ir, T)) if self.wgmma else 255
        self.assign = Assignment(ir, T, tensor_cores=tensor_cores, cp_async=self.cp_async,
                                 ffma=self.ffma, wgmma=self.wgmma, reg_cap=cap)
        self.mma = self.assign.mma             # each Mma's path and operand staging
        # the warp-specialised TMA K loop (ws_plan.py): the launch's TMA-ready arrays decide
        self.ws = ws_plan.find(self.mma, ir, frozenset(f[1] for f in full if f[0] == "tma"))
        self.mma.ws = self.ws
        # threads per block: the kernel's T, and the producer warpgroup of a TMA K loop
        self.block_threads = T if self.ws is None else self.ws.block_threads
        # alignment= is refused by the simulator (where 16-byte alignment does not matter)
        self.smem = SmemPlan(shared=shared_smem, aligned=not rt.simulator())
        self.bar = BarrierState()
        self.globals_ = GlobalAccesses(ir)
        self.vals: dict[int, TV] = {}
        self.arrays: dict[int, AV] = {}
        self.array_roots = array_roots(ir)
        self.names: dict[int, int] = {}
        self.layout_ids: dict[L.Layout, int] = {}
        self.hoisted: dict[tuple, tuple] = {}
        self.scopes: list[dict] = [{}]
        self.loops: list[LoopFrame] = []
        self.consts: dict[str, np.ndarray] = {}
        self.strides_used: set[tuple] = set()
        self.raw_roots: set[int] = set()   # params accessed by element offset (RawArrayMemory)
        self.pointer_roots: set[int] = set()   # params whose address is taken (foreign_pointer)
        # (message, loc) of every assert_ (lower/debug.py); non-empty: an ``aerr`` parameter
        self.asserts: list = []
        # ((major, minor), why, loc): compute capabilities the kernel's instructions need
        self.min_cc: list = []
        self._tmp = itertools.count()
        self.params: list[str] = []
        self.plans: list[str] = []             # mma strategies chosen (kernel.inspect)
        self.pipe_slots: dict[object, int] = {}  # pipelined mma -> its buffers' slot pair

    # -- naming -----------------------------------------------------------------------------
    def vname(self, v: Value) -> str:
        n = self.names.get(id(v))
        if n is None:
            n = self.names[id(v)] = len(self.names)
        return f"v{n}"

    def tmp(self, hint: str = "t") -> str:
        return f"_{hint}{next(self._tmp)}"

    def bind(self, v: Value, lay, names: list[str]) -> None:
        """Make ``v`` (a region argument or a control-flow result) live in ``names``."""
        if lay is None:
            self.arrays[id(v)] = self.array_value(v, names[0])
        else:
            self.alias(v, lay, names)

    def array_value(self, v: Value, name: str) -> AV:
        """The array value ``v``, named ``name`` in the generated source."""
        return AV(name, self.array_roots.get(id(v), frozenset()), v.type.ndim, v.type.dtype)

    def value_names(self, v: Value, lay) -> list[str]:
        return [self.vname(v)] if lay is None else self.reg_names(v, lay.nregs)

    def reg_names(self, v: Value, nregs: int) -> list[str]:
        base = self.vname(v)
        return [base] if nregs == 1 else [f"{base}_{k}" for k in range(nregs)]

    def line(self, text: str) -> None:
        self.e.line(text)

    def let(self, expr: str) -> str:
        """Bind ``expr`` to a fresh variable (for expressions used more than once)."""
        if expr.isidentifier():
            return expr
        t = self.tmp("e")
        self.line(f"{t} = {expr}")
        return t

    # -- layouts and hoisted thread coordinates ------------------------------------------------
    def lid(self, lay: L.Layout) -> int:
        i = self.layout_ids.get(lay)
        if i is None:
            i = self.layout_ids[lay] = len(self.layout_ids)
        return i

    def hoist(self, key: tuple, name: str, expr: str) -> str:
        if key not in self.hoisted:
            self.hoisted[key] = (name, expr)
        return self.hoisted[key][0]

    def coord_var(self, lay: L.Layout, j: int) -> str:
        expr = lay.thread_coord_expr(j, "tid")
        if expr == "0":
            return "0"
        i = self.lid(lay)
        return self.hoist(("c", i, j), f"L{i}_{j}", expr)

    def coords(self, lay: L.Layout, k: int) -> list[str]:
        offs = lay.reg_offsets(k)
        out = []
        for j, o in enumerate(offs):
            c = self.coord_var(lay, j)
            out.append(str(o) if c == "0" else (c if o == 0 else f"({c} + {o})"))
        return out

    def linear(self, lay: L.Layout, weights, k: int, swizzle: tuple | None = None) -> str:
        """Expression of ``sum_j coord_j * weights[j]`` for register ``k`` of ``lay``
        (``swizzle``: permuted by ``exchange_swizzle``'s XOR, which distributes over the
        thread and register parts: power-of-two weights put them on disjoint bits)."""
        weights = tuple(int(w) for w in weights)
        terms = []
        for j, w in enumerate(weights):
            c = self.coord_var(lay, j)
            if w and c != "0":
                terms.append(c if w == 1 else f"{c} * {w}")
        const = sum(o * w for o, w in zip(lay.reg_offsets(k), weights))
        if swizzle is not None:
            const = swizzled(const, swizzle)
        if not terms:
            return str(const)
        i = self.lid(lay)
        expr = " + ".join(terms)
        if swizzle is not None:
            sh, mask, up = swizzle
            expr = f"({expr}) ^ ((({expr}) >> {sh}) & {mask}) << {up}"
        base = self.hoist(("lin", i, weights, swizzle), f"L{i}_x{len(self.hoisted)}", expr)
        if const == 0:
            return base
        return f"{base} ^ {const}" if swizzle is not None else f"{base} + {const}"

    def writer(self, lay: L.Layout) -> str | None:
        """Predicate selecting one thread among replicas (None: no replicas)."""
        m = lay.replica_mask
        if m == 0:
            return None
        if m == self.T - 1:
            return self.hoist(("w0",), "lead", "tid == 0")
        i = self.lid(lay)
        return self.hoist(("w", i), f"L{i}_w", f"(tid & {m}) == 0")

    def scalar_layout(self) -> L.Layout:
        return L.flat((), self.T)

    # -- values -------------------------------------------------------------------------------
    def tv(self, v: Value) -> TV:
        try:
            return self.vals[id(v)]
        except KeyError:
            raise TileInternalError(f"numba backend: value {v} used before definition") from None

    def set(self, v: Value, tv: TV) -> None:
        self.vals[id(v)] = tv

    def define(self, v: Value, lay: L.Layout, exprs_: list[str], dtype=None) -> list[str]:
        names = self.reg_names(v, lay.nregs)
        assert len(exprs_) == lay.nregs, (v, lay, len(exprs_))
        for n, x in zip(names, exprs_):
            if n != x:
                self.line(f"{n} = {x}")
        self.set(v, TV(lay, names, dtype or v.type.dtype))
        return names

    def alias(self, v: Value, lay: L.Layout, regs: list[str], dtype=None) -> None:
        self.set(v, TV(lay, list(regs), dtype or v.type.dtype))

    def scalar(self, v: Value) -> str:
        tv = self.tv(v)
        if tv.layout is None:
            return tv.mat([])
        assert tv.layout.nregs == 1 and tv.layout.shape == (), (v, tv.layout)
        return tv.regs[0]

    def layout_of(self, v: Value) -> L.Layout | None:
        return self.tv(v).layout

    def natural(self, v: Value) -> L.Layout | None:
        """Layout ``v`` is produced in (None for arrays)."""
        if isinstance(v.type, ArrayType):
            return None
        lay = self.assign.layout(v)
        return lay if lay is not None else L.flat(v.type.shape, self.T)

    def result_layout(self, op: Op) -> L.Layout:
        """Layout for an elementwise result: the first operand that has one."""
        shape = op.result.type.shape
        for o in op.operands():
            tv = self.vals.get(id(o))
            if tv is not None and tv.layout is not None and tv.layout.shape == shape:
                return tv.layout
        return self.natural(op.result)

    def get(self, v: Value, lay: L.Layout) -> list[str]:
        """Registers of ``v`` in layout ``lay`` (same shape), converting if needed."""
        tv = self.tv(v)
        if tv.layout is None and tv.view is None:
            return [tv.mat(self.coords(lay, k)) for k in range(lay.nregs)]
        if tv.layout == lay:
            return tv.regs
        key = ("conv", id(v), lay.key)
        for scope in reversed(self.scopes):
            if key in scope:
                return scope[key]
        if tv.view is not None:
            src, weights = tv.view
            regs = self.relayout(src, lay, weights, f"bc{self.vname(v)}")
            self.scopes[-1][key] = regs
            return regs
        assert tv.layout.shape == lay.shape, (tv.layout, lay)
        regs = self.relayout(tv, lay, row_major_strides(lay.shape), f"conv{self.vname(v)}")
        self.scopes[-1][key] = regs
        return regs

    def relayout(self, tv: TV, dst: L.Layout, weights, hint: str) -> list[str]:
        """``tv`` seen in ``dst`` where dst coords map to the source flat index by
        ``weights`` (a linear map: identity, broadcast, permute, reshape)."""
        src = tv.layout
        sshape = src.shape
        sstr = np.array(row_major_strides(sshape), dtype=np.int64)
        w = np.array(weights, dtype=np.int64)

        def dst_to_src(coords):
            flatidx = (coords * w).sum(-1)
            out = np.zeros(coords.shape[:-1] + (len(sshape),), dtype=np.int64)
            for j, s in enumerate(sstr):
                out[..., j] = (flatidx // s) % sshape[j]
            return out

        m = L.rename_map(src, dst, dst_to_src)
        if m is not None:
            return [tv.regs[r] for r in m]
        # Shared-memory exchange: write what we hold, barrier, read what we need.
        buf = self.buffer(("xchg", hint, dst.key), 0, tv.dtype, src.size)
        sw = exchange_swizzle(sshape, exprs.cast(tv.dtype))
        self.smem_write(buf, src, tv.regs, tv.dtype, row_major_strides(sshape), sw)
        self.smem_sync()
        names = [self.tmp(hint) for _ in range(dst.nregs)]
        for k, n in enumerate(names):
            idx = self.linear(dst, weights, k, sw)
            self.line(f"{n} = {self.smem_load(buf, idx, tv.dtype)}")
        self.smem_did_read(buf)
        return names

    # -- shared memory and barriers ----------------------------------------------------------
    def buffer(self, site, slot: int, dtype, nelems: int, align16: bool = False,
               align1024: bool = False) -> str:
        return self.smem.buffer(site, slot, exprs.cast(dtype), nelems, align16, align1024)

    def barrier(self) -> None:
        self.line(self.barrier_line())
        self.bar.barrier()

    def barrier_line(self) -> str:
        """A barrier of the kernel's ``T`` threads: the whole block's, or, beside a producer
        warpgroup (``ws_plan.py``), the consumers' named barrier."""
        if self.ws is None:
            return "cuda.syncthreads()"
        return f"bar_sync_named(i32({matmul_ws.CONSUMER_BARRIER}), i32({self.T}))"

    def smem_write(self, buf: str, lay: L.Layout, regs: list[str], dtype, weights,
                   swizzle: tuple | None = None) -> None:
        """Every register of ``lay`` to ``buf[coords . weights]`` (one writer per element;
        ``swizzle``: that index permuted, ``exchange_swizzle``)."""
        self.smem_before_write(buf)
        w = self.writer(lay)
        if w is not None:
            self.line(f"if {w}:")
            self.e.level += 1
        for k, r in enumerate(regs):
            val = f"u8({r})" if dtype.is_bool else r
            self.line(f"{buf}[{self.linear(lay, weights, k, swizzle)}] = {val}")
        if w is not None:
            self.e.level -= 1

    def smem_before_write(self, *bufs: str) -> None:
        if self.bar.needs_barrier_before_write(bufs):
            self.barrier()                     # write-after-read hazard

    def smem_sync(self) -> None:
        self.barrier()                         # read-after-write hazard

    def smem_load(self, buf: str, idx: str, dtype) -> str:
        return f"({buf}[{idx}] != 0)" if dtype.is_bool else f"{buf}[{idx}]"

    def smem_did_read(self, buf: str) -> None:
        self.bar.read(buf)

    # -- regions and control flow -------------------------------------------------------------
    def emit_op(self, op: Op) -> None:
        fn = load_lowerings().get(type(op))
        with self.e.for_op(op):
            self.e.comment(describe_op(op))
            if fn is None:
                raise TileUnsupportedFeatureError(
                    f"op {type(op).__name__} is not supported by the numba backend", op.loc)
            acc = self.globals_.of(op)
            if acc is not None and self.bar is not None and self.bar.needs_barrier_for_global(acc):
                self.barrier()                 # R-EXEC-5: program order on one array
            try:
                fn(self, op)
            except TileUnsupportedFeatureError as e:
                if e.loc is None:
                    e.loc = op.loc
                raise
            if acc is not None and self.bar is not None:
                self.bar.global_access(acc)

    def emit_region(self, region: Region, on_yield=None) -> None:
        """Emit ``region``'s ops; ``self.bar`` is None afterwards if it cannot fall through."""
        mark = self.e.mark()
        for op in region.ops:
            if self.bar is None:
                break
            if isinstance(op, ops.Yield):
                if on_yield is None:
                    raise TileInternalError("numba backend: Yield outside a region owner")
                with self.e.for_op(op):
                    on_yield(op)
                continue
            if isinstance(op, (ops.Continue, ops.Break, ops.Return)):
                with self.e.for_op(op):
                    self.terminator(op)
                continue
            self.emit_op(op)
        self.e.ensure_body(mark)

    def terminator(self, op: Op) -> None:
        if isinstance(op, ops.Return):
            self.line("return")
            self.bar = None
            return
        if not self.loops:
            raise TileInternalError(f"numba backend: {type(op).__name__} outside a loop")
        frame = self.loops[-1]
        self.assign_carried(frame, op.values)
        if isinstance(op, ops.Continue):
            frame.back.append(self.bar)
            self.line("continue")
        else:
            frame.exits.append(self.bar)
            self.line("break")
        self.bar = None

    def assign_carried(self, frame: LoopFrame, values) -> None:
        self.parallel_assign(frame.names, frame.layouts, values)

    def parallel_assign(self, names: list, layouts: list, values) -> None:
        lhs, rhs = [], []
        for tgt, lay, v in zip(names, layouts, values):
            src = [self.arrays[id(v)].name] if lay is None else self.get(v, lay)
            for a, b in zip(tgt, src):
                if a != b:
                    lhs.append(a)
                    rhs.append(b)
        if lhs:
            if len(lhs) == 1:
                self.line(f"{lhs[0]} = {rhs[0]}")
            else:
                self.line(f"{', '.join(lhs)} = {', '.join(rhs)}")

    def push_scope(self) -> None:
        self.scopes.append({})

    def pop_scope(self) -> None:
        self.scopes.pop()

    def emit_loop(self, head: str, frame: LoopFrame, body: Region, bind_args, normal_exit: bool):
        """Emit ``head:`` and the loop body; place barriers for the loop-carried hazard state.

        ``bind_args()`` emits the per-iteration prologue (binding region args).  The body is
        emitted with the barrier state at the loop head; if the state reaching the back edge
        has reads the head state lacked, the body is emitted again from the joined state.
        """
        start = self.bar.copy()
        state = start
        mark = self.e.mark()
        for _ in range(4):
            self.e.truncate(mark)
            frame.back, frame.exits = [], []
            self.bar = state.copy()
            self.line(head)
            self.loops.append(frame)
            self.push_scope()
            with self.e.indent():
                bind_args()
                body_mark = self.e.mark()

                def on_yield(op):
                    self.assign_carried(frame, op.values)
                    frame.back.append(self.bar)
                    self.bar = None

                self.emit_region(body, on_yield)
                self.e.ensure_body(body_mark)
            self.pop_scope()
            self.loops.pop()
            back = BarrierState()
            for s in frame.back:
                back = back.join(s)
            if back <= state:
                break
            state = state.join(back)
        else:
            raise TileInternalError("numba backend: barrier analysis did not converge")
        out = state.copy() if normal_exit else None
        for s in frame.exits:
            out = s.copy() if out is None else out.join(s)
        self.bar = out if out is not None else BarrierState()
        if not normal_exit and not frame.exits:
            self.bar = None

    # -- whole kernel ------------------------------------------------------------------------
    def generate(self) -> str:
        ir = self.ir
        for i, (p, pname) in enumerate(zip(ir.params, ir.param_names)):
            if isinstance(p.type, ArrayType):
                exprs.check_dtype(p.type.dtype, f"array parameter {pname!r}")
                name = f"a{i}"
                self.arrays[id(p)] = AV(name, frozenset({i}), p.type.ndim, p.type.dtype, True)
            else:
                exprs.check_dtype(p.type.dtype, f"scalar parameter {pname!r}")
                name = f"s{i}"
                self.set(p, TV(self.scalar_layout(), [name], p.type.dtype))
            self.params.append(name)
        if self.ws is None:
            self.emit_region(ir.body)
        else:
            self._generate_ws()
        return self.assemble()

    def _generate_ws(self) -> None:
        """The kernel beside a producer warpgroup (``lower/matmul_ws.py``'s shape): the ring
        set up, the producer's scalars, the consumers' branch (the kernel as written), then
        the producer's."""
        ws = self.ws
        matmul_ws.init(self, ws)
        for op in ws.slice_ops:
            self.emit_op(op)
        bufs = self.ws_buffers = pipelined_buffers(self, ws.op, self.mma.tc_plan(ws.op))
        main, self.e = self.e, Emitter(indent=self.e.level + 1)
        matmul_ws.produce(self, ws, bufs)
        producer, self.e = self.e, main
        self.line(f"if tid < {self.T}:")
        with self.e.indent():
            mark = self.e.mark()
            self.emit_region(self.ir.body)
            self.e.ensure_body(mark)
        self.line(f"elif tid == {self.T}:")
        self.e.splice(self.e.mark(), producer)
        self.bar = self.bar or BarrierState()

    def assemble(self) -> str:
        body_lines = self.e.lines
        stride_params = [f"st{r}_{ax}" for r, ax in sorted(self.strides_used)]
        params = self.params + ["gd0", "gd1", "gd2"] + stride_params
        if self.ws is not None:
            params.append("tmaps")          # the operands' tensor maps (tma.py)
        if self.asserts:
            params.append("aerr")
        params += [f"gs_{c}" for c in self.smem.scratch_casts]     # the global workspace
        head = [f"def {kernel_fn_name(self.ir)}({', '.join(params)}):",
                f"    # generated by cutile.numba_backend from kernel {self.ir.name!r}; "
                f"{self.T} threads per block",
                "    tid = cuda.threadIdx.x"]
        head += ["    " + d for d in self.smem.declarations()]
        head += ["    " + d for d in self.smem.scratch_declarations()]
        head += ["    " + b for b in minifloat.table_bindings("\n".join(body_lines))]
        for name, expr in self.hoisted.values():
            head.append(f"    {name} = {expr}")
        self.line_ops = [None] * len(head) + list(self.e.ops)
        if not body_lines:
            body_lines = ["    pass"]
        return "\n".join(head + body_lines) + "\n"


def exchange_swizzle(shape: tuple, cast: str) -> tuple | None:
    """The XOR swizzle of a shared-memory exchange of a row-major tile of ``shape``:
    ``(row shift, mask, chunk shift)`` so that flat index ``f`` lies at ``f ^ ((f >> row
    shift) & mask) << chunk shift``: the 16-byte chunks of a row permuted by the row's low
    three bits, a bijection within each row.  Writers and readers index alike, so any
    layouts exchange correctly; a layout holding a few columns of eight consecutive rows per
    warp (the mma fragments: a batched matmul's epilogue) then writes eight different chunks
    instead of one bank group eight times.  None where a row holds fewer than two chunks."""
    if not shape:
        return None
    row, chunk = shape[-1], 16 // smem_itemsize(cast)     # itemsize <= 8: chunk >= 2
    if row // chunk < 2:
        return None
    return (L.log2(row), min(row // chunk, 8) - 1, L.log2(chunk))


def swizzled(f: int, swizzle: tuple) -> int:
    """``exchange_swizzle``'s permutation of flat index ``f``."""
    sh, mask, up = swizzle
    return f ^ (((f >> sh) & mask) << up)


def kernel_fn_name(ir: KernelIR) -> str:
    name = "".join(ch if ch.isalnum() else "_" for ch in ir.name)
    return f"cutile_{name}"


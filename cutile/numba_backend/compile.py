"""Generating, compiling and caching one specialised kernel (a ``KernelIR``).

A kernel is compiled once per thread count and option set (``compile_kernel``): source
generation (``generate``), ``exec`` in the ``rt`` namespace, ``cuda.jit``.  On a GPU each
array-layout variant is compiled eagerly (``Compiled.variant``), or loaded from the on-disk
cache when an earlier process compiled it (``diskcache.py``); a kernel whose plan needs more
than 48 KiB of dynamic shared memory is opted in per device (``opt_in_dynamic_smem``).  The
caches here are filled under one lock, so concurrent first launches compile once.  Launching
is ``launch.py``'s job.
"""

from __future__ import annotations

import hashlib
import linecache
import threading
import warnings
import weakref

from .. import config
from ..compile_stages import stage
from ..compile_timeout import run_with_timeout
from ..ir import ops
from ..ir.core import KernelIR, walk
from ..ir.effects import FOREIGN, written_roots
from ..ir.types import ArrayType
from . import compat, direct, diskcache, fulltile, numba_speedups, rt, tma, ws_plan
from .codegen import Gen, kernel_fn_name
from .device_limits import check_compute_capability, device_compute_capability, smem_budget
from .lower import matmul_ws
from .params import Packer, argument_types
from .smem import SOFT_BUDGET
from .threads import launch_bounds, min_blocks

_cache: weakref.WeakKeyDictionary[KernelIR, dict] = weakref.WeakKeyDictionary()
_lock = threading.RLock()          # guards the kernel and variant caches (see the docstring)


class Compiled:
    """One generated kernel: source, the ``cuda.jit`` dispatcher and what the launcher needs."""

    def __init__(self, ir, gen: Gen, source: str, filename: str, dispatcher, T: int,
                 bounds: tuple | None = None, lineinfo: bool = False):
        self.ir = ir
        self.bounds = bounds            # cuda.jit's launch_bounds (threads.py)
        self.lineinfo = lineinfo
        # how its variants were compiled: "direct" (direct.py), "numba: <why not direct>" or
        # "loaded from the disk cache"
        self.path: str | None = None
        self.name = ir.name
        self.source = source
        self.filename = filename
        self.dispatcher = dispatcher
        self.T = T
        # threads per block: T, or T and a TMA producer warpgroup (ws_plan.py)
        self.block_threads = gen.block_threads
        # the operands' tensor maps of a TMA K loop (tma.MapSpec each; the launch encodes them)
        self.tma_specs = matmul_ws.map_specs(gen.ws) if gen.ws is not None else ()
        self.smem_bytes = gen.smem.total_bytes
        self.static_smem = gen.smem.static_bytes
        self.dyn_smem = gen.smem.dynamic_bytes          # passed with every launch
        # the global workspace (smem.py): (cast, elements per block) per extra parameter
        self.scratch = [(c, n) for c, (n, _) in gen.smem.scratch_rows().items()]
        self.scratch_bytes = gen.smem.scratch_bytes     # per block
        self.plan = "; ".join(dict.fromkeys(gen.plans))  # mma strategies (kernel.inspect)
        # the array parameters the kernel may write: copied back after a launch
        self.stores = set(written_roots(ir))
        if FOREIGN in self.stores:          # a store through Array.from_foreign: any argument
            self.stores |= {i for i, p in enumerate(ir.params) if isinstance(p.type, ArrayType)}
        self.pointer_roots = set(gen.pointer_roots)     # params whose address is taken
        self.foreign = any(isinstance(op, (ops.ForeignPointer, ops.FromForeign))
                           for op in walk(ir.body))
        self.raw_roots = set(gen.raw_roots)
        self.strides_used = sorted(gen.strides_used)
        self.strides_of = {r for r, _ in self.strides_used}   # params whose strides it queries
        self.line_ops = gen.line_ops
        self.n_barriers = source.count(gen.barrier_line())   # barriers in the source
        self.smem_shared = gen.smem.shared
        # GPU only (see params.py): one eagerly compiled kernel per tuple of array layouts
        self.variants: dict[tuple, Variant] = {}
        self.n_arrays = sum(isinstance(p.type, ArrayType) for p in ir.params)
        self.asserts = list(gen.asserts)                 # (message, loc) per assert_
        self.prints = any(isinstance(op, ops.Print) for op in walk(ir.body))
        # the on-disk cache key of the generated kernel (diskcache.py)
        with stage("cache key"):
            self.cache_key = diskcache.source_key(source, gen.consts, T, gen.mma_acc)

    def variant(self, layouts: tuple | None = None) -> Variant:
        """The kernel compiled for these array layouts ("C"/"A" per array; default all "C"),
        loaded from the on-disk cache when an earlier process stored it."""
        layouts = layouts or ("C",) * self.n_arrays
        v = self.variants.get(layouts)
        if v is None:
            with _lock:
                v = self.variants.get(layouts)
                if v is None:
                    argtypes = argument_types(self.ir, len(self.strides_used), layouts,
                                              bool(self.asserts),
                                              tuple(c for c, _ in self.scratch),
                                              bool(self.tma_specs))
                    key = target = loaded = None
                    if config.cache_enabled():
                        try:
                            target = diskcache.current_target()
                            key = diskcache.variant_key(self.cache_key, argtypes, target)
                            loaded = diskcache.load(key)
                        except Exception as e:      # no device query / toolchain versions: no cache
                            diskcache.cache.stats.note(f"key {self.name}: {type(e).__name__}: {e}")
                            key = None
                    if loaded is not None:
                        v = Variant(argtypes, None, Packer(argtypes), loaded)
                        self.path = self.path or "loaded from the disk cache"
                    else:
                        v = self._compile_variant(argtypes)
                        v.disk = (key, target) if key is not None else None
                        if v.loaded is not None and v.disk is not None:
                            diskcache.save_cubin(key, self, v.loaded[0],
                                                 kernel_fn_name(self.ir), argtypes, target)
                    self.variants[layouts] = v
        return v

    def _compile_variant(self, argtypes: tuple) -> Variant:
        """The direct path's build of the variant (``direct.py``), else Numba's."""
        why = "off (CUTILE_NUMBA_DIRECT=0 or line information)"
        if direct.wanted(self.lineinfo):
            try:
                cc = device_compute_capability()
                if "wgmma_" in self.source:     # Hopper's wgmma: the sm_90a target
                    cc = (*cc[:2], "a")
                loaded = direct.compile_variant(self.source, kernel_fn_name(self.ir),
                                                argtypes, self.bounds, cc)
                direct.stats.note(None)
                self.path = "direct"
                return Variant(argtypes, None, Packer(argtypes), loaded)
            except direct.Unsupported as e:
                why = f"not covered: {e}"
            except Exception as e:          # a translator bug must not stop the launch
                why = f"failed: {type(e).__name__}: {str(e)[:200]}"
                warnings.warn(f"cutile: the direct compile path failed on kernel {self.name!r} "
                              f"({why}); compiling it through Numba (slower)", RuntimeWarning,
                              stacklevel=2)
            direct.stats.note(why)
        self.path = f"numba: {why}"
        with stage("numba compile (typing, lowering, NVVM)"), numba_speedups.typing_memo():
            kern = self.dispatcher.compile(argtypes)
        return Variant(argtypes, kern, Packer(argtypes))

    def op_at(self, lineno: int):
        if 1 <= lineno <= len(self.line_ops):
            return self.line_ops[lineno - 1]
        return None


class Variant:
    """One compiled signature of a generated kernel, its parameter packer and whether the
    packer passed its check against Numba's own (None: not checked yet).

    ``kernel`` is Numba's compiled kernel; a variant loaded from the on-disk cache has none,
    only ``loaded`` = (cuda.core ObjectCode, kernel handle), and is launched through the
    packing that was checked when it was stored.  ``disk``: (key, target) to store a compiled
    variant under once its packing is checked (None: not to be stored)."""

    def __init__(self, argtypes: tuple, kernel, packer: Packer, loaded=None):
        self.argtypes, self.kernel, self.packer = argtypes, kernel, packer
        self.loaded = loaded
        self.fast: bool | None = True if loaded is not None else None
        self.disk: tuple | None = None
        self.smem_devices: set[int] = set()    # devices where its dynamic smem is opted in

    def handle(self):
        """The cuda.core kernel handle to launch."""
        if self.loaded is not None:
            return self.loaded[1]
        return self.kernel._codelibrary.get_cufunc().kernel

    def registers(self) -> int:
        """Registers per thread of the compiled kernel."""
        if self.kernel is not None:
            return int(self.kernel.regs_per_thread)
        n = self.loaded[1].attributes.num_regs
        return int(n() if callable(n) else n)


def opt_in_dynamic_smem(kernel, nbytes: int) -> None:
    """Allow a kernel ``nbytes`` of dynamic shared memory (needed above 48 KiB; numba-cuda has
    no public API for it: the attribute is set on the driver).  ``kernel``: a ``Variant``
    (compiled or loaded from the disk cache) or a Numba compiled kernel."""
    if nbytes <= 48 * 1024 or rt.simulator():
        return
    from numba import cuda
    from numba.cuda.cudadrv.driver import binding, driver
    handle = (kernel.handle() if isinstance(kernel, Variant)
              else kernel._codelibrary.get_cufunc().kernel).handle
    attr = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    driver.cuKernelSetAttribute(attr, nbytes, handle, cuda.get_current_device().id)


def env_mma_acc() -> str:
    return config.numba_mma_acc()


def generate(ir: KernelIR, T: int, mma_acc: str = "f32", tensor_cores: bool | None = None,
             full: frozenset = frozenset(), smem_limit: int | None = None,
             wgmma: bool | None = None) -> Gen:
    """Run the generator; retry with shared buffers if private ones exceed the soft budget;
    move buffers to the global workspace if they still exceed ``smem_limit`` (default
    ``smem_budget()``; smem.py).  ``full``: the launch's full-tile facts (``fulltile.py``)."""
    gen = Gen(ir, T, mma_acc=mma_acc, tensor_cores=tensor_cores, full=full, wgmma=wgmma)
    gen.source = gen.generate()
    if gen.smem.total_bytes > SOFT_BUDGET:
        g2 = Gen(ir, T, mma_acc=mma_acc, shared_smem=True, tensor_cores=tensor_cores,
                 full=full, wgmma=wgmma)
        g2.source = g2.generate()
        if g2.smem.total_bytes < gen.smem.total_bytes:
            gen = g2
    if gen.smem.fit(smem_budget() if smem_limit is None else smem_limit):
        gen.source = gen.assemble()
    return gen


def compile_kernel(ir: KernelIR, T: int, mma_acc: str | None = None,
                   full: frozenset = frozenset()) -> Compiled:
    mma_acc = mma_acc or env_mma_acc()
    key = (T, mma_acc, rt.simulator(), config.numba_tensor_cores(),
           config.numba_tensor_cores_sim(), config.numba_cp_async(), config.numba_ffma(),
           config.numba_ffma_sim(), config.numba_wgmma(), config.numba_wgmma_deferred(),
           config.numba_store_exchange(),
           config.numba_wgmma_sim(), config.numba_tma(), config.numba_tma_store(), full,
           min_blocks(ir, T), config.numba_smem_limit(), config.numba_lineinfo(),
           config.numba_direct())
    ck = _cache.get(ir, {}).get(key)
    if ck is not None:
        return ck
    with _lock:
        per_ir = _cache.setdefault(ir, {})
        ck = per_ir.get(key)
        if ck is None:
            ck = per_ir[key] = run_with_timeout(lambda: _compile(ir, T, mma_acc, full),
                                                f"kernel {ir.name!r} for the Numba backend")
    return ck


def _compile(ir: KernelIR, T: int, mma_acc: str, full: frozenset = frozenset()) -> Compiled:
    if not rt.simulator():
        compat.check_gpu_toolchain()        # before anything Numba compiles (compat.py)
    budget = smem_budget()
    with stage("plan + source (assign.py, codegen.py)"):
        gen = generate(ir, T, mma_acc, full=full, smem_limit=budget)
    gen.smem.check(budget, ir.name)
    check_compute_capability(gen.min_cc, device_compute_capability())
    source = gen.source
    # the simulator's jit takes no bounds; a producer warpgroup counts (gen.block_threads)
    bounds = None if rt.simulator() else launch_bounds(ir, gen.block_threads)
    nt = gen.block_threads
    if bounds is not None and len(bounds) == 2:
        source += (f"\n# launch_bounds={bounds}: ptxas fits {bounds[1]} blocks of {nt} threads "
                   f"per SM\n")
    elif bounds is not None:
        source += (f"\n# launch_bounds={bounds}: ptxas keeps to {65536 // nt} registers per "
                   f"thread\n")
    digest = hashlib.sha1(source.encode()).hexdigest()[:10]
    filename = f"<cutile-numba:{ir.name}:{digest}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    with stage("exec + cuda.jit"):
        if not rt.simulator() and config.numba_speedups():
            numba_speedups.apply()
        ns = rt.namespace()
        ns.update(gen.consts)
        exec(compile(source, filename, "exec"), ns)
        from numba import cuda
        opts = {"launch_bounds": bounds} if bounds else {}
        if config.numba_lineinfo() and not rt.simulator():
            opts["lineinfo"] = True
        dispatcher = cuda.jit(**opts)(ns[kernel_fn_name(ir)])
    return Compiled(ir, gen, source, filename, dispatcher, T, bounds,
                    bool(opts.get("lineinfo")))


def full_tiles(ir: KernelIR, T: int, mma_acc: str | None, leaves: list) -> frozenset:
    """The launch's full-tile facts (``fulltile.py``): part of the compiled kernel's key."""
    reqs = fulltile.requirements(ir, T, mma_acc or env_mma_acc())
    if not reqs:
        return frozenset()
    out = fulltile.facts(reqs, leaves)
    if ws_plan.mode() != "0":
        out |= tma.facts(ir, leaves)           # where a TMA K loop may use them (ws_plan.py)
    return out

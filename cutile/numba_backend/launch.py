"""Compiling, caching and launching generated kernels; argument and stream marshalling.

- A specialised kernel (one ``KernelIR``) is compiled once per thread count and option set
  (``compile_kernel``): source generation, ``exec`` in the ``rt`` namespace, ``cuda.jit``.
  On a GPU each array-layout variant is compiled eagerly (``Compiled.variant``), or loaded
  from the on-disk cache when an earlier process compiled it (``diskcache.py``).
- Arguments: NumPy arrays are copied to the device (C-contiguous) and the ones the kernel may
  write are copied back into the caller's array (a view of a larger buffer is written through
  the view, so the rest of the buffer is untouched); Numba device arrays and any object with
  ``__cuda_array_interface__`` (CuPy, PyTorch CUDA tensors) are used in place.  Scalars are
  passed as NumPy scalars of their exact dtype.
- Streams: ``None``/``0`` (default stream), a Numba stream, or a CuPy/PyTorch stream (wrapped
  with ``cuda.external_stream``), or a raw ``CUstream`` integer.
- Threads: the caches here (compiled kernels, thread counts, variants, streams, launch configs)
  are filled under one lock, so concurrent first launches compile once; Numba's CUDA simulator
  swaps module globals while a kernel runs, so simulated launches run one at a time.
"""

from __future__ import annotations

import hashlib
import linecache
import os
import re
import threading
import warnings
import weakref

import numpy as np

from .. import config
from ..compile_stages import stage
from ..device_arrays import DeviceArrayRef
from ..errors import (
    TileCompilerExecutionError,
    TileUnsupportedFeatureError,
    UndefinedBehaviorError,
)
from ..ir import ops
from ..ir.core import KernelIR, walk
from ..ir.effects import FOREIGN, written_roots
from ..ir.types import ArrayType, TileType
from . import compat, diskcache, fulltile, numba_speedups, rt
from .codegen import Gen, kernel_fn_name
from .devices import current_device_id, launch_device, on_device
from .emitter import describe_op
from .params import Packer, argument_types, layout, refs, storage_bits
from .pointer_rt import strided_copy
from .printf_rt import to_sys_stdout
from .smem import H100_OPTIN_LIMIT, NP_DTYPE, SOFT_BUDGET

# Thread counts: the simulator runs every thread as a Python thread, so keep it small there.
SIM_THREADS = 32
MAX_THREADS = 1024

_cache: weakref.WeakKeyDictionary[KernelIR, dict] = weakref.WeakKeyDictionary()
_lock = threading.RLock()          # guards every cache of this module (see the docstring)
_sim_lock = threading.Lock()       # one simulated launch at a time


class Compiled:
    """One generated kernel: source, the ``cuda.jit`` dispatcher and what the launcher needs."""

    def __init__(self, ir, gen: Gen, source: str, filename: str, dispatcher, T: int):
        self.ir = ir
        self.name = ir.name
        self.source = source
        self.filename = filename
        self.dispatcher = dispatcher
        self.T = T
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
        self.n_barriers = source.count("cuda.syncthreads()")   # barriers in the source
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
                                              tuple(c for c, _ in self.scratch))
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
                    else:
                        with stage("numba compile (typing, lowering, NVVM)"), \
                                numba_speedups.typing_memo():
                            kern = self.dispatcher.compile(argtypes)
                        v = Variant(argtypes, kern, Packer(argtypes))
                        v.disk = (key, target) if key is not None else None
                    self.variants[layouts] = v
        return v

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


# -- options ---------------------------------------------------------------------------------
def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def env_threads() -> int | None:
    return config.numba_threads()


def env_mma_acc() -> str:
    return config.numba_mma_acc()


_max_tiles: weakref.WeakKeyDictionary[KernelIR, tuple] = weakref.WeakKeyDictionary()


def _max_tile(ir: KernelIR) -> tuple[int, int, int]:
    """(largest tile size, largest mma accumulator size, number of mma ops) of the kernel.
    Cached per kernel IR: every launch asks (``min_blocks`` is part of the compiled kernel's
    key), and walking the IR cost ~100 us a launch."""
    got = _max_tiles.get(ir)
    if got is not None:
        return got
    big, acc, n = 1, 0, 0
    for op in walk(ir.body):
        for r in op.results:
            if isinstance(r.type, TileType):
                big = max(big, r.type.size)
        if isinstance(op, ops.Mma):
            acc = max(acc, op.acc.type.size)
            n += 1
    _max_tiles[ir] = got = (big, acc, n)
    return got


_threads_cache: weakref.WeakKeyDictionary[KernelIR, dict] = weakref.WeakKeyDictionary()


def choose_threads(ir: KernelIR, threads: int | None = None) -> int:
    """T for ``ir`` (cached per kernel and inputs; see ``_choose_threads``)."""
    key = (threads, os.environ.get("CUTILE_NUMBA_THREADS"), rt.simulator())
    with _lock:
        per_ir = _threads_cache.get(ir)
        if per_ir is None:
            per_ir = _threads_cache[ir] = {}
        t = per_ir.get(key)
        if t is None:
            t = per_ir[key] = _choose_threads(ir, threads)
    return t


def _hint(ir: KernelIR, name: str):
    """A kernel option for this device: ``ByTarget`` values resolved for its compute
    capability (``sm_90`` on an H100), the default under the simulator."""
    v = ir.options.get(name)
    if v is not None and hasattr(v, "by_arch"):
        arch = None
        if not rt.simulator():
            try:
                from numba import cuda
                major, minor = cuda.get_current_device().compute_capability
                arch = f"sm_{major}{minor}"
            except Exception:
                arch = None
        v = v.get(arch)
    return v


def _choose_threads(ir: KernelIR, threads: int | None = None) -> int:
    """T: explicit (per launch / per kernel) > CUTILE_NUMBA_THREADS > heuristic.

    Heuristic: under the simulator 32.  On a GPU, an mma kernel gets one thread per 64
    accumulator elements (an 8x8 register sub-tile), twice that with several mmas (attention:
    the scores, probabilities and output accumulator are all live; at 64 threads a 64x64
    flash-attention step spills, at 128 it does not, ptxas sm_90), clamped to [32, 256]; other
    kernels one thread per 8 elements of their largest tile, per 16 from 4096 elements on,
    clamped to [32, 512] (a 1 x 4096 row softmax / layer norm on an H100, with whole-tile
    loads and one exchange per reduction: 256 threads 2833 / 2826 GB/s = 0.96 of copy, ptxas
    46 / 80 registers; 128 threads the same; 512 threads at full occupancy 2816 / 2004); and
    to 2048 / occupancy when the kernel's ``occupancy`` hint asks for that many blocks per SM.
    """
    if threads is None:
        threads = _hint(ir, "numba_threads")
    if threads is None:
        threads = env_threads()
    if threads is not None:
        if not _pow2(int(threads)) or threads > MAX_THREADS:
            raise ValueError(f"thread count must be a power of two <= {MAX_THREADS}, got "
                             f"{threads}")
        return int(threads)
    if rt.simulator():
        return SIM_THREADS
    big, acc, n_mma = _max_tile(ir)
    t = acc // 64 * min(n_mma, 2) if acc else big // (16 if big >= 4096 else 8)
    t = min(max(1 << max(t - 1, 0).bit_length(), 32), 256 if acc else 512)
    occ = _hint(ir, "occupancy")
    if isinstance(occ, int) and occ > 0:
        while t > 32 and t * occ > 2048:
            t //= 2
    return t


# -- compilation -----------------------------------------------------------------------------
def device_smem_limit() -> int:
    """Shared memory one block may use after the dynamic opt-in (the simulator: an H100's)."""
    if rt.simulator():
        return H100_OPTIN_LIMIT
    try:
        from numba import cuda
        dev = cuda.get_current_device()
        return int(dev.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
    except Exception:
        return H100_OPTIN_LIMIT


def smem_budget() -> int:
    """Shared memory per block a plan may use: the device's limit, or less when
    ``CUTILE_NUMBA_SMEM_LIMIT`` says so (buffers beyond go to the global workspace)."""
    knob = config.numba_smem_limit()
    limit = device_smem_limit()
    return limit if knob is None else min(knob, limit)


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


def device_compute_capability() -> tuple[int, int] | None:
    """The current device's (major, minor); None under the simulator or without a device."""
    if rt.simulator():
        return None
    try:
        from numba import cuda
        return tuple(cuda.get_current_device().compute_capability)
    except Exception:
        return None


def check_compute_capability(needs: list, cc: tuple[int, int] | None) -> None:
    """Refuse a kernel whose instructions the device lacks (``Gen.min_cc``), naming the op."""
    for need, why, loc in needs:
        if cc is not None and tuple(cc) < tuple(need):
            raise TileUnsupportedFeatureError(
                f"{why}; this device is {cc[0]}.{cc[1]}: not supported by the numba backend "
                f"here (run on the interpreter, or accumulate in float32)", loc)


def generate(ir: KernelIR, T: int, mma_acc: str = "f32", tensor_cores: bool | None = None,
             full: frozenset = frozenset(), smem_limit: int | None = None) -> Gen:
    """Run the generator; retry with shared buffers if private ones exceed the soft budget;
    move buffers to the global workspace if they still exceed ``smem_limit`` (default
    ``smem_budget()``; smem.py).  ``full``: the launch's full-tile facts (``fulltile.py``)."""
    gen = Gen(ir, T, mma_acc=mma_acc, tensor_cores=tensor_cores, full=full)
    gen.source = gen.generate()
    if gen.smem.total_bytes > SOFT_BUDGET:
        g2 = Gen(ir, T, mma_acc=mma_acc, shared_smem=True, tensor_cores=tensor_cores,
                 full=full)
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
           config.numba_ffma_sim(), full,
           min_blocks(ir, T), config.numba_smem_limit(), config.numba_lineinfo())
    ck = _cache.get(ir, {}).get(key)
    if ck is not None:
        return ck
    with _lock:
        per_ir = _cache.setdefault(ir, {})
        ck = per_ir.get(key)
        if ck is None:
            from ..compile_timeout import run_with_timeout
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
    bounds = None if rt.simulator() else launch_bounds(ir, T)  # the simulator's jit takes none
    if bounds is not None and len(bounds) == 2:
        source += (f"\n# launch_bounds={bounds}: ptxas fits {bounds[1]} blocks of {T} threads "
                   f"per SM\n")
    elif bounds is not None:
        source += (f"\n# launch_bounds={bounds}: ptxas keeps to {65536 // T} registers per "
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
    return Compiled(ir, gen, source, filename, dispatcher, T)


def launch_bounds(ir: KernelIR, T: int) -> tuple | None:
    """``cuda.jit``'s ``launch_bounds`` for ``ir`` at ``T`` threads: ``(T, min_blocks)`` when
    the kernel must fit that many blocks per SM; else ``(T,)`` above 256 threads, where a
    block's 65536 registers leave fewer than ptxas' own maximum of 255 per thread: without
    the bound ptxas may use more (a 16 x 32 x 64 float16 max over two axes at 512 threads:
    202) and the launch fails with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES; with it ptxas keeps to
    65536 / T and spills the rest to local memory.  None: ptxas chooses (T <= 256)."""
    mb = min_blocks(ir, T)
    if mb is not None:
        return (T, mb)
    return (T,) if T > 256 else None


def min_blocks(ir: KernelIR, T: int) -> int | None:
    """Blocks of ``T`` threads per SM the compiled kernel must fit (``launch_bounds``'
    second value: ptxas caps registers per thread at 65536 / (T * blocks), spilling if it
    must): the kernel's ``occupancy`` hint (cuTile's meaning: blocks per SM), else
    ``CUTILE_NUMBA_MIN_BLOCKS``, else None (ptxas chooses)."""
    occ = _hint(ir, "occupancy")
    if isinstance(occ, int) and occ > 0:
        return max(1, min(occ, 2048 // T))
    env = config.numba_min_blocks()
    if env is not None:
        return max(1, min(env, 2048 // T))
    big, _, n_mma = _max_tile(ir)
    if n_mma >= 2 and T <= 256:
        # several mmas live at once (attention): 512 threads per SM, at most 128 registers
        # per thread.  H200, 64x64 flash attention at 128 threads: ptxas alone 194 registers,
        # 2 blocks/SM, 101.8 TFLOP/s; 3 blocks 115.2; 4 blocks 118.6.  A single FFMA matmul
        # gains nothing (149 -> 128 registers: 18.9 -> 19.3) and loses at 80 (8.9): none there
        return 512 // T
    if n_mma == 0 and big <= 8 * T and T >= 128:
        # no mma and at most 8 elements of any tile per thread: a memory-bound kernel, whose
        # loads need every warp an SM can hold in flight.  Full occupancy caps registers at
        # 32.  H200, 8192 x 4096 f32 at 512 threads (8 per thread): softmax (ptxas alone 39
        # registers, 3 blocks/SM) 3073 -> 3264 GB/s; layer norm (46, 2 blocks) 1719 -> 2549
        # GB/s, though ptxas spills 80 bytes.  Vector add (1024 at 128 threads): 3970 -> 4220.
        # Tiles of 4096 and more get 16 elements per thread and no bound (``_choose_threads``)
        return 2048 // T
    return None


# -- arguments -------------------------------------------------------------------------------
_streams: dict = {}


def _stream_handle(stream) -> int | None:
    """The CUstream handle of a stream argument; None for a Numba stream object."""
    from ..streams import stream_handle
    return stream_handle(stream)


def resolve_stream(stream):
    """(Numba stream, cuda.core stream) for a stream argument (cached per handle)."""
    from numba import cuda
    if rt.simulator():
        return 0, None
    h = _stream_handle(stream)
    if h is None:                                        # a Numba stream object
        from numba.cuda.cudadrv import driver
        return stream, driver._to_core_stream(stream)
    # the default stream (handle 0) is each device's own: its Numba object is per device
    key = h if h else (0, current_device_id())
    pair = _streams.get(key)
    if pair is None:
        from numba.cuda.cudadrv import driver
        with _lock:
            nb = cuda.default_stream() if h == 0 else cuda.external_stream(h)
            if len(_streams) > 256:
                _streams.clear()
            pair = _streams[key] = (nb, driver._to_core_stream(nb))
    return pair


def _itemsize_strides(x) -> tuple:
    """Strides in elements of a NumPy array, a DeviceArrayRef or a simulator device array."""
    item = x.dtype.itemsize
    return tuple(int(s) // item for s in x.strides)


def _check_raw_layout(ck: Compiled, i: int, leaf) -> None:
    """RawArrayMemory offsets are decoded with the strides in axis order (lower/atomic.py),
    which is exact when every stride exceeds the span of the axes after it."""
    from ..errors import TileUnsupportedFeatureError
    st, span = _itemsize_strides(leaf), 0
    for s, n in reversed(list(zip(st, leaf.shape))):
        if n > 1 and s <= span:
            raise TileUnsupportedFeatureError(
                f"numba backend: RawArrayMemory of argument {i} of kernel {ck.name!r} needs an "
                f"array whose strides decrease along the axes (row-major, slices allowed); got "
                f"strides {st} for shape {tuple(leaf.shape)} (pass a C-ordered array or use "
                f"the interpreter)")
        span += s * (n - 1) if n > 1 else 0


def marshal(ck: Compiled, grid: tuple, leaves: list, stream):
    """(kernel args, write-back closures) for one launch."""
    from numba import cuda
    args, back, logical_strides = [], [], {}
    copies: dict = {}               # buffers of strided NumPy arguments (pointer_rt.py)
    for i, (p, leaf) in enumerate(zip(ck.ir.params, leaves)):
        if isinstance(p.type, ArrayType):
            if i in ck.strides_of:
                logical_strides[i] = _itemsize_strides(leaf)
            if i in ck.raw_roots:
                _check_raw_layout(ck, i, leaf)
            if i in ck.pointer_roots and isinstance(leaf, np.ndarray) and leaf.size and \
                    leaf.base is not None:
                # a view whose address the kernel takes: its strides, its whole buffer
                bits = storage_bits(p.type.dtype)
                got = strided_copy(leaf, np.dtype(f"u{bits // 8}") if bits else leaf.dtype,
                                   copies, stream, rt.simulator())
                if got is None:
                    raise TileUnsupportedFeatureError(
                        f"numba backend: kernel {ck.name!r} takes the foreign_pointer of "
                        f"argument {i}, a NumPy view with negative strides {leaf.strides} or of "
                        f"a non-contiguous buffer, which cannot travel to the device with its "
                        f"own strides (pass np.ascontiguousarray(...), a device array, or use "
                        f"the interpreter)")
                args.append(got[0])
                copies[got[1]][2] |= i in ck.stores
                continue
            if isinstance(leaf, np.ndarray):
                host = leaf if leaf.flags.c_contiguous else np.array(leaf, order="C")
                bits = storage_bits(p.type.dtype)
                if bits:                              # bfloat16/float8/float4: as their bits
                    host = host.view(f"u{bits // 8}")
                if host.size == 0 and host.ndim:
                    # an empty view of a one-element buffer: masked-off lanes of loads and
                    # gathers read element 0, which must have a valid address
                    dev = cuda.to_device(np.zeros(1, host.dtype))[:0].reshape(host.shape) \
                        if host.ndim == 1 else _empty_device(host)
                else:
                    dev = cuda.to_device(host, stream=stream) if not rt.simulator() else \
                        cuda.to_device(host)
                args.append(dev)
                if i in ck.stores:
                    back.append((leaf, dev))
            elif isinstance(leaf, DeviceArrayRef):          # Numba, CuPy, PyTorch, ...
                # zero-copy; the launch is ordered on the caller's stream, so no sync here
                args.append(leaf if not rt.simulator() else cuda.as_cuda_array(leaf))
            elif hasattr(leaf, "copy_to_host"):              # a simulator device array
                args.append(leaf)
            else:
                raise TypeError(f"numba backend: argument {i} of type {type(leaf).__name__} "
                                "is neither a NumPy array nor a CUDA array")
        else:
            args.append(np.asarray(leaf)[()])
    back += [(host, dev) for host, dev, written in copies.values() if written]   # buffers
    args += [np.int32(g) for g in grid]
    for r, ax in ck.strides_used:
        args.append(np.int64(logical_strides[r][ax]))
    if ck.asserts:
        args.append(cuda.to_device(np.zeros(4, np.int64)))
    if ck.scratch:                  # the global workspace (smem.py): one row per CUDA block
        g0, g1, g2 = cuda_grid(grid)
        for cast, per_block in ck.scratch:
            args.append(workspace((g0 * g1 * g2, per_block), np.dtype(NP_DTYPE[cast]), stream))
    return args, back


def workspace(shape: tuple, dtype: np.dtype, stream):
    """One launch's global workspace array of one element type (smem.py): a row per CUDA
    block, uninitialised (every buffer is written before it is read, as in shared memory).
    Allocated per launch, so concurrent launches never share one (``racecheck`` wraps it)."""
    from numba import cuda
    if rt.simulator():
        return cuda.device_array(shape, dtype)
    return cuda.device_array(shape, dtype, stream=stream)


def check_asserts(ck: Compiled, args: list, st) -> None:
    """Raise the first recorded ``assert_`` failure of the launch (R-ASSERT-2)."""
    if not ck.asserts:
        return
    if rt.simulator():
        rec = args[-1].copy_to_host()
    else:
        rec = args[-1].copy_to_host(stream=st)
        st.synchronize()
    if rec[0]:
        from ..errors import TileAssertionError
        message, loc = ck.asserts[int(rec[0]) - 1]
        raise TileAssertionError(message, loc, tuple(int(b) for b in rec[1:4]))


def _empty_device(host: np.ndarray):
    from numba import cuda
    buf = cuda.to_device(np.zeros((1,) * host.ndim, host.dtype))
    return buf[tuple(slice(0, d) for d in host.shape)]


def cuda_grid(grid: tuple) -> tuple:
    g0, g1, g2 = grid
    if g1 <= 65535 and g2 <= 65535:
        return (g0, g1, g2)
    n = g0 * g1 * g2
    if n >= 2 ** 31:
        raise TileUnsupportedFeatureError(f"grid {grid} has too many blocks for the numba "
                                          "backend")
    return (n, 1, 1)


# -- launch ---------------------------------------------------------------------------------
def full_tiles(ir: KernelIR, T: int, mma_acc: str | None, leaves: list) -> frozenset:
    """The launch's full-tile facts (``fulltile.py``): part of the compiled kernel's key."""
    reqs = fulltile.requirements(ir, T, mma_acc or env_mma_acc())
    return fulltile.facts(reqs, leaves) if reqs else frozenset()


def run(ir: KernelIR, grid: tuple, leaves: list, stream=None, *, threads: int | None = None,
        mma_acc: str | None = None) -> Compiled:
    """Compile (cached) and launch on the device that holds the device-array arguments
    (``devices.py``), or under the simulator."""
    if rt.simulator():
        return _run(ir, grid, leaves, stream, threads, mma_acc)
    with on_device(launch_device(leaves)):
        return _run(ir, grid, leaves, stream, threads, mma_acc)


def _run(ir: KernelIR, grid: tuple, leaves: list, stream, threads: int | None,
         mma_acc: str | None) -> Compiled:
    T = choose_threads(ir, threads)
    ck = compile_kernel(ir, T, mma_acc, full_tiles(ir, T, mma_acc, leaves))
    if 0 in grid:
        return ck
    st, core = resolve_stream(stream)
    args, back = marshal(ck, grid, leaves, st)
    try:
        if rt.simulator():
            from .pointer_rt import sim_launch
            with _sim_lock, warnings.catch_warnings(), sim_launch(args if ck.foreign else ()):
                # NumPy scalar arithmetic warns on the integer wrap-around and IEEE specials
                # that are the intended semantics (R-MATH-4).
                warnings.simplefilter("ignore", RuntimeWarning)
                ck.dispatcher[cuda_grid(grid), T, st, ck.dyn_smem](*args)
        elif ck.prints:                 # its text on sys.stdout before we return (printf_rt.py)
            with to_sys_stdout(st.synchronize):
                _launch_gpu(ck, cuda_grid(grid), args, st, core)
        else:
            _launch_gpu(ck, cuda_grid(grid), args, st, core)
    except Exception as e:
        raise _wrap_error(ck, e) from e
    for host, dev in back:
        out = dev.copy_to_host() if rt.simulator() else dev.copy_to_host(stream=st)
        if not rt.simulator():
            st.synchronize()
        if out.dtype != host.dtype:
            host = host.view(out.dtype)
        host[...] = out
    check_asserts(ck, args, st)          # after the write-back: other blocks' results stay
    return ck


_configs: dict = {}


def _launch_gpu(ck: Compiled, grid3: tuple, args: list, st, core) -> None:
    """Pick the compiled variant for the arrays' layouts, pack the parameters and launch
    through cuda.core (params.py), or through Numba's dispatcher when the packing did not
    pass its check for this kernel."""
    values = refs(args)
    var = ck.variant(tuple(layout(v) for v in values if isinstance(v, DeviceArrayRef)))
    if ck.dyn_smem > 48 * 1024:                 # the opt-in is per kernel and device
        dev = current_device_id()
        if dev not in var.smem_devices:
            opt_in_dynamic_smem(var, ck.dyn_smem)
            var.smem_devices.add(dev)
    if var.fast is None:
        try:        # private Numba / cuda.core pieces: any surprise means the slow path
            with stage("link + load (PTX -> cubin, module load)"):
                var.handle()
            from cuda.core import LaunchConfig, launch  # noqa: F401
            var.fast = var.packer.verify(var.kernel, values, st)
        except Exception:
            var.fast = False
        if not var.fast:
            warnings.warn(f"cutile: parameter packing for kernel {ck.name!r} disagrees with "
                          "Numba's; launching through the Numba dispatcher (slower)",
                          RuntimeWarning, stacklevel=3)
        elif var.disk is not None:
            diskcache.save(var.disk[0], ck, var.kernel, var.disk[1])
    if not var.fast:
        from numba import cuda
        nb = [cuda.as_cuda_array(v) if isinstance(v, DeviceArrayRef) else v for v in values]
        if ck.dyn_smem:
            ck.dispatcher.compile(tuple(ck.dispatcher.typeof_pyval(a) for a in nb))
            for kern in ck.dispatcher.overloads.values():
                opt_in_dynamic_smem(kern, ck.dyn_smem)
        ck.dispatcher[grid3, ck.T, st, ck.dyn_smem](*nb)
        return
    key = (grid3, ck.T, ck.dyn_smem)
    cfg = _configs.get(key)
    if cfg is None:
        from cuda.core import LaunchConfig
        with _lock:
            if len(_configs) > 1024:
                _configs.clear()
            cfg = _configs[key] = LaunchConfig(grid=grid3, block=(ck.T, 1, 1),
                                              shmem_size=ck.dyn_smem)
    from cuda.core import launch
    launch(core, cfg, var.handle(), *var.packer.pack(values))


def _wrap_error(ck: Compiled, e: Exception) -> Exception:
    """A Numba error inside generated code is a backend bug: show the line and the IR op."""
    if isinstance(e, TileUnsupportedFeatureError):
        return e
    text = str(e)
    lines = [int(m) for m in re.findall(re.escape(ck.filename) + r'["\']?,? line (\d+)', text)]
    tb = e.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == ck.filename:
            lines.append(tb.tb_lineno)
        tb = tb.tb_next
    where = ""
    if lines:
        n = lines[-1]
        src = ck.source.splitlines()
        op = ck.op_at(n)
        where = f"\n  generated line {n}: {src[n - 1].strip() if n <= len(src) else '?'}"
        if op is not None:
            where += f"\n  from IR op {describe_op(op)}"
    if isinstance(e, UndefinedBehaviorError):
        # Array.from_foreign outside the launch's buffers (simulator: pointer_rt.py)
        if e.loc is None and lines and ck.op_at(lines[-1]) is not None:
            e.loc = ck.op_at(lines[-1]).loc
        return e
    return TileCompilerExecutionError(
        f"numba backend failed on kernel {ck.name!r}: {type(e).__name__}: {text}{where}",
        getattr(ck.op_at(lines[-1]) if lines else None, "loc", None))

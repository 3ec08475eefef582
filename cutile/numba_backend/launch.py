"""Launching a compiled kernel: argument and stream marshalling, the launch, write-back.

- ``run`` compiles (``compile.py``, cached) and launches on the device that holds the
  device-array arguments, or under Numba's CUDA simulator.
- Arguments: NumPy arrays are copied to the device (C-contiguous) and the ones the kernel may
  write are copied back into the caller's array (a view of a larger buffer is written through
  the view, so the rest of the buffer is untouched); Numba device arrays and any object with
  ``__cuda_array_interface__`` (CuPy, PyTorch CUDA tensors) are used in place.  Scalars are
  passed as NumPy scalars of their exact dtype.
- Streams: ``None``/``0`` (default stream), a Numba stream, or a CuPy/PyTorch stream (wrapped
  with ``cuda.external_stream``), or a raw ``CUstream`` integer.
- Threads: the caches here (streams, launch configs) are filled under one lock; Numba's CUDA
  simulator swaps module globals while a kernel runs, so simulated launches run one at a time.
"""

from __future__ import annotations

import re
import threading
import warnings

import numpy as np

from ..compile_stages import stage
from ..device_arrays import DeviceArrayRef
from ..errors import (
    TileAssertionError,
    TileCompilerExecutionError,
    TileUnsupportedFeatureError,
    UndefinedBehaviorError,
)
from ..ir.core import KernelIR
from ..ir.types import ArrayType
from ..streams import stream_handle
from . import diskcache, rt, tma
from .compile import Compiled, compile_kernel, full_tiles, opt_in_dynamic_smem
from .devices import current_device_id, launch_device, on_device
from .emitter import describe_op
from .params import layout, refs, storage_bits
from .pointer_rt import sim_launch, strided_copy
from .printf_rt import to_sys_stdout
from .smem import NP_DTYPE
from .threads import choose_threads

_lock = threading.RLock()          # guards the stream and launch-config caches
_sim_lock = threading.Lock()       # one simulated launch at a time


_streams: dict = {}


def resolve_stream(stream):
    """(Numba stream, cuda.core stream) for a stream argument (cached per handle)."""
    from numba import cuda
    if rt.simulator():
        return 0, None
    h = stream_handle(stream)
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
                if host.size == 0 and host.ndim and rt.simulator():
                    dev = _empty_simulated(host)
                elif host.size == 0 and host.ndim:
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
    if ck.tma_specs:                # the operands' tensor maps (tma.py): args[i] is param i's
        args.append(np.int64(tma.maps_argument(ck.tma_specs, args, rt.simulator())))
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
        message, loc = ck.asserts[int(rec[0]) - 1]
        raise TileAssertionError(message, loc, tuple(int(b) for b in rec[1:4])).printed()


def _empty_device(host: np.ndarray):
    from numba import cuda
    buf = cuda.to_device(np.zeros((1,) * host.ndim, host.dtype))
    return buf[tuple(slice(0, d) for d in host.shape)]


def _empty_simulated(host: np.ndarray):
    """The simulator's stand-in for an empty array's one-element buffer (``_empty_device``):
    an empty simulator device array whose element reads give zero and whose element writes
    are dropped, as the GPU's lanes that touch the spare element never reach a result (a
    masked-off load reads element 0 branch-free and selects its padding).  NumPy's bounds
    check would otherwise fail the launch with an IndexError the GPU never has."""
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    def element(idx) -> bool:
        return all(isinstance(i, (int, np.integer)) for i in
                   (idx if isinstance(idx, tuple) else (idx,)))

    class EmptyArray(FakeCUDAArray):
        def __getitem__(self, idx):
            return self._ary.dtype.type(0) if element(idx) else super().__getitem__(idx)

        def __setitem__(self, idx, val):
            if not element(idx):
                super().__setitem__(idx, val)

    return EmptyArray(np.zeros(host.shape, host.dtype))


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
            with _sim_lock, warnings.catch_warnings(), sim_launch(args if ck.foreign else ()):
                # NumPy scalar arithmetic warns on the integer wrap-around and IEEE specials
                # that are the intended semantics (R-MATH-4).
                warnings.simplefilter("ignore", RuntimeWarning)
                ck.dispatcher[cuda_grid(grid), ck.block_threads, st, ck.dyn_smem](*args)
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
        ck.dispatcher[grid3, ck.block_threads, st, ck.dyn_smem](*nb)
        return
    key = (grid3, ck.block_threads, ck.dyn_smem)
    cfg = _configs.get(key)
    if cfg is None:
        from cuda.core import LaunchConfig
        with _lock:
            if len(_configs) > 1024:
                _configs.clear()
            cfg = _configs[key] = LaunchConfig(grid=grid3, block=(ck.block_threads, 1, 1),
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
        None, f"numba backend failed on kernel {ck.name!r}: {type(e).__name__}: {text}{where}",
        loc=getattr(ck.op_at(lines[-1]) if lines else None, "loc", None))

"""Every environment knob of cutile, read in one place.

- ``CUTILE_BACKEND``: ``interp`` (default while no GPU backend is usable), ``numba`` or ``auto``;
  any other value is refused.  ``NUMBA_ENABLE_CUDASIM=1`` (Numba's switch) puts ``numba`` on
  Numba's CUDA simulator.
- ``CUTILE_STRICT``: ``1`` (default) makes the interpreter raise ``UndefinedBehaviorError`` on
  detected undefined behaviour; ``0`` degrades to the documented fallbacks (R-UB §6.6):
  UNDETERMINED padding then reads as zeros, as on the GPU backend, with an
  ``UndefinedBehaviorWarning`` once per source line (``interp/undetermined.py``).
- ``CUTILE_DUMP_IR``: ``1`` prints each specialised kernel's IR when it is compiled.
- ``CUTILE_SHUFFLE_BLOCKS``: ``<seed>`` runs the interpreter's blocks in a shuffled order.
- ``CUTILE_BATCH``: ``0`` makes the interpreter run one block at a time; default ``1`` runs
  the blocks of a launch in batches, exactly (docs/interpreter.md, "Batched execution").
- ``CUTILE_BATCH_BYTES``: memory budget of one batch, bytes or ``64M``/``1G`` (default
  ``64M``): blocks per batch = budget / (bytes of every tile value of the kernel per block).
- ``CUTILE_NUMBA_THREADS``: threads per block on the Numba backend (power of two <= 1024).
- ``CUTILE_NUMBA_MMA_ACC``: ``f32`` (default) or ``exact`` mma accumulation on the Numba
  backend (docs/backend.md).
- ``CUTILE_NUMBA_TENSOR_CORES``: ``1`` (default) lets float16/bfloat16 mma use the tensor
  cores on a GPU (``mma_acc="f32"`` only); ``0`` keeps the FFMA path; ``sim`` also under the
  CUDA simulator, with models of the instructions (tests).
- ``CUTILE_NUMBA_CP_ASYNC``: ``1`` (default) lets the tensor-core mma copy its operand tiles
  from global to shared memory with ``cp.async`` (a pipelined K loop where it can) and
  address shared memory with 32-bit registers (measured on the H100); ``0`` stages them
  through registers (docs/backend.md "Tensor cores").
- ``CUTILE_NUMBA_FFMA``: ``1`` (default) gives float32 mma on a GPU the vectorised FFMA
  schedule (``numba_backend/ffma.py``: swizzled staging, by ``cp.async`` and pipelined where
  the operands allow, 128-bit shared reads); ``0`` keeps the seeds' scalar schedule; ``sim``
  also under the CUDA simulator, with models of the instructions (tests).
- ``CUTILE_NUMBA_STORE_EXCHANGE``: ``1`` stores a large tile held in a non-flat layout (an
  mma accumulator) after the kernel's K loops through a shared-memory exchange into the flat,
  coalesced layout, in a staging buffer those loops retired (no shared memory of its own);
  ``0`` (default, until measured on the 2-D matmul) stores it as it lies (docs/backend.md).
- ``CUTILE_NUMBA_SMEM_LIMIT``: shared memory per block the Numba backend plans within, bytes
  or ``48K`` (default and maximum: the device's opt-in limit, 227 KiB on an H100); buffers
  beyond it go to a global workspace (``numba_backend/smem.py``; tests force that path with a
  small value).
- ``CUTILE_CACHE``: ``0`` turns the on-disk kernel cache off (default on; docs/cache.md).
- ``CUTILE_CACHE_DIR``: where the cache lives (default ``$XDG_CACHE_HOME/cutile``, else
  ``~/.cache/cutile``; ``~/Library/Caches/cutile`` on macOS, ``%LOCALAPPDATA%\\cutile\\Cache``
  on Windows); ``0``/``off``/``none`` also turn it off, as ``CUDA_TILE_CACHE_DIR`` does.
- ``CUTILE_CACHE_SIZE``: size cap of the cache, bytes or ``512M``/``2G`` (default ``1G``);
  least recently used entries are evicted past it.
- ``CUTILE_TEST_EXECUTORS``: ``interp,numba,cuda.tile`` (comma list) overrides which
  executors ``cutile.testing`` runs tests on (default: the interpreter, plus Numba and NVIDIA's
  cuda.tile where they can run).
- ``CUTILE_AS_CUDA_TILE``: ``1`` makes ``import cuda.tile`` give cutile under pytest.
- ``CUTILE_BREAK_BLOCKS``: ``3,0;1,2`` makes ``breakpoint()`` in kernels stop only in these
  blocks on the interpreter (``cutile.debug.break_in`` does the same in code).
- ``CUDA_TILE_COMPILER_TIMEOUT_SEC``: seconds one kernel compilation may take (1.7's name;
  ``ct.compiler_timeout`` overrides it).
- ``CUTILE_INTERP_TIMEOUT``: seconds one interpreter launch may run before it is stopped with
  the block and line where it was (default 300; ``0`` turns the watchdog off).
- ``CUTILE_PROGRESS``: ``auto`` (default) shows a one-line status on the terminal while a launch
  or a kernel test runs longer than 2 s, ``1`` always (even when standard error is not a
  terminal), ``0`` never (``progress.py``).
- ``CUTILE_TRACEBACK``: ``full`` keeps cutile's own frames in the tracebacks of errors that
  leave ``ct.launch``, ``cutile.debug`` and ``cutile.testing`` (default ``short``: trimmed to
  the user's frames and kernel line, ``_traceback.py``).
- ``CUTILE_FAILLOG`` (spec_tests only): append each test failure to this file as it happens.
- ``CUTILE_DURLOG`` (spec_tests only): append each test's start and duration to this file.
"""

from __future__ import annotations

import os
import re
import sys

BACKENDS = ("interp", "numba", "auto")


def cuda_simulator() -> bool:
    """``NUMBA_ENABLE_CUDASIM=1`` (Numba's own switch): the numba backend runs on Numba's CUDA
    simulator, on the CPU, instead of a GPU."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0").strip() not in ("", "0")


def backend() -> str:
    """``CUTILE_BACKEND``, checked: a misspelt name (``interpreter``, ``gpu``) is refused rather
    than falling through to one of the executors."""
    v = os.environ.get("CUTILE_BACKEND", "auto").strip().lower() or "auto"
    if v not in BACKENDS:
        raise ValueError(f"CUTILE_BACKEND={os.environ['CUTILE_BACKEND']!r} is not a backend; "
                         f"expected one of {', '.join(BACKENDS)} ('numba' runs a GPU, or "
                         f"Numba's CUDA simulator with NUMBA_ENABLE_CUDASIM=1)")
    return v


def strict() -> bool:
    return os.environ.get("CUTILE_STRICT", "1").strip() not in ("0", "false", "no")


def dump_ir() -> bool:
    return os.environ.get("CUTILE_DUMP_IR", "0").strip() not in ("0", "", "false", "no")


def shuffle_blocks() -> int | None:
    """``CUTILE_SHUFFLE_BLOCKS=<seed>`` runs the interpreter's blocks in a shuffled order."""
    v = os.environ.get("CUTILE_SHUFFLE_BLOCKS", "").strip()
    return int(v) if v else None


def batch() -> bool:
    """``CUTILE_BATCH=0`` turns the interpreter's batched execution off (default on)."""
    return os.environ.get("CUTILE_BATCH", "1").strip().lower() not in _OFF


def batch_bytes() -> int:
    """``CUTILE_BATCH_BYTES``: the interpreter's memory budget per batch (default 64M)."""
    return _byte_size("CUTILE_BATCH_BYTES", "64M")


def numba_threads() -> int | None:
    v = os.environ.get("CUTILE_NUMBA_THREADS", "").strip()
    if not v:
        return None
    n = int(v)
    if n <= 0 or n & (n - 1) or n > 1024:
        raise ValueError(f"CUTILE_NUMBA_THREADS must be a power of two <= 1024, got {v}")
    return n


def numba_speedups() -> bool:
    """``CUTILE_NUMBA_SPEEDUPS=0``: leave numba-cuda's own code as it is (no compile-time
    fixes: ``numba_backend/numba_speedups.py``); read once, before the first compile."""
    return os.environ.get("CUTILE_NUMBA_SPEEDUPS", "1").strip().lower() not in (
        "0", "false", "no")


def numba_lineinfo() -> bool:
    """``CUTILE_NUMBA_LINEINFO=1``: compile generated kernels with line information
    (``cuda.jit(lineinfo=True)``), so ``compute-sanitizer`` and Nsight Compute name the line of
    the generated source (``kernel.inspect(...).source``) where a fault or a hot spot is."""
    return os.environ.get("CUTILE_NUMBA_LINEINFO", "").strip().lower() in ("1", "true", "yes")


def numba_min_blocks() -> int | None:
    """``CUTILE_NUMBA_MIN_BLOCKS``: thread blocks per SM every generated kernel must fit
    (``launch_bounds``; ptxas then caps registers per thread), unless the kernel's own
    ``occupancy`` hint says otherwise.  Unset: the backend's choice."""
    v = os.environ.get("CUTILE_NUMBA_MIN_BLOCKS", "").strip()
    if not v:
        return None
    n = int(v)
    if not 1 <= n <= 32:
        raise ValueError(f"CUTILE_NUMBA_MIN_BLOCKS must be 1..32, got {v}")
    return n


def numba_smem_limit() -> int | None:
    """``CUTILE_NUMBA_SMEM_LIMIT``: shared-memory bytes per block the Numba backend may plan
    (None: unset, the device's limit)."""
    if not os.environ.get("CUTILE_NUMBA_SMEM_LIMIT", "").strip():
        return None
    return _byte_size("CUTILE_NUMBA_SMEM_LIMIT", "0")


def numba_mma_acc() -> str:
    v = os.environ.get("CUTILE_NUMBA_MMA_ACC", "f32").strip().lower() or "f32"
    if v not in ("f32", "exact"):
        raise ValueError(f"CUTILE_NUMBA_MMA_ACC must be 'f32' or 'exact', got {v!r}")
    return v


def numba_tensor_cores() -> bool:
    return os.environ.get("CUTILE_NUMBA_TENSOR_CORES", "1").strip().lower() not in (
        "0", "false", "no")


def numba_wgmma() -> bool:
    """``CUTILE_NUMBA_WGMMA=0``: float16/bfloat16 mma keeps ``mma.sync`` on an sm_90 GPU
    (default ``1``: Hopper's wgmma where its plan applies, ``numba_backend/wgmma.py``, each
    K step's wgmmas waited for in the step; ``defer``: a pipelined K loop leaves one step's
    wgmmas in flight across the back edge, measured slower on the benchmark's 128x128x32
    matmul, 408 against 470 TFLOP/s on an H200)."""
    return os.environ.get("CUTILE_NUMBA_WGMMA", "1").strip().lower() not in (
        "0", "false", "no")


def numba_wgmma_sim() -> bool:
    """``CUTILE_NUMBA_WGMMA=sim``: with ``CUTILE_NUMBA_TENSOR_CORES=sim``, the wgmma path
    under the simulator too, on ``numba_backend/ptx_sim.py``'s models (tests)."""
    return os.environ.get("CUTILE_NUMBA_WGMMA", "").strip().lower() == "sim"


def numba_tma() -> str:
    """``CUTILE_NUMBA_TMA``: the warp-specialised TMA K loop of a float16/bfloat16 wgmma
    matmul (``numba_backend/ws_plan.py``).  ``1`` (default): where the block is alone on its
    SM anyway (the wide tiles: 1.57x the cp.async loop's kernel time on an H200); ``all``: every
    K loop it applies to; ``0``: never; ``sim``: as ``all`` under the simulator (with
    ``CUTILE_NUMBA_WGMMA=sim``; off there otherwise)."""
    v = os.environ.get("CUTILE_NUMBA_TMA", "1").strip().lower()
    return {"false": "0", "no": "0", "true": "1", "yes": "1"}.get(v, v)


def numba_tma_store() -> bool:
    """``CUTILE_NUMBA_TMA_STORE=0``: a TMA K loop's kernel stores its result tile as the
    threads hold it, not through shared memory by a TMA store (``numba_backend/ws_plan.py``;
    default ``1``)."""
    return os.environ.get("CUTILE_NUMBA_TMA_STORE", "1").strip().lower() not in (
        "0", "false", "no")


def numba_store_exchange() -> bool:
    """``CUTILE_NUMBA_STORE_EXCHANGE=1``: coalescing exchange before a fragment store."""
    return os.environ.get("CUTILE_NUMBA_STORE_EXCHANGE", "0").strip() == "1"


def numba_wgmma_deferred() -> bool:
    """Whether a pipelined wgmma K loop leaves one iteration's wgmmas in flight
    (``CUTILE_NUMBA_WGMMA=defer``)."""
    return os.environ.get("CUTILE_NUMBA_WGMMA", "1").strip().lower() == "defer"


def numba_tensor_cores_sim() -> bool:
    """``CUTILE_NUMBA_TENSOR_CORES=sim``: the tensor-core path under the simulator too, with
    ``numba_backend/ptx_sim.py``'s models of the instructions (tests)."""
    return os.environ.get("CUTILE_NUMBA_TENSOR_CORES", "").strip().lower() == "sim"


def numba_direct() -> bool:
    """``CUTILE_NUMBA_DIRECT=0``: compile generated kernels through Numba's ``cuda.jit`` only.
    Default ``1``: the direct path on a GPU (``numba_backend/direct.py``: generated source ->
    NVVM IR -> libNVVM, without Numba's frontend; issue 26), Numba for a kernel it does not
    cover."""
    return os.environ.get("CUTILE_NUMBA_DIRECT", "1").strip().lower() not in (
        "0", "false", "no", "off")


def numba_ffma() -> bool:
    return os.environ.get("CUTILE_NUMBA_FFMA", "1").strip().lower() not in (
        "0", "false", "no", "off")


def numba_ffma_sim() -> bool:
    """``CUTILE_NUMBA_FFMA=sim``: the vectorised FFMA schedule under the simulator too
    (``numba_backend/ptx_sim.py``'s models of ``cp.async`` and the vector shared loads)."""
    return os.environ.get("CUTILE_NUMBA_FFMA", "").strip().lower() == "sim"


def numba_cp_async() -> bool:
    return os.environ.get("CUTILE_NUMBA_CP_ASYNC", "1").strip().lower() not in (
        "0", "false", "no", "off")


_OFF = ("0", "false", "no", "off", "none")


def cache_enabled() -> bool:
    """Whether the on-disk kernel cache is used (``CUTILE_CACHE``, ``CUTILE_CACHE_DIR``)."""
    if os.environ.get("CUTILE_CACHE", "1").strip().lower() in _OFF:
        return False
    d = os.environ.get("CUTILE_CACHE_DIR")
    return d is None or d.strip().lower() not in _OFF + ("",)


def cache_dir() -> str:
    """The cache directory: ``CUTILE_CACHE_DIR``, else the platform's user cache directory."""
    d = os.environ.get("CUTILE_CACHE_DIR", "").strip()
    if d and d.lower() not in _OFF:
        return os.path.abspath(os.path.expanduser(d))
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~\\AppData\\Local")
        return os.path.join(base, "cutile", "Cache")
    if sys.platform == "darwin":
        return os.path.expanduser("~/Library/Caches/cutile")
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    if not base or not os.path.isabs(base):        # the XDG spec ignores relative paths
        base = os.path.expanduser("~/.cache")
    return os.path.join(base, "cutile")


_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def cache_size() -> int:
    """The cache's size cap in bytes (``CUTILE_CACHE_SIZE``: ``1G``, ``512M``, ``1000000``)."""
    return _byte_size("CUTILE_CACHE_SIZE", "1G")


def _byte_size(name: str, default: str) -> int:
    v = os.environ.get(name, "").strip() or default
    m = re.fullmatch(r"(\d+(?:\.\d*)?)\s*([kmgt]?)(?:i?b)?", v, re.IGNORECASE)
    if m is None:
        raise ValueError(f"{name} must be a byte count like 1000000, 512M or 2G, got {v!r}")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def test_executors() -> tuple[str, ...]:
    """``CUTILE_TEST_EXECUTORS=interp,numba,cuda.tile``: the executors ``cutile.testing`` uses
    (empty: decide from what can run)."""
    v = os.environ.get("CUTILE_TEST_EXECUTORS", "").strip()
    names = tuple(n.strip().lower() for n in v.split(",") if n.strip())
    bad = [n for n in names if n not in TEST_EXECUTORS]
    if bad:
        raise ValueError(f"CUTILE_TEST_EXECUTORS names unknown executor(s) {bad}; "
                         f"expected some of {', '.join(TEST_EXECUTORS)}")
    return names


# the executors of cutile.testing: cutile's two, and NVIDIA's cuda.tile on a GPU
TEST_EXECUTORS = ("interp", "numba", "cuda.tile")


def as_cuda_tile() -> bool:
    """``CUTILE_AS_CUDA_TILE=1``: under pytest, ``import cuda.tile`` gives cutile (a cuTile
    test suite runs on the interpreter; ``cutile.testing.pose_as_cuda_tile``)."""
    return os.environ.get("CUTILE_AS_CUDA_TILE", "0").strip() not in ("", "0")


def break_blocks() -> set | None:
    """``CUTILE_BREAK_BLOCKS="3,0;1,2"``: the blocks where ``breakpoint()`` stops (None: all).
    A block names its leading coordinates; the others are 0."""
    v = os.environ.get("CUTILE_BREAK_BLOCKS", "").strip()
    if not v:
        return None
    try:
        return {tuple(int(x) for x in part.split(",")) for part in v.split(";") if part.strip()}
    except ValueError:
        raise ValueError(f"CUTILE_BREAK_BLOCKS must look like '3,0;1,2', got {v!r}") from None


def compiler_timeout() -> float | None:
    v = os.environ.get("CUDA_TILE_COMPILER_TIMEOUT_SEC", "").strip()
    if not v:
        return None
    t = float(v)
    if t <= 0:
        raise ValueError(f"CUDA_TILE_COMPILER_TIMEOUT_SEC must be positive, got {v}")
    return t


def progress() -> str:
    """``CUTILE_PROGRESS``: ``auto`` (on a terminal), ``on`` or ``off``."""
    v = os.environ.get("CUTILE_PROGRESS", "auto").strip().lower() or "auto"
    if v in ("1", "on", "true", "yes"):
        return "on"
    if v in _OFF + ("false",):
        return "off"
    if v != "auto":
        raise ValueError(f"CUTILE_PROGRESS must be auto, 1 or 0, got {v!r}")
    return "auto"


def traceback_full() -> bool:
    """``CUTILE_TRACEBACK=full``: errors keep cutile's frames (default ``short``)."""
    v = os.environ.get("CUTILE_TRACEBACK", "short").strip().lower() or "short"
    if v not in ("short", "full"):
        raise ValueError(f"CUTILE_TRACEBACK must be 'short' or 'full', got {v!r}")
    return v == "full"


def interp_timeout() -> float | None:
    """Wall-clock watchdog of one interpreter launch in seconds (None: off)."""
    v = os.environ.get("CUTILE_INTERP_TIMEOUT", "300").strip() or "300"
    t = float(v)
    return t if t > 0 else None

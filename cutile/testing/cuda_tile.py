"""NVIDIA's ``cuda.tile`` as an executor of ``cutile.testing``, and cutile posing as it.

One kernel function runs on both: a cutile kernel is rebuilt as a ``cuda.tile`` kernel from
the same Python function (same code object and file, since cuda.tile reads the source with
``inspect``) over a copy of its globals in which the module it names (``ct``, or any alias of
cutile), its helpers, the cutile objects it uses (dtypes, ``PaddingMode``...) and the
``Constant``/``ArrayAnnotation`` hints of its parameters are replaced by cuda.tile's.  A
``cuda.tile`` kernel given to the interpreter is rebuilt the other way round.

Arrays travel as NumPy arrays: to the device through torch (CuPy when torch is missing), the
launch on the current stream, a synchronisation, and back; bfloat16/float8 (ml_dtypes) go as
their bits.  Nothing here imports cuda.tile, torch or CuPy until a launch needs it.

``pose_as_cuda_tile()`` is the reverse switch: ``import cuda.tile`` then gives cutile, so a
test suite written for cuda.tile runs on the interpreter (``CUTILE_AS_CUDA_TILE=1`` makes the
pytest plugin call it before any test file is imported).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import sys
import types
import typing

import numpy as np

import cutile

NAME = "cuda.tile"
_gpu: bool | None = None


# --- availability --------------------------------------------------------------------------

def _installed(name: str) -> bool:
    """Whether ``name`` can be imported, without importing it (its parent package excepted)."""
    parent = name.rpartition(".")[0]
    if parent and importlib.util.find_spec(parent) is None:
        return False
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def posing() -> bool:
    """Whether ``cuda.tile`` is cutile itself here (``pose_as_cuda_tile``)."""
    mod = sys.modules.get(NAME)
    return mod is not None and getattr(mod, "__name__", "") == "cutile"


def array_library() -> str | None:
    """"torch" or "cupy": what moves NumPy arrays to the GPU (None: neither is installed)."""
    for name in ("torch", "cupy"):
        if _installed(name):
            return name
    return None


def unavailable() -> str | None:
    """Why the ``cuda.tile`` executor cannot run here, as one line a user can act on (None: it
    can).  Imports torch or CuPy (to ask for a GPU) only when cuda.tile is installed."""
    global _gpu
    if posing():
        return "cuda.tile: skipped (cuda.tile is cutile here: CUTILE_AS_CUDA_TILE is set)"
    if not _installed(NAME):
        return ("cuda.tile: skipped (NVIDIA's cuda.tile is not installed; python3 -m pip "
                "install cuda-tile, on a machine with a GPU)")
    lib = array_library()
    if lib is None:
        return "cuda.tile: skipped (neither torch nor CuPy is installed to move arrays to the GPU)"
    if _gpu is None:
        try:
            if lib == "torch":
                import torch  # lazy: optional, probed only when cuda.tile is installed
                _gpu = bool(torch.cuda.is_available())
            else:
                import cupy  # lazy: optional, probed only when cuda.tile is installed
                _gpu = cupy.cuda.runtime.getDeviceCount() > 0
        except Exception:  # noqa: BLE001 - any failure to reach a driver means no GPU
            _gpu = False
    return None if _gpu else f"cuda.tile: skipped (no usable GPU; {lib} sees none)"


def require() -> None:
    """Stop a launch on the cuda.tile executor where it cannot run, with ``unavailable``'s one
    line: inside a pytest test, the test is skipped (a test naming ``executors=("interp",
    "cuda.tile")`` skips on a laptop); elsewhere a RuntimeError."""
    why = unavailable()
    if why is None:
        return
    if os.environ.get("PYTEST_CURRENT_TEST"):
        import pytest  # lazy: only inside a running pytest test
        pytest.skip(why)
    raise RuntimeError(why)


# --- one kernel function, two modules -------------------------------------------------------

def is_cuda_tile_kernel(k) -> bool:
    return type(k).__module__.startswith("cuda.tile") and hasattr(k, "_pyfunc")


def _is_cutile_kernel(k) -> bool:
    return getattr(type(k), "_cutile_kernel", False)


class _Rebinder:
    """Rebuilds functions, kernels and hints of module ``src`` against module ``dst``."""

    def __init__(self, src: types.ModuleType, dst: types.ModuleType, make_kernel):
        self.src, self.dst, self.make_kernel = src, dst, make_kernel
        self.pkg = src.__name__
        self.memo: dict[int, object] = {}
        # the objects ``src`` exports, by identity -> their name (dst has the same names)
        self.names = {id(v): n for n, v in vars(src).items()
                      if not n.startswith("__") and not isinstance(v, (int, float, str, bytes,
                                                                         type(None)))}

    def _uses_src(self, fn) -> bool:
        if any(v is self.src for v in fn.__globals__.values()):
            return True
        return any(_cell(c) is self.src for c in fn.__closure__ or ())

    def value(self, v):
        """``v`` as seen from ``dst``."""
        if v is self.src:
            return self.dst
        if isinstance(v, (int, float, str, bytes, bool, type(None))):
            return v
        if id(v) in self.memo:
            return self.memo[id(v)]
        if id(v) in self.names and hasattr(self.dst, self.names[id(v)]):
            return getattr(self.dst, self.names[id(v)])
        if _is_cutile_kernel(v) or is_cuda_tile_kernel(v):
            return v                             # kernels do not call kernels: left alone
        if isinstance(v, types.FunctionType) and not (v.__module__ or "").startswith(self.pkg) \
                and self._uses_src(v):
            return self.function(v)
        if typing.get_origin(v) is typing.Annotated:
            meta = tuple(self.value(m) for m in v.__metadata__)
            return typing.Annotated[(self.value(v.__origin__), *meta)]
        if type(v).__module__.startswith(self.pkg) and type(v).__name__.endswith("Annotation") \
                and hasattr(self.dst, type(v).__name__):   # ConstantAnnotation, ArrayAnnotation
            cls = getattr(self.dst, type(v).__name__)
            return cls(**{k: self.value(x) for k, x in vars(v).items()})
        if isinstance(v, tuple) and type(v) is tuple:
            return tuple(self.value(x) for x in v)
        return v

    def function(self, fn: types.FunctionType) -> types.FunctionType:
        """A new function with ``fn``'s code and file over a copy of its globals, rebound."""
        g = dict(fn.__globals__)
        cells = tuple(types.CellType() for _ in fn.__closure__ or ())
        new = types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__,
                                 cells if fn.__closure__ else None)
        self.memo[id(fn)] = new                      # before recursing: helpers may recurse
        new.__kwdefaults__ = fn.__kwdefaults__
        new.__qualname__, new.__module__, new.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
        for name, v in list(g.items()):
            if not name.startswith("__"):
                g[name] = self.value(v)
        for old, c in zip(fn.__closure__ or (), cells):
            x = _cell(old)
            if x is not _EMPTY:
                c.cell_contents = self.value(x)
        new.__annotations__ = {k: self.value(a) for k, a in fn.__annotations__.items()}
        return new

    def option(self, v):
        """A kernel option as ``dst`` takes it: a ``ByTarget`` rebuilt from its values (both
        modules build one as ``ByTarget(default=..., sm_NN=...)``), the rest as is."""
        if type(v).__name__ != "ByTarget":
            return v
        default = getattr(v, "default", getattr(v, "_default", None))
        by_arch = getattr(v, "by_arch", getattr(v, "_by_target", {}))
        unset = default is None or type(default).__name__ == "_UnspecifiedType"
        return self.dst.ByTarget(**by_arch, **({} if unset else {"default": default}))

    def kernel(self, k):
        opts = {n: self.option(v) for n, v in _options(k).items()}
        return self.make_kernel(self.function(_pyfunc(k)), opts)


_EMPTY = object()


def _cell(c):
    try:
        return c.cell_contents
    except ValueError:                               # a cell not filled yet
        return _EMPTY


def _pyfunc(k):
    return k.function if _is_cutile_kernel(k) else k._pyfunc


def _options(k) -> dict:
    if _is_cutile_kernel(k):
        return dict(k.options)
    return dataclasses.asdict(k._compiler_options)


def to_cuda_tile(kernel):
    """``kernel`` as a ``cuda.tile`` kernel (a cutile kernel is rebuilt from its function;
    imports cuda.tile)."""
    if is_cuda_tile_kernel(kernel):
        return kernel
    origin = getattr(kernel, "_cuda_tile_origin", None)
    if origin is not None:
        return origin
    cached = getattr(kernel, "_as_cuda_tile", None)
    if cached is not None:
        return cached
    import cuda.tile as ctt  # lazy: only where it runs (a GPU), never at import

    out = rebind(kernel, cutile, ctt, lambda fn, o: ctt.kernel(fn, **{
        k: v for k, v in o.items() if k != "numba_threads"}))     # a cutile-only hint
    kernel._as_cuda_tile = out
    return out


def to_cutile(kernel):
    """``kernel`` as a cutile kernel (a ``cuda.tile`` kernel is rebuilt from its function; a
    cutile kernel is returned as is)."""
    if not is_cuda_tile_kernel(kernel):
        return kernel
    cached = _cutile_of.get(id(kernel))
    if cached is not None and cached._cuda_tile_origin is kernel:
        return cached
    import cuda.tile as ctt  # lazy: only where it runs (a GPU), never at import

    out = rebind(kernel, ctt, cutile, lambda fn, o: cutile.kernel(fn, **o))
    out._cuda_tile_origin = kernel
    _cutile_of[id(kernel)] = out
    return out


_cutile_of: dict[int, object] = {}


def rebind(kernel, src: types.ModuleType, dst: types.ModuleType, make_kernel):
    """``kernel``'s function rebuilt against ``dst`` in place of ``src`` and handed to
    ``make_kernel(function, options)`` (what ``to_cuda_tile``/``to_cutile`` do, for any pair
    of modules; tests use a stand-in module)."""
    return _Rebinder(src, dst, make_kernel).kernel(kernel)


# --- arrays to the device and back -----------------------------------------------------------

_BITS = {"bfloat16": ("int16", "bfloat16"), "float8_e4m3fn": ("int8", "float8_e4m3fn"),
         "float8_e5m2": ("int8", "float8_e5m2")}


class Device:
    """NumPy arrays to the GPU and back through torch (or CuPy), and the stream to launch on."""

    def __init__(self, lib: str | None = None):
        self.lib = lib or array_library()
        if self.lib is None:
            raise ModuleNotFoundError("the cuda.tile executor needs torch or CuPy to move "
                                      "arrays to the GPU; neither is installed")
        self.mod = importlib.import_module(self.lib)

    def tensor(self, a: np.ndarray):
        """``a`` as a host torch tensor of the same dtype (bfloat16/float8 through their bits);
        under CuPy, ``a`` itself."""
        a = np.ascontiguousarray(a)
        via = _BITS.get(a.dtype.name)
        if self.lib != "torch":
            if via:
                raise TypeError(f"{a.dtype.name} arrays need torch (CuPy has no {a.dtype.name})")
            return a
        t = self.mod.from_numpy(a.view(via[0]) if via else a)
        return t.view(getattr(self.mod, via[1])) if via else t

    def numpy(self, t, dtype) -> np.ndarray:
        """A host tensor (or CuPy/NumPy array) back as a NumPy array of ``dtype``."""
        dtype = np.dtype(dtype)
        via = _BITS.get(dtype.name)
        if self.lib == "torch":
            if via:
                return t.view(getattr(self.mod, via[0])).numpy().view(dtype)
            return t.numpy()
        return np.asarray(t, dtype=dtype)

    def to_device(self, a: np.ndarray):
        t = self.tensor(a)
        return t.cuda() if self.lib == "torch" else self.mod.asarray(t)

    def to_host(self, d, dtype) -> np.ndarray:
        return self.numpy(d.cpu() if self.lib == "torch" else self.mod.asnumpy(d), dtype)

    def stream(self):
        if self.lib == "torch":
            return self.mod.cuda.current_stream()
        return self.mod.cuda.get_current_stream()

    def synchronize(self) -> None:
        if self.lib == "torch":
            self.mod.cuda.synchronize()
        else:
            self.mod.cuda.get_current_stream().synchronize()


def guard_for(dtype, guard: int) -> int:
    """The guard band (elements) around an array handed to cuda.tile: at least ``guard``, and
    a whole number of 16 bytes, so the inner view's base pointer keeps the 16-byte alignment
    of the allocation.  cuda.tile specialises kernels on that alignment (and on strides
    divisible by 16 bytes, which then hold as they would for a plain array of the shape):
    a misaligned view would test a slower path than production launches take."""
    step = 16 // np.gcd(16, np.dtype(dtype).itemsize)
    return -(-guard // step) * step


def scalar(a):
    """A launch argument as cuda.tile takes it: NumPy scalars as Python ``bool``/``int``/
    ``float`` (cuda.tile accepts no NumPy scalar; it passes a float as float32), the rest as is.
    float16/bfloat16/float8 scalars have no cuda.tile form: a clear error instead of a cast."""
    if isinstance(a, (np.bool_, np.integer)) or \
            isinstance(a, np.floating) and a.dtype.itemsize >= 4:
        return a.item()
    if isinstance(a, np.generic) and not isinstance(a, (np.str_, np.bytes_)):
        raise TypeError(f"cuda.tile takes no {a.dtype.name} scalar argument (a float "
                        f"argument is float32 there); pass a float32 scalar or a 1-element array")
    return a


def launch(grid, kernel, args: tuple, device: Device | None = None) -> None:
    """Launch ``kernel`` (cutile or cuda.tile) on the real cuda.tile over host arguments:
    NumPy arrays (in lists and tuples too) go to the device and their contents come back
    into them; the rest as ``launch_device`` passes it."""
    dev = device or Device()
    pairs = []

    def down(a):
        if isinstance(a, np.ndarray):
            d = dev.to_device(a)
            pairs.append((a, d))
            return d
        if isinstance(a, (list, tuple)):
            return type(a)(down(x) for x in a)
        return a

    launch_device(grid, kernel, tuple(down(a) for a in args), dev)
    for a, d in pairs:
        a[...] = dev.to_host(d, a.dtype)


def launch_device(grid, kernel, args: tuple, device: Device) -> None:
    """Launch ``kernel`` (cutile or cuda.tile, rebuilt as cuda.tile's) on the real cuda.tile
    over arguments already on the device, on ``device``'s current stream, and wait for it.
    NumPy scalars (in lists and tuples too) go as ``scalar`` makes them; the rest as is."""
    import cuda.tile as ctt  # lazy: only where it runs (a GPU), never at import

    def up(a):
        return type(a)(up(x) for x in a) if isinstance(a, (list, tuple)) else scalar(a)

    grid = grid if isinstance(grid, tuple) else (grid,)
    ctt.launch(device.stream(), grid, to_cuda_tile(kernel), tuple(up(a) for a in args))
    device.synchronize()


# --- the reverse switch ----------------------------------------------------------------------

def pose_as_cuda_tile() -> None:
    """Make ``import cuda.tile`` (and ``cuda.tile.<submodule>``) give cutile, for a test suite
    written for NVIDIA's cuda.tile to run on cutile's interpreter.  Call it before the suite
    imports cuda.tile (a conftest.py's first line), or set ``CUTILE_AS_CUDA_TILE=1`` under
    pytest.  A real ``cuda`` package (cuda-python) keeps its other modules."""
    cuda = sys.modules.get("cuda")
    if cuda is None:
        try:
            cuda = importlib.import_module("cuda")
        except ImportError:
            cuda = types.ModuleType("cuda", "stand-in parent of cuda.tile (cutile posing)")
            cuda.__path__ = []
            sys.modules["cuda"] = cuda
    for name, mod in list(sys.modules.items()):
        if name == "cutile" or name.startswith("cutile."):
            sys.modules[NAME + name[len("cutile"):]] = mod
    cuda.tile = cutile

"""``@ct.kernel``, ``ct.function`` and ``ct.launch`` (spec §24); the parameter annotations
are in ``annotations.py``, the grid check and argument classification in ``launch_args.py``.

A kernel is specialised per launch signature (argument kinds, dtypes, ranks, constant values,
R-LAUNCH-6), fully type-checked into IR before anything runs (R-CONV-4), cached, and executed
by the selected executor.
"""

from __future__ import annotations

import inspect
import re
import threading
import typing
from collections.abc import Callable
from typing import Any

from . import config
from ._traceback import api_boundary
from .compile_stages import stage
from .compile_timeout import run_with_timeout
from .errors import TileError, TileSyntaxError
from .executors import inspect as inspect_kernel
from .executors import run
from .ir.effects import written_params
from .ir.printer import format_kernel
from .launch_args import check_grid, classify_args
from .streams import check_stream


class ByTarget:
    """Per-architecture option values: ``ByTarget(sm_90=2, default=1)`` (R-KERN-2)."""

    _NAME = re.compile(r"^sm_\d+$")

    def __init__(self, *, default=None, **by_arch):
        for k in by_arch:
            if not self._NAME.match(k):
                raise ValueError(f"Invalid GPU architecture name: {k}, expected "
                                 "sm_<major><minor>")
        self.default = default
        self.by_arch = dict(by_arch)

    def get(self, arch: str | None):
        return self.by_arch.get(arch, self.default) if arch else self.default

    def values(self):
        return [*self.by_arch.values(), self.default]


def _validate_option(name: str, value, check) -> None:
    vals = value.values() if isinstance(value, ByTarget) else [value]
    for v in vals:
        if v is not None:
            check(v)


def _check_num_ctas(v):
    if not isinstance(v, int) or v <= 0 or v & (v - 1):
        raise ValueError("num_ctas should be power of 2")
    if not 1 <= v <= 16:
        raise ValueError("num_ctas should be [1, 16]")


def _check_occupancy(v):
    if not isinstance(v, int) or not 1 <= v <= 32:
        raise ValueError("occupancy should be [1, 32]")


def _check_opt_level(v):
    if not isinstance(v, int) or not 0 <= v <= 3:
        raise ValueError("opt_level should be [0, 3]")


def _check_worker_warps(v):
    if v not in (4, 8):
        raise ValueError("num_worker_warps should be either 4 or 8")


def _check_numba_threads(v):
    if not isinstance(v, int) or v <= 0 or v & (v - 1) or v > 1024:
        raise ValueError("numba_threads should be a power of 2 in [1, 1024]")


_OPTION_CHECKS = {"num_ctas": _check_num_ctas, "occupancy": _check_occupancy,
                  "opt_level": _check_opt_level, "num_worker_warps": _check_worker_warps,
                  "numba_threads": _check_numba_threads}


# -- kernels -----------------------------------------------------------------------------------
class kernel:  # noqa: N801 - mirrors cuda.tile.kernel
    """A tile kernel: the body runs once per block of the launch grid (R-KERN-1..4).

    >>> @ct.kernel
    ... def vec_add(a, b, c, TILE: ct.Constant[int]):
    ...     bid = ct.bid(0)
    ...     ct.store(c, (bid,), ct.load(a, (bid,), (TILE,)) + ct.load(b, (bid,), (TILE,)))
    """

    _cutile_kernel = True

    def __new__(cls, function=None, /, **options):
        if function is None:
            return lambda f: cls(f, **options)
        return super().__new__(cls)

    def __init__(self, function: Callable | None = None, /, *,
                 num_ctas: int | ByTarget | None = None, occupancy: int | ByTarget | None = None,
                 opt_level: int | ByTarget = 3, num_worker_warps: int | ByTarget | None = None,
                 numba_threads: int | None = None) -> None:
        # numba_threads (cutile only): threads per block on the Numba backend for this kernel
        if not inspect.isfunction(function):
            raise TypeError(f"@ct.kernel expects a function, got {type(function).__name__}")
        self.options = {"num_ctas": num_ctas, "occupancy": occupancy, "opt_level": opt_level,
                        "num_worker_warps": num_worker_warps, "numba_threads": numba_threads}
        for name, value in self.options.items():
            _validate_option(name, value, _OPTION_CHECKS[name])
        self.function = function
        self.__name__ = function.__name__
        self.__doc__ = function.__doc__
        self.__wrapped__ = function
        self._cache: dict = {}
        self._lock = threading.Lock()      # one compilation per signature, whatever the threads
        params = inspect.signature(function).parameters.values()
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise TileSyntaxError("Variadic kernel parameters are not supported")
        self.param_names = [p.name for p in params]

    def __call__(self, *args: Any, **kwargs: Any) -> typing.NoReturn:
        names = ", ".join(self.param_names) + ("," if len(self.param_names) == 1 else "")
        raise TypeError(f"Tile kernels cannot be called directly. Launch it with "
                        f"ct.launch(None, grid, {self.__name__}, ({names})) "
                        f"(cuda.tile.launch() in cuda.tile); it runs once per block of grid")

    def inspect(self, *args, grid=(1,), threads: int | None = None, mma_acc: str | None = None):
        """What the Numba backend makes of this kernel for ``args`` (cutile only): generated
        source, threads and shared memory per block, registers per thread, occupancy.  Same as
        ``cutile.executors.inspect(kernel, args, grid=...)``; see docs/backend.md.

        >>> info = vec_add.inspect(a, b, c, 1024, grid=(4,)); print(info.summary())
        """
        return inspect_kernel(self, args, grid=grid, threads=threads, mma_acc=mma_acc)

    def replace_hints(self, **options) -> kernel:
        """A new kernel with these launch hints replaced (validated as by ``@ct.kernel``) and
        its own compilation cache (R-KERN-3).

        >>> fast = matmul.replace_hints(num_ctas=ct.ByTarget(sm_100=2), occupancy=2)
        """
        unknown = set(options) - set(self.options)
        if unknown:
            raise TypeError(f"replace_hints() got an unexpected hint {sorted(unknown)[0]!r}; "
                            f"hints are {', '.join(self.options)}")
        merged = dict(self.options)
        merged.update(options)
        return kernel(self.function, **merged)

    def __repr__(self) -> str:
        return f"<cutile kernel {self.__name__}>"

    # -- specialisation -------------------------------------------------------------------
    def annotations(self) -> dict:
        try:
            return typing.get_type_hints(self.function, include_extras=True)
        except Exception:
            # One unresolvable hint (say ``x: torch.Tensor`` without torch) must not hide the
            # ``ct.Constant`` ones: resolve string annotations one by one (R-CONST-2).
            out = {}
            for name, ann in getattr(self.function, "__annotations__", {}).items():
                if isinstance(ann, str):
                    try:
                        ann = eval(ann, self.function.__globals__)  # noqa: S307
                    except Exception:
                        ann = None
                out[name] = ann
            return out

    def specialize(self, args: tuple):
        """(cache key, runtime leaves) of a launch's arguments (R-LAUNCH-3/6)."""
        return classify_args(self, args)

    def compile(self, spec) -> Any:
        """The typed IR of one specialisation (cached; thread-safe: concurrent first launches
        of one signature compile it once)."""
        ir = self._cache.get(spec.key)
        if ir is None:
            with self._lock:
                ir = self._cache.get(spec.key)
                if ir is None:
                    with stage("frontend (IR)"):
                        ir = run_with_timeout(lambda: self._build(spec),
                                              f"kernel {self.__name__!r}")
                    self._cache[spec.key] = ir
        return ir

    def _build(self, spec) -> Any:
        from .frontend.build import build_kernel  # lazy: start-up time (walker: first compile)
        ir = build_kernel(self, spec)
        ir.options = dict(self.options)
        ir.written = written_params(ir)
        if config.dump_ir():
            print(format_kernel(ir))
        return ir


def function(func: Callable | None = None, /, *, host: bool = False, tile: bool = True) -> Any:
    """Mark a helper as a tile function (optional, R-KERN-5); ``host=True`` returns it as is."""
    def wrap(f):
        if host:
            return f
        f._cutile_function = True
        return f
    return wrap if func is None else wrap(func)


# -- launch (R-LAUNCH-1/2) ---------------------------------------------------------------------
@api_boundary
def launch(stream: Any, grid: tuple[int, ...], kernel_: kernel, kernel_args: tuple, /,
           *args: Any, programmatic_dependent_launch: bool = False, **kwargs: Any) -> None:
    """Run ``kernel_`` over ``grid`` with ``kernel_args`` (R-LAUNCH-1..6).

    ``stream`` may be ``None``/0 or a stream object; the interpreter completes the launch
    before returning.  Select the executor with ``CUTILE_BACKEND`` or
    ``cutile.set_backend``.

    >>> ct.launch(None, (ct.cdiv(n, 1024),), vec_add, (a, b, c, 1024))
    """
    if args:
        raise TypeError(f"launch() takes 4 positional arguments but {4 + len(args)} were given")
    if kwargs:
        raise RuntimeError(f"Unexpected keyword argument {next(iter(kwargs))!r}")
    if not isinstance(kernel_, kernel):
        raise TypeError("launch() expects a tile kernel as the third argument")
    if not isinstance(kernel_args, tuple):
        raise TypeError("launch() expects a tuple as the fourth argument")
    if not isinstance(programmatic_dependent_launch, bool):
        raise TypeError("programmatic_dependent_launch must be a bool")
    check_stream(stream)
    g = check_grid(grid)
    spec = kernel_.specialize(kernel_args)
    try:
        ir = kernel_.compile(spec)
    except TileError as e:
        raise e from None               # the internal chain is no concern of the user
    _check_writable(ir, spec)
    run(ir, g, spec, stream)


def _check_writable(ir, spec) -> None:
    """A read-only array the kernel stores to is refused before anything runs (R-ERR-2)."""
    for i, loc in ir.written.items():
        if i >= len(spec.leaves):
            continue
        leaf = spec.leaves[i]
        flags = getattr(leaf, "flags", None)
        readonly = (not flags.writeable) if flags is not None else getattr(leaf, "readonly", False)
        if readonly:
            where = f" (it is written at {loc})" if loc is not None else ""
            raise ValueError(f"kernel argument {ir.params[i].hint!r} of {ir.name} is a read-only "
                             f"array but the kernel stores to it{where}; pass a writeable array")

"""Choosing the executor for a launch (``CUTILE_BACKEND``, ``set_backend``, ``backend``).

- ``interp``: the NumPy interpreter (exact; every block in sequence).
- ``numba``: the Numba-CUDA backend (``cutile/numba_backend``): a real GPU, or Numba's CUDA
  simulator when ``NUMBA_ENABLE_CUDASIM=1``.
- ``auto`` (default): ``numba`` when a CUDA GPU is usable (and not merely the simulator), else
  ``interp``.

Precedence: the innermost ``with cutile.executors.backend(...)`` block, then
``set_backend(...)``, then ``CUTILE_BACKEND``.  Numba is imported only when the numba executor
runs (or ``auto`` has to probe for a GPU), never by ``import cutile``.

>>> from cutile.executors import backend
>>> with backend("numba", threads=64):        # this launch on the Numba backend, 64 threads
...     ct.launch(None, grid, kernel, args)
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from . import config, progress
from ._traceback import api_boundary
from .device_arrays import DeviceArrayRef
from .launch_args import check_grid

_override: str | None = None
_scoped: contextvars.ContextVar = contextvars.ContextVar("cutile_backend", default=None)
_gpu_usable: bool | None = None

_NAMES = (None,) + config.BACKENDS


def _check(name) -> None:
    if name not in _NAMES:
        raise ValueError(f"unknown backend {name!r}; expected one of "
                         f"{', '.join(config.BACKENDS)}")


# the packages the Numba backend imports (numba-cuda installs the ``numba.cuda`` in use)
_NUMBA_PACKAGES = ("numba", "numba_cuda", "llvmlite")


def numba_backend():
    """``cutile.numba_backend``, or an error that says what to install when Numba is not."""
    try:
        import numba.cuda  # noqa: F401 - the backend imports it lazily, deep in a launch

        from . import numba_backend  # lazy: numba is optional; import cutile must not load it
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] not in _NUMBA_PACKAGES:
            raise
        raise ModuleNotFoundError(
            f"the numba backend needs Numba and numba-cuda, which are not installed here "
            f"(importing {e.name!r} failed): python3 -m pip install 'numba>=0.60' "
            f"'numba-cuda>=0.20', or run on the interpreter (CUTILE_BACKEND=interp)",
            name=e.name) from None
    return numba_backend


def set_backend(name: str | None) -> None:
    """Select ``"interp"``, ``"numba"`` or ``"auto"`` for later launches (``None``: use the
    ``CUTILE_BACKEND`` environment variable)."""
    _check(name)
    global _override
    _override = name


@contextmanager
def backend(name: str, *, threads: int | None = None,
            mma_acc: str | None = None) -> Iterator[None]:
    """Run the launches inside the ``with`` block on ``name``; for ``numba``, optionally
    with ``threads`` per block (a power of two) and ``mma_acc`` (``"f32"`` or ``"exact"``).

    >>> with backend("interp"):
    ...     ct.launch(None, (4,), vec_add, (a, b, c, 1024))
    """
    _check(name)
    if mma_acc not in (None, "f32", "exact"):
        raise ValueError(f"mma_acc must be 'f32' or 'exact', got {mma_acc!r}")
    token = _scoped.set((name, {"threads": threads, "mma_acc": mma_acc}))
    try:
        yield
    finally:
        _scoped.reset(token)


def gpu_usable() -> bool:
    """A real CUDA GPU through Numba (the simulator does not count).  Probed once."""
    global _gpu_usable
    if _gpu_usable is None:
        if config.cuda_simulator():
            _gpu_usable = False
        else:
            try:
                from numba import cuda
                _gpu_usable = bool(cuda.is_available())
            except Exception:
                _gpu_usable = False
    return _gpu_usable


def _requested() -> tuple[str, dict]:
    scoped = _scoped.get()
    if scoped is not None:
        return scoped[0], scoped[1]
    return (_override or config.backend()), {}


def selected() -> str:
    name, _ = _requested()
    if name == "auto":
        return "numba" if gpu_usable() else "interp"
    return name


def run(ir, grid, spec, stream) -> None:
    name, opts = _requested()
    if name == "auto":
        name = "numba" if gpu_usable() else "interp"
    where = name if name == "interp" or not config.cuda_simulator() else "numba simulator"
    blocks = grid[0] * grid[1] * grid[2]
    # the interpreter counts its blocks; the Numba backend's are not visible from here
    with progress.task(f"{ir.name} on {where}", blocks if name == "interp" else None):
        _run(name, opts, ir, grid, spec, stream)


def _run(name: str, opts: dict, ir, grid, spec, stream) -> None:
    if name == "interp":
        from .interp.machine import run_kernel  # lazy: start-up time (first interp launch)
        leaves, back = host_leaves(spec.leaves)
        run_kernel(ir, grid, leaves)
        for dev, host in back:                  # device arrays: copy the results back
            dev.copy_to_device(host)
        return
    backend = numba_backend()
    if not config.cuda_simulator() and not gpu_usable():
        raise RuntimeError("the numba backend was selected but Numba finds no usable CUDA GPU "
                           "here; NUMBA_ENABLE_CUDASIM=1 runs it on Numba's CUDA simulator "
                           "(slow), CUTILE_BACKEND=interp on the interpreter")
    backend.run(ir, grid, spec.leaves, stream, threads=opts.get("threads"),
                mma_acc=opts.get("mma_acc"))


def host_leaves(leaves: list) -> tuple[list, list]:
    """The interpreter runs on host arrays: device arrays (``DeviceArrayRef``) go through host
    copies (Numba is imported only when there is one)."""
    out, back = [], []
    for leaf in leaves:
        if isinstance(leaf, DeviceArrayRef):
            from numba import cuda
            cai = dict(leaf.__cuda_array_interface__)
            if leaf.dtype.type.__module__.startswith("ml_dtypes"):   # Numba copies the bits
                cai["typestr"] = f"<u{leaf.dtype.itemsize}"
            dev = cuda.from_cuda_array_interface(cai, owner=leaf.obj, sync=True)
            host = dev.copy_to_host()
            back.append((dev, host))
            out.append(host.view(leaf.dtype))
        else:
            out.append(leaf)
    return out, back


@api_boundary
def inspect(kernel: Any, args: tuple, *, grid: tuple[int, ...] = (1,),
            threads: int | None = None, mma_acc: str | None = None) -> Any:
    """What the Numba backend makes of ``kernel`` for ``args``: generated source, threads
    per block, shared memory per block, registers per thread (when Numba can compile for a
    GPU) and theoretical occupancy.  Returns a ``cutile.numba_backend.inspect.KernelInfo``.

    >>> info = cutile.executors.inspect(vec_add, (a, b, c, 1024), grid=(4,))
    >>> print(info.source); info.threads, info.shared_bytes, info.occupancy
    """
    numba_backend()
    from .numba_backend.inspect import inspect_kernel  # lazy: numba is optional
    spec = kernel.specialize(args)
    ir = kernel.compile(spec)
    return inspect_kernel(ir, check_grid(grid), spec.leaves, threads=threads, mma_acc=mma_acc)

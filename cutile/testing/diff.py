"""Run a kernel on each executor over guarded, poisoned copies of its arrays, and compare.

``assert_executors_agree`` is the differential test: the first executor (the interpreter, by
default) is the reference, every other one must produce the same array contents element by
element (bit for bit, or within the bounds given per dtype), and nothing may be written
outside an array.  ``assert_matches`` checks a kernel against a NumPy reference function.
Both raise ``ExecutorMismatch`` (an ``AssertionError``) with the first disagreeing elements:
their index, both values and the block that wrote them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import cutile as ct

from .. import progress
from .._traceback import api_boundary
from ..executors import backend
from ..ir import ops
from ..ir.core import walk
from ..launch_args import check_grid
from . import cuda_tile
from .compare import Mismatch, disagreeing, first_mismatches
from .guarded import GUARD, embed, guard_intact, inner, poison

# a tolerance: one number, or one per dtype name ({"float16": 1})
Bound = float | dict


class ExecutorMismatch(AssertionError):
    """Executors (or an executor and the reference) disagree; ``mismatches`` lists the first
    disagreeing elements."""

    def __init__(self, message: str, mismatches: list[Mismatch]):
        super().__init__(message)
        self.mismatches = mismatches


@dataclass
class Run:
    """One launch on one executor: the array arguments afterwards, by name."""

    executor: str
    arrays: dict[str, np.ndarray]
    guard_ok: dict[str, bool]
    writer: dict = field(default_factory=dict)       # name -> (index -> block or None)


def _flatten(args, names) -> list[tuple[str, object, tuple]]:
    """(name, value, path) of every array in ``args`` (tuples and lists walked)."""
    out = []

    def walk(x, name, path):
        if isinstance(x, np.ndarray):
            out.append((name, x, path))
        elif isinstance(x, (tuple, list)):
            for i, item in enumerate(x):
                walk(item, f"{name}[{i}]", path + (i,))

    for i, a in enumerate(args):
        walk(a, names[i] if i < len(names) else f"arg{i}", (i,))
    return out


def _replace(args, path: tuple, value):
    """``args`` with the item at ``path`` replaced (tuples rebuilt, lists copied)."""
    i, rest = path[0], path[1:]
    items = list(args)
    items[i] = value if not rest else _replace(items[i], rest, value)
    return type(args)(items) if isinstance(args, list) else tuple(items)


def pure_outputs(kernel, args: tuple) -> set[int]:
    """Positions (in launch-argument leaf order) of the arrays the kernel only writes: every
    use is the array of a store/scatter, or a shape/stride query.  Those are poisoned before a
    launch; arrays that are also read keep their contents."""
    spec = kernel.specialize(args)
    ir = kernel.compile(spec)
    derived = {p: i for i, p in enumerate(ir.params)}
    body = list(walk(ir.body))
    for op in body:                          # views of a parameter stand for it
        if isinstance(op, ops.ArraySlice) and op.array in derived:
            derived[op.results[0]] = derived[op.array]
    ok = {i: True for i in range(len(ir.params))}
    writes = set()
    for op in body:
        for v in op.operands():
            if v not in derived:
                continue
            i = derived[v]
            if isinstance(op, (ops.Store, ops.Scatter)) and v is op.array:
                writes.add(i)
            elif not isinstance(op, (ops.ArrayDim, ops.ArrayStride, ops.ArraySlice)):
                ok[i] = False
    leaves = [id(x) for x in spec.leaves]
    return {leaves[i] for i in writes if ok[i] and i < len(leaves)}


@api_boundary
def run_on(kernel: Any, grid: int | tuple[int, ...], args: tuple, executor: str = "interp", *,
           poison_outputs: bool = True, guard: int = GUARD, threads: int | None = None,
           mma_acc: str | None = None, device: bool = False) -> Run:
    """Launch ``kernel`` on ``executor`` ("interp", "numba" or "cuda.tile") over guarded
    copies of the array arguments (arrays the kernel only writes are poisoned first); the
    caller's arrays are not touched.  Returns the arrays afterwards.

    ``kernel`` may be a cutile or a ``cuda.tile`` kernel: each executor gets the same function
    rebuilt against its module (``cuda_tile.py``); "cuda.tile" runs NVIDIA's cuTile on the GPU,
    the guarded buffers copied to the device and back.

    ``device=True`` hands the Numba backend views of device buffers (Numba device arrays)
    instead of host arrays: on a GPU the zero-copy path, with the guard band in device memory
    checking the generated code's own bounds checks."""
    kernel = cuda_tile.to_cutile(kernel)
    names = list(getattr(kernel, "param_names", []))
    found = _flatten(args, names)
    outputs = pure_outputs(kernel, args) if poison_outputs else set()
    call, bufs = args, []
    on_device = device and executor == "numba"
    gpu = None
    if executor == cuda_tile.NAME:
        cuda_tile.require()
        gpu = cuda_tile.Device()
    guards = []
    for name, a, path in found:
        start = poison(a.shape, a.dtype) if id(a) in outputs else a
        g = cuda_tile.guard_for(a.dtype, guard) if gpu is not None else guard
        guards.append(g)
        buf, view = embed(np.asarray(start), g)
        if gpu is not None:                      # the whole guarded buffer, then its view
            dbuf = gpu.to_device(buf)
            bufs.append((name, dbuf, a.shape))
            call = _replace(call, path, inner(dbuf, a.shape, g))
            continue
        if on_device and a.ndim > 0:
            from numba import cuda
            dbuf = cuda.to_device(buf)
            bufs.append((name, dbuf, a.shape))
            call = _replace(call, path, dbuf[tuple(slice(guard, guard + d) for d in a.shape)])
            continue
        bufs.append((name, buf, a.shape))
        call = _replace(call, path, view)
    grid = grid if isinstance(grid, tuple) else (grid,)
    run = Run(executor, {}, {})
    if executor == "interp":
        from ..interp.machine import run_kernel  # lazy: start-up time (the interpreter)
        spec = kernel.specialize(call)
        g = check_grid(grid)
        ir = kernel.compile(spec)
        with progress.task(f"{ir.name} on interp", g[0] * g[1] * g[2]):
            tracker = run_kernel(ir, g, spec.leaves)
        for name, buf, shape in bufs:
            view = inner(buf, shape, guard)
            if tracker is not None:
                run.writer[name] = (lambda v: lambda i: tracker.writer_of(v, i))(view)
            elif g == (1, 1, 1):
                run.writer[name] = lambda i: (0, 0, 0)
    elif gpu is not None:
        cuda_tile.launch_device(grid, kernel, call, gpu)
    else:
        opts = {"threads": threads, "mma_acc": mma_acc} if executor == "numba" else {}
        with backend(executor, **opts):
            ct.launch(None, grid, kernel, call)
    for (name, buf, shape), (_, a, _), g in zip(bufs, found, guards):
        if gpu is not None:
            buf = gpu.to_host(buf, a.dtype)
        elif not isinstance(buf, np.ndarray):        # a device buffer (device=True)
            buf = buf.copy_to_host()
        run.arrays[name] = inner(buf, shape, g).copy()
        run.guard_ok[name] = guard_intact(buf, shape, g)
    return run


def _report(title: str, mismatches: list[Mismatch], counts: dict) -> str:
    lines = [title]
    for name, (n, total) in counts.items():
        lines.append(f"  {name}: {n} of {total} element(s) differ")
    lines += [f"  {m}" for m in mismatches]
    return "\n".join(lines)


def _compare(ref: Run, got: Run, *, ulps, atol, rtol, signed_zero, limit: int,
             ref_name: str) -> None:
    stray = [n for n, ok in got.guard_ok.items() if not ok]
    if stray:
        raise ExecutorMismatch(f"{got.executor} wrote outside array argument(s) {stray} "
                               f"(the guard band around them changed)", [])
    mism, counts = [], {}
    for name, r in ref.arrays.items():
        g = got.arrays[name]
        bad = disagreeing(r, g, ulps=ulps, atol=atol, rtol=rtol, signed_zero=signed_zero)
        if bad.any():
            counts[name] = (int(bad.sum()), r.size)
            writer = ref.writer.get(name) or got.writer.get(name)   # the interpreter's
            mism += first_mismatches(name, r, g, bad, limit - len(mism), writer)
    if counts:
        raise ExecutorMismatch(_report(f"{ref_name} vs {got.executor}: outputs disagree "
                                       f"(values shown as {ref_name} vs {got.executor})",
                                       mism, counts), mism)


@api_boundary
def assert_executors_agree(kernel: Any, grid: int | tuple[int, ...], args: tuple, *,
                           executors: tuple[str, ...] = ("interp", "numba"),
                           ulps: Bound = 0, atol: Bound = 0.0, rtol: Bound = 0.0,
                           signed_zero: bool = True, poison_outputs: bool = True,
                           threads: int | None = None, mma_acc: str | None = None,
                           limit: int = 10) -> dict[str, np.ndarray]:
    """Run ``kernel`` on every executor in ``executors`` and assert that each leaves every
    array argument exactly as the first one does (or within ``ulps`` / ``atol + rtol*|ref|``;
    each bound may be a number or a dict by dtype, e.g. ``ulps={"float16": 1}``).

    Returns the reference executor's arrays by parameter name.  Raises ``ExecutorMismatch``
    naming the first ``limit`` disagreeing elements and the block that wrote each.

    >>> out = assert_executors_agree(vec_add, (4,), (a, b, c, 1024))
    >>> out["c"]                                    # what the interpreter wrote
    """
    if not executors:
        raise ValueError("executors must name at least one executor")
    opts = dict(poison_outputs=poison_outputs, threads=threads, mma_acc=mma_acc)
    ref = run_on(kernel, grid, args, executors[0], **opts)
    bad = [n for n, ok in ref.guard_ok.items() if not ok]
    if bad:
        raise ExecutorMismatch(f"{executors[0]} wrote outside array argument(s) {bad}", [])
    for ex in executors[1:]:
        _compare(ref, run_on(kernel, grid, args, ex, **opts), ulps=ulps, atol=atol, rtol=rtol,
                 signed_zero=signed_zero, limit=limit, ref_name=executors[0])
    return ref.arrays


@api_boundary
def assert_matches(kernel: Any, grid: int | tuple[int, ...], args: tuple,
                   reference_fn: Callable[..., Any], *, executor: str | None = None,
                   ulps: Bound = 0, atol: Bound = 0.0, rtol: Bound = 0.0,
                   signed_zero: bool = True, limit: int = 10) -> dict[str, np.ndarray]:
    """Run ``kernel`` (on ``executor``, default: the interpreter) and assert that its array
    arguments afterwards equal ``reference_fn(*args)``, computed in NumPy from copies of the
    inputs: a dict of expected arrays by parameter name, or one array / a tuple of arrays
    standing for the kernel's last array arguments (its outputs, in order).

    >>> assert_matches(vec_add, (4,), (a, b, c, 1024), lambda a, b, c, n: {"c": a + b})
    """
    import copy
    kernel = cuda_tile.to_cutile(kernel)          # param_names below; a cuda.tile kernel too
    run = run_on(kernel, grid, args, executor or "interp")
    bad = [n for n, ok in run.guard_ok.items() if not ok]
    if bad:
        raise ExecutorMismatch(f"{run.executor} wrote outside array argument(s) {bad}", [])
    expected = reference_fn(*copy.deepcopy(args))
    if not isinstance(expected, dict):
        if isinstance(expected, np.ndarray):
            expected = (expected,)
        names = [n for n, _, _ in _flatten(args, list(kernel.param_names))]
        if len(expected) > len(names):
            raise ValueError(f"reference_fn returned {len(expected)} arrays; the kernel has "
                             f"{len(names)} array arguments")
        # positional results stand for the kernel's last array arguments (its outputs)
        expected = dict(zip(names[len(names) - len(expected):], expected))
    unknown = set(expected) - set(run.arrays)
    if unknown:
        raise ValueError(f"reference_fn named {sorted(unknown)}; the kernel's array arguments "
                         f"are {sorted(run.arrays)}")
    ref = Run("reference", {n: np.asarray(v, dtype=run.arrays[n].dtype).reshape(
        run.arrays[n].shape) for n, v in expected.items()}, {})
    got = Run(run.executor, {n: run.arrays[n] for n in expected},
              {n: True for n in expected})
    ref.writer = {n: run.writer.get(n) for n in expected}
    bounds = dict(ulps=ulps, atol=atol, rtol=rtol, signed_zero=signed_zero, limit=limit,
                  ref_name="reference")
    try:
        _compare(ref, got, **bounds)
    except ExecutorMismatch:
        if run.executor == "interp" or any(ref.writer.values()):
            raise
        # only the interpreter knows which block wrote an element: ask it, on failure only
        ref.writer = {n: run_on(kernel, grid, args, "interp").writer.get(n) for n in expected}
        _compare(ref, got, **bounds)
    return run.arrays

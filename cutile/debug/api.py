"""The public debugging calls (see the package docstring); each runs on the interpreter.

``cutile.debug`` stands above the interpreter and the frontend (it builds a kernel, possibly a
traced variant, and runs it with ``interp.machine.run_kernel``); nothing in ``cutile`` imports
it, and ``import cutile`` does not load it, so it imports what it uses at the top."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any

import numpy as np

from .._traceback import api_boundary
from ..executors import host_leaves
from ..frontend.build import build_kernel
from ..interp.access_map import AccessRecorder
from ..interp.machine import run_kernel
from ..interp.rules.debugger import DebugSession, current_session
from ..ir.types import ArrayType
from ..kernel import kernel as kernel_cls
from ..launch_args import check_grid
from .render import png, text


def _prepare(kernel, grid, args: tuple, watch=None):
    if not isinstance(kernel, kernel_cls):
        raise TypeError("expected a tile kernel (@ct.kernel)")
    if not isinstance(args, tuple):
        raise TypeError("args must be a tuple, as for ct.launch")
    g = check_grid(grid if isinstance(grid, tuple) else (grid,))
    spec = kernel.specialize(args)
    if watch is None:
        ir = kernel.compile(spec)
    else:
        ir = build_kernel(kernel, spec, watch=watch)     # a traced variant, not cached
        ir.options = dict(kernel.options)
    leaves, back = host_leaves(spec.leaves)
    return ir, g, leaves, back


def _blocks(blocks, grid: tuple) -> list | None:
    """Block ids as 3-tuples, checked against the grid."""
    if blocks is None:
        return None
    out = []
    for b in blocks:
        b = (b,) if isinstance(b, int) else tuple(b)
        if not 1 <= len(b) <= 3 or not all(isinstance(x, (int, np.integer)) for x in b):
            raise ValueError(f"a block id is an int or a tuple of up to 3 ints, got {b!r}")
        b = tuple(int(x) for x in b) + (0,) * (3 - len(b))
        if not all(0 <= x < g for x, g in zip(b, grid)):
            raise ValueError(f"block {b} is outside the grid {grid}")
        out.append(b)
    return out


def _run(ir, g, leaves, back, blocks, recorder=None):
    run_kernel(ir, g, leaves, blocks=_blocks(blocks, g), recorder=recorder)
    for dev, host in back:
        dev.copy_to_device(host)


@api_boundary
def launch(grid: int | tuple[int, ...], kernel: Any, args: tuple, *,
           blocks: Iterable[int | tuple[int, ...]] | None = None) -> None:
    """``ct.launch`` on the interpreter, running only ``blocks`` (block ids, in that order;
    None: all).  Arrays are updated in place as by ``ct.launch``.

    >>> cutile.debug.launch((8, 8), matmul, (a, b, c), blocks=[(3, 0)])
    """
    ir, g, leaves, back = _prepare(kernel, grid, args)
    _run(ir, g, leaves, back, blocks)


@contextlib.contextmanager
def break_in(*blocks: int | tuple[int, ...], stdin: IO[str] | None = None,
             stdout: IO[str] | None = None) -> Iterator[None]:
    """Inside the ``with`` block, ``breakpoint()`` in kernels stops only in ``blocks``
    (block ids; none given: every block); ``stdin``/``stdout`` drive pdb (scripts, tests).

    >>> with cutile.debug.break_in((3, 0)):
    ...     ct.launch(None, grid, kernel, args)
    """
    chosen = {b if isinstance(b, tuple) else (b,) for b in blocks} or None
    token = current_session.set(DebugSession(break_blocks=chosen, stdin=stdin, stdout=stdout))
    try:
        yield
    finally:
        current_session.reset(token)


@dataclass(repr=False)
class Trace:
    """What ``trace`` recorded: one record per block and watched line and name."""

    records: list           # (bid, line, name, value)

    def __repr__(self) -> str:
        """A summary (the records can be large): per name and line, how many values and of
        what kind, e.g. ``Trace(6 records, 2 blocks: acc@32 6 x float32[4], k@32 ...)``."""
        counts: dict = {}
        first: dict = {}
        for _, line, name, value in self.records:
            counts[name, line] = counts.get((name, line), 0) + 1
            first.setdefault((name, line), value)
        parts = [f"{name}@{line} {n} x {_kind(first[name, line])}"
                 for (name, line), n in counts.items()]
        blocks = len({b for b, _, _, _ in self.records})
        return f"Trace({len(self.records)} records, {blocks} blocks: {', '.join(parts)})"

    def values(self, name: str, line: int | None = None) -> np.ndarray:
        """The recorded values of ``name`` stacked along a first axis, one per record (in block
        execution order; see ``blocks``)."""
        vals = [v for _, ln, n, v in self.records if n == name and (line is None or ln == line)]
        if not vals:
            raise KeyError(f"nothing recorded for {name!r}" + (f" at line {line}" if line
                                                              else ""))
        return np.stack([np.asarray(v) for v in vals])

    def blocks(self, name: str, line: int | None = None) -> list[tuple]:
        """The block of each record of ``name`` (aligned with ``values``)."""
        return [b for b, ln, n, _ in self.records if n == name and (line is None or ln == line)]

    def __getitem__(self, name: str) -> np.ndarray:
        return self.values(name)


def _kind(v) -> str:
    if isinstance(v, (np.ndarray, np.generic)):
        return f"{v.dtype}{list(v.shape)}" if v.ndim else str(v.dtype)
    return type(v).__name__


@api_boundary
def trace(kernel: Any, grid: int | tuple[int, ...], args: tuple,
          watch: dict[int, str | tuple[str, ...]], *,
          blocks: Iterable[int | tuple[int, ...]] | None = None) -> Trace:
    """Run the launch on the interpreter and record, in every block, the variables named in
    ``watch`` ({line: name or names; an empty tuple: every live name}) after the statement on
    that line of the kernel's source file executes.  Arrays are updated as by ``ct.launch``.

    >>> t = cutile.debug.trace(softmax, (4,), (x, y, 128), watch={12: "row_max"})
    >>> t["row_max"].shape                          # one row_max per block
    """
    w = {}
    for line, names in watch.items():
        if not isinstance(line, int):
            raise TypeError(f"watch keys are line numbers of the kernel's file, got {line!r}")
        w[line] = (names,) if isinstance(names, str) else tuple(names)
    ir, g, leaves, back = _prepare(kernel, grid, args, watch=w)
    live = ir.watch_live
    missing_lines = sorted(set(w) - set(live))
    if missing_lines:
        raise ValueError(f"no statement of {kernel.__name__} starts on line(s) {missing_lines} "
                         f"of its file {ir.loc.filename if ir.loc else ''}")
    for line, names in sorted(w.items()):
        unknown = [n for n in names if n not in live[line]]
        if unknown:
            raise ValueError(f"trace: no variable {', '.join(map(repr, unknown))} after line "
                             f"{line} of {kernel.__name__}; the variables there are "
                             f"{', '.join(sorted(live[line]))}")
    session = DebugSession()
    token = current_session.set(session)
    try:
        _run(ir, g, leaves, back, blocks)
    finally:
        current_session.reset(token)
    return Trace(session.records)


@dataclass
class AccessMap:
    """Which blocks read and wrote each element of one array argument.

    ``writer``/``reader``: the linear block number (``x + gx*(y + gy*z)``) that wrote/read
    the element, -1 if none, -2 if several; ``writes``/``reads``: how many blocks did.
    ``overlaps``: elements written by more than one block (a race, unless atomics)."""

    name: str
    grid: tuple
    writer: np.ndarray
    writes: np.ndarray
    reader: np.ndarray
    reads: np.ndarray

    @property
    def overlaps(self) -> np.ndarray:
        return self.writes > 1

    def block(self, linear: int) -> tuple:
        """The block id ``(x, y, z)`` of a linear block number."""
        linear, g0, g1 = int(linear), self.grid[0], self.grid[1]
        return (linear % g0, linear // g0 % g1, linear // (g0 * g1))

    def render_text(self, kind: str = "write", max_side: int = 64) -> str:
        return text(self, kind, max_side)

    def render_png(self, path: str, kind: str = "write") -> str:
        return png(self, path, kind)


@api_boundary
def access_map(kernel: Any, grid: int | tuple[int, ...], args: tuple, *,
               blocks: Iterable[int | tuple[int, ...]] | None = None) -> dict[str, AccessMap]:
    """Run the launch on the interpreter and return an ``AccessMap`` per array argument (by
    parameter name; tuple items as ``name[i]``).  Overlapping writes are recorded, not
    raised (they are what the map shows).  Arrays are updated as by ``ct.launch``.

    >>> maps = cutile.debug.access_map(matmul, grid, (a, b, c, 32, 32, 16))
    >>> print(maps["c"].render_text())
    """
    ir, g, leaves, back = _prepare(kernel, grid, args)
    rec = AccessRecorder(g)
    run_kernel(ir, g, leaves, blocks=_blocks(blocks, g), recorder=rec)
    for dev, host in back:
        dev.copy_to_device(host)
    out, seen = {}, {}
    for p, arr in zip(ir.params, leaves):
        if not isinstance(p.type, ArrayType):
            continue
        name = p.hint or "array"
        k = seen.get(name, 0)
        seen[name] = k + 1
        name = name if k == 0 else f"{name}#{k}"          # tuple items share their name
        st = rec.of(arr)
        out[name] = AccessMap(name, g, st["writer"], st["writes"], st["reader"], st["reads"])
    return out

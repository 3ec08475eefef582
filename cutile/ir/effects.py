"""What a kernel's ops do to memory: which array parameters an array value may be, which ones
the kernel writes, and which regions are free of effects.

Every executor asks these questions (the launcher copies written arrays back and refuses
read-only ones, the interpreter logs writes for its race check, the Numba backend sends a
view's whole buffer when its address is taken), so they are answered once, here, from the IR.

Arrays are values like tiles: a variable may name one array or another depending on the path
taken (``a = X; for ...: a = Y``, ``d, w = w, d``, an array chosen by ``if`` or by a runtime
index into a list of arrays).  ``array_roots`` is a may-alias analysis over structured control
flow: a fixpoint over loop-carried region arguments, ``Yield``/``Continue``/``Break`` values and
``If`` results, so a store through such a variable is known to write each array it may be.
"""

from __future__ import annotations

import weakref

from .core import KernelIR, Op, Region, walk
from .ops import Break, Continue, For, If, Loop, Yield
from .types import ArrayType

# The root of an array built from a foreign pointer (``Array.from_foreign``): it may be any
# memory, so a write through it may touch any array argument.
FOREIGN = -2


# -- purity ----------------------------------------------------------------------------------
# Declared on each op (``@opdef(pure=True)``); an op not declared pure counts as an effect
# (stores, scatters, atomics, raw accesses, prints, asserts, debugger ops, ops added later), so
# the analyses below stay conservative.
def is_pure(op: Op) -> bool:
    """True when ``op`` and every op nested in its regions is declared pure: running it again
    with the same operands gives the same results and changes nothing else.  Reads count as
    pure (memory changes only through the kernel's own writes); a ``RawLoad`` does not (it
    reads flags that other blocks set).  The interpreter relies on this to report a while
    loop whose iteration changed nothing (R-EXEC-7)."""
    return type(op).pure and all(region_is_pure(r) for r in op.regions())


def region_is_pure(region: Region) -> bool:
    """True when every op of ``region`` (nested regions included) is pure (``is_pure``)."""
    return all(type(op).pure for op in walk(region))


# -- array aliasing --------------------------------------------------------------------------
_roots_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def array_roots(kernel: KernelIR) -> dict[int, frozenset]:
    """``{id(value): parameter indices}`` for every array value of the kernel: the array
    parameters it may be a view of (``FOREIGN`` for memory reached through a foreign pointer).
    Cached per kernel IR."""
    roots = _roots_cache.get(kernel)
    if roots is None:
        roots = _roots_cache[kernel] = _Aliases(kernel).solve()
    return roots


class _Aliases:
    """The fixpoint behind ``array_roots``: sets only grow, so it ends after a few sweeps."""

    def __init__(self, kernel: KernelIR):
        self.kernel = kernel
        self.roots: dict[int, frozenset] = {
            id(p): frozenset({i}) for i, p in enumerate(kernel.params)
            if isinstance(p.type, ArrayType)}
        self.changed = False

    def solve(self) -> dict[int, frozenset]:
        self.changed = True
        while self.changed:
            self.changed = False
            self.region(self.kernel.body, None, None)
        return self.roots

    def of(self, v) -> frozenset:
        return self.roots.get(id(v), frozenset())

    def add(self, v, roots: frozenset) -> None:
        if not isinstance(v.type, ArrayType) or not roots:
            return
        old = self.of(v)
        if not roots <= old:
            self.roots[id(v)] = old | roots
            self.changed = True

    def flow(self, targets, values) -> None:
        for t, v in zip(targets, values):
            self.add(t, self.of(v))

    def region(self, region: Region, owner: Op | None, loop: Op | None) -> None:
        """``owner``: the op whose region this is; ``loop``: the innermost enclosing loop
        (where ``Continue``/``Break`` go)."""
        for op in region.ops:
            if isinstance(op, (For, Loop)):
                args = _carried_args(op)
                self.flow(args, op.inits)
                if isinstance(op, For):          # zero iterations, or the last one's values
                    self.flow(op.results, args)
                self.region(op.body, op, op)
            elif isinstance(op, If):
                for r in (op.then, op.orelse):
                    if isinstance(r.terminator, Yield):
                        self.flow(op.results, r.terminator.values)
                    self.region(r, op, loop)
            elif isinstance(op, Continue) or (isinstance(op, Yield) and owner is not None
                                              and owner is loop):
                self.flow(_carried_args(loop), op.values)
            elif isinstance(op, Break):
                self.flow(loop.results, op.values)
            else:
                self.view(op)

    def view(self, op: Op) -> None:
        """Any other op returning an array returns a view of its array operands (an
        ``ArraySlice``) or, with none, foreign memory (``Array.from_foreign``)."""
        outs = [r for r in op.results if isinstance(r.type, ArrayType)]
        if not outs:
            return
        ins = frozenset().union(*(self.of(v) for v in op.operands()
                                  if isinstance(v.type, ArrayType)))
        for r in outs:
            self.add(r, ins or frozenset({FOREIGN}))


def _carried_args(loop: Op) -> list:
    """A loop's carried region arguments (a ``For`` body's first argument is its counter)."""
    return loop.body.args[1:] if isinstance(loop, For) else loop.body.args


# -- reads and writes ------------------------------------------------------------------------
def reads_array(op: Op) -> bool:
    """The op reads memory through its ``array`` operand (load, gather, atomic, raw load)."""
    return type(op).reads


def writes_array(op: Op) -> bool:
    """The op writes memory through its ``array`` operand (store, scatter, atomic, raw)."""
    return type(op).writes


def writes_memory(op: Op) -> bool:
    """``op``, or an op nested in its regions, writes memory (``writes_array``).  Prints and
    asserts do not write memory: a load may move past them."""
    return writes_array(op) or any(writes_array(o) for r in op.regions() for o in walk(r))


_written_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def written_roots(kernel: KernelIR) -> dict[int, object]:
    """``{root: Loc of the first op writing it}`` for the array parameters (and ``FOREIGN``)
    that some op may write, directly, through a view, or through a variable that may name
    several arrays.  Cached per kernel IR (launchers ask on every launch)."""
    out = _written_cache.get(kernel)
    if out is None:
        roots = array_roots(kernel)
        out = {}
        for op in walk(kernel.body):
            if writes_array(op):
                for r in sorted(roots.get(id(op.array), ())):
                    out.setdefault(r, op.loc)
        _written_cache[kernel] = out
    return out


def written_params(kernel: KernelIR) -> dict[int, object]:
    """``{index in kernel.params: Loc}`` of the array parameters some op may write (a write
    through foreign memory is not attributed to any parameter here: see ``written_roots``)."""
    return {i: loc for i, loc in written_roots(kernel).items() if i != FOREIGN}

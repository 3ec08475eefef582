"""IR core: values, ops, regions and the builder.  Structured control flow, strictly typed.

An op is a dataclass whose fields are its operands (``Value`` or tuples of them), its regions
(``Region``) and its constant attributes.  ``infer()`` is the op's type rule: it validates
operands and returns the result types.  The builder appends ops to the current region.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import Loc, TileInternalError
from .types import MAX_TILE_ELEMENTS, TileType, Type, check_tile_size

_ids = itertools.count()


class Value:
    """An SSA value: a result of an op or an argument of a region."""

    __slots__ = ("type", "id", "hint")

    def __init__(self, type: Type, hint: str = ""):
        self.type = type
        self.id = next(_ids)
        self.hint = hint

    def __repr__(self) -> str:
        return f"%{self.hint or 'v'}{self.id}: {self.type}"


class Region:
    """A list of ops ending in a terminator, with block arguments (loop-carried values)."""

    __slots__ = ("args", "ops")

    def __init__(self, args: list[Value] | None = None):
        self.args = list(args or [])
        self.ops: list[Op] = []

    @property
    def terminator(self) -> Op | None:
        return self.ops[-1] if self.ops and self.ops[-1].is_terminator else None


class Op:
    """Base class of all IR ops.  Subclasses are declared with ``@opdef``."""

    # facts declared by ``@opdef`` (see there); the defaults are the conservative answers
    is_terminator = False
    exit_kind: str | None = None
    pure = False
    reads = False
    writes = False
    rearranges = False
    section = ""
    loc: Loc | None = None
    results: list[Value]

    def infer(self) -> list[Type]:
        return []

    def operands(self) -> Iterator[Value]:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, Value):
                yield v
            elif isinstance(v, (tuple, list)):
                for item in v:
                    if isinstance(item, Value):
                        yield item

    def regions(self) -> Iterator[Region]:
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, Region):
                yield v

    def attrs(self) -> dict:
        out = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, (Value, Region)):
                continue
            if isinstance(v, (tuple, list)) and v and all(isinstance(i, Value) for i in v):
                continue
            out[f.name] = v
        return out

    @property
    def result(self) -> Value:
        if len(self.results) != 1:
            raise TileInternalError(f"{type(self).__name__} has {len(self.results)} results")
        return self.results[0]


OPS: dict[str, type[Op]] = {}


# how a terminator leaves its region (``@opdef(terminator=...)``), as executors signal it
EXITS = ("yield", "continue", "break", "return")


def opdef(section: str, *, terminator: str | None = None, pure: bool = False,
          reads: bool = False, writes: bool = False, rearranges: bool = False):
    """Declare an op class: make it a dataclass and register it under its section.

    The facts below are declared here, once per op, and every executor asks the op (through
    ``ir.effects`` or the class attributes) instead of keeping its own list of op names.  A
    subclass inherits its base's facts unless it declares them.

    ``terminator``: the op ends its region, and how control leaves it: ``"yield"`` (to the
    owner: the next iteration, or the ``If``'s results), ``"continue"``, ``"break"`` (the
    innermost loop) or ``"return"`` (the kernel).  Executors signal that kind.
    ``pure``: the op has no effect beyond its results (reading memory is not an effect), and
    its results depend only on its operands and on memory that the kernel's own writes change;
    an op with regions is pure when it adds nothing to its regions' effects
    (``ir.effects.is_pure``).  Left False when in doubt: the analyses stay conservative.
    ``reads`` / ``writes``: the op reads / writes memory through its ``array`` operand.
    ``rearranges``: the op's single tile operand ``x`` becomes the result by moving elements
    only (each of ``x``'s elements appears in the result, no value is computed): a view of
    the same values in another shape or order."""

    def wrap(cls):
        cls = dataclasses.dataclass(eq=False, repr=False)(cls)
        cls.section = section
        if terminator not in (None, *EXITS):
            raise TileInternalError(f"{cls.__name__}: unknown terminator kind {terminator!r}")
        cls.exit_kind = terminator or getattr(cls, "exit_kind", None)
        cls.is_terminator = cls.exit_kind is not None
        cls.pure = pure or getattr(cls, "pure", False)
        cls.reads = reads or getattr(cls, "reads", False)
        cls.writes = writes or getattr(cls, "writes", False)
        cls.rearranges = rearranges or getattr(cls, "rearranges", False)
        OPS[cls.__name__] = cls
        return cls

    return wrap


class Builder:
    """Appends ops to the innermost open region and creates their result values."""

    def __init__(self):
        self._stack: list[Region] = []

    @property
    def region(self) -> Region:
        return self._stack[-1]

    def emit(self, op: Op, loc: Loc | None = None) -> Op:
        op.loc = loc
        types = op.infer()
        for t in types:
            if isinstance(t, TileType) and len(t.shape) and t.size > MAX_TILE_ELEMENTS:
                check_tile_size(t.shape)
        op.results = [Value(t) for t in types]
        if self.region.terminator is not None:
            raise TileInternalError(f"emitting {type(op).__name__} after a terminator")
        self.region.ops.append(op)
        return op

    @contextmanager
    def open(self, region: Region):
        self._stack.append(region)
        try:
            yield region
        finally:
            self._stack.pop()


@dataclasses.dataclass(eq=False)
class KernelIR:
    """A specialised kernel: runtime parameters (arrays and scalars) and the body region."""

    name: str
    params: list[Value]
    param_names: list[str]
    body: Region
    loc: Loc | None = None
    # the kernel's launch hints (``@ct.kernel(occupancy=..., numba_threads=...)``), for the
    # executors; values may be ``ByTarget``
    options: dict = dataclasses.field(default_factory=dict)
    # {index in params: Loc} of the array params some op writes (ir.effects.written_params)
    written: dict = dataclasses.field(default_factory=dict)


def walk(region: Region) -> Iterator[Op]:
    """All ops of a region, nested regions included, in program order."""
    for op in region.ops:
        yield op
        for r in op.regions():
            yield from walk(r)

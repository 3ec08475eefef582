"""The values the generator and the lowerings share: tile values (``TV``), array values
(``AV``), loop frames and the weights of a row-major flat index.

``codegen.Gen`` keeps one ``TV``/``AV`` per IR value and a ``LoopFrame`` per loop being
emitted; the lowerings (``lower/<section>.py``) read and make them.  They live below both, so
that the lowerings never import the generator (the generator imports the lowerings' table).
"""

from __future__ import annotations

from dataclasses import dataclass

from .barriers import BarrierState


class TV:
    """A tile value: its layout and one source expression (a variable) per register.

    ``layout is None`` marks a value without registers of its own: a flexible one (constants,
    iotas), where ``mat(coords)`` gives the expression of the element at the coordinate
    expressions ``coords``, in any layout; or a broadcast *view* (``Assignment.broadcast_view``),
    where ``view = (source TV, weights)`` and each consumer materialises it in its layout
    (``Gen.get``: a register rename where that is free)."""

    __slots__ = ("layout", "regs", "dtype", "mat", "view")

    def __init__(self, layout, regs, dtype, mat=None, view=None):
        self.layout, self.regs, self.dtype, self.mat = layout, regs, dtype, mat
        self.view = view


@dataclass
class AV:
    """An array value: the variable naming it and the kernel parameters it may be a view of
    (``ir.effects.array_roots``; ``FOREIGN``: memory reached through a foreign pointer)."""

    name: str
    roots: frozenset
    ndim: int
    dtype: object
    # element 0 is a valid address even when the array is empty: true of kernel parameters
    # (launch.py), not of views made in the kernel (an empty slice) or chosen by control flow
    addressable: bool = False

    @property
    def root(self) -> int | None:
        """The one parameter (or ``FOREIGN``) it is a view of; None when control flow may
        have chosen among several."""
        return next(iter(self.roots)) if len(self.roots) == 1 else None


class LoopFrame:
    def __init__(self, names: list, layouts: list):
        self.names = names
        self.layouts = layouts
        self.back: list[BarrierState] = []
        self.exits: list[BarrierState] = []


def row_major_strides(shape) -> tuple:
    out, s = [], 1
    for d in reversed(shape):
        out.append(s)
        s *= d
    return tuple(reversed(out))

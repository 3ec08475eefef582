"""Atomic read-modify-write ops (spec §20, R-VIEW-7, §7 raw memory): one element per position
of the index shape, old values returned."""

from __future__ import annotations

from ...enums import MemoryOrder, MemoryScope
from ..core import Op, Value, opdef
from ..types import TileType
from . import _check

# The read-modify-write kinds of ``AtomicRMW`` (R-ATOM-3); cas is its own op.
RMW_KINDS = ("xchg", "add", "max", "min", "and", "or", "xor")


def _positions(op, a, shape) -> None:
    """Indices (one int tile per array dim, or one offset when ``raw``) and mask all have the
    index shape."""
    n = 1 if op.raw else a.ndim
    _check.expect(len(op.indices) == n, op, "one index tile per array dimension")
    for v in op.indices:
        t = _check.tile(v, op, "index")
        _check.expect(t.dtype.is_integral and t.shape == shape, op, "bad index tile")
    if op.mask is not None:
        m = _check.tile(op.mask, op, "mask")
        _check.expect(m.dtype.is_bool and m.shape == shape, op, "bad mask")


@opdef("atomic", reads=True, writes=True)
class AtomicRMW(Op):
    """``atomic_<kind>`` (R-ATOM-1..7): ``update`` has the array dtype and the index shape.

    ``raw``: ``indices`` is one element offset from the array's base (``RawArrayMemory``)."""

    array: Value
    indices: tuple
    update: Value
    kind: str
    mask: Value | None = None
    check_bounds: bool = True
    order: MemoryOrder = MemoryOrder.ACQ_REL
    scope: MemoryScope = MemoryScope.DEVICE
    raw: bool = False

    def infer(self):
        a = _check.array(self.array, self, "array")
        u = _check.tile(self.update, self, "update")
        _check.expect(self.kind in RMW_KINDS, self, f"unknown kind {self.kind}")
        _check.expect(u.dtype is a.dtype, self, "update must have the array dtype")
        _positions(self, a, u.shape)
        return [TileType(a.dtype, u.shape)]


@opdef("atomic", reads=True, writes=True)
class AtomicCAS(Op):
    """``atomic_cas`` (R-ATOM-3): ``expected``/``desired`` have the array dtype and the index
    shape; positions not accessed return ``expected`` (R-ATOM-6)."""

    array: Value
    indices: tuple
    expected: Value
    desired: Value
    mask: Value | None = None
    check_bounds: bool = True
    order: MemoryOrder = MemoryOrder.ACQ_REL
    scope: MemoryScope = MemoryScope.DEVICE
    raw: bool = False

    def infer(self):
        a = _check.array(self.array, self, "array")
        e = _check.tile(self.expected, self, "expected")
        d = _check.tile(self.desired, self, "desired")
        _check.expect(e.dtype is a.dtype and d.dtype is a.dtype and e.shape == d.shape, self,
                      "expected/desired must have the array dtype and one shape")
        _positions(self, a, e.shape)
        return [TileType(a.dtype, e.shape)]



@opdef("atomic", reads=True)
class RawLoad(Op):
    """``RawArrayMemory.load_offset`` (§7): ``offset`` elements from the array's base where
    ``mask``; ``padding`` elsewhere.  ``padding`` has the array dtype and the offset shape."""

    array: Value
    offset: Value
    padding: Value
    mask: Value | None = None

    def infer(self):
        a = _check.array(self.array, self, "array")
        p = _check.tile(self.padding, self, "padding")
        o = _check.tile(self.offset, self, "offset")
        _check.expect(p.dtype is a.dtype and o.dtype.is_integral and o.shape == p.shape, self,
                      "bad raw load")
        return [p]


@opdef("atomic", writes=True)
class RawStore(Op):
    """``RawArrayMemory.store_offset`` (§7); among positions hitting one element the last in
    row-major order wins."""

    array: Value
    offset: Value
    value: Value
    mask: Value | None = None

    def infer(self):
        a = _check.array(self.array, self, "array")
        v = _check.tile(self.value, self, "value")
        o = _check.tile(self.offset, self, "offset")
        _check.expect(v.dtype is a.dtype and o.dtype.is_integral and o.shape == v.shape, self,
                      "bad raw store")
        return []


__all__ = ["AtomicRMW", "AtomicCAS", "RawLoad", "RawStore", "RMW_KINDS"]

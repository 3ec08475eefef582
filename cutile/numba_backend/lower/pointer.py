"""Foreign pointers (§7) on the Numba backend.

A pointer is an int64 register holding a byte address (``exprs.cast``: ``i64``), so
broadcast, reshape and ``where`` move it like any 64-bit value.  ``Array.foreign_pointer`` is
``array_address`` of the array (a slice's own first element); ``Array.from_foreign`` is
``array_at``, an ordinary Numba array in the generated code (``pointer_rt.py``: intrinsics on
the GPU, a lookup of the launch's buffers under the simulator).  Such an array has no kernel
parameter: its root is ``FOREIGN``, a store through it makes the launch copy every NumPy
argument back (it may alias any of them), and its strides are read from the array itself.
"""

from __future__ import annotations

from ...ir import ops
from ..exprs import cast
from ..params import storage_bits
from ..registry import lower


@lower(ops.ForeignPointer)
def foreign_pointer(g, op):
    a = g.arrays[id(op.array)]
    g.pointer_roots.update(a.roots)
    g.define(op.result, g.scalar_layout(), [f"array_address({a.name})"])


def storage_proto(dtype) -> str:
    """A zero of the Numba type ``dtype``'s arrays hold (``array_at`` types the array by it)."""
    bits = storage_bits(dtype)
    if bits:
        return f"u{bits}(0)"
    return "b1(0)" if dtype.is_bool else f"{cast(dtype)}(0)"


@lower(ops.FromForeign)
def from_foreign(g, op):
    dtype = op.result.type.dtype

    def tup(vals):
        items = [f"i64({g.scalar(v)})" for v in vals]
        return f"({', '.join(items)},)" if items else "()"

    name = g.vname(op.result)
    g.line(f"{name} = array_at(i64({g.scalar(op.pointer)}), {tup(op.shape)}, "
           f"{tup(op.strides)}, {storage_proto(dtype)})")
    g.arrays[id(op.result)] = g.array_value(op.result, name)

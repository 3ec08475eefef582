"""Foreign pointers (§7) on the Numba backend: refused.  A Numba CUDA kernel cannot take the
address of an array argument nor build an array from an address with a runtime shape and
strides (``numba.carray`` is host-only), so ``Array.foreign_pointer`` has nothing to lower to."""

from __future__ import annotations

from ...errors import TileUnsupportedFeatureError
from ...ir import ops
from . import lower


@lower(ops.ForeignPointer, ops.FromForeign)
def foreign(g, op):
    name = "Array.foreign_pointer" if isinstance(op, ops.ForeignPointer) else \
        "Array.from_foreign"
    raise TileUnsupportedFeatureError(
        f"{name} is not supported by the numba backend: Numba CUDA kernels can neither take "
        f"an array's address nor build an array from one (use the interpreter)", op.loc)

"""Lowering of constant tiles and iota: flexible values, produced in the consumer's layout.

A constant costs one scalar variable whatever its shape (every register of every layout names
it); a non-uniform constant array becomes a global table indexed by the flat element index.
``Iota`` is its own coordinate.
"""

from __future__ import annotations

import numpy as np

from ... import dtypes as dt
from ...ir import ops
from ..exprs import cast, literal
from ..registry import lower
from ..values import TV, row_major_strides


def _uniform(arr: np.ndarray) -> bool:
    flat = np.ascontiguousarray(arr).reshape(-1)
    if flat.size <= 1:
        return True
    b = flat.view(np.uint8).reshape(flat.size, -1)
    return bool((b == b[0]).all())


@lower(ops.Constant)
def constant(g, op):
    dtype, shape = op.dtype, tuple(op.shape)
    value = op.value
    if isinstance(value, np.ndarray) and not _uniform(value.astype(dtype.np_dtype)):
        table = np.ascontiguousarray(value.astype(dtype.np_dtype).reshape(-1))
        if dtype.is_bool:
            table = table.astype(np.uint8)
        elif dtype is dt.bfloat16 or dtype.is_restricted:
            table = table.astype(np.float32)     # bfloat16/float8/float4 live in float32
        name = f"K{len(g.consts)}"
        g.consts[name] = table
        strides = row_major_strides(shape)
        c = cast(dtype)

        def mat(coords, name=name):
            idx = " + ".join(f"{x} * {s}" if s != 1 else x for x, s in zip(coords, strides))
            e = f"{name}[{idx or 0}]"
            return f"({e} != 0)" if dtype.is_bool else f"{c}({e})"

        g.set(op.result, TV(None, None, dtype, mat))
        return
    if isinstance(value, np.ndarray):
        value = value.reshape(-1)[0] if value.size else 0
    name = g.vname(op.result)
    g.line(f"{name} = {literal(value, dtype)}")
    if shape == ():
        g.set(op.result, TV(g.scalar_layout(), [name], dtype))
    else:
        g.set(op.result, TV(None, None, dtype, lambda coords, name=name: name))


@lower(ops.Iota)
def iota(g, op):
    c = cast(op.dtype)
    # i64 first: under the simulator coordinates are Python ints, which NumPy refuses to wrap.
    g.set(op.result, TV(None, None, op.dtype, lambda coords: f"{c}(i64({coords[0]}))"))

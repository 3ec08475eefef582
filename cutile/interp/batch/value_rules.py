"""Batched rules of the value ops: elementwise, shape, reductions, mma, creation, block ids.

Elementwise rules are the per-block rules themselves (``numerics`` broadcasts, so a leading
batch axis of length n or 1 changes nothing per block).  The others shift their axes by one
for the leading batch axis and otherwise call the same ``numerics`` functions.
"""

from __future__ import annotations

import numpy as np

from ...ir import ops
from .. import matmul_numerics, numerics
from ..core import Fallback, PTile
from ..rules import creation, elementwise, matmul, scan, shape
from .frame import Gathered, batched_rule, expand, lead
from .memory import UniformFrame

for _cls, _fn in ((ops.Unary, elementwise.unary), (ops.Binary, elementwise.binary),
                  (ops.Compare, elementwise.compare), (ops.Select, elementwise.select),
                  (ops.Convert, elementwise.convert), (ops.Fma, elementwise.fma)):
    batched_rule(_cls)(_fn)


@batched_rule(ops.Constant)
def constant(f, op):
    cached = getattr(op, "_batched", None)
    if cached is None:
        data = creation.constant(None, op).data[None]   # read-only, shared by every batch
        cached = op._batched = PTile(data)
    return cached


@batched_rule(ops.Iota)
def iota(f, op):
    return PTile(np.arange(op.size, dtype=np.int64).astype(op.dtype.np_dtype)[None])


@batched_rule(ops.BlockId)
def block_id(f, op):
    return PTile(f.bids[:, op.axis].astype(np.int32))


@batched_rule(ops.NumBlocks)
def num_blocks(f, op):
    return PTile(np.array([f.grid[op.axis]], dtype=np.int32))


def _both(t: PTile, fn) -> PTile:
    return PTile(fn(t.data), None if t.poison is None else fn(t.poison))


@batched_rule(ops.Broadcast)
def broadcast(f, op):
    x = f[op.x]
    n = lead(x)
    shape = tuple(op.shape)
    inner = x.data.shape[1:]
    pre = (n,) + (1,) * (len(shape) - len(inner)) + inner
    return _both(x, lambda a: np.broadcast_to(np.reshape(a, pre), (n,) + shape))


@batched_rule(ops.Reshape)
def reshape(f, op):
    x = f[op.x]
    return _both(x, lambda a: np.reshape(a, (lead(x),) + tuple(op.shape)))


@batched_rule(ops.Permute)
def permute(f, op):
    nd = len(op.axes)
    axes = (0,) + tuple(a % nd + 1 for a in op.axes)
    return _both(f[op.x], lambda a: np.transpose(a, axes))


@batched_rule(ops.Reduce)
def reduce(f, op):
    x = f[op.x]
    nd = len(op.x.type.shape)
    if nd == 0:
        raise Fallback("reduction of a 0-d tile")
    t = op.result.type
    axes = tuple(sorted({a % nd + 1 for a in op.axes}))
    data = numerics.reduce(op.fn, x.data, axes, op.x.type.dtype,
                           propagate_nan=op.propagate_nan, rounding=op.rounding, ftz=op.ftz)
    n = lead(x)
    poison = None
    if x.poison is not None:
        poison = np.reshape(x.poison.any(axis=axes, keepdims=True), (n,) + t.shape)
    return PTile(np.reshape(data, (n,) + t.shape), poison)


@batched_rule(ops.ArgReduce)
def arg_reduce(f, op):
    x = f[op.x]
    t = op.result.type
    n = lead(x)
    nd = len(op.x.type.shape)
    if op.axis is None:
        d = x.data.reshape(n, -1)
        p = None if x.poison is None else x.poison.reshape(n, -1).any(axis=1)
        ax = 1
    else:
        d, ax = x.data, op.axis % nd + 1
        p = None if x.poison is None else x.poison.any(axis=ax)
    data = numerics.argreduce(op.fn, d, ax, propagate_nan=op.propagate_nan)
    poison = None if p is None else np.reshape(p, (n,) + t.shape)
    return PTile(np.reshape(np.asarray(data, dtype=np.int32), (n,) + t.shape), poison)


@batched_rule(ops.Mma)
def mma(f, op):
    x, y, acc = f[op.x], f[op.y], f[op.acc]
    n = max(lead(x), lead(y), lead(acc))
    acc = expand(acc, n)
    data = _factored(x, y, acc, n, op)
    if data is None:
        x, y = expand(x, n), expand(y, n)
        data = numerics.matmul(x.data, y.data, acc.data, op.acc.type.dtype)
    return matmul.poisoned(data, x, y, acc)


def _factored(x, y, acc, n: int, op):
    """The batch's products from the distinct tiles of its 2-D operands (one GEMM over them,
    ``matmul_numerics.matmul_factored``: the same bits), or None where that does not apply."""
    if (n == 1 or x.poison is not None or y.poison is not None
            or len(op.x.type.shape) != 2 or len(op.y.type.shape) != 2):
        return None
    xs, ix = _factors(x, n)
    ys, iy = _factors(y, n)
    return matmul_numerics.matmul_factored(xs, ix, ys, iy, acc.data, op.acc.type.dtype)


def _factors(t, n: int) -> tuple:
    """(distinct tiles, index (n,)): block j's value of ``t`` is ``tiles[index[j]]``."""
    if type(t) is Gathered:
        return t.tiles, t.index
    d = t.data
    return (d, np.zeros(n, np.intp)) if d.shape[0] == 1 else (d, np.arange(n))


class _Shifted:
    """``op`` seen with its ``axis`` one further (the batch axis leads)."""

    def __init__(self, op, axis: int):
        self._op, self.axis = op, axis

    def __getattr__(self, name):
        return getattr(self._op, name)


@batched_rule(ops.CumScan)
def cum_scan(f, op):
    return scan.cum_scan(f, _Shifted(op, op.axis % len(op.x.type.shape) + 1))


batched_rule(ops.Bitcast)(shape.bitcast)     # elementwise on the bytes: any leading axis


@batched_rule(ops.Cat)
def cat(f, op):
    a, b = f[op.a], f[op.b]
    n = max(lead(a), lead(b))
    return shape.cat(_Expanded(f, n), _Shifted(op, op.axis % len(op.a.type.shape) + 1))


class _Expanded:
    """The batch frame with every tile operand expanded to a leading axis of ``n``."""

    def __init__(self, f, n: int):
        self.f, self.n = f, n

    def __getitem__(self, v):
        x = self.f[v]
        return expand(x, self.n) if isinstance(x, PTile) else x


def _cell(f, op, cell) -> tuple:
    """The per-block rule's slices of grid cell ``op.index`` (the same in every block, else
    Fallback), behind the batch axis."""
    return (slice(None),) + shape.cell_slices(UniformFrame(f), op, op.x.type.shape, cell)


@batched_rule(ops.Extract)
def extract(f, op):
    x = f[op.x]
    sl = _cell(f, op, op.shape)
    return _both(x, lambda a: np.array(a[sl]))


@batched_rule(ops.Insert)
def insert(f, op):
    x, v = f[op.x], f[op.value]
    sl = _cell(f, op, op.value.type.shape)
    n = max(lead(x), lead(v))
    data = np.array(np.broadcast_to(x.data, (n,) + x.data.shape[1:]))
    data[sl] = v.data
    poison = None
    if x.poison is not None or v.poison is not None:
        poison = np.zeros(data.shape, bool)
        if x.poison is not None:
            poison[...] = x.poison
        poison[sl] = False if v.poison is None else v.poison
    return PTile(data, poison)

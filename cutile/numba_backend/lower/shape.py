"""Lowering of broadcast, reshape and permute.

All three are linear maps from result coordinates to the source's flat index.  When every
thread already holds the source element of each of its result registers (the usual broadcast
of a row along a flat layout, every reshape between flat layouts), the op is a register rename
and emits no code; otherwise the tile goes through a shared-memory exchange (``Gen.relayout``).
Flexible sources (constants, iotas) stay flexible.
"""

from __future__ import annotations

from ...ir import ops
from ..codegen import TV, row_major_strides
from . import lower


def _bcast_weights(src_shape, dst_shape):
    s = row_major_strides(src_shape)
    lead = len(dst_shape) - len(src_shape)
    w = [0] * lead
    for j, d in enumerate(src_shape):
        w.append(0 if d == 1 else s[j])
    return w


def _permute_weights(src_shape, axes):
    s = row_major_strides(src_shape)
    return [s[a] for a in axes]


def _reshape_weights(dst_shape):
    return list(row_major_strides(dst_shape))


def _flex(g, op, src_tv, coord_map):
    mat = src_tv.mat
    g.set(op.result, TV(None, None, src_tv.dtype, lambda coords: mat(coord_map(coords))))


def _unravel(flat: str, shape) -> list:
    out, s = [], row_major_strides(shape)
    for d, st in zip(shape, s):
        out.append(f"(({flat}) // {st}) % {d}" if d != 1 else "0")
    return out


def _shape_op(g, op, weights, coord_map):
    src = g.tv(op.x)
    if src.layout is None:
        _flex(g, op, src, coord_map)
        return
    dst = g.natural(op.result)
    if op.result.type.shape == ():
        dst = g.scalar_layout()
    regs = g.relayout(src, dst, weights, g.vname(op.result))
    g.set(op.result, TV(dst, list(regs), src.dtype))


@lower(ops.Broadcast)
def broadcast(g, op):
    sshape, dshape = op.x.type.shape, tuple(op.shape)
    lead = len(dshape) - len(sshape)

    def cmap(coords):
        return [("0" if d == 1 else c) for d, c in zip(sshape, coords[lead:])]

    _shape_op(g, op, _bcast_weights(sshape, dshape), cmap)


@lower(ops.Permute)
def permute(g, op):
    sshape = op.x.type.shape
    axes = tuple(op.axes)

    def cmap(coords):
        out = [None] * len(axes)
        for j, a in enumerate(axes):
            out[a] = coords[j]
        return out

    _shape_op(g, op, _permute_weights(sshape, axes), cmap)


@lower(ops.Reshape)
def reshape(g, op):
    sshape, dshape = op.x.type.shape, tuple(op.shape)
    st = row_major_strides(dshape)

    def cmap(coords):
        flat = " + ".join(f"{c} * {s}" for c, s in zip(coords, st)) or "0"
        return _unravel(flat, sshape)

    _shape_op(g, op, _reshape_weights(dshape), cmap)

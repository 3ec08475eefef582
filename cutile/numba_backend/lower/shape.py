"""Lowering of shape ops: broadcast, reshape, permute (below), cat, extract, insert and the
bit ops (bitcast in registers; pack/unpack bytes through shared memory).

All three are linear maps from result coordinates to the source's flat index.  When every
thread already holds the source element of each of its result registers (the usual broadcast
of a row along a flat layout, every reshape between flat layouts), the op is a register rename
and emits no code; otherwise the tile goes through a shared-memory exchange (``Gen.relayout``).
Flexible sources (constants, iotas) stay flexible.  A broadcast whose uses all stand in its
region stays a view (``Assignment.broadcast_view``): each consumer materialises it in its own
layout, so a row reduced out of a tile broadcasts back over it for free.
"""

from __future__ import annotations

from ...ir import ops
from .. import bits, exprs
from ..registry import lower
from ..values import TV, row_major_strides


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
    if src.layout is None and src.view is None:
        _flex(g, op, src, coord_map)
        return
    if src.view is not None:                    # a view of a view: materialise the inner one
        lay = g.natural(op.x)
        src = TV(lay, g.get(op.x, lay), src.dtype)
    if g.assign.broadcast_view(op):
        g.set(op.result, TV(None, None, src.dtype, view=(src, weights)))
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
    if g.mma.direct_load(op):
        g.line("pass  # its load is staged (transposed B) by the tensor-core mma")
        return
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
    if g.mma.direct_load(op):
        g.line("pass  # its load is staged into shared memory by the tensor-core mma")
        return
    sshape, dshape = op.x.type.shape, tuple(op.shape)
    st = row_major_strides(dshape)

    def cmap(coords):
        flat = " + ".join(f"{c} * {s}" for c, s in zip(coords, st)) or "0"
        return _unravel(flat, sshape)

    _shape_op(g, op, _reshape_weights(dshape), cmap)


# -- cat / extract / insert / bits: staged through shared memory ----------------------------------
# Each source is written row-major to its own buffer (one writer per element), one barrier,
# then every thread reads the elements of its result registers.  Index expressions keep every
# read inside its buffer even where the value is not selected (``%`` with positive moduli).
def _stage(g, op, v, slot: int, conv=None, dtype=None):
    """Write ``v`` row-major to a fresh buffer (through ``conv`` per register); its name."""
    tv = g.tv(v)
    shape = v.type.shape
    lay = tv.layout if tv.layout is not None else (g.natural(v) if shape else g.scalar_layout())
    regs = g.get(v, lay)
    if conv is not None:
        regs = [conv(r) for r in regs]
    d = dtype or v.type.dtype
    buf = g.buffer(("stage", id(op)), slot, d, max(lay.size, 1))
    g.smem_write(buf, lay, regs, d, row_major_strides(shape))
    return buf


def _result_layout(g, op, i: int = 0):
    r = op.results[i]
    return g.natural(r) if r.type.shape else g.scalar_layout()


def _flat(coords, shape) -> str:
    st = row_major_strides(shape)
    terms = [f"({c}) * {s}" if s != 1 else f"({c})" for c, s in zip(coords, st)]
    return " + ".join(terms) or "0"


def _read(g, op, fn, dtype=None):
    """Define ``op``'s result register by register: ``fn(coords) -> expression``."""
    lay = _result_layout(g, op)
    exprs_ = []
    for k in range(lay.nregs):
        t = g.tmp("x")
        g.line(f"{t} = {fn(g.coords(lay, k))}")
        exprs_.append(t)
    g.define(op.result, lay, exprs_, dtype)


@lower(ops.Cat)
def cat(g, op):
    ax = op.axis
    na, nb = op.a.type.shape[ax], op.b.type.shape[ax]
    d = op.a.type.dtype
    ba, bb = _stage(g, op, op.a, 0), _stage(g, op, op.b, 1)
    g.smem_sync()

    def fn(c):
        ca = list(c)
        cb = list(c)
        ca[ax] = f"({c[ax]}) % {na}"
        cb[ax] = f"(({c[ax]}) - {na}) % {nb}"
        va = g.smem_load(ba, _flat(ca, op.a.type.shape), d)
        vb = g.smem_load(bb, _flat(cb, op.b.type.shape), d)
        return exprs.select(f"({c[ax]}) < {na}", va, vb, d)

    _read(g, op, fn)
    g.smem_did_read(ba)
    g.smem_did_read(bb)


@lower(ops.Extract)
def extract(g, op):
    d = op.x.type.dtype
    idx = [g.scalar(v) for v in op.index]
    buf = _stage(g, op, op.x, 0)
    g.smem_sync()

    def fn(c):
        # "% n": a cell index outside the grid (UB, R-SHAPE-10) still reads inside the buffer
        src = [f"(({ci}) + i64({i}) * {s}) % {n}"
               for ci, i, s, n in zip(c, idx, op.shape, op.x.type.shape)]
        return g.smem_load(buf, _flat(src, op.x.type.shape), d)

    _read(g, op, fn)
    g.smem_did_read(buf)


@lower(ops.Insert)
def insert(g, op):
    d = op.x.type.dtype
    cell = op.value.type.shape
    idx = [g.scalar(v) for v in op.index]
    lay = _result_layout(g, op)
    xregs = g.get(op.x, lay)
    buf = _stage(g, op, op.value, 0)
    g.smem_sync()
    out = []
    for k in range(lay.nregs):
        c = g.coords(lay, k)
        inside = " & ".join(f"(({ci}) // {s} == {i})" for ci, s, i in zip(c, cell, idx))
        src = [f"({ci}) % {s}" for ci, s in zip(c, cell)]
        t = g.tmp("x")
        g.line(f"{t} = " + exprs.select(f"({inside})", g.smem_load(buf, _flat(src, cell), d),
                                         xregs[k], d))
        out.append(t)
    g.define(op.result, lay, out)
    g.smem_did_read(buf)


@lower(ops.Bitcast)
def bitcast(g, op):
    src, dst = op.x.type.dtype, op.dtype
    tv = g.tv(op.x)
    lay = tv.layout if tv.layout is not None else _result_layout(g, op)
    regs = g.get(op.x, lay)
    g.define(op.result, lay, [bits.from_bits(bits.to_bits(r, src), dst) for r in regs])


@lower(ops.PackBytes)
def pack_bytes(g, op):
    src = op.x.type.dtype
    w = src.bitwidth
    u = bits.container(src)
    buf = _stage(g, op, op.x, 0, conv=lambda r: bits.to_bits(r, src), dtype=u)
    g.smem_sync()

    def fn(c):
        j = c[0]
        if w == 4:
            return (f"u8(({buf}[2 * ({j})] & u8(15)) | "
                    f"(({buf}[2 * ({j}) + 1] & u8(15)) << u8(4)))")
        if w == 8:
            return f"u8({buf}[{j}])"
        nb = w // 8
        return f"u8(({buf}[({j}) // {nb}] >> {exprs.cast(u)}(8 * (({j}) % {nb}))) & 255)"

    _read(g, op, fn)
    g.smem_did_read(buf)


@lower(ops.UnpackBytes)
def unpack_bytes(g, op):
    dst = op.dtype
    w = dst.bitwidth
    u = bits.container(dst)
    cu = exprs.cast(u)
    buf = _stage(g, op, op.x, 0)
    g.smem_sync()

    def fn(c):
        i = c[0]
        if w == 4:
            b = f"u8(({buf}[({i}) // 2] >> u8(4 * (({i}) % 2))) & u8(15))"
        elif w == 8:
            b = f"{buf}[{i}]"
        else:
            nb = w // 8
            parts = [f"({cu}({buf}[({i}) * {nb} + {p}]) << {cu}({8 * p}))" for p in range(nb)]
            b = f"{cu}({' | '.join(parts)})"
        return bits.from_bits(b, dst)

    _read(g, op, fn)
    g.smem_did_read(buf)

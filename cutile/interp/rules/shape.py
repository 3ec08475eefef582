"""Interpreter rules for shape ops (broadcast, reshape, permute, cat, extract, insert) and bit
reinterpretation (bitcast, pack/unpack bytes); the poison mask moves with the data."""

from __future__ import annotations

import numpy as np

from ...ir import ops
from ...semantics.ub import UB
from ..core import PTile, rule
from ..undetermined import check_not_poisoned


def _both(t: PTile, fn) -> PTile:
    return PTile(fn(t.data), None if t.poison is None else fn(t.poison))


@rule(ops.Broadcast)
def broadcast(frame, op):
    return _both(frame[op.x], lambda a: np.broadcast_to(a, op.shape))


@rule(ops.Reshape)
def reshape(frame, op):
    return _both(frame[op.x], lambda a: np.reshape(a, op.shape))


@rule(ops.Permute)
def permute(frame, op):
    return _both(frame[op.x], lambda a: np.transpose(a, op.axes))


def cell_slices(frame, op, shape, cell) -> tuple:
    """The element slices of grid cell ``op.index``; an index outside the grid is UB
    (R-SHAPE-10)."""
    out = []
    for d, (v, n, s) in enumerate(zip(op.index, shape, cell)):
        t = frame[v]
        check_not_poisoned(frame, op, t, f"{type(op).__name__.lower()} index")
        i = int(t.data.item())
        if not 0 <= i < n // s:
            raise UB("R-SHAPE-10", f"{type(op).__name__.lower()} index {i} on axis {d} is "
                                   f"outside the {n // s} cells of size {s}")
        out.append(slice(i * s, (i + 1) * s))
    return tuple(out)


@rule(ops.Cat)
def cat(frame, op):
    a, b = frame[op.a], frame[op.b]
    data = np.concatenate([a.data, b.data], axis=op.axis)
    poison = None
    if a.poison is not None or b.poison is not None:
        pa = a.poison if a.poison is not None else np.zeros(a.data.shape, bool)
        pb = b.poison if b.poison is not None else np.zeros(b.data.shape, bool)
        poison = np.concatenate([pa, pb], axis=op.axis)
    return PTile(data, poison)


@rule(ops.Extract)
def extract(frame, op):
    x = frame[op.x]
    sl = cell_slices(frame, op, op.x.type.shape, op.shape)
    return _both(x, lambda a: np.array(a[sl]))


@rule(ops.Insert)
def insert(frame, op):
    x, v = frame[op.x], frame[op.value]
    sl = cell_slices(frame, op, op.x.type.shape, op.value.type.shape)
    data = np.array(x.data)
    data[sl] = v.data
    poison = None
    if x.poison is not None or v.poison is not None:
        poison = np.zeros(data.shape, bool) if x.poison is None else np.array(x.poison)
        poison[sl] = False if v.poison is None else v.poison
    return PTile(data, poison)


def _bytes(a: np.ndarray, dtype) -> np.ndarray:
    """The little-endian bytes of ``a`` (row-major); float4 packs element 2k in the low nibble
    of byte k (R-BITCAST-3, a cutile choice)."""
    flat = np.ascontiguousarray(a).reshape(-1)
    if dtype.bitwidth == 4:
        codes = flat.view(np.uint8) & 0xF
        return (codes[0::2] | (codes[1::2] << 4)).astype(np.uint8)
    return flat.view(np.uint8)          # every supported host is little-endian (sys.byteorder)


def _from_bytes(b: np.ndarray, dtype) -> np.ndarray:
    if dtype.bitwidth == 4:
        codes = np.empty(b.size * 2, np.uint8)
        codes[0::2], codes[1::2] = b & 0xF, b >> 4
        return codes.view(dtype.np_dtype)
    return np.ascontiguousarray(b).view(dtype.np_dtype)


@rule(ops.Bitcast)
def bitcast(frame, op):
    x = frame[op.x]
    src = op.x.type.dtype
    data = _from_bytes(_bytes(x.data, src), op.dtype).reshape(x.data.shape)
    return PTile(data, x.poison)


@rule(ops.PackBytes)
def pack_bytes(frame, op):
    x = frame[op.x]
    src = op.x.type.dtype
    data = _bytes(x.data, src)
    poison = None
    if x.poison is not None:
        p = x.poison.reshape(-1)
        poison = p[0::2] | p[1::2] if src.bitwidth == 4 else np.repeat(p, src.bitwidth // 8)
    return PTile(data, poison)


@rule(ops.UnpackBytes)
def unpack_bytes(frame, op):
    x = frame[op.x]
    data = _from_bytes(x.data, op.dtype)
    poison = None
    if x.poison is not None:
        w = op.dtype.bitwidth
        poison = np.repeat(x.poison, 2) if w == 4 else x.poison.reshape(-1, w // 8).any(axis=1)
    return PTile(data, poison)

"""Foreign pointers (§7) in generated kernels: ``array_address`` and ``array_at``.

``array_address(ary)`` is the byte address of ``ary``'s first element (an int64; a slice's
own first element).  ``array_at(addr, shape, strides, proto)`` is the array of ``proto``'s
type (the element's storage type: bfloat16 as uint16, float8/float4 as uint8) with ``shape``
and ``strides`` (tuples of int64, strides in elements) whose first element is at ``addr``:
every array consumer of the generated code (indexing, slicing, ``.shape``/``.strides``,
``cuda.atomic``) sees an ordinary array.

On the GPU both are Numba intrinsics: ``ptrtoint`` of the array structure's data pointer, and
a structure populated from ``inttoptr(addr)`` with the shape, the strides in bytes and the
item size (layout "A", no meminfo: the memory belongs to the launch's arguments).  Under the
simulator device arrays are NumPy arrays: the address is the NumPy data address, and
``array_at`` finds the launch argument's buffer holding the address and views it with the
interpreter's rule (``semantics/pointer.py:view_at``), so a view reaching outside every
argument raises ``UndefinedBehaviorError`` there instead of touching foreign memory.
"""

from __future__ import annotations

import contextlib

import numpy as np

from ..errors import UndefinedBehaviorError
from ..semantics.buffers import byte_bounds, root_of
from ..semantics.pointer import view_at
from ..semantics.ub import UB

# Under the simulator: the buffers of the running launch (simulated launches run one at a time,
# launch.py's _sim_lock; the kernel's threads are Python threads, so not a threading.local).
_sim_roots: list = []


def _ndarray(a) -> np.ndarray:
    """The NumPy array behind a simulator device array (inside or outside a kernel)."""
    while not isinstance(a, np.ndarray):
        inner = getattr(a, "_item", None)
        a = inner if inner is not None else a._ary
    return a


@contextlib.contextmanager
def sim_launch(args):
    """Under the simulator: the buffers of the launch's array arguments, for ``array_at``."""
    roots = {}
    for a in args:
        if hasattr(a, "_ary") or isinstance(a, np.ndarray):
            r = root_of(_ndarray(a))
            roots.setdefault(id(r), r)
    _sim_roots[:] = roots.values()
    try:
        yield
    finally:
        _sim_roots.clear()


def strided_copy(leaf: np.ndarray, storage: np.dtype, copies: dict, stream, simulator: bool):
    """A NumPy view whose address a kernel takes, on the device with its own strides: a
    device array over a device copy of its whole buffer, so the caller's strides
    (``Array.strides``) describe the copy and ``Array.from_foreign`` reaches what it reaches on
    the interpreter (the rest of the buffer too).  ``copies`` maps each buffer copied for the
    launch to ``[host bytes, device bytes, written]`` (``written``: the caller sets it when the
    kernel may store to the buffer).  (device array, key in ``copies``), or None when the
    buffer is not contiguous or a stride is negative."""
    root = root_of(leaf)
    if not (root.flags.c_contiguous or root.flags.f_contiguous) or \
            min(leaf.strides, default=0) < 0:
        return None
    pair = copies.get(id(root))
    if pair is None:
        host = root.ravel(order="K").view(np.uint8)     # the buffer in memory order (a view)
        from numba import cuda
        pair = copies[id(root)] = [host, cuda.to_device(host) if simulator else
                                   cuda.to_device(host, stream=stream), False]
    offset = leaf.__array_interface__["data"][0] - byte_bounds(root)[0]
    if simulator:
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
        return FakeCUDAArray(np.ndarray(leaf.shape, storage, buffer=pair[1]._ary,
                                        offset=offset, strides=leaf.strides)), id(root)
    from numba.cuda.cudadrv.devicearray import DeviceNDArray
    return DeviceNDArray(leaf.shape, leaf.strides, storage, stream=stream,
                         gpu_data=pair[1].gpu_data.view(offset)), id(root)


def sim_array_address(ary):
    return np.int64(_ndarray(ary).__array_interface__["data"][0])


def sim_array_at(addr, shape, strides, proto):
    try:
        return view_at(int(addr), tuple(int(n) for n in shape), tuple(int(s) for s in strides),
                       np.asarray(proto).dtype, _sim_roots)
    except UB as e:
        raise UndefinedBehaviorError(e.message, None, None, e.rule) from None


def _make_address():
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    def array_address(typingctx, ary):
        if not isinstance(ary, types.Array):
            return None

        def codegen(context, builder, signature, args):
            arr = context.make_array(signature.args[0])(context, builder, args[0])
            return builder.ptrtoint(arr.data, ir.IntType(64))

        return types.int64(ary), codegen

    return intrinsic(array_address)


def _make_at():
    from numba.cuda import cgutils, types
    from numba.cuda.extending import intrinsic

    def ints(t, n) -> bool:
        return isinstance(t, types.BaseTuple) and len(t) == n and all(
            isinstance(x, types.Integer) for x in t)

    def array_at(typingctx, addr, shape, strides, proto):
        if not isinstance(addr, types.Integer) or not isinstance(shape, types.BaseTuple):
            return None
        n = len(shape)
        if not (ints(shape, n) and ints(strides, n)) or not isinstance(
                proto, (types.Number, types.Boolean)):
            return None
        aryty = types.Array(proto, n, "A")

        def codegen(context, builder, signature, args):
            _, shty, stty, _ = signature.args
            arr = context.make_array(aryty)(context, builder)
            item = context.get_abi_sizeof(context.get_data_type(proto))

            def unpack(val, tys):
                vals = cgutils.unpack_tuple(builder, val, n)
                return [context.cast(builder, v, t, types.intp) for v, t in zip(vals, tys)]

            shp = unpack(args[1], shty)
            stb = [builder.mul(s, context.get_constant(types.intp, item))
                   for s in unpack(args[2], stty)]
            data = builder.inttoptr(context.cast(builder, args[0], signature.args[0],
                                                 types.int64),
                                    context.get_data_type(proto).as_pointer())
            context.populate_array(arr, data=data, shape=shp, strides=stb,
                                   itemsize=context.get_constant(types.intp, item),
                                   meminfo=None)
            return arr._getvalue()

        return aryty(addr, shape, strides, proto), codegen

    return intrinsic(array_at)


_device: dict | None = None


def functions(simulator: bool) -> dict:
    """The names generated kernels call, for the GPU or the simulator."""
    global _device
    if simulator:
        return {"array_address": sim_array_address, "array_at": sim_array_at}
    if _device is None:
        _device = {"array_address": _make_address(), "array_at": _make_at()}
    return _device

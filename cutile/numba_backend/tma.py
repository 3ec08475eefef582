"""TMA tensor maps on the host: which launch arrays can have one, and the maps themselves.

A TMA load (``cp.async.bulk.tensor``) names its global tensor by a 128-byte ``CUtensorMap``
that the driver encodes on the host (``cuTensorMapEncodeTiled``): base address, extents and
byte strides, the box one load moves, its shared-memory swizzle, zero fill outside the
array.  The warp-specialised K loop (``ws_plan.py``, ``lower/matmul_ws.py``) needs one per
operand array; Numba cannot declare a ``__grid_constant__`` struct parameter, so the maps lie
in a device buffer and the kernel gets its address (one ``int64`` parameter, ``tmaps``; map
``j`` at ``tmaps + 128 j``).

- ``facts``: the launch facts (part of the compiled kernel's key, beside ``fulltile.py``'s):
  ``("tma", i)`` for each array parameter ``i`` TMA can address: 2- or 4-byte elements, unit
  element stride, 16-byte aligned base and other strides, at most ``TMA_MAX_RANK``
  dimensions, none empty.
- ``MapSpec``: one operand's map as the generator plans it (box, swizzle).
- ``maps_argument``: the ``tmaps`` value for one launch: on a GPU the device address of the
  encoded maps (cached per device, array address, shape, strides and box: a launch on the
  same arrays costs a dictionary lookup); under the simulator a key into ``SIM_MAPS``, which
  ``tma_sim.py``'s TMA model reads the array and box from.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from dataclasses import dataclass

from ..ir.types import ArrayType
from .arrays import launch_layout
from .devices import current_device_id
from .ptx_sim import host_array
from .ptx_text import TMA_MAX_RANK

MAP_BYTES = 128
_CACHE_SIZE = 256
_lock = threading.Lock()
_device_maps: OrderedDict = OrderedDict()     # key -> device buffer of encoded maps
SIM_MAPS: OrderedDict = OrderedDict()         # simulator: base -> [(ndarray, MapSpec)]
_sim_keys = itertools.count(1)


@dataclass(frozen=True)
class MapSpec:
    param: int          # the kernel parameter whose array the map addresses
    box: tuple          # box extents, innermost dimension first (rank of the array)
    swizzle: int        # bytes of the shared-memory swizzle (32, 64, 128; 0: 16-byte rows)
    itemsize: int       # bytes per element (2 or 4)


def ready(shape: tuple, strides: tuple, addr: int, itemsize: int) -> bool:
    """Whether TMA can address an array of this shape, byte strides and data address."""
    return (itemsize in (2, 4) and 1 <= len(shape) <= TMA_MAX_RANK
            and all(n >= 1 for n in shape)
            and all(n < 2 ** 32 for n in shape) and strides[-1] == itemsize
            and all(s % 16 == 0 and 0 < s < 2 ** 40 for s in strides[:-1]) and addr % 16 == 0)


def facts(ir, leaves: list) -> frozenset:
    """``("tma", i)`` for each array parameter whose launch array TMA can address
    (``ready``): the operands of a TMA K loop, the array its epilogue stores to."""
    out = set()
    for i, p in enumerate(ir.params):
        if not isinstance(p.type, ArrayType):
            continue
        try:
            shape, st, addr, item = launch_layout(leaves[i])
        except Exception:
            continue
        if ready(shape, st, addr, item):
            out.add(("tma", i))
    return frozenset(out)


def maps_argument(specs: tuple, args: list, simulator: bool) -> int:
    """The ``tmaps`` kernel parameter for a launch whose marshalled arguments are ``args``."""
    if simulator:
        with _lock:
            key = next(_sim_keys) << 20
            SIM_MAPS[key] = [(host_array(args[s.param]), s) for s in specs]
            while len(SIM_MAPS) > _CACHE_SIZE:
                SIM_MAPS.popitem(last=False)
        return key
    # (shape, byte strides, address, itemsize) of each marshalled device array
    layouts = [launch_layout(args[s.param]) for s in specs]
    # the maps live on the launch's device (a kernel on another one would read remote memory)
    key = (current_device_id(), *zip(layouts, specs))
    with _lock:
        buf = _device_maps.get(key)
        if buf is not None:
            _device_maps.move_to_end(key)
            return buf.__cuda_array_interface__["data"][0]
    import numpy as np
    from numba import cuda
    host = np.concatenate([_encode(lay, s) for lay, s in key[1:]])
    buf = cuda.to_device(host)              # synchronous: the maps are there before a launch
    with _lock:
        _device_maps[key] = buf
        while len(_device_maps) > _CACHE_SIZE:
            _device_maps.popitem(last=False)
    return buf.__cuda_array_interface__["data"][0]


def _encode(layout: tuple, spec: MapSpec):
    """The 128 bytes (16 uint64) of one tensor map (``cuTensorMapEncodeTiled``)."""
    import numpy as np
    from cuda.bindings import driver as drv
    shape, strides, addr, _ = layout
    u32, u64 = drv.cuuint32_t, drv.cuuint64_t
    swz = drv.CUtensorMapSwizzle
    mode = {0: swz.CU_TENSOR_MAP_SWIZZLE_NONE, 32: swz.CU_TENSOR_MAP_SWIZZLE_32B,
            64: swz.CU_TENSOR_MAP_SWIZZLE_64B, 128: swz.CU_TENSOR_MAP_SWIZZLE_128B}[spec.swizzle]
    rank = len(shape)
    kind = drv.CUtensorMapDataType          # the bits only: a box is copied as it lies
    dtype = {2: kind.CU_TENSOR_MAP_DATA_TYPE_UINT16, 4: kind.CU_TENSOR_MAP_DATA_TYPE_UINT32}
    err, tm = drv.cuTensorMapEncodeTiled(
        dtype[spec.itemsize], rank, addr,
        [u64(n) for n in reversed(shape)], [u64(s) for s in reversed(strides[:-1])],
        [u32(b) for b in spec.box], [u32(1)] * rank,
        drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE, mode,
        drv.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
        drv.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    if err != drv.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuTensorMapEncodeTiled failed ({err}) for an array of shape "
                           f"{shape}, byte strides {strides}, box {spec.box}")
    return np.array([int(v) for v in tm.opaque], dtype=np.uint64)

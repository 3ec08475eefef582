"""Simulator models of the warp-specialised K loop's instructions (``ptx_text._tma_asm``).

With ``CUTILE_NUMBA_TMA=sim`` (and the wgmma models, ``ptx_sim.py``) the generated
warp-specialised kernels run under Numba's CUDA simulator, whose threads are Python threads:

- an ``mbarrier`` (``mbar_*``) is a record per block and shared-window address
  (``ptx_sim.smem_addr32``'s window): expected arrivals, pending arrivals, pending
  transaction bytes, completed phases.  A phase completes when every arrival came and its
  bytes landed; ``mbar_wait(addr, parity)`` returns once the phase of that parity completed
  (it fails after ``WAIT_LIMIT`` seconds instead of hanging a test on a lost arrival);
- a TMA load (``tma_load_<n>d``) copies its box at once, element by element, from the array
  ``tma.SIM_MAPS`` names for the map address, zero outside the array, into the shared bytes
  at the destination with the map's swizzle applied to the byte address (bits [4, 4+s) ^=
  [7, 7+s), the hardware's rule), then completes its bytes on the barrier;
- a TMA store (``tma_store_<n>d``) writes its box at once from the shared bytes (the same
  swizzle) into the array, only where the box lies inside it;
- ``bar_sync_named(id, count)``: a barrier of ``count`` threads per block and id.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from . import tma
from .ptx_sim import window_bytes

WAIT_LIMIT = 120.0
_lock = threading.Condition()
_bars: dict = {}            # (block, address) -> [count, arrived, tx, phases]
_named: dict = {}           # (block, id) -> threading.Barrier
_SWZ_MASK = {0: 0, 32: 1, 64: 3, 128: 7}


_launch: list = [None]       # the simulator's block manager the records are about


def _key(addr) -> tuple:
    """(block, address) of a record; a new launch (simulator launches run one at a time)
    drops the last one's records."""
    th = threading.current_thread()
    manager = getattr(th, "_manager", None)
    with _lock:
        if manager is not _launch[0]:
            _bars.clear()
            _named.clear()
            _launch[0] = manager
    return (tuple(th.blockIdx), int(addr))


def mbar_init(addr, count):
    with _lock:
        _bars[_key(addr)] = [int(count), 0, 0, 0]


def fence_mbar_init():
    pass


def fence_tensormap(addr):
    pass


def _arrive(b) -> None:
    b[1] += 1
    _complete(b)


def _complete(b) -> None:
    if b[1] >= b[0] and b[2] == 0:
        b[1] = 0
        b[3] += 1
        _lock.notify_all()


def _bar(addr):
    b = _bars.get(_key(addr))
    assert b is not None, f"mbarrier at {int(addr):#x} used before mbarrier.init"
    return b


def mbar_expect_tx(addr, nbytes):
    with _lock:
        b = _bar(addr)
        b[2] += int(nbytes)
        _arrive(b)


def mbar_arrive_if(addr, pred):
    if int(pred):
        with _lock:
            _arrive(_bar(addr))


def mbar_wait(addr, parity):
    deadline = time.monotonic() + WAIT_LIMIT
    with _lock:
        b = _bar(addr)
        while (b[3] & 1) == int(parity):        # the phase of this parity is still open
            left = deadline - time.monotonic()
            assert left > 0, f"mbarrier at {int(addr):#x}: phase {int(parity)} never completed"
            _lock.wait(min(left, 0.5))


def bar_sync_named(ident, count):
    key = _key(ident)
    with _lock:
        b = _named.get(key)
        if b is None:
            b = _named[key] = threading.Barrier(int(count))
    b.wait()


def _box(tmap, coords):
    """(the array, its map, each box element's array index (outermost first), which lie
    inside the array) of a TMA box at ``coords`` (innermost first)."""
    base = int(tmap) & ~((1 << 20) - 1)
    arr, spec = tma.SIM_MAPS[base][(int(tmap) - base) // tma.MAP_BYTES]
    box = spec.box                                       # innermost first
    idx = np.indices(box[::-1]).reshape(len(box), -1)    # outermost first, row-major box
    at = [idx[d] + coords[len(box) - 1 - d] for d in range(len(box))]
    ok = np.ones(idx.shape[1], bool)
    for d, a in enumerate(at):
        ok &= (a >= 0) & (a < arr.shape[d])
    return arr, spec, at, ok


def _shared_bytes(addr, n: int, spec):
    """(the shared bytes, the position of each of ``n`` box elements' first byte in them):
    row-major from ``addr``, the map's swizzle applied to the byte address."""
    raw, off, _ = window_bytes(int(addr))
    byte = int(addr) + np.arange(n) * spec.itemsize
    byte = byte ^ (((byte >> 7) & _SWZ_MASK[spec.swizzle]) << 4)
    pos = byte - int(addr) + off
    assert pos.min() >= 0 and pos.max() + spec.itemsize <= raw.size, \
        "TMA box beyond its shared buffer"
    return raw, pos


_BITS = {2: np.uint16, 4: np.uint32}


def _tma_load(dst, tmap, *rest):
    coords, bar = [int(c) for c in rest[:-1]], rest[-1]
    arr, spec, at, ok = _box(tmap, coords)
    u = _BITS[spec.itemsize]
    vals = np.zeros(ok.size, u)
    if ok.any():
        vals[ok] = arr.view(u)[tuple(a[ok] for a in at)]
    raw, pos = _shared_bytes(dst, ok.size, spec)
    for i in range(spec.itemsize):
        raw[pos + i] = ((vals >> (8 * i)) & 0xFF).astype(np.uint8)
    with _lock:
        b = _bar(bar)
        b[2] -= ok.size * spec.itemsize
        _complete(b)


def _tma_store(tmap, *rest):
    """The box at the coordinates, from shared memory at the last operand, into the array
    where it lies inside it (the copy engine writes nothing outside)."""
    coords, src = [int(c) for c in rest[:-1]], rest[-1]
    arr, spec, at, ok = _box(tmap, coords)
    u = _BITS[spec.itemsize]
    raw, pos = _shared_bytes(src, ok.size, spec)
    vals = np.zeros(ok.size, np.uint64)
    for i in range(spec.itemsize):
        vals |= raw[pos + i].astype(np.uint64) << np.uint64(8 * i)
    if ok.any():
        arr.view(u)[tuple(a[ok] for a in at)] = vals[ok].astype(u)


SIM_TMA = {"mbar_init": mbar_init, "fence_mbar_init": fence_mbar_init,
           "fence_tensormap": fence_tensormap, "mbar_expect_tx": mbar_expect_tx,
           "mbar_arrive_if": mbar_arrive_if, "mbar_wait": mbar_wait,
           "bar_sync_named": bar_sync_named, "bulk_commit": fence_mbar_init,
           "bulk_wait_read0": fence_mbar_init,        # the model's stores are done at once
           **{f"tma_load_{n}d": _tma_load for n in range(1, 6)},
           **{f"tma_store_{n}d": _tma_store for n in range(1, 6)}}

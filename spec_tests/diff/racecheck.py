"""A shared-memory race detector for kernels run under Numba's CUDA simulator (tests only).

The simulator runs a block's threads as Python threads that meet at ``syncthreads``; between
two barriers they interleave however the GIL lets them, so a missing barrier rarely shows as a
wrong result there, while on a GPU it does.  ``racecheck()`` records every shared-memory
element access of the generated kernel with the thread, the barrier phase (how many
``syncthreads`` that thread has passed: every thread of a block passes the same barriers) and,
for the ``cp.async`` models of ``ptx_sim.py``, the phases between the copy's issue and the
issuing thread's ``cp.async.wait_all`` (the copy lands somewhere in between).  Two accesses of
one byte by different threads race when at least one writes and their phases overlap; a thread
reading bytes its own copy has not yet waited for races with itself.  ``ldmatrix`` reads are
recorded for the lane that gives the row address (16 bytes; ``.x2`` ignores lanes 16-31),
wgmma's descriptor reads for thread 0 of the warpgroup (``ptx_sim.READ_HOOK``).
What compute-sanitizer's racecheck finds on a GPU, for the barriers the code generator places.
The global workspace that takes buffers too large for shared memory (numba_backend/smem.py) is
recorded the same way: its buffers are ordered by the same barriers.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Report:
    accesses: int = 0
    races: list = field(default_factory=list)     # (block, byte, first, second) descriptions

    def __bool__(self) -> bool:
        return bool(self.races)

    def describe(self, n: int = 5) -> str:
        return f"{len(self.races)} race(s) in {self.accesses} accesses; first: " + "; ".join(
            str(r) for r in self.races[:n])


class _Tracked(np.ndarray):
    """A shared array that logs its element accesses (integer indices and slices)."""

    def __getitem__(self, i):
        if not isinstance(i, slice):               # slices: views (dynamic buffers), no data
            _log(self, i, False)
        return super().__getitem__(i)

    def __setitem__(self, i, v):
        _log(self, i, True)
        super().__setitem__(i, v)


_state = threading.local()
_rec: dict | None = None


def _thread_info():
    th = threading.current_thread()
    return tuple(th.blockIdx), th.thread_id, getattr(th, "_rc_phase", 0)


def _log(arr, i, write: bool, nbytes: int | None = None) -> None:
    if _rec is None or getattr(_state, "quiet", False) or arr.ndim != 1:
        return
    base = arr.__array_interface__["data"][0]
    size = arr.itemsize
    if isinstance(i, slice):
        lo, hi, step = i.indices(arr.shape[0])
        if step != 1 or hi <= lo:
            return
        start, length = base + lo * size, (hi - lo) * size
    else:
        try:
            k = int(i)
        except TypeError:
            return
        if k < 0:
            k += arr.shape[0]
        start, length = base + k * size, size
    if nbytes is not None:
        length = nbytes
    block, tid, phase = _thread_info()
    seq = _next_seq()
    f = sys._getframe(2)
    while f is not None and f.f_code.co_filename == __file__:
        f = f.f_back
    where = (f.f_code.co_filename, f.f_lineno) if f is not None else None
    pend = getattr(_state, "pending", None)
    if write and getattr(_state, "async_copy", False):
        ent = [block, tid, phase, None, True, seq, None, start, length, where]
        pend.append(ent)
    else:
        ent = [block, tid, phase, phase, write, seq, seq, start, length, where]
    _rec["log"].append(ent)


def _log_bytes(start: int, length: int) -> None:
    """A read of ``length`` bytes at host address ``start`` by the calling thread from its
    phase on: ``ptx_sim``'s wgmma model reports the shared bytes its descriptors address (as
    the warpgroup's thread 0: the instruction's reads are the warpgroup's).  The read is
    asynchronous: it lasts until the ``wgmma.wait_group`` that retires its commit group
    (``_wrap_intrinsics``), like a cp.async copy until its wait."""
    if _rec is None:
        return
    block, tid, phase = _thread_info()
    seq = _next_seq()
    ent = [block, tid, phase, None, False, seq, None, start, length, ("wgmma operand read", 0)]
    if not hasattr(_state, "wg_pending"):
        _state.wg_pending, _state.wg_groups = [], []
    _state.wg_pending.append(ent)
    _rec["log"].append(ent)


def _next_seq() -> int:
    s = getattr(_state, "seq", 0) + 1
    _state.seq = s
    return s


def _wrap_intrinsics(intr: dict) -> dict:
    """Wrapped ``ptx_sim`` models: cp.async writes pending until the wait, ldmatrix reads by
    the row-giving lane, vector shared loads as reads of their elements; the models' own
    array accesses are not logged."""
    saved = dict(intr)

    def quiet(fn):
        def run(*a):
            _state.quiet = True
            try:
                return fn(*a)
            finally:
                _state.quiet = False
        return run

    def ldsm(fn, n: int):
        def run(buf, idx):
            if threading.current_thread().thread_id % 32 < 8 * n:   # .x2: lanes 16-31 unused
                _log(buf.reshape(-1), int(idx), False, nbytes=16)
            return quiet(fn)(buf, idx)
        return run

    def lds(fn, n: int):
        def run(buf, idx):                  # a vector shared load: n elements read
            flat = buf.reshape(-1)
            _log(flat, int(idx), False, nbytes=n * flat.itemsize)
            return quiet(fn)(buf, idx)
        return run

    def cp_async16(buf, idx, src, off, nbytes):
        if not hasattr(_state, "pending"):
            _state.pending, _state.groups = [], []
        _state.async_copy = True
        try:
            _log(buf.reshape(-1), int(idx), True, nbytes=16)
        finally:
            _state.async_copy = False
        return quiet(saved["cp_async16"])(buf, idx, src, off, nbytes)

    def land(entries):
        _, _, phase = _thread_info()
        seq = _next_seq()
        for ent in entries:
            ent[3], ent[6] = phase, seq

    def commit():
        if getattr(_state, "pending", None):
            _state.groups.append(_state.pending)
            _state.pending = []
        return saved["cp_async_commit"]()

    def wait_group(n):
        def wait():
            groups = getattr(_state, "groups", [])
            keep = groups[len(groups) - n:] if n else []
            for grp in groups[:len(groups) - n]:
                land(grp)
            _state.groups = keep
            return saved[f"cp_async_wait_group{n}"]()
        return wait

    def wait_all():
        for grp in getattr(_state, "groups", []) + [getattr(_state, "pending", [])]:
            land(grp)
        _state.pending, _state.groups = [], []
        return saved["cp_async_wait_all"]()

    def wg_commit():
        if getattr(_state, "wg_pending", None):
            _state.wg_groups.append(_state.wg_pending)
            _state.wg_pending = []
        return saved["wgmma_commit"]()

    def wg_wait(fn, n: int):
        def wait(*acc):
            groups = getattr(_state, "wg_groups", [])
            for grp in groups[:max(len(groups) - n, 0)]:
                land(grp)
            if hasattr(_state, "wg_groups"):
                _state.wg_groups = groups[max(len(groups) - n, 0):]
            return fn(*acc)
        return wait

    for name, fn in saved.items():
        if name == "wgmma_commit":
            intr[name] = wg_commit
        elif name.startswith("wgmma_wait"):
            intr[name] = wg_wait(fn, 1 if name.startswith("wgmma_wait1_") else 0)
        elif name.startswith("ldsm"):
            intr[name] = ldsm(fn, int(name.split("_x")[1][0]))
        elif name.startswith("lds_v"):
            intr[name] = lds(fn, int(name[len("lds_v"):]))
        elif not name.startswith("cp_async"):
            intr[name] = quiet(fn)
    intr["cp_async16"] = cp_async16
    intr["cp_async_commit"] = commit
    intr["cp_async_wait_all"] = wait_all
    for name in saved:
        if name.startswith("cp_async_wait_group"):
            intr[name] = wait_group(int(name[len("cp_async_wait_group"):]))
    return saved


def _analyse(log: list) -> list:
    """(block, byte address, write, other access) of each racing pair (one per byte)."""
    inf = float("inf")
    by_byte: dict = {}
    for block, tid, lo, hi, write, s0, s1, start, length, where in log:
        acc = (tid, lo, inf if hi is None else hi, write, s0, inf if s1 is None else s1,
               where)
        for b in range(start, start + length):
            by_byte.setdefault((block, b), []).append(acc)
    races = []
    for (block, b), accs in by_byte.items():
        hit = next(((w, a) for w in accs if w[3] for a in accs if a is not w and _race(w, a)),
                   None)
        if hit is not None:
            races.append((block, b) + hit)
    return races


def _race(w, a) -> bool:
    """Whether the write ``w`` and the access ``a`` of one byte race."""
    if a[0] != w[0]:
        return a[1] <= w[2] and w[1] <= a[2]          # phases overlap
    return w[5] != w[4] and w[4] < a[4] < w[5]        # own cp.async not yet waited for


@contextlib.contextmanager
def racecheck():
    """Record shared-memory accesses of simulator launches inside the block; the yielded
    ``Report`` is filled when the block exits (and stays empty on a GPU)."""
    global _rec
    from cutile.numba_backend.rt import simulator
    if not simulator():                  # a GPU: nothing to record (compute-sanitizer's job)
        yield Report()
        return
    from numba import types
    from numba.cuda.simulator import kernel as skernel
    from numba.cuda.simulator import kernelapi
    from numba.np import numpy_support

    from cutile.numba_backend import ptx_sim
    report = Report()
    orig_array = kernelapi.FakeCUDAShared.array
    orig_sync = skernel.BlockThread.syncthreads

    def array(self, shape, dtype, alignment=None):
        if shape == 0:                              # dynamic: one allocation, views of it
            return orig_array(self, shape, dtype, None).view(_Tracked)
        # the simulator tells static arrays apart by the calling line: this wrapper's caller
        f = sys._getframe(1)
        key = ("racecheck", f.f_code.co_filename, f.f_lineno)
        res = self._allocations.get(key)
        if res is None:
            if isinstance(dtype, types.Type):
                dtype = numpy_support.as_dtype(dtype)
            res = self._allocations[key] = np.empty(shape, dtype)
        return res.view(_Tracked)

    def syncthreads(self):
        orig_sync(self)
        self._rc_phase = getattr(self, "_rc_phase", 0) + 1

    def workspace(shape, dtype, stream):    # the global workspace (smem.py): tracked too
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
        return FakeCUDAArray(np.empty(shape, dtype).view(_Tracked))

    kernelapi.FakeCUDAShared.array = array
    skernel.BlockThread.syncthreads = syncthreads
    from cutile.numba_backend import launch
    orig_workspace, launch.workspace = launch.workspace, workspace
    saved = _wrap_intrinsics(ptx_sim.SIM_INTRINSICS)
    ptx_sim.READ_HOOK = _log_bytes
    _rec = {"log": []}
    try:
        yield report
    finally:
        log = _rec["log"]
        _rec = None
        ptx_sim.READ_HOOK = None
        kernelapi.FakeCUDAShared.array = orig_array
        launch.workspace = orig_workspace
        skernel.BlockThread.syncthreads = orig_sync
        ptx_sim.SIM_INTRINSICS.update(saved)
    report.accesses = len(log)
    report.races = _analyse(log)

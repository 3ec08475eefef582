"""Where a kernel's compile time goes: a stage timer for ``benchmarks/compile.py``.

The compile path (``kernel.compile``, ``numba_backend/compile.py`` and ``launch.py``) wraps
each stage in ``stage(name)``.  Nothing is recorded unless a ``recording()`` block is active,
so the cost when off is one global read per stage, on the compile path only (never on a
cached launch).
Inside ``recording()`` every stage appends ``(name, wall seconds, CPU seconds of this
process)``; the CPU time is what a benchmark compares on a shared, loaded machine.  Stages
may nest (the benchmark adds Numba's own stages inside ``numba compile``): a reader that wants
exclusive times subtracts the nested ones (``benchmarks/compile.py`` does).
"""

from __future__ import annotations

import time
from contextlib import contextmanager

_records: list | None = None


@contextmanager
def stage(name: str):
    """Time the block as stage ``name`` when a ``recording()`` is active."""
    rec = _records
    if rec is None:
        yield
        return
    w, c = time.perf_counter(), time.process_time()
    try:
        yield
    finally:
        rec.append((name, time.perf_counter() - w, time.process_time() - c))


def add(name: str, wall: float, cpu: float) -> None:
    """Record a stage timed elsewhere (a hook around a library call)."""
    if _records is not None:
        _records.append((name, wall, cpu))


@contextmanager
def recording():
    """Record the stages run inside the block; yields the list they are appended to."""
    global _records
    prev, _records = _records, []
    try:
        yield _records
    finally:
        _records = prev

"""The simulator's shared-memory race detector (racecheck.py) finds a missing barrier and is
quiet on the barriers the code generator places."""

from __future__ import annotations

import weakref

import numpy as np
import pytest
from backend_kernels import mm_kloop

import cutile as ct

from .harness import run_both, sim
from .racecheck import racecheck

pytestmark = pytest.mark.skipif(not sim(), reason="records the simulator's threads")


def _run():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((16, 40)).astype(np.float32)
    b = rng.standard_normal((40, 16)).astype(np.float32)
    c = np.zeros((16, 16), np.float32)
    with racecheck() as races:
        ref, got = run_both(mm_kloop, (1, 1), [a, b, c, 16, 16, 8, ct.float32], threads=32)
    return races, ref, got


def test_generated_barriers_leave_no_race():
    races, ref, got = _run()
    assert races.accesses > 0 and not races, races.describe()


def test_missing_write_after_read_barrier_is_a_race(monkeypatch):
    """Without the write-after-read barriers (the K loop's next staging may overwrite what
    another thread still reads) the detector reports races, whatever the simulator's thread
    interleaving made of the result."""
    from cutile.numba_backend import barriers, compile as backend_compile
    monkeypatch.setattr(barriers.BarrierState, "needs_barrier_before_write",
                        lambda self, bufs: False)
    monkeypatch.setattr(backend_compile, "_cache", weakref.WeakKeyDictionary())  # generate anew
    races, _, _ = _run()
    assert races, "the dropped barriers went unnoticed"
    monkeypatch.undo()
    races, _, _ = _run()                                  # the barriers are back
    assert not races, races.describe()

"""Concurrent launches on the Numba backend (simulator in CI, the GPU on the device machine)
give the same exact results as the interpreter (R-LAUNCH-6): the backend's compile, thread
count, variant and stream caches are filled under a lock.  Small: the simulator runs every
CUDA thread as a Python thread."""

from __future__ import annotations

import os

from test_concurrency import _kernels, run_threads  # spec_tests/ is on sys.path

N_THREADS, N_LAUNCHES = (8, 100) if os.environ.get("HYPOTHESIS_PROFILE") == "gpu" else (3, 3)


def test_concurrent_launches_numba_backend():
    errors = run_threads(N_THREADS, N_LAUNCHES, _kernels(), backend="numba")
    assert not errors, f"{len(errors)} threads failed; first: {errors[0]!r}"

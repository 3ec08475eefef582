"""Which executors a test can run on here, and the pytest fixture that runs it on each.

The interpreter is always available.  The Numba backend runs on a usable CUDA GPU, or under
Numba's CUDA simulator when ``NUMBA_ENABLE_CUDASIM=1`` is set before Numba is imported (slow:
keep simulated launches small).  ``CUTILE_TEST_EXECUTORS=interp,numba`` overrides the choice.
"""

from __future__ import annotations

from .. import config
from ..executors import gpu_usable


def _numba_importable() -> bool:
    import importlib.util
    return importlib.util.find_spec("numba") is not None


def numba_unavailable() -> str | None:
    """Why the Numba backend cannot run here, as one line a user can act on (None: it can, on
    a GPU or on the simulator)."""
    if not _numba_importable():
        return ("numba: skipped (Numba is not installed; python3 -m pip install numba "
                "numba-cuda)")
    if config.cuda_simulator():
        return None
    if gpu_usable():
        return None
    return "numba: skipped (no GPU; NUMBA_ENABLE_CUDASIM=1 runs the simulator)"


def available_executors() -> tuple[str, ...]:
    """("interp",) plus "numba" where the Numba backend can run (a GPU, or the simulator)."""
    forced = config.test_executors()
    if forced:
        return forced
    return ("interp",) if numba_unavailable() else ("interp", "numba")


def describe() -> str:
    """The executors tests run on, for the pytest header: which, where Numba runs, and why
    it does not when it does not."""
    names = available_executors()
    how = {"numba": "numba (CUDA simulator)" if config.cuda_simulator() else "numba (GPU)"}
    line = "cutile executors: " + ", ".join(how.get(n, n) for n in names)
    if config.test_executors():
        return line + " (CUTILE_TEST_EXECUTORS)"
    why = numba_unavailable()
    return line + (f"; {why}" if why else "")

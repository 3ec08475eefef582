"""Which executors a test can run on here, and the pytest fixture that runs it on each.

The interpreter is always available.  The Numba backend runs on a usable CUDA GPU, or under
Numba's CUDA simulator when ``NUMBA_ENABLE_CUDASIM=1`` is set before Numba is imported (slow:
keep simulated launches small).  NVIDIA's ``cuda.tile`` runs where it is installed, with torch
or CuPy and a GPU (``cuda_tile.py``).  ``CUTILE_TEST_EXECUTORS=interp,cuda.tile`` overrides
the choice; a named executor that cannot run is skipped with the reason.
"""

from __future__ import annotations

from .. import config
from ..executors import gpu_usable
from . import cuda_tile


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


def unavailable(name: str) -> str | None:
    """Why executor ``name`` cannot run here (None: it can)."""
    if name == "numba":
        return numba_unavailable()
    if name == cuda_tile.NAME:
        return cuda_tile.unavailable()
    return None


def available_executors() -> tuple[str, ...]:
    """("interp",) plus "numba" and "cuda.tile" where each can run (``CUTILE_TEST_EXECUTORS``
    names them instead)."""
    forced = config.test_executors()
    if forced:
        return forced
    return tuple(n for n in config.TEST_EXECUTORS if unavailable(n) is None)


def describe() -> str:
    """The executors tests run on, for the pytest header: which, where Numba runs, and why
    each left out is, one line."""
    names = available_executors()
    how = {"numba": "numba (CUDA simulator)" if config.cuda_simulator() else "numba (GPU)"}
    line = "cutile executors: " + ", ".join(how.get(n, n) for n in names)
    if config.test_executors():
        return line + " (CUTILE_TEST_EXECUTORS)"
    why = [w for n in config.TEST_EXECUTORS if n not in names for w in [unavailable(n)] if w]
    return "; ".join([line, *why])

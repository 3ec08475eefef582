"""Which executors a test can run on here, and the pytest fixture that runs it on each.

The interpreter is always available.  The Numba backend runs on a usable CUDA GPU, or under
Numba's CUDA simulator when ``NUMBA_ENABLE_CUDASIM=1`` is set before Numba is imported (slow:
keep simulated launches small).  ``CUTILE_TEST_EXECUTORS=interp,numba`` overrides the choice.
"""

from __future__ import annotations

from .. import config


def _numba_importable() -> bool:
    import importlib.util
    return importlib.util.find_spec("numba") is not None


def available_executors() -> tuple[str, ...]:
    """("interp",) plus "numba" where the Numba backend can run (a GPU, or the simulator)."""
    forced = config.test_executors()
    if forced:
        return forced
    names = ["interp"]
    if _numba_importable():
        from ..executors import gpu_usable
        if config.cuda_simulator() or gpu_usable():
            names.append("numba")
    return tuple(names)

"""Timing one launch for ``ct.tune``, with or without a wall-clock limit.

``time_launch`` is the plain timed launch.  ``benchmark_with_timeout`` bounds a launch: it asks
``_export_ipc_benchmark_payload`` for a launch that can be stopped (1.7's name: there the
payload goes to a worker process that is killed when it overruns) and runs it under the limit;
where a launch cannot be stopped it is timed plainly and then checked against the limit.

Which launches can be stopped:

- the interpreter: always, in process; its watchdog (``interp.machine.launch_time_limit``)
  ends a launch that overruns, and the tuner reports that as ``TileLaunchTimeoutError``, a
  failure of that configuration, not of the search;
- the Numba backend (GPU or simulator): not yet; a kernel that spins forever hangs the search
  there (docs/decisions.md).  A launch that ends late still counts as a timeout.

The module-level ``_benchmark`` is the hook the timed loop calls (tests replace it with a fake
clock); ``_tune`` binds its own hook of the same name.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

from ..errors import UndefinedBehaviorError
from ..executors import gpu_usable, selected
from ..kernel import launch

__all__ = ["TileLaunchTimeoutError", "benchmark_with_timeout", "time_launch"]


class TileLaunchTimeoutError(RuntimeError):
    """One tuning launch ran longer than ``single_run_timeout_sec``."""


def _synchronize() -> None:
    """Wait for the device on the Numba backend on a real GPU; the interpreter and the
    simulator finish a launch before ``ct.launch`` returns."""
    if selected() == "numba" and gpu_usable():
        from numba import cuda  # lazy: numba is optional, and `import cutile` must not load it
        cuda.synchronize()


def time_launch(stream, grid, kernel, args) -> float:
    """Microseconds of one launch, wall clock (device synchronised before and after)."""
    _synchronize()
    t0 = time.perf_counter()
    launch(stream, grid, kernel, args)
    _synchronize()
    return (time.perf_counter() - t0) * 1e6


_benchmark = time_launch          # the hook benchmark_with_timeout falls back to


def _timeout_error(limit: float, us: float | None = None) -> TileLaunchTimeoutError:
    took = "" if us is None else f" (it took {us / 1e6:.3g} s)"
    return TileLaunchTimeoutError(f"CUDA kernel launch exceeded timeout {limit:g} sec{took}")


def _interp_bounded(stream, grid, kernel, args, limit: float) -> float:
    """An interpreter launch under its watchdog: the watchdog's stop (R-EXEC-7: the launch ran
    past the limit, or a loop provably never ends) becomes ``TileLaunchTimeoutError``."""
    from ..interp.machine import launch_time_limit  # lazy: start-up time (the interpreter)
    token = launch_time_limit.set(limit)
    try:
        return time_launch(stream, grid, kernel, args)
    except UndefinedBehaviorError as e:
        if e.rule != "R-EXEC-7":
            raise
        raise TileLaunchTimeoutError(f"{_timeout_error(limit)}; the interpreter stopped it: "
                                     f"{e}") from e
    finally:
        launch_time_limit.reset(token)


def _export_ipc_benchmark_payload(stream, grid, kernel, args) -> Callable[[float], float] | None:
    """A launch that ``benchmark_with_timeout`` can stop at a limit (a function of the limit
    returning microseconds), or None where the executor cannot stop one (module docstring)."""
    if selected() == "interp":
        return functools.partial(_interp_bounded, stream, grid, kernel, args)
    return None


def benchmark_with_timeout(stream, grid, kernel, args,
                           timeout_sec: float) -> tuple[float, float | None]:
    """Time one launch bounded by ``timeout_sec``: ``(microseconds, wall seconds)``, the wall
    time None when the launch could not be bounded and was timed plainly.  A launch over the
    limit raises ``TileLaunchTimeoutError``."""
    payload = _export_ipc_benchmark_payload(stream, grid, kernel, args)
    if payload is None:
        us = _benchmark(stream, grid, kernel, args)
        if us > timeout_sec * 1e6:
            raise _timeout_error(timeout_sec, us)
        return us, None
    t0 = time.perf_counter()
    us = payload(timeout_sec)
    return us, time.perf_counter() - t0

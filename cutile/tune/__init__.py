"""``ct.tune``: pick the fastest configuration of a kernel by timing real launches.

``exhaustive_search`` launches the kernel once per configuration to compile and warm it up,
then times launches on the selected executor (the interpreter, or the Numba backend on a GPU
or the simulator) until the mean is known to within 1 % (95 % confidence) or a sample/time
budget is spent, and returns a ``TuningResult`` holding a ``Measurement`` per configuration
that ran and ``(config, exception type, message)`` per configuration that failed.

>>> space = [{"tile": t} for t in (16, 32, 64)]
>>> res = ct.tune.exhaustive_search(space, None, lambda c: (ct.cdiv(n, c["tile"]),), vec_add,
...                                 lambda c: (a, b, out, c["tile"]), quiet=True)
>>> res.best.config, res.best.mean_us
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ..executors import gpu_usable, selected
from ..kernel import kernel as Kernel
from ..kernel import launch

T = TypeVar("T")

__all__ = ["Measurement", "TuningResult", "exhaustive_search"]

# sampling budget per configuration (module constants so tests can shrink them)
MIN_SAMPLES = 5
MAX_SAMPLES = 200
BATCH = 5
MAX_SECONDS_PER_CONFIG = 2.0
REL_MARGIN = 0.01            # stop when the 95 % half-interval is within 1 % of the mean ...
ABS_MARGIN_US = 0.5          # ... or within half a microsecond


@dataclass(frozen=True, kw_only=True)
class Measurement(Generic[T]):
    """One configuration's timing: mean launch time, samples taken, and half the 95 %
    confidence interval of the mean, in microseconds."""

    config: T
    mean_us: float
    num_samples: int
    error_margin_us: float


@dataclass(frozen=True, kw_only=True)
class TuningResult(Generic[T]):
    """The best ``Measurement``, every successful one, and ``(config, exc_type, message)`` for
    each configuration that failed to compile or run."""

    best: Measurement
    successes: Sequence[Measurement]
    failures: Sequence[tuple]

    def summary(self, *, top_k: int = 10, bottom_k: int = 2) -> str:
        """The fastest ``top_k`` and slowest ``bottom_k`` configurations, then the failures."""
        ranked = sorted(self.successes, key=lambda m: m.mean_us)
        lines = [f"{len(self.successes)} succeeded, {len(self.failures)} failed"]
        shown = ranked if len(ranked) <= top_k + bottom_k + 1 else \
            ranked[:top_k] + [None] + ranked[len(ranked) - bottom_k:]
        width = max((len(str(m.config)) for m in ranked), default=0)
        for m in shown:
            if m is None:
                lines.append(f"    ({len(ranked) - top_k - bottom_k} more)")
                continue
            mark = "*" if m is self.best else " "
            lines.append(f"{mark} {str(m.config):<{width}}  {m.mean_us:10.1f} us "
                         f"+- {m.error_margin_us:.1f}  ({m.num_samples} samples)")
        for cfg, exc, msg in self.failures[:top_k]:
            first = msg.split("\n", 1)[0]
            lines.append(f"  failed {cfg}: {exc.__name__}: {first[:80]}")
        if len(self.failures) > top_k:
            lines.append(f"  ({len(self.failures) - top_k} more failures)")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


class _Stats:
    """Running mean and variance (Welford) of one configuration's launch times."""

    def __init__(self):
        self.n, self.mean, self.m2, self.spent = 0, 0.0, 0.0, 0.0

    def add(self, us: float) -> None:
        self.n += 1
        d = us - self.mean
        self.mean += d / self.n
        self.m2 += d * (us - self.mean)
        self.spent += us * 1e-6

    @property
    def margin(self) -> float:
        if self.n < 2:
            return math.inf
        return 1.96 * math.sqrt(self.m2 / (self.n - 1) / self.n)

    def done(self) -> bool:
        return self.n >= MIN_SAMPLES and (
            self.margin <= REL_MARGIN * self.mean or self.margin <= ABS_MARGIN_US
            or self.n >= MAX_SAMPLES or self.spent >= MAX_SECONDS_PER_CONFIG)


def _synchronizer() -> Callable[[], None]:
    """Waits for the device on the Numba backend on a real GPU; a no-op elsewhere (the
    interpreter and the simulator finish a launch before ``ct.launch`` returns)."""
    if selected() == "numba" and gpu_usable():
        from numba import cuda
        return cuda.synchronize
    return lambda: None


def _time_launch(stream, grid, kernel, args, sync, limit: float | None) -> float:
    """Microseconds of one launch; ``limit`` (seconds) bounds an interpreter launch."""
    from ..interp.machine import launch_time_limit  # lazy: start-up time (the interpreter)
    sync()
    token = launch_time_limit.set(limit) if limit is not None else None
    try:
        t0 = time.perf_counter()
        launch(stream, grid, kernel, args)
        sync()
        us = (time.perf_counter() - t0) * 1e6
    finally:
        if token is not None:
            launch_time_limit.reset(token)
    if limit is not None and us > limit * 1e6:
        raise TimeoutError(f"one launch took {us / 1e6:.3g} s, over the {limit:g} s limit")
    return us


def exhaustive_search(search_space: Sequence[T], stream, grid_fn: Callable[[T], tuple],
                      kernel, args_fn: Callable[[T], tuple],
                      hints_fn: Callable[[T], dict[str, Any]] | None = None, *,
                      quiet: bool = False,
                      single_run_timeout_sec: float | None = None) -> TuningResult[T]:
    """Time every configuration of ``search_space`` and return the measurements.

    ``kernel`` is a ``ct.kernel`` or a function of the configuration returning one;
    ``grid_fn``/``args_fn``/``hints_fn`` map a configuration to the launch grid, the kernel
    arguments (called before every launch, so each launch may get fresh outputs) and the
    hints given to ``kernel.replace_hints``.  ``single_run_timeout_sec`` bounds one launch
    (the interpreter stops it; on a GPU a launch that took longer counts as failed).
    Raises ``ValueError`` when the space is empty or no configuration ran.
    """
    if len(search_space) == 0:
        raise ValueError("Search space is empty.")
    sync = _synchronizer()
    successes: list[Measurement] = []
    failures: list[tuple] = []
    for cfg in search_space:
        try:
            base = kernel if isinstance(kernel, Kernel) else kernel(cfg)
            hints = hints_fn(cfg) if hints_fn is not None else {}
            k = base.replace_hints(**hints) if hints else base
            grid = grid_fn(cfg)
            _time_launch(stream, grid, k, args_fn(cfg), sync, single_run_timeout_sec)  # warm-up
            stats = _Stats()
            while not stats.done():
                for _ in range(BATCH):
                    stats.add(_time_launch(stream, grid, k, args_fn(cfg), sync,
                                           single_run_timeout_sec))
        except Exception as e:
            failures.append((cfg, type(e), str(e)))
            continue
        successes.append(Measurement(config=cfg, mean_us=stats.mean, num_samples=stats.n,
                                     error_margin_us=stats.margin))
    if not successes:
        cfg, exc, msg = failures[0]
        raise ValueError(f"No valid config found in search space.\nConfig: {cfg}\n"
                         f"{exc.__name__}: {msg}")
    best = min(successes, key=lambda m: m.mean_us)
    result = TuningResult(best=best, successes=tuple(successes), failures=tuple(failures))
    if not quiet:
        print(result)
    return result

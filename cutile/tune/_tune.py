"""``ct.tune.exhaustive_search``: time every configuration, spending samples where they decide.

A configuration is warmed up (the first launch compiles it; with ``single_run_timeout_sec`` that
launch is bounded, ``_tune_utils.benchmark_with_timeout``) and sampled once in a batch.  Then
the fastest unsettled configurations are sampled until ``_TOP_K`` have converged (the mean
known to 1 %, or 0.5 us, or the sample/time budget spent), and every other one only while it
could still beat the slowest of those K: a configuration far slower than the leaders stops
after its first batch.  Every timed launch goes through the module-level ``_benchmark`` hook.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ..kernel import kernel as Kernel
from ._tune_utils import benchmark_with_timeout, time_launch

T = TypeVar("T")

_benchmark = time_launch          # the hook every timed launch goes through (tests replace it)

# The sampling budget (module constants, so tests can shrink them).
_WARM_UP_REPEATS = 3              # untimed launches first (the first one compiles)
_MIN_REPEATS = 5                  # samples before a configuration may count as converged
_BATCH_REPEATS = 5                # samples taken at a time
_MAX_REPEATS = 1000               # converged at this many samples ...
_MAX_MEASURE_TIME_US = 5_000_000  # ... or once this much launch time is spent
_TOP_K = 5                        # configurations measured to convergence first
_REL_MARGIN = 0.01                # converged: the 95 % half-interval within 1 % of the mean ...
_ABS_MARGIN_US = 0.5              # ... or within half a microsecond


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


@dataclass
class _Candidate:
    """One configuration being timed: its launch, and the running mean and variance (Welford)
    of its samples."""

    order: int
    config: Any
    grid: tuple
    kernel: Any
    args_fn: Callable
    n: int = 0
    mean: float = 0.0
    m2: float = 0.0

    @property
    def margin(self) -> float:
        """Half the 95 % confidence interval of the mean (0 until there are two samples)."""
        return 0.0 if self.n < 2 else 1.96 * math.sqrt(self.m2 / (self.n - 1) / self.n)

    def warm_up(self, stream, timeout: float | None) -> None:
        for i in range(_WARM_UP_REPEATS):
            args = self.args_fn(self.config)
            if i == 0 and timeout is not None:
                benchmark_with_timeout(stream, self.grid, self.kernel, args, timeout)
            else:
                _benchmark(stream, self.grid, self.kernel, args)

    def sample(self, stream) -> None:
        for _ in range(min(_BATCH_REPEATS, _MAX_REPEATS - self.n)):
            us = _benchmark(stream, self.grid, self.kernel, self.args_fn(self.config))
            self.n += 1
            d = us - self.mean
            self.mean += d / self.n
            self.m2 += d * (us - self.mean)

    def converged(self) -> bool:
        return self.n >= _MIN_REPEATS and (
            self.margin <= _REL_MARGIN * self.mean or self.margin <= _ABS_MARGIN_US
            or self.n >= _MAX_REPEATS or self.mean * self.n > _MAX_MEASURE_TIME_US)

    def key(self) -> tuple:
        return (self.mean, self.margin, self.order)

    def measurement(self) -> Measurement:
        return Measurement(config=self.config, mean_us=self.mean, num_samples=self.n,
                           error_margin_us=self.margin)


def _start(i, cfg, stream, grid_fn, kernel, args_fn, hints_fn, timeout) -> _Candidate:
    """Build configuration ``i``'s launch, warm it up and take its first batch."""
    base = kernel if isinstance(kernel, Kernel) else kernel(cfg)
    hints = hints_fn(cfg) if hints_fn is not None else {}
    c = _Candidate(i, cfg, grid_fn(cfg), base.replace_hints(**hints) if hints else base,
                   args_fn)
    c.warm_up(stream, timeout)
    c.sample(stream)
    return c


def _converge(stream, running: list, done: list, failures: list) -> None:
    """Sample the fastest unsettled configurations until ``_TOP_K`` have converged, then each
    other one while it could still beat the slowest of the K fastest."""
    heapq.heapify(running)
    while len(done) < _TOP_K and running:
        c = heapq.heappop(running)[-1]
        if not _sampled(c, stream, failures):
            continue
        if c.converged():
            done.append(c)
        else:
            heapq.heappush(running, (*c.key(), c))
    if not done:
        return
    cutoff = max(c.mean for c in heapq.nsmallest(_TOP_K, done, key=lambda c: c.mean))
    for *_, c in sorted(running):
        ok = True
        while ok and not c.converged() and c.mean - c.margin < cutoff:
            ok = _sampled(c, stream, failures)
        if ok:
            done.append(c)
    running.clear()


def _sampled(c: _Candidate, stream, failures: list) -> bool:
    """One more batch of ``c``; False (recorded as a failure) when a launch failed."""
    try:
        c.sample(stream)
    except Exception as e:
        failures.append((c.order, c.config, type(e), str(e)))
        return False
    return True


def exhaustive_search(search_space: Sequence[T], stream, grid_fn: Callable[[T], tuple],
                      kernel, args_fn: Callable[[T], tuple],
                      hints_fn: Callable[[T], dict[str, Any]] | None = None, *,
                      quiet: bool = False,
                      single_run_timeout_sec: float | None = None) -> TuningResult[T]:
    """Time every configuration of ``search_space`` and return the measurements.

    ``kernel`` is a ``ct.kernel`` or a function of the configuration returning one;
    ``grid_fn``/``args_fn``/``hints_fn`` map a configuration to the launch grid, the kernel
    arguments (called before every launch, so each launch may get fresh outputs) and the
    hints given to ``kernel.replace_hints``.  ``single_run_timeout_sec`` bounds the first
    launch of each configuration: one that overruns fails with ``TileLaunchTimeoutError``.
    Successes are listed in search-space order, failures as ``(config, type, message)``.
    Raises ``ValueError`` when the space is empty or no configuration ran.
    """
    if len(search_space) == 0:
        raise ValueError("Search space is empty.")
    running: list[tuple] = []
    done: list[_Candidate] = []
    failures: list[tuple] = []
    for i, cfg in enumerate(search_space):
        try:
            c = _start(i, cfg, stream, grid_fn, kernel, args_fn, hints_fn,
                       single_run_timeout_sec)
        except Exception as e:
            failures.append((i, cfg, type(e), str(e)))
            continue
        if c.converged():
            done.append(c)
        else:
            running.append((*c.key(), c))
    _converge(stream, running, done, failures)
    failed = tuple(f[1:] for f in sorted(failures, key=lambda f: f[0]))
    if not done:
        cfg, exc, msg = failed[0]
        raise ValueError(f"No valid config found in search space.\nConfig: {cfg}\n"
                         f"{exc.__name__}: {msg}")
    successes = tuple(c.measurement() for c in sorted(done, key=lambda c: c.order))
    best = min(successes, key=lambda m: m.mean_us)
    result = TuningResult(best=best, successes=successes, failures=failed)
    if not quiet:
        print(result)
    return result

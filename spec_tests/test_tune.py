"""``ct.tune.exhaustive_search``'s sampling and failures, with a fake clock (the ``_benchmark``
hook of ``cutile.tune._tune``) where timing is the point, and real interpreter launches where
the launch is (docs/host_api.md, ``ct.tune``)."""

from __future__ import annotations

import numpy as np
import pytest

import cutile as ct
from cutile.executors import backend
from cutile.tune import _tune, _tune_utils


@ct.kernel
def put(out, v: ct.Constant[int]):
    ct.store(out, (0,), ct.full((1,), v, ct.int32))


def search(space, **kw):
    return ct.tune.exhaustive_search(space, None, lambda c: (1,), put,
                                     lambda c: (np.zeros(1, np.int32), c), quiet=True, **kw)


def fake_clock(monkeypatch, times: dict):
    """Every timed launch of config ``c`` returns the next of ``times[c]`` (the last repeats);
    returns the count of launches per config."""
    count = {c: 0 for c in times}

    def bench(stream, grid, kernel, args):
        c = args[1]
        count[c] += 1
        if isinstance(times[c], Exception):
            raise times[c]
        return times[c][min(count[c], len(times[c])) - 1]

    monkeypatch.setattr(_tune, "_benchmark", bench)
    return count


def test_times_through_the_benchmark_hook(monkeypatch):
    fake_clock(monkeypatch, {1: [7.0], 2: [2.0], 3: [4.0]})
    res = search([1, 2, 3])
    assert res.best.config == 2 and res.best.mean_us == 2.0
    assert [(m.config, m.mean_us) for m in res.successes] == [(1, 7.0), (2, 2.0), (3, 4.0)]
    assert res.failures == () and "3 succeeded, 0 failed" in str(res)


def test_slow_configs_stop_once_they_cannot_beat_the_top_k(monkeypatch):
    """The ``_TOP_K`` fastest converge; a noisy config is sampled while its interval reaches
    below the slowest of them; one far slower stops after its first batch."""
    for name, v in [("_TOP_K", 2), ("_WARM_UP_REPEATS", 1), ("_MIN_REPEATS", 2),
                    ("_BATCH_REPEATS", 1)]:
        monkeypatch.setattr(_tune, name, v)
    count = fake_clock(monkeypatch, {1: [1.0], 2: [2.0], 3: [1.5, 1.5, 8.0, 1.5, 30.0],
                                     4: [40.0]})
    res = search([1, 2, 3, 4])
    n = {m.config: m.num_samples for m in res.successes}
    assert n[1] == n[2] == 2          # converged: two equal samples
    assert n[3] > 2                   # its interval reached below 2.0 for a while
    assert n[4] == 1 and count[4] == 2   # one warm-up, one sample: 40 cannot beat 2.0
    assert res.best.config == 1


def test_failed_configs_are_recorded_with_type_and_message(monkeypatch):
    """1.7's constructors of the compiler errors: (message, flags, version) and
    (return code, stderr, flags, version)."""
    fake_clock(monkeypatch, {1: ct.TileCompilerTimeoutError("too slow", "-O3", None), 2: [2.0],
                             3: ct.TileCompilerExecutionError(1, "bad", "", None)})
    res = search([1, 2, 3])
    assert [m.config for m in res.successes] == [2]
    assert [(c, t) for c, t, _ in res.failures] == [(1, ct.TileCompilerTimeoutError),
                                                   (3, ct.TileCompilerExecutionError)]
    assert res.failures[0][2] == "too slow" and res.failures[1][2] == "Return code 1\nbad"
    assert "1 succeeded, 2 failed" in str(res)


def test_no_config_runs(monkeypatch):
    fake_clock(monkeypatch, {1: ct.TileCompilerTimeoutError("always", "", None)})
    with pytest.raises(ValueError, match="No valid config found"):
        search([1])


def test_without_timeout_the_bounded_launch_is_not_used(monkeypatch):
    monkeypatch.setattr(_tune, "benchmark_with_timeout", lambda *a: pytest.fail("bounded"))
    fake_clock(monkeypatch, {1: [1.0]})
    assert search([1]).best.config == 1


@ct.kernel
def spin_unless_zero(x, out):
    t = ct.load(x, (0,), (1,))
    flag = ct.extract(t, 0, ()).item()
    while flag != 0:
        ct.atomic_add(out, 0, 1)


def test_launch_timeout_fails_that_config_only(monkeypatch):
    """A launch that never ends is stopped by the interpreter's watchdog at
    ``single_run_timeout_sec`` and fails its configuration with 1.7's
    ``TileLaunchTimeoutError`` (R-EXEC-7 says where it was stopped)."""
    monkeypatch.setattr(_tune, "_MAX_REPEATS", 10)
    with backend("interp"):
        res = ct.tune.exhaustive_search(
            [0, 1], None, lambda c: (1,), spin_unless_zero,
            lambda c: (np.full(1, c, np.int32), np.zeros(1, np.int32)),
            quiet=True, single_run_timeout_sec=0.3)
    assert [m.config for m in res.successes] == [0]
    ((cfg, exc, msg),) = res.failures
    assert cfg == 1 and exc is _tune_utils.TileLaunchTimeoutError
    assert "CUDA kernel launch exceeded timeout 0.3 sec" in msg and "R-EXEC-7" in msg


def test_bounded_launch_falls_back_to_a_plain_one(monkeypatch):
    """Where a launch cannot be stopped it is timed plainly; over the limit it still fails."""
    monkeypatch.setattr(_tune_utils, "_export_ipc_benchmark_payload", lambda *a: None)
    monkeypatch.setattr(_tune_utils, "_benchmark", lambda *a: 123.0)
    assert _tune_utils.benchmark_with_timeout(None, (1,), None, (), 5.0) == (123.0, None)
    with pytest.raises(_tune_utils.TileLaunchTimeoutError, match="exceeded timeout 1e-05"):
        _tune_utils.benchmark_with_timeout(None, (1,), None, (), 1e-5)

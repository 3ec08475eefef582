"""Shared test setup: Hypothesis profiles and the executor fixture.

Profiles: ``ci`` (default; derandomised and small, for the 2-core CI) and ``gpu``/``deep``
(many more examples), chosen with ``HYPOTHESIS_PROFILE``.
"""

from __future__ import annotations

import glob
import os

# On a machine without an NVIDIA device (CI) Numba's CUDA simulator is switched on here, before
# anything imports numba.cuda, so the tests that run the Numba backend (spec_tests/diff, the
# backend's own tests, CUTILE_TEST_BACKEND=numba) run on it, from the whole suite or one file.
# The interpreter never imports numba.
if "NUMBA_ENABLE_CUDASIM" not in os.environ and not glob.glob("/dev/nvidia[0-9]*"):
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("ci", max_examples=20, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("gpu", max_examples=300, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("deep", max_examples=1000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(autouse=True)
def _interp_backend(monkeypatch):
    """Spec tests run on the interpreter unless CUTILE_TEST_BACKEND names another executor
    (or a test selects one itself).  On the Numba backend ``mma`` runs in its ``exact`` mode
    unless CUTILE_NUMBA_MMA_ACC says otherwise: the spec tests check the spec's definition of
    mma bit for bit, and the default float32-FMA mode is only within a bound of it (that
    mode is checked against its bound by spec_tests/diff)."""
    from cutile import executors
    backend = os.environ.get("CUTILE_TEST_BACKEND", "interp")
    monkeypatch.setenv("CUTILE_BACKEND", backend)
    monkeypatch.setattr(executors, "_override", None)    # no set_backend leaks between tests
    if backend != "interp" and "CUTILE_NUMBA_MMA_ACC" not in os.environ:
        monkeypatch.setenv("CUTILE_NUMBA_MMA_ACC", "exact")
    yield


def pytest_runtest_logstart(nodeid, location):
    """With CUTILE_DURLOG=path, log each test's start (see pytest_runtest_logreport)."""
    path = os.environ.get("CUTILE_DURLOG")
    if path:
        with open(path, "a") as f:
            f.write(f"start {nodeid}\n")


def pytest_runtest_logreport(report):
    """With CUTILE_FAILLOG=path, append every failure's report to ``path`` as it happens;
    with CUTILE_DURLOG=path, append each test's call duration.

    A GPU run can hit its wall-clock limit before pytest prints its summary (and pytest-xdist
    reports failures and durations only there); these keep what was found up to the cut, and
    the tests that started but never ended name the stragglers.
    """
    path = os.environ.get("CUTILE_FAILLOG")
    if path and report.failed:
        with open(path, "a") as f:
            f.write(f"\n===== {report.nodeid} ({report.when})\n{report.longreprtext}\n")
    path = os.environ.get("CUTILE_DURLOG")
    if path and report.when == "call":
        with open(path, "a") as f:
            f.write(f"end {report.duration:.2f} {report.outcome} {report.nodeid}\n")

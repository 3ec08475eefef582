"""The pytest plugin (``-p nvsuite.plugin``) that lets NVIDIA's suite run unchanged on cutile.

At import (before the suite's ``conftest.py`` is loaded) it installs the ``cuda.tile`` finder,
and in CPU mode (``NVSUITE_MODE=cpu``) maps CUDA tensors to host ones (``cpu_mode``).  It also
adapts the few places where the suite reaches past the public API:

* ``ct.compilation.export_kernel`` (cubin / Tile IR bytecode, refused by cutile) and
  ``CallingConvention.cutile_python_v2/v3`` (cubin parameter layouts; cutile has v1) skip the
  test as not applicable;
* a test that ``unittest.mock.patch``-es an NVIDIA internal (e.g. counting
  ``cuda.tile._compile.compile_tile`` calls) skips as not applicable: cutile never calls it;
* ``kernel._pyfunc`` (1.7's private name for the Python function) reads ``kernel.function``;
  reading ``kernel._compile`` (1.7's per-device compile, which a test spies on) skips;
* stands in for ``pytest-benchmark`` when that is not installed (the suite's conftest defines
  its hooks, which pytest refuses unless someone declares them); ``benchmark`` then skips;
* appends one JSON line per test outcome to ``$NVSUITE_RESULTS`` (nodeid, outcome, phase,
  first line of the failure or the skip reason), plus the collected count, so a run killed by
  the driver's timeout still leaves what it finished.  A failure caused by a stand-in used in
  a subprocess or a thread (``NotApplicableError``) is recorded as a not-applicable skip.
"""

from __future__ import annotations

import json
import os
import re
import unittest.mock

import pytest

from . import finder, placeholder
from .placeholder import NotApplicable, NotApplicableModule, skip_not_applicable

placeholder.IN_PYTEST = True
finder.install()
CPU_MODE = os.environ.get("NVSUITE_MODE", "gpu") == "cpu"
# torch's own refusals on CPU tensors (the tests' references, e.g. ``mm`` with an out dtype,
# ``abs`` of bool): in CPU mode such a failure is recorded as a skip, not cutile's failure.
_TORCH_CPU_GAP = re.compile(r"^NotImplementedError: (Could not run 'aten::.*'CPU' backend"
                            r"|\"\w+_cpu\" not implemented for)")
if CPU_MODE:
    from . import cpu_mode
    cpu_mode.enable()

try:
    import pytest_benchmark  # noqa: F401
    HAVE_BENCHMARK = True
except ImportError:
    HAVE_BENCHMARK = False


# -- mock.patch of NVIDIA internals -------------------------------------------------------------
def _is_stand_in(obj) -> bool:
    mod = getattr(obj, "__name__", "")
    return isinstance(obj, (NotApplicable, NotApplicableModule)) or \
        (isinstance(mod, str) and mod.startswith("nvsuite.shim"))


_orig_enter = unittest.mock._patch.__enter__


def _patch_enter(self):
    target = self.getter()
    if _is_stand_in(target):
        skip_not_applicable(f"the test patches {getattr(target, '__name__', target)}."
                            f"{self.attribute}, an NVIDIA cuTile internal cutile never calls")
    return _orig_enter(self)


unittest.mock._patch.__enter__ = _patch_enter


# -- export_kernel to NVIDIA's binary formats -----------------------------------------------------
def _wrap_export_kernel() -> None:
    """cutile's ``export_kernel`` always refuses (no cubin / Tile IR bytecode without
    ``tileiras``): tests that export (bytecode inspection, FileCheck, export compatibility)
    skip as not applicable instead of failing on that refusal."""
    import functools

    import cutile.compilation as comp
    import cutile.compilation.signature as sig
    orig = sig.export_kernel

    @functools.wraps(orig)
    def export_kernel(*args, **kwargs):
        fmt = kwargs.get("output_format", "?")
        skip_not_applicable(f"ct.compilation.export_kernel(output_format={fmt!r}) writes "
                            "NVIDIA's binary formats, which need tileiras")

    comp.export_kernel = sig.export_kernel = export_kernel


_wrap_export_kernel()


def _add_pyfunc() -> None:
    """NVIDIA's kernel objects keep the Python function as ``_pyfunc`` (private; the suite
    re-wraps it, ``ct.kernel(k._pyfunc)``, to get a fresh compile cache).  cutile's is
    ``kernel.function``: a read-only alias for the suite."""
    import cutile
    if not hasattr(cutile.kernel, "_pyfunc"):
        cutile.kernel._pyfunc = property(lambda self: self.function)
    if "_compile" not in vars(cutile.kernel):
        cutile.kernel._compile = _NvidiaCompileHook()


class _NvidiaCompileHook:
    """1.7's per-device cubin compile, ``kernel._compile(signature, context, compute_capability)``,
    which a test reads off the class to spy on (``test_launch_on_different_devices``).  cutile
    compiles through Numba and never calls such a method, so a spy would see nothing: reading
    it skips the test as not applicable instead of failing it.  cutile's own test of launching
    on the arrays' device is ``spec_tests/diff/test_diff_devices.py``."""

    def __get__(self, obj, owner=None):
        skip_not_applicable("cuda.tile.kernel._compile (1.7's per-device cubin compile; cutile "
                            "compiles through Numba)")


_add_pyfunc()


def _other_calling_conventions() -> None:
    """1.7's calling conventions v2/v3 are layouts of a compiled cubin's parameters; cutile
    has no binaries and implements v1 only, so a test asking for another one skips."""
    from cutile.compilation import CallingConvention as CC

    def refuse(version):
        def make(*args, **kwargs):
            skip_not_applicable(f"CallingConvention.cutile_python_v{version}() is a cubin "
                                "parameter layout of NVIDIA's; cutile implements v1 only")
        return staticmethod(make)

    for v in (2, 3):
        if not hasattr(CC, f"cutile_python_v{v}"):
            setattr(CC, f"cutile_python_v{v}", refuse(v))


_other_calling_conventions()


# -- pytest-benchmark stand-in ------------------------------------------------------------------
class _BenchmarkHookspecs:
    @pytest.hookspec
    def pytest_benchmark_update_machine_info(self, config, machine_info):
        """pytest-benchmark's hook (declared here only when it is not installed)."""

    @pytest.hookspec
    def pytest_benchmark_update_json(self, config, benchmarks, output_json):
        """pytest-benchmark's hook (declared here only when it is not installed)."""


def pytest_addhooks(pluginmanager):
    if not HAVE_BENCHMARK:
        pluginmanager.add_hookspecs(_BenchmarkHookspecs)


if not HAVE_BENCHMARK:
    @pytest.fixture
    def benchmark():
        pytest.skip("pytest-benchmark is not installed (benchmarks are not conformance tests)")


def pytest_report_header(config):
    from cutile import executors
    sim = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")
    return (f"nvsuite: mode={os.environ.get('NVSUITE_MODE', 'gpu')}, cutile executor="
            f"{executors.selected()}{' (CUDA simulator)' if sim else ''}")


def pytest_configure(config):
    config.addinivalue_line("markers", "use_mlir: needs NVIDIA's MLIR extension")
    if not HAVE_BENCHMARK:
        config.addinivalue_line("markers", "benchmark: pytest-benchmark group")


# -- per-test results ---------------------------------------------------------------------------
def _emit(rec: dict) -> None:
    path = os.environ.get("NVSUITE_RESULTS")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(rec) + "\n")


def _first_line(report) -> str:
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2]).removeprefix("Skipped: ")
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    if crash is not None:
        return crash.message.splitlines()[0] if crash.message else ""
    text = str(report.longrepr or "").strip().splitlines()
    # a collection error's text: take the last 'E ' line, else the last line
    errs = [ln[2:].strip() for ln in text if ln.startswith("E ")]
    return (errs[-1] if errs else (text[-1] if text else ""))[:500]


def _not_applicable_elsewhere(report) -> str:
    """The stand-in message of a failure caused by an NVIDIA internal used in a subprocess or
    a thread (``placeholder.NotApplicableError``), where no skip could reach the test."""
    texts = [report.longreprtext] + [content for _, content in report.sections]
    for text in texts:
        at = text.find("NotApplicableError: " + placeholder.PREFIX)
        if at >= 0:
            line = text[at + len("NotApplicableError: "):].splitlines()[0]
            return f"{line} (in a subprocess or thread)"
    return ""


def pytest_collection_modifyitems(config, items):
    """``NVSUITE_SHARD=i/k``: keep every k-th test from the i-th (the driver's ``--shards``
    runs one big file as k processes)."""
    shard = os.environ.get("NVSUITE_SHARD", "")
    if not shard:
        return
    i, k = (int(x) for x in shard.split("/"))
    keep = items[i::k]
    dropped = [it for j, it in enumerate(items) if j % k != i]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep


def pytest_collection_finish(session):
    _emit({"event": "collected", "count": len(session.items)})


def pytest_collectreport(report):
    if report.failed:
        _emit({"event": "test", "nodeid": report.nodeid, "phase": "collect", "outcome": "error",
               "message": _first_line(report)})
    elif report.skipped:
        _emit({"event": "test", "nodeid": report.nodeid, "phase": "collect",
               "outcome": "skipped", "message": _first_line(report)})


def pytest_runtest_logreport(report):
    if report.when == "call" or report.outcome != "passed":
        outcome = report.outcome
        if hasattr(report, "wasxfail"):
            outcome = "xpassed" if report.passed else "xfailed"
        elif report.failed and report.when != "call":
            outcome = "error"
        msg = report.wasxfail if hasattr(report, "wasxfail") else \
            ("" if report.passed else _first_line(report))
        if report.failed:
            na = _not_applicable_elsewhere(report)
            if na:
                outcome, msg = "skipped", na
            elif CPU_MODE and _TORCH_CPU_GAP.search(msg):
                outcome, msg = "skipped", f"cpu mode: torch's CPU build lacks an op: {msg}"
        _emit({"event": "test", "nodeid": report.nodeid, "phase": report.when,
               "outcome": outcome, "message": msg, "duration": round(report.duration, 3)})

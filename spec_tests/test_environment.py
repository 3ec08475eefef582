"""The environment a user meets first (issue 23): CUTILE_BACKEND checked, a missing Numba or
GPU named with what to do, the demo's and the pytest plugin's executor lines."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cutile as ct
from cutile import config, executors

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@ct.kernel
def _inc(x, T: ct.Constant[int]):
    ct.store(x, (0,), ct.load(x, (0,), (T,)) + 1)


@pytest.mark.parametrize("value", ["interpreter", "gpu", "cuda"])
def test_cutile_backend_is_checked_naming_the_valid_values(monkeypatch, value):
    monkeypatch.setenv("CUTILE_BACKEND", value)
    with pytest.raises(ValueError, match=rf"CUTILE_BACKEND='{value}' is not a backend; expected "
                                         r"one of interp, numba, auto"):
        ct.launch(None, (1,), _inc, (np.zeros(4, np.float32), 4))


def test_cutile_backend_accepts_case_and_blanks(monkeypatch):
    monkeypatch.setenv("CUTILE_BACKEND", " Interp ")
    assert config.backend() == "interp"
    monkeypatch.setenv("CUTILE_BACKEND", "")
    assert config.backend() == "auto"


def _run(code: str, **env) -> subprocess.CompletedProcess:
    e = dict(os.environ, PYTHONPATH=ROOT, **env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=e, timeout=120, cwd=ROOT)


def test_numba_backend_without_numba_says_what_to_install():
    r = _run("""
        import sys
        sys.modules["numba"] = None          # as if Numba were not installed
        from cutile import executors
        try:
            executors.numba_backend()
        except ModuleNotFoundError as e:
            print("error:", e)
    """)
    assert "the numba backend needs Numba and numba-cuda, which are not installed here" \
        in r.stdout, r.stderr
    assert "python3 -m pip install 'numba>=0.60' 'numba-cuda>=0.20'" in r.stdout
    assert "CUTILE_BACKEND=interp" in r.stdout


def test_numba_backend_without_a_gpu_points_at_the_simulator(monkeypatch):
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    monkeypatch.setattr(executors, "_gpu_usable", False)
    monkeypatch.setattr(executors, "numba_backend", lambda: None)
    with executors.backend("numba"), pytest.raises(RuntimeError, match=r"no usable CUDA GPU "
                                                   r"here; NUMBA_ENABLE_CUDASIM=1 runs it"):
        ct.launch(None, (1,), _inc, (np.zeros(4, np.float32), 4))


def _demo():
    import importlib.util
    spec = importlib.util.spec_from_file_location("demo", os.path.join(ROOT, "examples",
                                                                       "demo.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_demo_says_why_numba_is_skipped_and_aligns_long_names(monkeypatch, capsys):
    demo = _demo()
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "0")
    monkeypatch.setattr(executors, "_gpu_usable", False)
    monkeypatch.setattr(demo, "EXAMPLES", ["transpose", "static_helpers"])
    assert demo.main() == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2] == "numba: skipped (no GPU; NUMBA_ENABLE_CUDASIM=1 runs the simulator)"
    table = lines[:3]
    assert [ln.split()[0] for ln in table] == ["example", "transpose", "static_helpers"]
    # every column starts (names) or ends (numbers) at the same place on every row
    assert len({ln.index(ln.split()[1]) for ln in table}) == 1
    assert len({len(ln) for ln in table}) == 1


def test_demo_runs_on_the_simulator_when_it_is_on(monkeypatch, capsys):
    if not config.cuda_simulator():
        pytest.skip("needs Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1); this machine runs "
                    "Numba on its GPU")
    demo = _demo()
    monkeypatch.setattr(demo, "EXAMPLES", ["transpose"])
    assert demo.main() == 0
    out = capsys.readouterr().out
    assert "numba-sim" in out.splitlines()[2] and "skipped" not in out


def test_pytest_plugin_names_the_executors(monkeypatch):
    from cutile.testing import cuda_tile, pytest_plugin

    class Item:
        fixturenames = ("cutile_executor",)

    monkeypatch.delenv("CUTILE_TEST_EXECUTORS", raising=False)
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "0")
    monkeypatch.setattr(executors, "_gpu_usable", False)
    monkeypatch.setattr(cuda_tile, "unavailable", lambda: "cuda.tile: skipped (why)")
    hook = pytest_plugin.pytest_report_collectionfinish
    assert hook(None, None, [Item()]) == ("cutile executors: interp; numba: skipped (no GPU; "
                                          "NUMBA_ENABLE_CUDASIM=1 runs the simulator); "
                                          "cuda.tile: skipped (why)")
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    assert hook(None, None, [Item()]) == ("cutile executors: interp, numba (CUDA simulator); "
                                          "cuda.tile: skipped (why)")
    monkeypatch.setattr(cuda_tile, "unavailable", lambda: None)
    assert hook(None, None, [Item()]) == ("cutile executors: interp, numba (CUDA simulator), "
                                          "cuda.tile")
    assert hook(None, None, [object()]) is None          # sessions not using the fixture


def test_docs_tell_a_newcomer_the_simulator_the_debugger_exit_and_the_test_time():
    with open(os.path.join(ROOT, "docs", "getting_started.md")) as f:
        start = f.read()
    assert "NUMBA_ENABLE_CUDASIM=1 CUTILE_BACKEND=numba python3 my_kernel.py" in start
    assert "NUMBA_ENABLE_CUDASIM=1 python3 examples/demo.py" in start
    assert "**`q` aborts the launch**" in start
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    assert readme.count("```bash") == 2                  # still the two commands
    assert "minutes on 2 cores" in readme and "`-n auto`" in readme

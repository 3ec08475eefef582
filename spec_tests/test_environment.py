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

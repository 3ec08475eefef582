"""The status line of long launches and kernel tests (cutile/progress.py, issue 23), forced
on (CUTILE_PROGRESS=1) with no delay so that every launch draws it."""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import cutile as ct
from cutile import progress

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@ct.kernel
def copy(x, y, T: ct.Constant[int]):
    b = ct.bid(0)
    ct.store(y, (b,), ct.load(x, (b,), (T,)))


@pytest.fixture
def forced(monkeypatch):
    """Progress on standard error (captured by capsys), drawn as soon as a task ends."""
    monkeypatch.setenv("CUTILE_PROGRESS", "1")
    monkeypatch.setattr(progress, "DELAY", 0.0)
    monkeypatch.setattr(progress, "_terminal", None)     # not the plugin's terminal


@contextlib.contextmanager
def alone():
    """Tasks started inside are not under the task the pytest plugin runs this test as."""
    token = progress._current.set(None)
    try:
        yield
    finally:
        progress._current.reset(token)


@pytest.mark.parametrize("batched", ["0", "1"])
def test_a_launch_shows_its_blocks(forced, capsys, monkeypatch, batched):
    monkeypatch.setenv("CUTILE_BATCH", batched)
    x = np.arange(64, dtype=np.float32)
    with alone(), ct.executors.backend("interp"):
        ct.launch(None, (16,), copy, (x, np.zeros_like(x), 4))
    err = capsys.readouterr().err
    line = re.search(r"\r(cutile: copy on interp: block 16/16, \d+ s)", err).group(1)
    assert err.endswith("\r" + " " * len(line) + "\r")                # erased at the end


def test_a_tests_launches_nest_under_it(forced, capsys):
    x = np.arange(8, dtype=np.float32)
    with alone(), progress.task("test_mine", quiet=True), ct.executors.backend("interp"):
        ct.launch(None, (2,), copy, (x, np.zeros_like(x), 4))
        ct.launch(None, (2,), copy, (x, np.zeros_like(x), 4))
    err = capsys.readouterr().err
    assert re.search(r"cutile: test_mine: 2 launches, \d+ s > copy on interp: block 2/2, \d+ s",
                     err)


def test_the_line_redraws_while_a_task_runs(forced, capsys, monkeypatch):
    monkeypatch.setattr(progress, "INTERVAL", 0.01)
    with alone(), progress.task("slow", 3) as t:
        for _ in range(3):
            time.sleep(0.1)
            progress.advance()
        assert t.done == 3
    err = capsys.readouterr().err
    assert "cutile: slow: block 1/3" in err and "cutile: slow: block 2/3" in err


def test_nothing_is_drawn_for_short_work_or_when_off(monkeypatch, capsys):
    monkeypatch.setenv("CUTILE_PROGRESS", "1")
    monkeypatch.setattr(progress, "_terminal", None)
    x = np.arange(8, dtype=np.float32)
    with alone(), ct.executors.backend("interp"):
        ct.launch(None, (2,), copy, (x, np.zeros_like(x), 4))        # well under DELAY
        monkeypatch.setattr(progress, "DELAY", 0.0)
        monkeypatch.setenv("CUTILE_PROGRESS", "0")
        ct.launch(None, (2,), copy, (x, np.zeros_like(x), 4))
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("CUTILE_PROGRESS", "sometimes")
    with pytest.raises(ValueError, match="CUTILE_PROGRESS must be auto, 1 or 0"):
        ct.launch(None, (2,), copy, (x, np.zeros_like(x), 4))


def test_after_text_on_the_line_only_its_own_characters_are_redrawn(forced, monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(progress, "_terminal", (out, lambda: 60))
    with alone(), progress.task("job", 2):
        progress.advance(2)
    text = out.getvalue()
    line = re.match(r"cutile: job: block 2/2, \d+ s", text).group(0)
    assert "\r" not in text                                           # pytest's dots stay
    assert text.endswith("\b" * len(line) + " " * len(line) + "\b" * len(line))


def test_pytest_plugin_draws_on_the_terminal_and_names_the_executors(tmp_path):
    """One pytest run for both of the plugin's lines (a pytest start costs seconds)."""
    (tmp_path / "test_user.py").write_text(textwrap.dedent("""
        import numpy as np
        import cutile as ct
        from cutile import progress
        progress.DELAY = 0.0

        @ct.kernel
        def copy(x, y, T: ct.Constant[int]):
            ct.store(y, (ct.bid(0),), ct.load(x, (ct.bid(0),), (T,)))

        def test_it(cutile_executor):
            x = np.arange(8, dtype=np.float32)
            ct.launch(None, (2,), copy, (x, np.zeros_like(x), 4))
    """))
    env = dict(os.environ, PYTHONPATH=ROOT, CUTILE_PROGRESS="1", CUTILE_BACKEND="interp",
               CUTILE_TEST_EXECUTORS="interp")
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                        str(tmp_path / "test_user.py")], capture_output=True, text=True,
                       env=env, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    # standard error of the test is captured; the line reaches the terminal's own descriptor
    assert re.search(r"cutile: test_it\[interp\]: 1 launch, \d+ s > copy on interp: block "
                     r"2/2, \d+ s", r.stderr), r.stderr
    # under "collected 1 item": the executors the cutile_executor tests run on
    assert "cutile executors: interp (CUTILE_TEST_EXECUTORS)" in r.stdout

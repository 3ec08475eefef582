"""cutile.debug: pdb at breakpoint(), chosen blocks, traces, access maps, and R-UB-5 for
overlapping written arguments (docs/debugging.md)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap

import debug_kernels as k
import numpy as np
import pytest
from spec_executor import interp_only_ub

import cutile as ct
import cutile.debug as dbg
from cutile.errors import UndefinedBehaviorError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KFILE = os.path.abspath(k.__file__)
PYPATH = os.path.join(ROOT, "spec_tests") + os.pathsep + ROOT


def line_of(mark: str) -> int:
    """The line of debug_kernels.py that carries ``# mark: <mark>``."""
    with open(KFILE) as f:
        return next(i for i, s in enumerate(f, 1) if s.rstrip().endswith(f"# mark: {mark}"))


STOP, HELPER_STOP, WATCHED = line_of("kernel stop"), line_of("helper stop"), line_of("watched")


def drive(commands: str, fn, *blocks):
    """Run ``fn()`` with pdb reading ``commands``; returns what pdb printed."""
    out = io.StringIO()
    with dbg.break_in(*blocks, stdin=io.StringIO(commands), stdout=out), \
            ct.executors.backend("interp"):
        fn()
    return out.getvalue()


def test_breakpoint_stops_at_the_users_line_with_live_names():
    x = np.arange(8, dtype=np.float32)
    y = np.zeros_like(x)
    text = drive("p t\np s.sum()\np b\nc\n",
                 lambda: ct.launch(None, (2,), k.scale, (x, y, 4)), 1)
    assert f"breakpoint in block (1, 0, 0) at {KFILE}:{STOP} (in scale)" in text
    assert f"{KFILE}({STOP})scale()" in text and "-> breakpoint()" in text
    assert "array([4., 5., 6., 7.], dtype=float32)" in text       # t of block 1
    assert "44.0" in text                                          # s.sum()
    assert text.count("breakpoint in block") == 1                  # block 0 filtered out
    assert np.array_equal(y, x * 2)                                # the launch completed


def test_every_block_stops_without_a_filter_and_c_continues():
    x = np.arange(12, dtype=np.float32)
    text = drive("c\nc\nc\n", lambda: ct.launch(None, (3,), k.scale, (x, np.zeros_like(x), 4)))
    assert [f"block ({i}, 0, 0)" in text for i in range(3)] == [True] * 3


def test_pdb_set_trace_in_a_helper_shows_the_helpers_line_and_names():
    x = np.arange(4, dtype=np.int32)
    text = drive("p doubled\nc\n",
                 lambda: ct.launch(None, (1,), k.via_helper, (x, np.zeros_like(x), 4)))
    assert f"at {KFILE}:{HELPER_STOP} (in helper)" in text
    assert "array([0, 2, 4, 6], dtype=int32)" in text


def test_pythonbreakpoint_0_disables_stops(monkeypatch):
    monkeypatch.setenv("PYTHONBREAKPOINT", "0")
    x = np.arange(4, dtype=np.float32)
    assert drive("", lambda: ct.launch(None, (1,), k.scale, (x, np.zeros_like(x), 4))) == ""


def test_env_block_filter(monkeypatch):
    monkeypatch.setenv("CUTILE_BREAK_BLOCKS", "2")
    x = np.arange(12, dtype=np.float32)
    out = io.StringIO()
    from cutile.interp.rules.debugger import DebugSession, current_session
    token = current_session.set(DebugSession(stdin=io.StringIO("c\n"), stdout=out))
    try:
        with ct.executors.backend("interp"):
            ct.launch(None, (3,), k.scale, (x, np.zeros_like(x), 4))
    finally:
        current_session.reset(token)
    assert "block (2, 0, 0)" in out.getvalue() and "block (0, 0, 0)" not in out.getvalue()


SCRIPT = textwrap.dedent("""
    import numpy as np
    import cutile as ct
    import debug_kernels as k
    x = np.arange(8, dtype=np.float32)
    y = np.zeros_like(x)
    ct.launch(None, (2,), k.scale, (x, y, 4))
    print("done", y.tolist())
""")


def test_breakpoint_under_plain_python_with_scripted_input(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, CUTILE_BACKEND="interp", PYTHONPATH=PYPATH)
    r = subprocess.run([sys.executable, str(script)], input="p t\nc\np t\nc\n", text=True,
                       capture_output=True, env=env, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "(cutile-pdb) array([0., 1., 2., 3.], dtype=float32)" in r.stdout
    assert "(cutile-pdb) array([4., 5., 6., 7.], dtype=float32)" in r.stdout
    assert "done [0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0]" in r.stdout


def test_breakpoint_under_pytest_s(tmp_path):
    test = tmp_path / "test_user.py"
    test.write_text(SCRIPT.replace('print("done", y.tolist())', "").replace(
        "x = np.arange", "def test_it():\n    x = np.arange").replace(
        "\ny = np", "\n    y = np").replace("\nct.launch", "\n    ct.launch"))
    env = dict(os.environ, CUTILE_BACKEND="interp", PYTHONPATH=PYPATH)
    r = subprocess.run([sys.executable, "-m", "pytest", "-s", "-q", "-p", "no:cacheprovider",
                        str(test)], input="p t.sum()\nc\nc\n", text=True, capture_output=True,
                       env=env, timeout=120, cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert f"{KFILE}({STOP})scale()" in r.stdout and "np.float32(6.0)" in r.stdout
    assert "1 passed" in r.stdout


QUIT_SCRIPT = textwrap.dedent("""
    import bdb
    import numpy as np
    import cutile as ct
    import debug_kernels as k
    x = np.arange(12, dtype=np.float32)
    y = np.zeros_like(x)
    try:
        ct.launch(None, (3,), k.scale, (x, y, 4))
    except bdb.BdbQuit as e:
        print("caught:", e)
    print("after", y.tolist())
""")


@pytest.mark.parametrize("command", ["q", "!import sys; sys.exit(1)"])
def test_quitting_the_debugger_aborts_the_launch_with_piped_stdin(tmp_path, command):
    """docs/debugging.md: ``q`` aborts the launch (it used to go on to the next block) with a
    ``bdb.BdbQuit`` the user can catch; ``sys.exit()`` typed at the prompt does the same."""
    script = tmp_path / "script.py"
    script.write_text(QUIT_SCRIPT)
    env = dict(os.environ, CUTILE_BACKEND="interp", PYTHONPATH=PYPATH)
    r = subprocess.run([sys.executable, str(script)], input=f"c\n{command}\nc\n", text=True,
                       capture_output=True, env=env, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("breakpoint in block") == 2               # block 2 never stopped
    assert f"caught: the kernel debugger was quit in block (1, 0, 0) at {KFILE}:{STOP}" \
        in r.stdout
    assert "after [0.0, 2.0, 4.0, 6.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]" in r.stdout


def test_quit_raises_launch_aborted_and_end_of_input_quits_too():
    from cutile.debug import LaunchAborted
    x = np.arange(12, dtype=np.float32)
    y = np.zeros_like(x)
    with pytest.raises(LaunchAborted, match=r"block \(0, 0, 0\)"):
        drive("q\n", lambda: ct.launch(None, (3,), k.scale, (x, y, 4)))
    with pytest.raises(LaunchAborted, match=r"block \(2, 0, 0\)"):          # EOF, as in pdb
        drive("c\nc\n", lambda: ct.launch(None, (3,), k.scale, (x, y, 4)))
    assert y[:8].tolist() == (x[:8] * 2).tolist() and not y[8:].any()


def test_time_at_the_debugger_prompt_is_not_counted_by_the_watchdog(monkeypatch):
    monkeypatch.setenv("CUTILE_INTERP_TIMEOUT", "0.5")
    x = np.arange(8, dtype=np.float32)
    y = np.zeros_like(x)
    drive("!import time; time.sleep(0.7)\nc\nc\n",
          lambda: ct.launch(None, (2,), k.scale, (x, y, 4)))
    assert np.array_equal(y, x * 2)


def test_debug_launch_runs_only_the_chosen_blocks():
    x = np.arange(16, dtype=np.float32)
    y = np.full_like(x, -1)
    dbg.launch((4,), k.copy, (x, y, 4), blocks=[2, (0,)])
    assert y[0:4].tolist() == x[0:4].tolist() and y[8:12].tolist() == x[8:12].tolist()
    assert (y[4:8] == -1).all() and (y[12:] == -1).all()
    with pytest.raises(ValueError, match="outside the grid"):
        dbg.launch((4,), k.copy, (x, y, 4), blocks=[(4,)])


def test_trace_records_per_block_and_iteration():
    x = np.arange(2 * 12, dtype=np.float32).reshape(2, 12)
    y = np.zeros(2, np.float32)
    t = dbg.trace(k.running_sum, (2,), (x, y, 4), watch={WATCHED: ("acc", "k")})
    assert t.blocks("k") == [(0, 0, 0)] * 3 + [(1, 0, 0)] * 3
    assert t.values("k").tolist() == [0, 1, 2, 0, 1, 2]
    acc = t["acc"]
    assert acc.shape == (6, 4)
    assert np.array_equal(acc[2], x[0].reshape(3, 4).sum(0))       # block 0 after the loop
    assert np.array_equal(y, x.sum(1))
    with pytest.raises(ValueError, match="no statement of running_sum starts on line"):
        dbg.trace(k.running_sum, (2,), (x, y, 4), watch={1: "acc"})


def test_trace_refuses_a_misspelt_name_and_summarises_itself():
    x = np.arange(2 * 12, dtype=np.float32).reshape(2, 12)
    y = np.zeros(2, np.float32)
    with pytest.raises(ValueError, match=rf"trace: no variable 'acx' after line {WATCHED} of "
                                         r"running_sum; the variables there are T, acc, k, x, y"):
        dbg.trace(k.running_sum, (2,), (x, y, 4), watch={WATCHED: ("acx", "k")})
    with pytest.raises(ValueError, match=r"starts on line\(s\) \[1\]"):    # one of two lines
        dbg.trace(k.running_sum, (2,), (x, y, 4), watch={WATCHED: "k", 1: "acc"})
    t = dbg.trace(k.running_sum, (2,), (x, y, 4), watch={WATCHED: ("acc", "k")})
    assert repr(t) == (f"Trace(12 records, 2 blocks: acc@{WATCHED} 6 x float32[4], "
                       f"k@{WATCHED} 6 x int32)")


def test_access_maps_of_a_copy_and_of_overlapping_writes():
    x = np.arange(10, dtype=np.float32)
    y = np.zeros_like(x)
    maps = dbg.access_map(k.copy, (3,), (x, y, 4))
    assert maps["y"].writer.tolist() == [0] * 4 + [1] * 4 + [2] * 2
    assert maps["x"].reads.tolist() == [1] * 10 and not maps["y"].overlaps.any()
    assert "0000111122" in maps["y"].render_text()
    z = np.zeros(8, np.int32)
    m = dbg.access_map(k.overlapping_writes, (3,), (z, 4))["x"]
    assert m.writes.tolist() == [3] * 4 + [0] * 4 and m.overlaps.sum() == 4
    assert "****...." in m.render_text() and "4 element(s) written by several blocks" in \
        m.render_text()


def test_access_map_png(tmp_path):
    pytest.importorskip("matplotlib", reason="PNG rendering needs matplotlib (cutile[viz])")
    x = np.arange(10, dtype=np.float32)
    maps = dbg.access_map(k.copy, (3,), (x, np.zeros_like(x), 4))
    path = maps["y"].render_png(str(tmp_path / "y.png"))
    assert open(path, "rb").read(8) == b"\x89PNG\r\n\x1a\n"


@interp_only_ub
def test_overlapping_written_arguments_are_undefined():
    """R-UB-5: the same array as input and output of a launch."""
    x = np.arange(8, dtype=np.float32)
    with pytest.raises(UndefinedBehaviorError, match=r"'x' and 'y' overlap in memory and the "
                                                     r"kernel writes through 'y'"):
        ct.launch(None, (2,), k.copy, (x, x, 4))
    with pytest.raises(UndefinedBehaviorError, match="R-UB-5"):
        ct.launch(None, (1,), k.copy, (x[2:6], x[:4], 4))
    ct.launch(None, (1,), k.copy, (x[:4], x[4:], 4))            # disjoint views are fine

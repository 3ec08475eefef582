"""Tracebacks end at the user's code (cutile/_traceback.py, issue 23): cutile's frames are
dropped from errors leaving ct.launch, cutile.debug and cutile.testing, the kernel line is
the last frame, and CUTILE_TRACEBACK=full keeps everything."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import traceback

import numpy as np
import pytest
from spec_executor import interp_only_ub

import cutile as ct
from cutile.testing import ExecutorMismatch, assert_matches

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(ROOT, "cutile") + os.sep
HERE = os.path.abspath(__file__)


def _helper(x, T):
    return ct.load(x, (0,), (T,))          # mark: helper load


@ct.kernel
def racy(x, T: ct.Constant[int]):
    t = _helper(x, T)                       # mark: kernel call
    ct.store(x, (0,), t + 1.0)


def line_of(mark: str) -> int:
    with open(HERE) as f:
        return next(i for i, s in enumerate(f, 1) if s.rstrip().endswith(f"# mark: {mark}"))


def frames(e: BaseException) -> list:
    return traceback.extract_tb(e.__traceback__)


@interp_only_ub
def test_undefined_behaviour_ends_at_the_kernel_line():
    with pytest.raises(ct.UndefinedBehaviorError) as info:
        ct.launch(None, (2,), racy, (np.zeros(4, np.float32), 4))
    fs = frames(info.value)
    ours = [f for f in fs if f.filename.startswith(PKG)]
    assert len(ours) == 1 and ours[0].name == "boundary"          # only the boundary's frame
    assert (fs[-2].filename, fs[-2].lineno, fs[-2].name) == (HERE, line_of("kernel call"),
                                                              "racy")
    assert (fs[-1].filename, fs[-1].lineno, fs[-1].name) == (HERE, line_of("helper load"),
                                                              "_helper")


def test_compile_error_ends_at_the_kernel_line():
    @ct.kernel
    def bad(x):
        ct.store(x, (0,), ct.load(x, (0,), (3,)))                 # mark: not a power of two

    with pytest.raises(ct.TileTypeError) as info:
        ct.launch(None, (1,), bad, (np.zeros(4, np.float32),))
    last = frames(info.value)[-1]
    assert (last.filename, last.lineno, last.name) == (HERE, line_of("not a power of two"), "bad")


def test_testing_failures_keep_the_users_frames_only():
    @ct.kernel
    def twice(x, out, T: ct.Constant[int]):
        ct.store(out, (0,), ct.load(x, (0,), (T,)) * 3.0)

    x = np.arange(4, dtype=np.float32)
    with pytest.raises(ExecutorMismatch) as info:
        assert_matches(twice, (1,), (x, np.zeros_like(x), 4), lambda x, out, T: x * 2)
    fs = frames(info.value)
    assert fs[0].filename == HERE and [f.name for f in fs if f.filename.startswith(PKG)] == \
        ["boundary"]

    def reference(x, out, T):
        raise KeyError("in the user's reference")                 # mark: user raise

    with pytest.raises(KeyError) as info:
        assert_matches(twice, (1,), (x, np.zeros_like(x), 4), reference)
    assert frames(info.value)[-1].lineno == line_of("user raise")  # user code inside is kept


SCRIPT = textwrap.dedent("""
    import numpy as np
    import cutile as ct

    @ct.kernel
    def racy(x, T: ct.Constant[int]):
        t = ct.load(x, (0,), (T,))
        ct.store(x, (0,), t + 1.0)

    ct.launch(None, (2,), racy, (np.zeros(4, np.float32), 4))
""")


@interp_only_ub
@pytest.mark.parametrize("mode", ["short", "full"])
def test_printed_traceback_and_the_full_switch(tmp_path, mode):
    script = tmp_path / "user.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, CUTILE_BACKEND="interp", PYTHONPATH=ROOT, CUTILE_TRACEBACK=mode)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                       timeout=120)
    files = [ln for ln in r.stderr.splitlines() if re.match(r'  File ".*", line \d+, in ', ln)]
    if mode == "short":
        assert files[-1] == f'  File "{script}", line 7, in racy'
        assert sum(PKG in ln for ln in files) == 1
        assert "CUTILE_TRACEBACK=full shows them" in r.stderr
    else:
        assert any(os.path.join(PKG, "interp", "machine.py") in ln for ln in files)


def test_internal_errors_keep_cutiles_frames(monkeypatch):
    @ct.kernel
    def fine(x):
        ct.store(x, (0,), ct.load(x, (0,), (4,)))

    def broken(self, spec):
        raise ct.TileInternalError("a bug in cutile")

    monkeypatch.setattr(ct.kernel, "_build", broken)
    with pytest.raises(ct.TileInternalError) as info:
        ct.launch(None, (1,), fine, (np.zeros(4, np.float32),))
    assert any(f.name == "broken" for f in frames(info.value))

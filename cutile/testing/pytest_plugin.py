"""pytest plugin (registered by cutile's ``pytest11`` entry point): the ``cutile_executor``
fixture runs a test once per available executor and gives the executor's name.

The fixture holds no state (session-scoped, so Hypothesis' ``@given`` tests may use it): pass
the name on, ``assert_matches(..., executor=cutile_executor)``, or launch inside
``with cutile.executors.backend(cutile_executor):``.  The plugin also names the executors
under "collected N items" and draws ``cutile.progress``'s status line of long tests on the
terminal.

``CUTILE_AS_CUDA_TILE=1`` makes ``import cuda.tile`` give cutile from the start of the session
(``cuda_tile.pose_as_cuda_tile``), for a cuTile test suite to run on the interpreter.

>>> def test_vec_add(cutile_executor):   # [interp] and, where possible, [numba], [cuda.tile]
...     assert_matches(vec_add, grid, args, ref, executor=cutile_executor)
"""

from __future__ import annotations

import os
import sys

import pytest

from .. import config as cfg
from .. import progress
from . import cuda_tile
from .executors import available_executors, describe, unavailable

if cfg.as_cuda_tile():            # before any conftest or test file imports cuda.tile
    cuda_tile.pose_as_cuda_tile()

_terminal = None                      # our own handle on the terminal, for progress.py


def pytest_configure(config):
    """Hand the terminal to ``cutile.progress``: pytest captures standard error while a test
    runs, so a status line of a long test goes to a duplicate of the terminal's descriptor,
    taken now, while capture is suspended; it is drawn after what pytest wrote on the line."""
    global _terminal
    mode = cfg.progress()
    if mode == "off":
        return
    try:
        tty = sys.stderr.isatty()
    except (AttributeError, ValueError):
        tty = False
    if not tty and mode != "on":
        return                        # not a terminal (CI, pytest-xdist workers): nothing
    _terminal = os.fdopen(os.dup(sys.stderr.fileno()), "w", buffering=1)

    def free_columns() -> int:
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        tw = getattr(reporter, "_tw", None)
        if tw is None:
            return 0
        return tw.fullwidth - tw.width_of_current_line
    progress.use_terminal(_terminal, free_columns)


def pytest_unconfigure(config):
    global _terminal
    if _terminal is not None:
        progress.use_terminal(None, None)
        _terminal.close()
        _terminal = None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """A test is a progress task; it shows (after 2 s) once it has launched a kernel."""
    with progress.task(item.name, quiet=True):
        yield


def pytest_generate_tests(metafunc):
    if "cutile_executor" in metafunc.fixturenames:
        metafunc.parametrize("cutile_executor", available_executors(), indirect=True,
                             scope="session")


def pytest_report_collectionfinish(config, start_path, items):
    """Under "collected N items": the executors the ``cutile_executor`` tests run on, and why
    Numba is left out, so a dropped ``[numba]`` variant does not go unnoticed.  Only for
    sessions that use the fixture (the plugin is installed for every pytest run)."""
    if any("cutile_executor" in getattr(item, "fixturenames", ()) for item in items):
        return describe()
    return None


@pytest.fixture(scope="session")
def cutile_executor(request) -> str:
    """The executor name, "interp", "numba" or "cuda.tile" (see ``available_executors``); one
    that ``CUTILE_TEST_EXECUTORS`` names but cannot run here skips the test, saying why."""
    name = getattr(request, "param", "interp")
    why = unavailable(name)
    if why:
        pytest.skip(why)
    return name

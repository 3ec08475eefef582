"""Which executor the spec suite runs on, and the tests that only the interpreter can pass.

``CUTILE_TEST_BACKEND=numba python -m pytest spec_tests`` runs every spec test on the Numba
backend (a GPU, or the simulator with ``NUMBA_ENABLE_CUDASIM=1``).  Detecting undefined
behaviour (R-UB-*) is the interpreter's job: a generated kernel does not check for it (a GPU
kernel that did would be a different, slower program), so tests that expect an
``UndefinedBehaviorError`` are interpreter-only, and property tests skip just their UB branch.
"""

from __future__ import annotations

import os

import pytest


def test_backend() -> str:
    return os.environ.get("CUTILE_TEST_BACKEND", "interp")


test_backend.__test__ = False          # not a test (pytest collects test_* functions)


def ub_checked() -> bool:
    """Whether the executor under test detects undefined behaviour (the interpreter)."""
    return test_backend() == "interp"


interp_only_ub = pytest.mark.skipif(
    not ub_checked(),
    reason="undefined-behaviour detection (R-UB-*) is the interpreter's; generated GPU code "
           "does not check")

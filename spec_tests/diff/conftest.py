"""Differential tests need the Numba backend: a GPU, or Numba's CUDA simulator.

On a machine without an NVIDIA device (CI) the simulator is switched on here, before anything
imports ``numba.cuda`` (pytest imports this file while collecting, ahead of the tests), so
``python -m pytest spec_tests`` runs these tests as ``NUMBA_ENABLE_CUDASIM=1`` would.  The
simulator is process-wide; it only affects code that asks Numba for a GPU, which the rest of
the suite does not (the interpreter never imports numba).
"""

from __future__ import annotations

import glob
import os

import pytest

if "NUMBA_ENABLE_CUDASIM" not in os.environ and not glob.glob("/dev/nvidia[0-9]*"):
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

from .harness import numba_ready  # noqa: E402


def pytest_collection_modifyitems(config, items):
    if numba_ready():
        return
    skip = pytest.mark.skip(reason="numba backend unavailable: no CUDA GPU and the CUDA "
                                   "simulator is off (NUMBA_ENABLE_CUDASIM=0)")
    for item in items:
        if "/diff/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(skip)

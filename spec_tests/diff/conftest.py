"""Differential tests need the Numba backend: a GPU, or Numba's CUDA simulator (switched on
by ``spec_tests/conftest.py`` on a machine without an NVIDIA device); skipped when neither."""

from __future__ import annotations

import pytest

from .harness import numba_ready


def pytest_collection_modifyitems(config, items):
    if numba_ready():
        return
    skip = pytest.mark.skip(reason="numba backend unavailable: no CUDA GPU and the CUDA "
                                   "simulator is off (NUMBA_ENABLE_CUDASIM=0)")
    for item in items:
        if "/diff/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(skip)

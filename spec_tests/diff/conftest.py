"""Differential tests need the Numba backend: a GPU, or NUMBA_ENABLE_CUDASIM=1 (CI)."""

from __future__ import annotations

import pytest

from .harness import numba_ready


def pytest_collection_modifyitems(config, items):
    if numba_ready():
        return
    skip = pytest.mark.skip(reason="numba backend unavailable: no CUDA GPU and "
                                   "NUMBA_ENABLE_CUDASIM is not set")
    for item in items:
        if "/diff/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(skip)

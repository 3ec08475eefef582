"""Every ``python`` code block of the op reference pages runs (the docs' examples stay true).

Each block is written to a file and run as a script (kernels need real source files)."""

from __future__ import annotations

import os
import re
import runpy

import pytest
from spec_executor import test_backend

DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs")
PAGES = ["ops_debug.md", "ops_advanced_indexing.md", "ops_mma_scaled.md"]


def _blocks():
    for page in PAGES:
        with open(os.path.join(DOCS, page)) as f:
            text = f.read()
        for i, m in enumerate(re.finditer(r"```python\n(.*?)```", text, re.S)):
            marks = ()
            if "mma_scaled" in m.group(1) and test_backend() != "interp":
                # listed in test_backend_registry.BACKEND_FEATURE_GAPS; test_mma_scaled.py
                # checks the backend's refusal
                marks = pytest.mark.skip(reason="mma_scaled needs sm_100+ block-scaled MMA: "
                                                "the Numba backend refuses it")
            yield pytest.param(m.group(1), id=f"{page}#{i}", marks=marks)


@pytest.mark.parametrize("code", list(_blocks()))
def test_example_runs(code, tmp_path, capsys):
    path = tmp_path / "example.py"
    path.write_text(code)
    runpy.run_path(str(path), run_name="__main__")

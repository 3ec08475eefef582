"""The runnable examples of docs/ops_scan.md and docs/ops_shape.md run on the interpreter and
give the values their comments state (R-SCAN-1/3, R-RED-8, R-SHAPE-6..8, R-BITCAST-1..3)."""

from __future__ import annotations

import importlib.util
import os
import re

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

EXPECTED = {
    ("ops_scan.md", 0): {"out": [[0, 1, 3, 6], [4, 9, 15, 22]]},
    ("ops_scan.md", 1): {"out": [0, 0, 2, 2, 2, 5, 5, 5]},
    ("ops_scan.md", 2): {"out": [5, -1]},
    ("ops_shape.md", 0): {"out": [[3, 3], [3, 3], [7, 7], [7, 7]]},
    ("ops_shape.md", 1): {"out": [4, 5, 6, 7, 0, 1, 2, 3]},
    ("ops_shape.md", 2): {"out": [0x3F800000, 0xC0000000]},
    ("ops_shape.md", 3): {"b": [1, 2, 3, 4, 255, 255, 255, 255], "out": [0x04030201, -1]},
}


def _blocks(md):
    with open(os.path.join(ROOT, "docs", md)) as f:
        return re.findall(r"```python\n(.*?)```", f.read(), re.S)


@pytest.mark.parametrize("md,i", sorted(EXPECTED))
def test_doc_example(md, i, tmp_path):
    assert len(_blocks(md)) == len([k for k in EXPECTED if k[0] == md])
    path = tmp_path / f"doc_{md[:-3]}_{i}.py"       # the frontend reads kernels from a file
    path.write_text("import numpy as np\nimport cutile as ct\n" + _blocks(md)[i])
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for name, want in EXPECTED[(md, i)].items():
        got = getattr(mod, name)
        np.testing.assert_array_equal(got, np.array(want).astype(got.dtype))

"""The debugger's ops on the Numba backend: refused at compile time with a clear error (they
stop in pdb / record values on the host, docs/debugging.md).  Here because this folder sets up
the simulator."""

from __future__ import annotations

import numpy as np
import pytest

import cutile as ct
from cutile.errors import TileUnsupportedFeatureError

from .harness import kernel_from_source

SRC = """
@ct.kernel
def scale(x, y, T: Constant[int]):
    t = ct.load(x, (ct.bid(0),), (T,))
    breakpoint()
    ct.store(y, (ct.bid(0),), t)
"""


def test_numba_backend_refuses_breakpoint():
    k = kernel_from_source(SRC, "scale")
    x = np.arange(8, dtype=np.float32)
    with pytest.raises(TileUnsupportedFeatureError, match="works on the interpreter only"):
        with ct.executors.backend("numba"):
            ct.launch(None, (2,), k, (x, np.zeros_like(x), 4))

"""Host API on the Numba backend (simulator in CI): PyTorch CPU tensors (bfloat16, float8)
are written through in place, and ``ct.compiler_timeout`` also bounds the backend's kernel
generation.  Small tiles: the simulator runs every CUDA thread as a Python thread."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import cutile as ct
from cutile.executors import backend

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None,
                                 reason="PyTorch is not installed (pip install torch)")


@ct.kernel
def twice(a, b, T: ct.Constant[int]):
    i = ct.bid(0)
    t = ct.load(a, (i,), (T,)).astype(ct.float32)
    ct.store(b, (i,), (t + t).astype(b.dtype))


@needs_torch
@pytest.mark.parametrize("name", ["bfloat16", "float16", "float8_e4m3fn"])
def test_torch_tensors_on_both_executors(name):
    """R-LAUNCH-3: the same tensor arguments give bit-identical results on both executors."""
    import torch
    d = getattr(torch, name)
    a = (torch.arange(16, dtype=torch.float32) / 4 - 1).to(d)
    outs = {}
    for ex in ("interp", "numba"):
        b = torch.zeros(16, dtype=d)
        with backend(ex):
            ct.launch(None, (2,), twice, (a, b, 8))
        outs[ex] = b.view(torch.uint8 if b.element_size() == 1 else torch.int16)
    assert torch.equal(outs["interp"], outs["numba"])
    assert outs["interp"].any()


def test_compiler_timeout_covers_backend_generation():
    """§25: the Numba backend's source generation runs under the compiler timeout too (a
    kernel of 2000 ops takes far longer than the limit to generate)."""
    from test_host_api import _big_kernel  # spec_tests/ is on sys.path

    from cutile.numba_backend.compile import compile_kernel
    a = np.zeros(4, np.float32)
    k = _big_kernel(2000)
    ir = k.compile(k.specialize((a, a.copy())))
    with ct.compiler_timeout(1e-4), pytest.raises(ct.TileCompilerTimeoutError,
                                                  match="for the Numba backend"):
        compile_kernel(ir, 8, "f32")

"""Property-test your own tile kernels: executor diffs, NumPy references, strategies.

- ``assert_executors_agree(kernel, grid, args)``: run on the interpreter and on the Numba
  backend (GPU, or Numba's CUDA simulator) and compare every output element;
  ``executors=("interp", "cuda.tile")`` diffs against NVIDIA's cuTile on a GPU.
- ``assert_matches(kernel, grid, args, reference_fn)``: compare against NumPy.
- ``run_on(kernel, grid, args, executor)``: one guarded, poisoned launch, arrays returned.
- ``pose_as_cuda_tile()`` (or ``CUTILE_AS_CUDA_TILE=1`` under pytest): ``import cuda.tile``
  gives cutile, for a cuTile test suite to run on the interpreter.
- ``cutile.testing.strategies``: Hypothesis strategies (needs ``hypothesis``).
- ``available_executors()`` and the pytest fixture ``cutile_executor`` (installed as a pytest
  plugin with cutile) that runs a test once per available executor.

Importing this module imports neither Numba, Hypothesis, cuda.tile, torch nor CuPy.  See
docs/testing.md.
"""

from __future__ import annotations

from .compare import Mismatch, disagreeing, ulp_distance
from .cuda_tile import pose_as_cuda_tile
from .diff import ExecutorMismatch, Run, assert_executors_agree, assert_matches, run_on
from .executors import available_executors
from .guarded import GUARD, embed, poison, sentinel

__all__ = ["GUARD", "ExecutorMismatch", "Mismatch", "Run", "assert_executors_agree",
           "assert_matches", "available_executors", "disagreeing", "embed", "poison",
           "pose_as_cuda_tile", "run_on", "sentinel", "strategies", "ulp_distance"]


def __getattr__(name):
    if name == "strategies":                 # Hypothesis only when asked for
        import importlib
        return importlib.import_module(".strategies", __name__)
    raise AttributeError(name)

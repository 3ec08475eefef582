"""Property-test your own tile kernels: executor diffs, NumPy references, strategies.

- ``assert_executors_agree(kernel, grid, args)``: run on the interpreter and on the Numba
  backend (GPU, or Numba's CUDA simulator) and compare every output element.
- ``assert_matches(kernel, grid, args, reference_fn)``: compare against NumPy.
- ``run_on(kernel, grid, args, executor)``: one guarded, poisoned launch, arrays returned.
- ``cutile.testing.strategies``: Hypothesis strategies (needs ``hypothesis``).
- ``available_executors()`` and the pytest fixture ``cutile_executor`` (installed as a pytest
  plugin with cutile) that runs a test once per available executor.

Importing this module imports neither Numba nor Hypothesis.  See docs/testing.md.
"""

from __future__ import annotations

from .compare import Mismatch, disagreeing, ulp_distance
from .diff import ExecutorMismatch, Run, assert_executors_agree, assert_matches, run_on
from .executors import available_executors
from .guarded import GUARD, embed, poison, sentinel

__all__ = ["GUARD", "ExecutorMismatch", "Mismatch", "Run", "assert_executors_agree",
           "assert_matches", "available_executors", "disagreeing", "embed", "poison", "run_on",
           "sentinel", "strategies", "ulp_distance"]


def __getattr__(name):
    if name == "strategies":                 # Hypothesis only when asked for
        import importlib
        return importlib.import_module(".strategies", __name__)
    raise AttributeError(name)

"""Interpreter vs Numba backend on random valid *programs* (issue 22): kernels drawn by
``progen.programs`` from the op table (elementwise math, casts and promotion, shape ops,
reductions and scans, mma/matmul, every padding mode, gather/scatter with out-of-bounds
indices, atomics, for/while/if with loop-carried tiles, tuples, arrays as values, lists of
arrays, helpers, constants), every array argument compared afterwards (R-EXEC-*, R-CF-*,
R-PY-4; bit for bit, libdevice results on a GPU within docs/testing.md's ulps, float min/max
results with -0.0 == +0.0 per R-MATH-6).

A failure prints the shrunk program as a runnable script.  The ci profile runs a few dozen
small programs on the simulator; ``HYPOTHESIS_PROFILE=gpu`` runs 2,000+ larger ones, split in
shards for ``pytest -n 16``.  ``python3 -m spec_tests.diff.progen`` runs them outside pytest.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings

from . import progen
from .harness import shards, sim

_PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
CFG = progen.config_for(_PROFILE, simulator=sim())
# ci: 60 small programs in one shard (~40 s on the simulator); gpu: 16 shards of 132 (2,112
# programs, one per xdist worker of ``pytest -n 16``: a Numba compile each, ~1 s on a GPU);
# deep: 16 shards of 1,000
N = {"gpu": 132, "deep": 1000}.get(_PROFILE, 60)
SHARDS = range(16) if _PROFILE in ("gpu", "deep") else shards()


@pytest.mark.parametrize("shard", SHARDS)
@settings(max_examples=N, deadline=None, suppress_health_check=list(HealthCheck))
@given(prog=progen.programs(CFG))
def test_random_programs_agree(shard, prog):
    progen.check(prog)

"""``cutile.testing``, the users' property-testing kit: its comparisons, its reports, its
strategies, and the example user test file run as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cutile as ct
from cutile.testing import ExecutorMismatch, Run, assert_matches, disagreeing, run_on
from cutile.testing import strategies as cts
from cutile.testing.diff import _compare

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@ct.kernel
def copy_tail(x, y, T: ct.Constant[int]):
    bid = ct.bid(0)
    ct.store(y, (bid,), ct.load(x, (bid,), (T,)))


def test_import_needs_neither_numba_nor_hypothesis():
    code = ("import sys, cutile.testing; "
            "print('numba' in sys.modules, 'hypothesis' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout.split()
    assert out == ["False", "False"]


def test_outputs_are_poisoned_and_unwritten_elements_reported():
    """A grid one block short leaves the last tile unwritten: poisoned, so it differs."""
    x = np.arange(12, dtype=np.int32)
    with pytest.raises(ExecutorMismatch) as err:
        assert_matches(copy_tail, (2,), (x, np.zeros_like(x), 4), lambda x, y, T: x)
    m = err.value.mismatches
    assert [e.index for e in m] == [(8,), (9,), (10,), (11,)]
    assert m[0].block is None and m[0].expected == 8
    assert "y: 4 of 12 element(s) differ" in str(err.value)


def test_inputs_are_not_poisoned_and_callers_arrays_untouched():
    x = np.arange(8, dtype=np.float32)
    y = np.full(8, 5.0, np.float32)
    run = run_on(copy_tail, (2,), (x, y, 4))
    assert np.array_equal(run.arrays["x"], x) and np.array_equal(run.arrays["y"], x)
    assert np.all(y == 5.0)                    # the launch used copies
    assert run.writer["y"]((5,)) == (1, 0, 0)  # which block wrote y[5]


def test_guard_band_write_is_reported():
    ref = Run("interp", {"y": np.zeros(4, np.float32)}, {"y": True})
    got = Run("numba", {"y": np.zeros(4, np.float32)}, {"y": False})
    with pytest.raises(ExecutorMismatch, match=r"numba wrote outside array argument\(s\) \['y'\]"):
        _compare(ref, got, ulps=0, atol=0, rtol=0, signed_zero=True, limit=5, ref_name="interp")


def test_bounds_per_dtype():
    a = np.array([1.0, np.nan, -0.0], np.float16)
    b = np.array([np.nextafter(np.float16(1), np.float16(2)), np.nan, 0.0], np.float16)
    assert disagreeing(a, b).tolist() == [True, False, True]
    assert disagreeing(a, b, ulps={"float16": 1}, signed_zero=False).tolist() == [False] * 3
    assert disagreeing(a, b, ulps={np.float32: 1}).tolist() == [True, False, True]
    i = np.array([1, 2], np.int32)
    assert disagreeing(i, i + np.array([0, 1], np.int32), atol=10).tolist() == [False, True]


@settings(max_examples=25, deadline=None)
@given(case=cts.tiled_shapes(ndim=2, max_side=50, max_tile=32))
def test_tiled_shapes_cover_the_array(case):
    assert all(t & (t - 1) == 0 for t in case.tile)            # powers of two (R-TILE-2)
    for s, t, g in zip(case.shape, case.tile, case.grid):
        assert g * t >= s and (g - 1) * t < max(s, 1)


@settings(max_examples=30, deadline=None)
@given(d=cts.dtypes("all"), data=st.data())
def test_arrays_have_the_dtype_and_specials(d, data):
    a = data.draw(cts.arrays(d, (64,), special=1.0))
    assert a.dtype == d and a.shape == (64,)
    if d.kind == "f" or d == np.dtype(ml_dtypes.bfloat16):
        f = a.astype(np.float64)
        assert np.isnan(f).any() or np.isinf(f).any() or (f == 0).any()


def test_dtype_families():
    with pytest.raises(ValueError, match="unknown dtype family"):
        cts.dtypes("complex")


def test_user_example_file_runs_and_catches_the_broken_kernel():
    """examples/test_my_kernel.py, as a user runs it (both executors: the simulator here)."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM=os.environ.get("NUMBA_ENABLE_CUDASIM", "1"),
               HYPOTHESIS_PROFILE="ci")
    # the cutile_executor fixture comes from cutile's pytest plugin, registered when cutile is
    # installed (pip install -e .); name it explicitly where this checkout is not installed
    # (look the way pytest looks: through every distribution, since a checkout's own metadata
    # can shadow the installed one for entry_points())
    from importlib.metadata import distributions
    installed = any(e.group == "pytest11" and e.value == "cutile.testing.pytest_plugin"
                    for d in distributions() for e in d.entry_points)
    plugin = [] if installed else ["-p", "cutile.testing.pytest_plugin"]
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin,
                        "examples/test_my_kernel.py"], capture_output=True, text=True, cwd=ROOT,
                       env=env, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "4 passed" in r.stdout

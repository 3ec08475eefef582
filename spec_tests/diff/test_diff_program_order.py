"""R-EXEC-5 on the Numba backend: within one block, memory operations on one array take effect
in program order, even when different threads touch an element in consecutive ops (a plain
store then a gather, a load then an atomic, two scatters, a slice of the array written through
its parent).  The interpreter runs ops one after another, so both executors must agree."""

from __future__ import annotations

import numpy as np
import pytest

import cutile as ct
from cutile import Constant

from .harness import assert_same, run_both

N = 32


@ct.kernel
def store_then_gather(x, out, T: Constant[int]):
    ct.store(x, (0,), ct.full((T,), 1, ct.int32) + ct.arange(T, dtype=ct.int32))   # RAW
    t = ct.gather(x, (T - 1) - ct.arange(T, dtype=ct.int32))
    ct.store(out, (0,), t)


@ct.kernel
def load_then_atomic(x, out, T: Constant[int]):
    t = ct.load(x, (0,), (T,))                                                     # WAR
    ct.atomic_add(x, (T - 1) - ct.arange(T, dtype=ct.int32), ct.full((T,), 5, ct.int32))
    ct.store(out, (0,), t)


@ct.kernel
def scatter_twice(x, T: Constant[int]):
    i = ct.arange(T, dtype=ct.int32)
    ct.scatter(x, i, i)                                                           # WAW
    ct.scatter(x, (T - 1) - i, i * 0 + 7)


@ct.kernel
def slice_aliases_parent(x, out, T: Constant[int]):
    half = x.slice(axis=0, start=T // 2, stop=T)
    ct.store(x, (0,), ct.full((T,), 3, ct.int32))
    ct.store(out, (0,), ct.gather(half, ct.arange(T, dtype=ct.int32) // 2))       # RAW via view


@ct.kernel
def atomics_then_load(h, out, n, T: Constant[int]):
    for k in range(n):                                                            # no barrier
        ct.atomic_add(h, ct.arange(T, dtype=ct.int32) % 4, ct.full((T,), 1, ct.int32))
    ct.store(out, (0,), ct.gather(h, ct.arange(T, dtype=ct.int32) % 4))           # RAW


CASES = {
    "store_then_gather": (store_then_gather, lambda: (np.zeros(N, np.int32),
                                                      np.zeros(N, np.int32), N)),
    "load_then_atomic": (load_then_atomic, lambda: (np.arange(N, dtype=np.int32),
                                                    np.zeros(N, np.int32), N)),
    "scatter_twice": (scatter_twice, lambda: (np.zeros(N, np.int32), N)),
    "slice_aliases_parent": (slice_aliases_parent, lambda: (np.zeros(N, np.int32),
                                                            np.zeros(N, np.int32), N)),
    "atomics_then_load": (atomics_then_load, lambda: (np.zeros(4, np.int32),
                                                      np.zeros(N, np.int32), 3, N)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_program_order_on_one_array_matches_interpreter(name):
    kernel, make = CASES[name]
    ref, got = run_both(kernel, (1,), make(), threads=N)
    for i, (r, g) in enumerate(zip(ref, got)):
        assert_same(r, g, what=f"{name} array #{i}")


def test_expected_values():
    """The interpreter's results, from NumPy (so the comparison above cannot pass vacuously)."""
    x, out = np.zeros(N, np.int32), np.zeros(N, np.int32)
    ct.launch(None, (1,), store_then_gather, (x, out, N))
    np.testing.assert_array_equal(out, np.arange(N, 0, -1))
    x, out = np.arange(N, dtype=np.int32), np.zeros(N, np.int32)
    ct.launch(None, (1,), load_then_atomic, (x, out, N))
    np.testing.assert_array_equal(out, np.arange(N))
    np.testing.assert_array_equal(x, np.arange(N) + 5)
    x = np.zeros(N, np.int32)
    ct.launch(None, (1,), scatter_twice, (x, N))
    np.testing.assert_array_equal(x, np.full(N, 7))

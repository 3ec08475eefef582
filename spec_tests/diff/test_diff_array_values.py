"""R-ARRAY-3 (arrays are values: assigning one to another name aliases it) and R-PY-4 (list
items indexed at run time) on both executors: a write through a variable that may name one
array or another, depending on the path taken, lands in the array it names at run time.

Before ``ir.effects.array_roots``, the Numba backend copied back to the caller only the array
a variable named first (a loop-carried array, an array chosen by a swap, a ``break``, an ``if``
before a loop that runs zero times), or for atomics only the first of an ``if``'s choices: the
device wrote the right array and the host never saw it."""

from __future__ import annotations

import numpy as np
import pytest

import cutile as ct
from cutile import Constant
from cutile.testing.diff import run_on

from .harness import assert_same, run_both

T = 8


@ct.kernel
def for_reassign(x, y, n: int, T: Constant[int]):
    a = x
    for i in range(n):
        a = y
    ct.store(a, (0,), ct.full((T,), 3, x.dtype))


@ct.kernel
def while_reassign(x, y, n: int, T: Constant[int]):
    a = x
    i = 0
    while i < n:
        a = y
        i += 1
    ct.store(a, (0,), ct.full((T,), 4, x.dtype))


@ct.kernel
def swap_in_loop(x, y, n: int, T: Constant[int]):
    d, w = x, y
    for i in range(n):
        d, w = w, d
    ct.store(d, (0,), ct.full((T,), 5, x.dtype))
    ct.store(w, (0,), ct.full((T,), 6, x.dtype))


@ct.kernel
def chosen_at_break(x, y, n: int, T: Constant[int]):
    a = x
    for i in range(4):
        if i == n:
            a = y
            break
    ct.scatter(a, ct.arange(T, dtype=ct.int32), ct.full((T,), 7, x.dtype))


@ct.kernel
def if_then_empty_loop(x, y, c: int, n: int, T: Constant[int]):
    a = x if c > 0 else y
    for i in range(n):            # runs zero times when n == 0: a is the if's choice
        a = x
    ct.store(a, (0,), ct.full((T,), 8, x.dtype))


@ct.kernel
def atomic_through_if(x, y, c: int, T: Constant[int]):
    d = x if c > 1 else y
    ct.atomic_add(d, ct.arange(T, dtype=ct.int32), ct.full((T,), 2, x.dtype))


@ct.kernel
def atomic_xchg_through_loop(x, y, n: int, T: Constant[int]):
    d = x
    for i in range(n):
        d = y
    ct.atomic_xchg(d, ct.arange(T, dtype=ct.int32), ct.full((T,), 9, x.dtype))


@ct.kernel
def atomic_list_item(arrays, i: int, T: Constant[int]):
    ct.atomic_add(arrays[i], ct.arange(T, dtype=ct.int32), ct.full((T,), 1, ct.int32))


@ct.kernel
def view_store_through_loop(x, y, n: int, T: Constant[int]):
    a = x
    for i in range(n):
        a = y
    a.tiled_view((T,)).store((0,), ct.full((T,), 11, x.dtype))


def _pair():
    return np.zeros(T, np.int32), np.zeros(T, np.int32)


CASES = [
    ("for_reassign n=0", for_reassign, lambda: (*_pair(), 0, T)),
    ("for_reassign n=3", for_reassign, lambda: (*_pair(), 3, T)),
    ("while_reassign n=2", while_reassign, lambda: (*_pair(), 2, T)),
    ("swap_in_loop n=1", swap_in_loop, lambda: (*_pair(), 1, T)),
    ("swap_in_loop n=2", swap_in_loop, lambda: (*_pair(), 2, T)),
    ("chosen_at_break hit", chosen_at_break, lambda: (*_pair(), 2, T)),
    ("chosen_at_break miss", chosen_at_break, lambda: (*_pair(), 9, T)),
    ("if_then_empty_loop else", if_then_empty_loop, lambda: (*_pair(), 0, 0, T)),
    ("if_then_empty_loop then", if_then_empty_loop, lambda: (*_pair(), 1, 0, T)),
    ("atomic_through_if else", atomic_through_if, lambda: (*_pair(), 0, T)),
    ("atomic_through_if then", atomic_through_if, lambda: (*_pair(), 2, T)),
    ("atomic_xchg_through_loop", atomic_xchg_through_loop, lambda: (*_pair(), 1, T)),
    ("view_store_through_loop", view_store_through_loop, lambda: (*_pair(), 1, T)),
]


@pytest.mark.parametrize("name,kernel,make", CASES, ids=[c[0] for c in CASES])
def test_write_through_array_variable(name, kernel, make):
    args = make()
    ref, got = run_both(kernel, (1,), args)
    for k, (r, g) in enumerate(zip(ref, got)):
        assert_same(r, g, what=f"{name}: array argument {k}")
    assert any(r.any() for r in ref), "the kernel wrote nothing (test bug)"


@pytest.mark.parametrize("i", [0, 1, 2])
def test_atomic_on_list_item_chosen_at_run_time(i):
    arrays = [np.zeros(T, np.int32) for _ in range(3)]
    opts = dict(poison_outputs=False)
    ref = run_on(atomic_list_item, (2,), (arrays, i, T), "interp", **opts).arrays
    got = run_on(atomic_list_item, (2,), (arrays, i, T), "numba", **opts).arrays
    assert sorted(ref) == sorted(got) and len(ref) == 3
    for name in ref:
        assert_same(ref[name], got[name], what=name)
        assert ref[name].any() == (name.endswith(f"[{i}]")), name


@ct.kernel
def copy_slice(x, y, start: int, stop: int, T: Constant[int]):
    t = ct.load(x.slice(0, start, stop), index=(0,), shape=(T,))
    ct.store(y.slice(0, start, stop), index=(0,), tile=t)
    z = ct.load(x.slice(0, start, stop), index=(0,), shape=(T,),
                padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, index=(1,), tile=z + 1)


@pytest.mark.parametrize("start,stop", [(4, 4), (0, 0), (16, 16), (4, 7), (15, 16)])
def test_views_made_in_the_kernel_may_be_empty(start, stop):
    """A slice of length 0 (at the start, inside, or at the end of its array) has no element
    to read for masked-off lanes: both executors run its loads and stores as no-ops
    (decisions.md), and the backend never reads outside the array."""
    x = np.arange(16, dtype=np.int32) + 100
    ref, got = run_both(copy_slice, (1,), (x, np.zeros(16, np.int32), start, stop, 8))
    assert_same(ref[1], got[1], what="y")
    want = np.zeros(16, np.int32)
    want[start:stop] = x[start:stop]
    want[8:16] = 1
    want[8:8 + (stop - start)] += x[start:stop]
    np.testing.assert_array_equal(ref[1], want)

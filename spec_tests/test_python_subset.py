"""The Python subset inside kernels and helpers, §23 (R-PY-*) and lists of arrays (R-LAUNCH-3):
``with``/``@contextmanager``, tuple comprehensions, dataclasses, ``**kwargs`` dicts, dtype calls,
closures, ``functools.wraps`` and recursion, on the interpreter.  Error tests assert the class,
the message and the user's line (``# E:<name>``)."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from typing import Annotated

import error_markers
import numpy as np
import pytest

import cutile as ct

line_of, expect_error = error_markers.for_file(__file__)


def x8():
    return np.arange(8, dtype=np.float32)


# -- with / contextmanager (R-PY-12) -----------------------------------------------------------
@contextlib.contextmanager
def logged(out, slot, t):
    """Stores ``t`` into ``out[slot]`` when the block is left (on every exit path)."""
    yield t * 2
    ct.store(out, (slot,), t)


@contextlib.contextmanager
def scaled(t, f=3):
    try:
        u = t * f
        yield u
    finally:
        pass


@ct.kernel
def k_with(x, out, log):
    t = ct.load(x, (0,), (8,))
    with logged(log, 0, t) as a, scaled(a) as b:
        r = a + b                                    # 2t + 6t
    ct.store(out, (0,), r)


def test_with_contextmanager_enter_exit():
    """R-PY-12, R-CF-1: the value yielded is bound by 'as'; the code after yield runs when
    the block ends; several managers in one 'with'; try/finally around the yield."""
    out, log = np.zeros(8, np.float32), np.zeros((2, 8), np.float32).reshape(16)
    ct.launch(None, (1,), k_with, (x8(), out, log))
    np.testing.assert_array_equal(out, x8() * 8)
    np.testing.assert_array_equal(log[:8], x8())


@ct.kernel
def k_with_break(x, out, log, n):
    acc = ct.zeros((8,), ct.float32)
    i = 0
    while True:
        with logged(log, i, ct.full((8,), i, ct.float32)):
            acc = acc + ct.load(x, (0,), (8,))
            if i == n:
                break                                # cleanup runs before leaving the loop
            i = i + 1
    ct.store(out, (0,), acc)


def test_with_cleanup_runs_on_break():
    """R-PY-12: cleanup runs on normal exit and on break through the block."""
    out, log = np.zeros(8, np.float32), np.full(40, -1, np.float32)
    ct.launch(None, (1,), k_with_break, (x8(), out, log, 3))
    np.testing.assert_array_equal(out, x8() * 4)
    np.testing.assert_array_equal(log[:32], np.repeat(np.arange(4, dtype=np.float32), 8))
    assert (log[32:] == -1).all()


@contextlib.contextmanager
def two_yields(t):
    yield t
    yield t


@contextlib.contextmanager
def returns(t):
    yield t
    return


@contextlib.contextmanager
def yield_in_if(t, c):
    if c:
        yield t


@ct.kernel
def k_two_yields(x, out):
    with two_yields(ct.load(x, (0,), (8,))) as t:  # E:two_yields
        ct.store(out, (0,), t)


@ct.kernel
def k_returns(x, out):
    with returns(ct.load(x, (0,), (8,))) as t:
        ct.store(out, (0,), t)


@ct.kernel
def k_yield_in_if(x, out):
    with yield_in_if(ct.load(x, (0,), (8,)), True) as t:  # E:yield_in_if
        ct.store(out, (0,), t)


@ct.kernel
def k_enter_twice(x, out):
    cm = scaled(ct.load(x, (0,), (8,)))
    with cm as a:
        ct.store(out, (0,), a)
    with cm as b:  # E:twice
        ct.store(out, (0,), b)


@ct.kernel
def k_with_not_cm(x, out):
    with ct.load(x, (0,), (8,)) as t:  # E:not_cm
        ct.store(out, (0,), t)


def test_with_errors():
    """R-PY-12: exactly one yield outside conditionals, no return, one entry per object, and
    only @contextmanager helpers."""
    expect_error(k_two_yields, (x8(), x8()), ct.TileTypeError, "must have one `yield` statement",
                 "two_yields")
    with pytest.raises(ct.TileSyntaxError, match="Returning from a generator-based context"):
        ct.launch(None, (1,), k_returns, (x8(), x8()))
    expect_error(k_yield_in_if, (x8(), x8()), ct.TileTypeError,
                 "outside of loops and conditional", "yield_in_if")
    expect_error(k_enter_twice, (x8(), x8()), ct.TileTypeError, "cannot be entered twice",
                 "twice")
    expect_error(k_with_not_cm, (x8(), x8()), ct.TileTypeError, "contextmanager", "not_cm")


# -- tuple comprehensions and sum (R-PY-2, R-PY-3) ---------------------------------------------
@ct.kernel
def k_comprehension(x, out):
    t = ct.load(x, (0,), (8,))
    parts = tuple(t * k for k in ct.static_iter(range(4)) if k % 2 == 1)   # k = 1, 3
    pairs = tuple((i, j) for i in ct.static_iter(range(2)) for j in ct.static_iter(range(2)))
    total = sum(p for p in ct.static_iter(parts))
    ct.store(out, (0,), total + sum(i * 10 + j for i, j in ct.static_iter(pairs)) + len(parts))


def test_tuple_comprehension_and_sum():
    """R-PY-2/3: tuple(...) over static_iter with constant filters and nested generators;
    sum over a static tuple (cutile accepts sum of a tuple or of such a generator)."""
    out = np.zeros(8, np.float32)
    ct.launch(None, (1,), k_comprehension, (x8(), out))
    np.testing.assert_array_equal(out, x8() * 4 + (0 + 1 + 10 + 11) + 2)


@ct.kernel
def k_comp_not_static(x, out):
    t = ct.load(x, (0,), (8,))
    parts = tuple(t * k for k in range(3))  # E:comp
    ct.store(out, (0,), parts[0])


@ct.kernel
def k_genexp_alone(x, out):
    g = (k for k in ct.static_iter(range(3)))  # E:genexp
    ct.store(out, (0,), ct.load(x, (0,), (8,)))


def test_comprehension_errors():
    """R-PY-3: every iterable must be wrapped in static_iter; other generator expressions are
    rejected (R-PY-2)."""
    expect_error(k_comp_not_static, (x8(), x8()), ct.TileSyntaxError,
                 "must be wrapped in ct.static_iter", "comp")
    expect_error(k_genexp_alone, (x8(), x8()), ct.TileSyntaxError, "generator expressions",
                 "genexp")


N_OUTER = 7


@ct.kernel
def k_comp_scope(out):
    m = 5
    # late: one k, rebound each iteration, so every lambda reads 2
    late = tuple(lambda: k for k in ct.static_iter(range(3)))      # noqa: B023 (late binding)
    now = tuple((lambda: k)() for k in ct.static_iter(range(3)))    # called at once: 0, 1, 2
    k = 9                                     # the kernel's k is not the comprehension's
    _ = tuple(N_OUTER for N_OUTER in ct.static_iter(range(2)))      # nor is the global shadowed
    vals = tuple(f() for f in ct.static_iter(late)) + now + (k, N_OUTER, m)
    ct.store(out, (0,), ct.full((1,), 0, ct.int32) + sum(v * 10 ** i for i, v in
                                                          ct.static_iter(enumerate(vals))))


@ct.kernel
def k_comp_unbound(out):
    n = 4
    _ = tuple(i for i in ct.static_iter(range(3))
              for n in ct.static_iter(range(n)))  # E:unbound


def test_comprehension_has_its_own_scope_R_PY_3():
    """R-PY-3, as Python (1.7): a comprehension's variables live in its own scope, bound once
    per iteration (late-binding lambdas), never the enclosing ones; a later generator sees the
    comprehension's variable, unbound until its own ``for`` runs."""
    out = np.zeros(1, np.int64)
    ct.launch(None, (1,), k_comp_scope, (out,))
    digits = [2, 2, 2, 0, 1, 2, 9, 7, 5]
    assert out[0] == sum(d * 10 ** i for i, d in enumerate(digits))
    expect_error(k_comp_unbound, (out,), ct.TileSyntaxError, "Undefined variable n", "unbound")


# -- dataclasses (R-PY-10) ---------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Affine:
    scale: float
    shift: int = 3

    def __post_init__(self):
        _ = self.scale * 1                       # runs on the host and in tile code

    def apply(self, t):
        return t * self.scale + self.shift

    @property
    def doubled(self):
        return self.scale * 2

    def __getitem__(self, i):
        return (self.scale, self.shift)[i]


PARAMS = Affine(0.5, 1)


@dataclasses.dataclass(frozen=True)
class Problem:
    x: object
    out: object
    n: int
    label: str = "p"


@ct.kernel
def k_dataclass(x, out, c):
    t = ct.load(x, (0,), (8,))
    a = Affine(2.0)                                   # created in tile code, default field
    b = dataclasses.replace(a, shift=ct.int32(5))
    if c > 0:                                         # carried through a runtime branch
        d = Affine(t, 1)
    else:
        d = Affine(t * 0, 1)
    r = a.apply(t) + b.shift + a.doubled + d.scale + a[1] + PARAMS.apply(t) + PARAMS.doubled
    ct.store(out, (0,), r)


def test_dataclass_in_tile_code():
    """R-PY-10: construction (defaults, __post_init__), fields, methods, properties,
    __getitem__, dataclasses.replace, global instances, merging through branches."""
    out = np.zeros(8, np.float32)
    ct.launch(None, (1,), k_dataclass, (x8(), out, 1))
    x = x8()
    np.testing.assert_array_equal(out, (x * 2 + 3) + 5 + 4 + x + 3 + (x * 0.5 + 1) + 1)


@ct.kernel
def k_dataclass_arg(p, q):
    t = ct.load(p.x, (0,), (8,))
    if p.label == "p":
        ct.store(q.out, (0,), t * p.n + q.n)


def test_dataclass_kernel_argument():
    """R-PY-10 / R-LAUNCH-3 (cutile superset): a frozen dataclass argument's fields travel
    like tuple items (arrays and numbers at runtime, strings as constants)."""
    out = np.zeros(8, np.float32)
    ct.launch(None, (1,), k_dataclass_arg, (Problem(x8(), None, 3), Problem(None, out, 7)))
    np.testing.assert_array_equal(out, x8() * 3 + 7)


@dataclasses.dataclass
class Mutable:
    v: int


@ct.kernel
def k_mutable(out):
    m = Mutable(1)  # E:mutable
    ct.store(out, (0,), ct.full((8,), m.v, ct.float32))


@ct.kernel
def k_replace_unknown(out):
    a = dataclasses.replace(Affine(1.0), nope=2)  # E:nofield
    ct.store(out, (0,), ct.full((8,), a.shift, ct.float32))


@ct.kernel
def k_dc_bad_bind(out):
    a = Affine(1.0, 2, 3)  # E:dcbind
    ct.store(out, (0,), ct.full((8,), a.shift, ct.float32))


def test_dataclass_errors():
    """R-PY-10: only frozen dataclasses; replace() of an unknown field; R-PY-14 binding."""
    expect_error(k_mutable, (x8(),), ct.TileTypeError, "Only frozen dataclasses", "mutable")
    expect_error(k_replace_unknown, (x8(),), ct.TileTypeError, "has no such field", "nofield")
    expect_error(k_dc_bad_bind, (x8(),), ct.TileTypeError, r"Affine\(\): too many", "dcbind")
    with pytest.raises(TypeError, match="Only frozen dataclasses"):
        ct.launch(None, (1,), k_mutable, (Mutable(1),))


# -- kwargs dicts (R-PY-5), dtype calls, return paths ------------------------------------------
def inner(t, *, scale=1, shift=0):
    return t * scale + shift


def forward(t, **kw):
    extra = kw.get("extra", 100) + kw.get("missing", 1000)
    has = 1 if "scale" in kw else 0
    return inner(t, scale=kw["scale"], shift=kw["shift"]) + extra + has


def forward2(t, **kw):
    return inner(t, **kw)


@ct.kernel
def k_kwargs(x, out):
    t = ct.load(x, (0,), (8,))
    r = forward(t, scale=2, shift=1, extra=10) + forward2(t, shift=5)
    z = ct.int32() + ct.float16() + ct.bool_()      # dtype calls without argument: zero
    typed = ct.int32().dtype == ct.int32 and ct.float16().dtype == ct.float16
    ct.store(out, (0,), r + z + (1000 if typed else 0))


def test_kwargs_dict_and_dtype_zero():
    """R-PY-5: d["k"], d.get("k", default), "k" in d, f(**d); dtype calls with no argument
    give the dtype's zero, as int() is 0."""
    out = np.zeros(8, np.float32)
    ct.launch(None, (1,), k_kwargs, (x8(), out))
    np.testing.assert_array_equal(out, (x8() * 2 + 1 + 10 + 1000 + 1) + (x8() + 5) + 1000)


def picky(t, **kw):
    return t + kw["qux"]  # E:nokey


@ct.kernel
def k_missing_key(x, out):
    ct.store(out, (0,), picky(ct.load(x, (0,), (8,)), foo=1))


def test_kwargs_missing_key():
    """R-PY-5: a missing key -> TileTypeError("Key 'qux' not found in dictionary")."""
    expect_error(k_missing_key, (x8(), x8()), ct.TileTypeError,
                 "Key 'qux' not found in dictionary", "nokey")


# -- closures, wraps, recursion (R-PY-6) -------------------------------------------------------
def doubled(f):
    @functools.wraps(f)
    def wrapper(t):
        return f(t) * 2
    return wrapper


@doubled
def plus_one(t):
    return t + 1


def make_adder(k):
    def add(t):
        return t + k
    return add


add7 = make_adder(7)


@ct.kernel
def k_closures(x, out):
    t = ct.load(x, (0,), (8,))
    k = 1

    def f(u):
        return u * k                                 # reads k at the call

    k = 3
    ct.store(out, (0,), f(t) + plus_one(t) + add7(t))


def test_closure_wraps():
    """R-PY-6: a nested closure sees its scope's variables at the call; a functools.wraps
    wrapper runs its own code (not only the wrapped function); module-level closures read
    their cells when the kernel compiles."""
    out = np.zeros(8, np.float32)
    ct.launch(None, (1,), k_closures, (x8(), out))
    np.testing.assert_array_equal(out, x8() * 3 + (x8() + 1) * 2 + x8() + 7)


def count_down(t, n):
    if n == 0:
        return t
    return count_down(t + 1, n - 1)                  # ends at compile time: n is constant


def ping(t):
    return pong(t)  # E:ping


def pong(t):
    return ping(t + 1)


@ct.kernel
def k_recursion_ok(x, out):
    ct.store(out, (0,), count_down(ct.load(x, (0,), (8,)), 20))


@ct.kernel
def k_recursion_bad(x, out):
    ct.store(out, (0,), ping(ct.load(x, (0,), (8,))))


def test_recursion():
    """R-PY-6: recursion ending at compile time works; a runaway one raises
    TileRecursionError naming the call chain."""
    out = np.zeros(8, np.float32)
    ct.launch(None, (1,), k_recursion_ok, (x8(), out))
    np.testing.assert_array_equal(out, x8() + 20)
    e = expect_error(k_recursion_bad, (x8(), x8()), ct.TileRecursionError,
                     r"Maximum recursion depth \(1000\)", "ping")
    assert "k_recursion_bad -> ping -> pong -> ping" in e.message
    assert len(str(e).splitlines()) < 60             # a deep chain prints its two ends only


# -- lists of arrays (R-PY-4, R-LAUNCH-3/4) ----------------------------------------------------
@ct.kernel
def k_list(srcs: Annotated[list, ct.ListAnnotation(element=ct.ArrayAnnotation())], dsts,
           T: ct.Constant[int]):
    g = ct.bid(0)
    t = ct.load(srcs[g], (0,), (T,), padding_mode=ct.PaddingMode.ZERO)   # runtime index
    first = ct.load(srcs[0], (0,), (T,), padding_mode=ct.PaddingMode.ZERO)
    n = len(srcs)
    ct.store(dsts[g], (0,), t * 10 + first + n)


def test_list_of_arrays_runtime_and_constant_index():
    """R-PY-4: lst[i] with a runtime or constant index returns the array; len(lst) is an
    int32; arrays in the list may have different shapes."""
    srcs = [np.arange(n, dtype=np.float32) + 100 * i for i, n in enumerate((8, 5, 3))]
    dsts = [np.zeros(n, np.float32) for n in (8, 5, 3)]
    ct.launch(None, (3,), k_list, (srcs, dsts, 8))
    for i, (s, d) in enumerate(zip(srcs, dsts)):
        np.testing.assert_array_equal(d, s * 10 + srcs[0][:len(s)] + 3)


@ct.kernel
def k_list_len_type(srcs, out):
    n = len(srcs)
    ct.store(out, (0,), ct.full((1,), n, ct.int32) + (1 if n.dtype == ct.int32 else 0))


def test_list_len_is_int32():
    out = np.zeros(1, np.int32)
    ct.launch(None, (1,), k_list_len_type, ([x8(), x8()], out))
    assert out[0] == 3


def test_list_argument_errors():
    """R-LAUNCH-3: non-empty, equal dtype and rank."""
    out = np.zeros(8, np.float32)
    with pytest.raises(TypeError, match="Empty lists are not supported"):
        ct.launch(None, (1,), k_list, ([], [out], 8))
    with pytest.raises(TypeError, match="vary in data type"):
        ct.launch(None, (1,), k_list, ([x8(), x8().astype(np.float64)], [out, out], 8))
    with pytest.raises(TypeError, match="vary in rank"):
        ct.launch(None, (1,), k_list, ([x8(), x8().reshape(2, 4)], [out, out], 8))


# -- return inside a loop of a helper (R-CF-10) ------------------------------------------------
def find_pair(x, n, v):
    """(row, col) of the first element equal to v in an n x n row-major x, else (-1, -1)."""
    for i in range(n):
        j = 0
        while j < n:
            if ct.sum(ct.load(x, (i * n + j,), (1,))) == v:
                return (i, j)                         # returns out of two nested loops
            j += 1
    return (-1, -1)


def first_tile_above(x, n, limit):
    for i in range(n):
        t = ct.load(x, (i,), (4,))
        if ct.max(t) > limit:
            return t
    return ct.zeros((4,), ct.float32)


@ct.kernel
def k_return_in_loop(x, out, n, v, limit):
    r, c = find_pair(x, n, v)
    t = first_tile_above(x, n, limit)
    ct.store(out, (0,), ct.full((4,), r * 100 + c, ct.float32))
    ct.store(out, (1,), t)


@pytest.mark.parametrize("v,limit", [(6.0, 5.0), (15.0, 13.0), (99.0, 99.0)])
def test_return_inside_loops_of_a_helper(v, limit):
    """R-CF-10 (1.7): a helper may return from inside for/while loops (nested too); the loops
    stop there and the value merges with the return after the loops."""
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(8, np.float32)
    ct.launch(None, (1,), k_return_in_loop, (x, out, 4, v, limit))
    hit = np.flatnonzero(x == v)
    rc = divmod(int(hit[0]), 4) if hit.size else (-1, -1)
    np.testing.assert_array_equal(out[:4], np.full(4, rc[0] * 100 + rc[1], np.float32))
    rows = [x[i * 4:i * 4 + 4] for i in range(4) if x[i * 4:i * 4 + 4].max() > limit]
    np.testing.assert_array_equal(out[4:], rows[0] if rows else np.zeros(4, np.float32))


@ct.kernel
def k_list_int64(srcs: ct.ListAnnotation(element=ct.ArrayAnnotation(index_dtype=ct.int64)),
                 out):
    n = srcs[1].shape[0]
    ct.store(out, (0,), ct.full((1,), n, ct.int64) + (100 if n.dtype == ct.int64 else 0))


def test_list_annotation_element_index_dtype():
    """R-LAUNCH-4: ListAnnotation(element=ArrayAnnotation(index_dtype=int64)) makes the
    shapes of the list's arrays int64."""
    out = np.zeros(1, np.int64)
    ct.launch(None, (1,), k_list_int64, ([x8(), np.zeros(5, np.float32)], out))
    assert out[0] == 105
    with pytest.raises(TypeError, match="expects an ArrayAnnotation"):
        ct.ListAnnotation(element=int)
    with pytest.raises(TypeError, match="element"):          # required, as in 1.7
        ct.ListAnnotation()
    assert ct.ListAnnotation(element=ct.IndexedWithInt64).element.index_dtype is ct.int64


def pick_pair(c, i, j):
    if c > 0:
        return (i, j, 7)
    return (-1, -1, 7)


@ct.kernel
def k_tuple_merge(out, c, i):
    a, b, s = pick_pair(c, i, i + 1)
    if c > 5:
        t = (i, 2)
    else:
        t = (3, i)
    ct.store(out, (0,), ct.full((1,), a * 100 + b + s * 1000 + t[0] * 10000 + t[1] * 100000,
                                ct.int32))


@pytest.mark.parametrize("c", [1, 0, 9])
def test_tuples_merge_item_by_item(c):
    """R-CF-7 / R-PROMO-7 per tuple item: (runtime, runtime, 7) and (-1, -1, 7) merge into
    (int32, int32, 7); (i, 2) and (3, i) into two runtime int32s."""
    out = np.zeros(1, np.int32)
    ct.launch(None, (1,), k_tuple_merge, (out, c, 4))
    a, b = (4, 5) if c > 0 else (-1, -1)
    t = (4, 2) if c > 5 else (3, 4)
    assert out[0] == a * 100 + b + 7000 + t[0] * 10000 + t[1] * 100000


@ct.kernel
def k_dataclass_constant(x, out, p: ct.Constant[Affine]):
    ct.static_assert(p.shift == 2)                    # the fields are compile-time constants
    ct.store(out, (0,), p.apply(ct.load(x, (0,), (8,))) + p.doubled)


def test_dataclass_constant_argument():
    """(cutile) a frozen dataclass for a ct.Constant parameter: its fields are constants and
    its value is part of the specialisation."""
    out = np.zeros(8, np.float32)
    ct.launch(None, (1,), k_dataclass_constant, (x8(), out, Affine(3.0, 2)))
    np.testing.assert_array_equal(out, x8() * 3 + 2 + 6)
    with pytest.raises(ct.TileStaticAssertionError):
        ct.launch(None, (1,), k_dataclass_constant, (x8(), out, Affine(3.0, 5)))

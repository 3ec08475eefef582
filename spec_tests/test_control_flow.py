"""Control flow and the Python subset: §22 (R-CF-*) and §23 (R-PY-*), on the interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from spec_executor import interp_only_ub

import cutile as ct

TILE = 8


def run1(kernel, *args, grid=(1,)):
    ct.launch(None, grid, kernel, tuple(args))


# -- if / else --------------------------------------------------------------------------------
@ct.kernel
def branch_on_bid(a, out, T: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(a, (bid,), (T,), padding_mode=ct.PaddingMode.ZERO)
    if bid % 2 == 0:                       # R-CF-3: runtime condition compiles both branches
        r = t * 2
    elif bid == 1:
        r = t + 100
    else:
        r = -t
    ct.store(out, (bid,), r)


def test_if_elif_else_runtime_condition():
    # R-CF-1, R-CF-3, R-CF-7 (same-typed values merge)
    a = np.arange(32, dtype=np.float32)
    out = np.full(32, np.nan, np.float32)
    run1(branch_on_bid, a, out, TILE, grid=(4,))
    expect = a.copy()
    expect[0:8] *= 2
    expect[8:16] += 100
    expect[16:24] *= 2
    expect[24:32] = -expect[24:32]
    np.testing.assert_array_equal(out, expect)


@ct.kernel
def const_branch(a, out, MODE: ct.Constant[int]):
    t = ct.load(a, (0,), (4,))
    if MODE == 0:
        r = t + 1
    else:
        r = t.undefined_attribute          # never compiled when MODE == 0 (R-CONV-5)
    ct.store(out, (0,), r)


def test_constant_condition_compiles_one_branch():
    # R-CF-3, R-CONV-5
    a = np.arange(4, dtype=np.int32)
    out = np.zeros(4, np.int32)
    run1(const_branch, a, out, 0)
    np.testing.assert_array_equal(out, a + 1)
    with pytest.raises(ct.TileTypeError, match="has no attribute"):
        run1(const_branch, a, out, 1)


@ct.kernel
def path_dependent(a, out):
    if ct.bid(0) == 0:
        x = ct.zeros((4,), ct.float32)
    else:
        x = ct.zeros((4,), ct.int32)
    ct.store(out, (0,), x)


def test_type_depends_on_path():
    # R-CF-7: different types on two paths make the variable invalid when used
    with pytest.raises(ct.TileTypeError, match="depends on path taken"):
        run1(path_dependent, np.zeros(4, np.float32), np.zeros(4, np.float32))


@ct.kernel
def enum_path_dependent(out):
    if ct.bid(0) == 0:
        order = ct.MemoryOrder.RELAXED
    else:
        order = ct.MemoryOrder.WEAK
    ct.store(out, (0,), ct.full((1,), order == ct.MemoryOrder.WEAK, ct.int32))


def test_type_depends_on_path_names_both_values():
    # R-CF-7, in 1.7's words: the variable in backquotes, the else path's value first
    with pytest.raises(ct.TileTypeError, match=r"Type of `order` depends on path taken: "
                       r"<enum constant MemoryOrder\.WEAK> \(else path\) vs\. "
                       r"<enum constant MemoryOrder\.RELAXED> \(if path\)"):
        ct.launch(None, (1,), enum_path_dependent, (np.zeros(1, np.int32),))
    with pytest.raises(ct.TileTypeError,
                       match=r"tile<int32x4> \(else path\) vs\. tile<float32x4>"):
        run1(path_dependent, np.zeros(4, np.float32), np.zeros(4, np.float32))


@ct.kernel
def path_dependent_unused(out):
    if ct.bid(0) == 0:
        x = ct.zeros((4,), ct.float32)
    else:
        x = ct.zeros((8,), ct.float32)
    ct.store(out, (0,), ct.ones((4,), ct.float32))


def test_type_depends_on_path_unused_is_fine():
    # R-CF-7: leaving the invalid variable unused is fine
    out = np.zeros(4, np.float32)
    run1(path_dependent_unused, out)
    np.testing.assert_array_equal(out, 1)


@ct.kernel
def merged_constants(out, n):
    if n > 0:
        t = n
    else:
        t = 7
    small = ct.full((4,), 1, ct.int8)
    r = small + t                          # t is a runtime int32 after the merge (R-PROMO-7)
    if r.dtype == ct.int32:
        ct.store(out, (0,), r)


def test_constants_merge_to_runtime_values():
    # R-PROMO-7, R-CF-7
    out = np.zeros(4, np.int32)
    run1(merged_constants, out, 5)
    np.testing.assert_array_equal(out, 6)
    run1(merged_constants, out, -1)
    np.testing.assert_array_equal(out, 8)


# -- loops --------------------------------------------------------------------------------------
@ct.kernel
def tile_sum_loop(arr, out, T: ct.Constant[int], N_TILES: ct.Constant[int]):
    acc = ct.zeros((T,), dtype=ct.float32)
    for k in range(N_TILES):
        tile = ct.load(arr, index=(k,), shape=(T,))
        acc = acc + tile
    ct.store(out, index=(0,), tile=acc)


def test_for_loop_carries_values():
    # R-CF-4 (the seed's tile_sum kernel)
    arr = np.random.default_rng(0).random(8 * 5).astype(np.float32)
    out = np.zeros(8, np.float32)
    run1(tile_sum_loop, arr, out, 8, 5)
    expect = np.zeros(8, np.float32)
    for k in range(5):
        expect = expect + arr[k * 8:(k + 1) * 8]
    np.testing.assert_array_equal(out, expect)


@ct.kernel
def loop_runtime_bounds(out, start, stop, step):
    total = 0
    count = 0
    for i in range(start, stop, step):
        total += i
        count += 1
    ct.store(out, (0,), total)
    ct.store(out, (1,), count)


@pytest.mark.parametrize("start,stop,step", [(0, 10, 1), (3, 20, 4), (5, 5, 1), (7, 2, 1)])
def test_range_runtime_bounds(start, stop, step):
    # R-CF-4: Python iteration semantics, possibly zero times
    out = np.zeros(2, np.int32)
    run1(loop_runtime_bounds, out, start, stop, step)
    r = list(range(start, stop, step))
    assert out.tolist() == [sum(r), len(r)]


@interp_only_ub
def test_range_runtime_step_nonpositive_is_ub():
    # R-CF-5, R-UB-4
    with pytest.raises(ct.UndefinedBehaviorError, match="step"):
        run1(loop_runtime_bounds, np.zeros(2, np.int32), 0, 10, 0)


@ct.kernel
def negative_const_step(out):
    for i in range(10, 0, -2):
        ct.store(out, (0,), i)


def test_range_constant_negative_step_rejected():
    # R-CF-5
    with pytest.raises(ct.TileTypeError, match="Step must be positive, got -2"):
        run1(negative_const_step, np.zeros(1, np.int32))


@ct.kernel
def break_continue(out, n):
    total = 0
    for i in range(n):
        if i % 3 == 0:
            continue
        if i > 10:
            break
        total += i
    j = 0
    while True:
        j += 1
        if j * j > total:
            break
    ct.store(out, (0,), total)
    ct.store(out, (1,), j)


def test_break_and_continue():
    # R-CF-9
    out = np.zeros(2, np.int32)
    run1(break_continue, out, 20)
    total = sum(i for i in range(20) if i % 3 and i <= 10)
    j = 0
    while True:
        j += 1
        if j * j > total:
            break
    assert out.tolist() == [total, j]


@ct.kernel
def while_cond(out, n):
    i = 0
    acc = ct.zeros((4,), ct.int32)
    while i < n:
        acc = acc + i
        i += 1
    ct.store(out, (0,), acc)


def test_while_loop():
    # R-CF-1
    out = np.zeros(4, np.int32)
    run1(while_cond, out, 6)
    np.testing.assert_array_equal(out, sum(range(6)))


@ct.kernel
def carried_type_change(out):
    a = 1
    for i in range(3):
        a *= 2.0
    ct.store(out, (0,), a)


def test_loop_carried_type_must_not_change():
    # R-CF-7: `a = 1` then `a *= 2.0` in a loop
    with pytest.raises(ct.TileTypeError, match="loop-carried"):
        run1(carried_type_change, np.zeros(1, np.float32))


@ct.kernel
def defined_in_loop(out, n):
    for i in range(n):
        v = i
    ct.store(out, (0,), v)


def test_name_first_defined_in_loop_body():
    # R-CF-8
    with pytest.raises(ct.TileSyntaxError, match="Undefined variable v"):
        run1(defined_in_loop, np.zeros(1, np.int32), 3)


@ct.kernel
def early_return(a, out, n):
    bid = ct.bid(0)
    if bid >= n:
        return
    for k in range(4):
        if k == 2:
            return                        # R-CF-10: 1.7 accepts return inside loops
        ct.store(out, (bid * 4 + k,), ct.load(a, (bid * 4 + k,), ()))


def test_kernel_return_inside_if_and_loop():
    # R-CF-10
    a = np.arange(16, dtype=np.int32)
    out = np.full(16, -1, np.int32)
    run1(early_return, a, out, 3, grid=(4,))
    expect = np.full(16, -1, np.int32)
    for b in range(3):
        expect[b * 4:b * 4 + 2] = a[b * 4:b * 4 + 2]
    np.testing.assert_array_equal(out, expect)


@ct.kernel
def returns_value(out):
    return 1


def test_kernel_cannot_return_value():
    # R-CF-10
    with pytest.raises(ct.TileTypeError, match="cannot return values"):
        run1(returns_value, np.zeros(1, np.int32))


@ct.kernel
def for_else(out):
    for i in range(3):
        pass
    else:
        pass


def test_for_else_rejected():
    # R-CF-11
    with pytest.raises(ct.TileSyntaxError, match="'for-else' is not supported"):
        run1(for_else, np.zeros(1))


@ct.kernel
def nonscalar_condition(a):
    t = ct.load(a, (0,), (4,))
    if t > 0:
        pass


def test_condition_must_be_scalar():
    # R-CF-2
    with pytest.raises(ct.TileTypeError, match="Expected a scalar"):
        run1(nonscalar_condition, np.zeros(4, np.float32))


@ct.kernel
def bool_ops(out, x, y):
    r = (x > 0 and y > 0) or not (x < -5)
    z = 3 or 5
    ct.store(out, (0,), r)
    ct.store(out, (1,), z)


def test_and_or_not_yield_bool():
    # R-CF-6: `(3 or 5)` is True, short-circuit on runtime values
    out = np.zeros(2, np.int32)
    run1(bool_ops, out, 1, 1)
    assert out.tolist() == [1, 1]
    run1(bool_ops, out, -10, 1)
    assert out.tolist() == [0, 1]


@ct.kernel
def chained_compare(out, x):
    ct.store(out, (0,), 0 < x < 10)


def test_chained_comparison():
    # R-CMP-4
    out = np.zeros(1, np.int32)
    for x, e in ((5, 1), (0, 0), (10, 0)):
        run1(chained_compare, out, x)
        assert out[0] == e


@ct.kernel
def ternary(out, x):
    ct.store(out, (0,), 1.5 if x > 0 else 2.5)


def test_conditional_expression():
    out = np.zeros(1, np.float32)
    run1(ternary, out, 1)
    assert out[0] == 1.5
    run1(ternary, out, -1)
    assert out[0] == 2.5


# -- helpers, closures, tuples --------------------------------------------------------------
def scale(x, factor=2):
    return x * factor


def pick(x, flag):
    if flag:
        return x + 1
    return x - 1


@ct.function
def pair(x):
    return x, x * 3


@ct.kernel
def helpers(out, n):
    a = ct.full((4,), n, ct.int32)
    b = scale(a)
    c = scale(a, factor=5)
    d = pick(a, n > 3)
    e, f = pair(a)
    g = (lambda v: v - 1)(a)

    def local(v, w=10):
        return v + w + n

    h = local(a)
    ct.store(out, (0, 0), ct.reshape(b, (1, 4)))
    ct.store(out, (1, 0), ct.reshape(c, (1, 4)))
    ct.store(out, (2, 0), ct.reshape(d, (1, 4)))
    ct.store(out, (3, 0), ct.reshape(e + f, (1, 4)))
    ct.store(out, (4, 0), ct.reshape(g, (1, 4)))
    ct.store(out, (5, 0), ct.reshape(h, (1, 4)))


def test_helper_functions_are_inlined():
    # R-PY-6: defaults, keywords, early return, tuples, lambdas, closures
    out = np.zeros((6, 4), np.int32)
    run1(helpers, out, 4)
    assert out[:, 0].tolist() == [8, 20, 5, 16, 3, 18]
    run1(helpers, out, 1)
    assert out[:, 0].tolist() == [2, 5, 0, 4, 0, 12]


@ct.kernel
def tuples(out):
    t = (1, 2, 3)
    a, b, c = t
    u = t + (4,)
    ct.store(out, (0,), a + b * c + u[-1] + len(u))


def test_tuples():
    # R-PY-3
    out = np.zeros(1, np.int32)
    run1(tuples, out)
    assert out[0] == 1 + 6 + 4 + 4


@ct.kernel
def unpack_wrong(out):
    a, b = (1, 2, 3)


def test_unpack_length_mismatch():
    # R-PY-3
    with pytest.raises(ct.TileValueError, match="Too many values to unpack"):
        run1(unpack_wrong, np.zeros(1))


GLOBAL_SCALE = 3
GLOBAL_NP = np.int16(4)


@ct.kernel
def use_globals(out):
    v = ct.full((4,), GLOBAL_SCALE, ct.int32) * GLOBAL_SCALE
    w = GLOBAL_NP + 1                     # R-PY-8: NumPy scalar globals are strictly typed
    if w.dtype == ct.int16:
        ct.store(out, (0,), v + w)


def test_globals_are_constants():
    # R-PY-8
    out = np.zeros(4, np.int32)
    run1(use_globals, out)
    np.testing.assert_array_equal(out, 9 + 5)


@ct.kernel
def min_max_builtins(out, x):
    ct.store(out, (0,), min(x, 3))
    ct.store(out, (1,), max(x, 3))
    ct.store(out, (2,), abs(x))


def test_min_max_abs_builtins():
    # R-MATH-1, R-PY-9
    out = np.zeros(3, np.int32)
    run1(min_max_builtins, out, -7)
    assert out.tolist() == [-7, 3, 7]


@ct.kernel
def aug_assign(out):
    x = ct.full((4,), 2, ct.int32)
    x += 3
    x *= 2
    x -= 1
    x //= 3
    ct.store(out, (0,), x)


def test_augmented_assignment():
    # R-PY-1
    out = np.zeros(4, np.int32)
    run1(aug_assign, out)
    np.testing.assert_array_equal(out, ((2 + 3) * 2 - 1) // 3)


@ct.kernel
def recursion(out, N: ct.Constant[int]):
    ct.store(out, (0,), fact(N))


def fact(n):
    if n <= 1:
        return 1
    return n * fact(n - 1)


def test_compile_time_recursion():
    # R-PY-6: recursion is inlined (constant n folds)
    out = np.zeros(1, np.int32)
    run1(recursion, out, 5)
    assert out[0] == 120


@ct.kernel
def assert_stmt(out):
    assert True


def test_assert_statement_rejected():
    # R-ASSERT-3
    with pytest.raises(ct.TileSyntaxError, match="Unsupported syntax"):
        run1(assert_stmt, np.zeros(1))


@ct.kernel
def list_display(out):
    x = [1, 2]


def test_list_display_rejected():
    # R-PY-2
    with pytest.raises(ct.TileSyntaxError, match="list"):
        run1(list_display, np.zeros(1))


def test_shuffled_block_order_same_result(monkeypatch):
    # R-EXEC-4/7: block order is unspecified; the interpreter can shuffle it
    a = np.arange(32, dtype=np.float32)
    out1 = np.zeros(32, np.float32)
    out2 = np.zeros(32, np.float32)
    run1(branch_on_bid, a, out1, TILE, grid=(4,))
    monkeypatch.setenv("CUTILE_SHUFFLE_BLOCKS", "123")
    run1(branch_on_bid, a, out2, TILE, grid=(4,))
    np.testing.assert_array_equal(out1, out2)


def _make_applier(f):
    @ct.kernel
    def apply(a, out):
        ct.store(out, (0,), f(ct.load(a, (0,), (4,))))
    return apply


def test_inline_lambda_captured_by_kernel():
    # R-PY-6: a lambda written inside a call expression is a valid helper
    k_sum, k_inc = _make_applier(lambda x: ct.sum(x) * 2), _make_applier(lambda x: x + 1)
    a = np.arange(4, dtype=np.float32)
    out = np.zeros(4, np.float32)
    run1(k_sum, a, out)
    assert out.tolist() == [12, 0, 0, 0]
    run1(k_inc, a, out)
    assert out.tolist() == [1, 2, 3, 4]


# -- `while True:` left only by break (R-CF-8, R-CF-7) --------------------------------------
@ct.kernel
def _defined_at_break(x, n: int):
    i = 0
    while True:
        t = ct.full((4,), i, ct.int32)
        i += 1
        if i >= n:
            s = (t * 2, i)                 # first assigned here: defined at the only break
            break
    u, j = s
    ct.store(x, (0,), u + j)


def test_names_assigned_before_every_break_of_while_true_are_defined_R_CF_8():
    """R-CF-8: names assigned before every `break` of a `while True:` are defined after the
    loop (the loop is left only by a break), a tuple and a runtime tile included."""
    x = np.zeros(4, np.int32)
    ct.launch(None, (1,), _defined_at_break, (x, 5))
    np.testing.assert_array_equal(x, np.full(4, 4 * 2 + 5))


@ct.kernel
def _same_constant_at_breaks(x):
    a = 0
    while True:
        if ct.bid(0) == 0:
            a = 1
            break
        a += 1
        if a > 3:
            a = 1
            break
    ct.store(x, (ct.bid(0),), ct.full((a,), 3.0, x.dtype))     # a shape: a constant


def test_same_constant_at_every_break_stays_constant_R_CF_7():
    """R-CF-7: a variable holding the same constant at every break of a `while True:` is
    that constant after the loop (it can be a shape)."""
    x = np.zeros(2, np.float32)
    ct.launch(None, (2,), _same_constant_at_breaks, (x,))
    np.testing.assert_array_equal(x, [3.0, 3.0])


def test_name_missing_at_one_break_is_undefined_R_CF_8():
    """R-CF-8: a name not assigned before every break is undefined after the loop."""
    @ct.kernel
    def k(x, n: int):
        i = 0
        while True:
            i += 1
            if i > n:
                break
            if i == 3:
                w = i * 10
                break
        ct.scatter(x, 0, w)
    with pytest.raises(ct.TileSyntaxError, match="Undefined variable w.*every break"):
        ct.launch(None, (1,), k, (np.zeros(1, np.int32), 5))


def test_break_values_of_different_types_depend_on_path_R_CF_7():
    """R-CF-7: `a = 3.0; break` vs `a = 5; break` out of one `while` -> depends on path."""
    @ct.kernel
    def k(x):
        while True:
            if ct.bid(0) == 0:
                a = 3.0
                break
            a = 5
            break
        ct.scatter(x, 0, a)
    with pytest.raises(ct.TileTypeError, match="Type of `a` depends on path taken"):
        ct.launch(None, (1,), k, (np.zeros(1, np.float32),))


def test_function_defined_in_while_true_body():
    """R-CF-8 with a lambda assigned in a `while True:` body left by break (1.7's
    test_yield_closure_break pattern): it compiles and runs; functions are not carried."""
    @ct.kernel
    def k(x):
        i = 0
        while True:
            f = lambda: ct.scatter(x, ct.bid(axis=0), i + 1)     # noqa: E731, B023
            if i == 2:
                break
            f()
            i += 1
    x = np.zeros(4, np.int32)
    ct.launch(None, (1,), k, (x,))
    np.testing.assert_array_equal(x, [2, 0, 0, 0])


@ct.kernel
def defined_in_one_branch(x, y):
    i = ct.bid(0)
    xi = ct.load(x, (i,), (4,))
    if i == 0:
        acc = ct.load(y, (i,), (4,))
        yi = acc + xi
    else:
        yi = xi
    yi += acc
    ct.store(y, (i,), yi)


def test_name_defined_on_some_branches_is_a_type_error_R_CF_8():
    """R-CF-8, as 1.7: reading a name that only some branches define is a TileTypeError."""
    with pytest.raises(ct.TileTypeError, match="potentially undefined variable `acc`: it is "
                       "not defined on every path"):
        ct.launch(None, (2,), defined_in_one_branch, (np.zeros(8, np.float32),
                                                      np.zeros(8, np.float32)))

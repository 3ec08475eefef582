"""Compile-time metaprogramming and hints: §21.3 (R-META-1..5) and §21.4 (R-HINT-1), on the
interpreter.  Error tests assert the class, the message and the user's line (``# E:<name>``)."""

from __future__ import annotations

import re

import error_markers
import numpy as np
import pytest

import cutile as ct

line_of, expect_error = error_markers.for_file(__file__)

SIZES = (1, 2, 3)
MISSING_LIMIT = 4


def x8():
    return np.arange(8, dtype=np.float32)


# -- static_eval (R-META-1) --------------------------------------------------------------------
@ct.kernel
def k_static_eval(x, out, N: ct.Constant[int]):
    t = ct.load(x, (0,), (N,))
    m = ct.static_eval(sum(SIZES) * N)                # host Python: builtin sum, a global
    u = ct.static_eval(t + 1 if N % 2 == 0 else t - 1)  # proxies of runtime values
    shape_ok = ct.static_eval(t.shape == (N,) and t.dtype == ct.float32 and t.ndim == 1)
    ct.store(out, (0,), u * m + (1 if shape_ok else 0))


def test_static_eval_constants_and_proxies():
    """R-META-1: host evaluation with globals and locals; proxies expose shape/dtype/ndim and
    arithmetic selecting a runtime value."""
    out = np.zeros(8, np.float32)
    ct.launch(None, (1,), k_static_eval, (x8(), out, 8))
    np.testing.assert_array_equal(out, (x8() + 1) * 48 + 1)


@ct.kernel
def k_eval_unknown(out):
    n = ct.static_eval(NOT_DEFINED_ANYWHERE + 1)  # noqa: F821  # E:unknown
    ct.store(out, (0,), ct.full((8,), n, ct.float32))


def test_static_eval_unknown_name():
    """R-META-1: an exception inside -> TileStaticEvalError at the call."""
    e = expect_error(k_eval_unknown, (np.zeros(8, np.float32),), ct.TileStaticEvalError,
                     "Exception was raised inside static_eval", "unknown")
    assert "NOT_DEFINED_ANYWHERE" in e.message


@ct.kernel
def k_eval_tile_op(x, out):
    t = ct.static_eval(ct.load(x, (0,), (8,)))  # E:tile_op
    ct.store(out, (0,), t)


@ct.kernel
def k_eval_nested(out):
    n = ct.static_eval(ct.static_eval(3))  # E:nested
    ct.store(out, (0,), ct.full((8,), n, ct.float32))


@ct.kernel
def k_eval_two_args(out):
    n = ct.static_eval(1, 2)  # E:two_args
    ct.store(out, (0,), ct.full((8,), n, ct.float32))


@ct.kernel
def k_eval_alias(out):
    se = ct.static_eval
    n = se(3)  # E:alias
    ct.store(out, (0,), ct.full((8,), n, ct.float32))


@ct.kernel
def k_eval_walrus(out):
    n = ct.static_eval((y := 3) + y)  # noqa: F841  # E:walrus
    ct.store(out, (0,), ct.full((8,), n, ct.float32))


@pytest.mark.parametrize("kernel,args,cls,fragment,marker", [
    (k_eval_tile_op, (x8(), x8()), ct.TileStaticEvalError,
     r"load\(\) cannot be called inside static_eval", "tile_op"),
    (k_eval_nested, (x8(),), ct.TileStaticEvalError,
     r"static_eval\(\) cannot be used inside static_eval\(\)\.", "nested"),
    (k_eval_two_args, (x8(),), ct.TileSyntaxError, "expects a single expression", "two_args"),
    (k_eval_alias, (x8(),), ct.TileSyntaxError, "must be used directly", "alias"),
    (k_eval_walrus, (x8(),), ct.TileSyntaxError,
     "expression attempted to modify a local variable 'y' with ':='", "walrus"),
])
def test_static_eval_errors(kernel, args, cls, fragment, marker):
    """R-META-1: tile operations, nesting, arity, aliasing and ':=' are rejected."""
    expect_error(kernel, args, cls, fragment, marker)


# -- static_assert (R-META-2) ------------------------------------------------------------------
@ct.kernel
def k_assert(out, N: ct.Constant[int]):
    ct.static_assert(N % 4 == 0, f"N={N} must be a multiple of 4")  # E:assert
    ct.static_assert(N > 0)
    ct.store(out, (0,), ct.full((8,), N, ct.float32))


def test_static_assert_passes():
    """R-META-2: a true condition compiles to nothing."""
    out = np.zeros(8, np.float32)
    ct.launch(None, (1,), k_assert, (out, 8))
    np.testing.assert_array_equal(out, np.full(8, 8, np.float32))


def test_static_assert_fails_with_message():
    """R-META-2: a false condition -> TileStaticAssertionError 'Static assertion failed: msg'."""
    e = expect_error(k_assert, (np.zeros(8, np.float32), 6), ct.TileStaticAssertionError,
                     "Static assertion failed: N=6 must be a multiple of 4", "assert")
    assert e.message == "Static assertion failed: N=6 must be a multiple of 4"


@ct.kernel
def k_assert_nomsg(out, N: ct.Constant[int]):
    ct.static_assert(N < MISSING_LIMIT)  # E:nomsg
    ct.store(out, (0,), ct.full((8,), N, ct.float32))


@ct.kernel
def k_assert_runtime(x, out):
    t = ct.load(x, (0,), (8,))
    ct.static_assert(t)  # E:runtime_cond
    ct.store(out, (0,), t)


@ct.kernel
def k_assert_not_bool(out):
    ct.static_assert(1)  # E:not_bool
    ct.store(out, (0,), ct.full((8,), 1, ct.float32))


@ct.kernel
def k_assert_arity(out):
    ct.static_assert(True, "a", "b")  # E:arity
    ct.store(out, (0,), ct.full((8,), 1, ct.float32))


def test_static_assert_without_message():
    """R-META-2: no message -> exactly 'Static assertion failed'."""
    e = expect_error(k_assert_nomsg, (np.zeros(8, np.float32), 9), ct.TileStaticAssertionError,
                     "Static assertion failed", "nomsg")
    assert e.message == "Static assertion failed"


@ct.kernel
def k_assert_tile_op(out):
    ct.static_assert(ct.ones((4,), dtype=ct.int32).dtype == ct.int32)  # E:assert_tile_op
    ct.store(out, (0,), ct.full((8,), 1, ct.float32))


@ct.kernel
def k_assert_in_eval(out):
    ct.static_eval(ct.static_assert(True))  # E:assert_in_eval
    ct.store(out, (0,), ct.full((8,), 1, ct.float32))


@pytest.mark.parametrize("kernel,args,cls,fragment,marker", [
    (k_assert_tile_op, (x8(),), ct.TileStaticEvalError,
     r"ones\(\) cannot be called inside static_assert\(\)", "assert_tile_op"),
    (k_assert_in_eval, (x8(),), ct.TileStaticEvalError,
     r"static_assert\(\) cannot be used inside static_eval\(\)\.", "assert_in_eval"),
    (k_assert_runtime, (x8(), x8()), ct.TileTypeError, "must be a compile-time constant",
     "runtime_cond"),
    (k_assert_not_bool, (x8(),), ct.TileTypeError, "must be a boolean", "not_bool"),
    (k_assert_arity, (x8(),), ct.TileSyntaxError,
     r"static_assert\(cond, msg=None, /\) expects one or two positional arguments", "arity"),
])
def test_static_assert_errors(kernel, args, cls, fragment, marker):
    """R-META-2: the condition must be a constant bool; at most two positional arguments."""
    expect_error(kernel, args, cls, fragment, marker)


# -- static_iter (R-META-3) --------------------------------------------------------------------
@ct.kernel
def k_static_iter(x, out):
    acc = ct.zeros((8,), ct.float32)
    for i, s in ct.static_iter(enumerate(SIZES)):
        t = ct.load(x, (0,), (8,))
        if i == 1:                                 # a constant: the body differs per item
            acc = acc + t * s
        else:
            acc = acc - s
    shapes = tuple(ct.full((k,), k, ct.int32) for k in ct.static_iter((1, 2, 4)))
    total = 0
    for sh in ct.static_iter(shapes):              # items may be runtime values (proxies)
        total = total + ct.sum(sh)                 # sh.shape is different in each copy
    ct.store(out, (0,), acc + total)


def test_static_iter_unrolls_with_constant_targets():
    """R-META-3: the target is a constant per copy of the body (usable in shapes and constant
    branches); items may be tiles of different shapes; unpacking targets work."""
    out = np.zeros(8, np.float32)
    ct.launch(None, (1,), k_static_iter, (x8(), out))
    np.testing.assert_array_equal(out, x8() * 2 - 1 - 3 + (1 + 4 + 16))


@ct.kernel
def k_iter_break(out):
    for i in ct.static_iter(range(3)):
        if i == 1:
            break  # E:break
    ct.store(out, (0,), ct.full((8,), 1, ct.float32))


@ct.kernel
def k_iter_return(out):
    for i in ct.static_iter(range(3)):
        return  # E:return
    ct.store(out, (0,), ct.full((8,), 1, ct.float32))


@ct.kernel
def k_iter_elsewhere(out):
    it = ct.static_iter(range(3))  # E:elsewhere
    ct.store(out, (0,), ct.full((8,), 1, ct.float32))


@ct.kernel
def k_iter_too_many(out):
    for i in ct.static_iter(range(1001)):  # E:too_many
        pass
    ct.store(out, (0,), ct.full((8,), 1, ct.float32))


@ct.kernel
def k_iter_dynamic(out, n):
    for i in ct.static_iter(range(n)):  # E:dynamic
        pass
    ct.store(out, (0,), ct.full((8,), 1, ct.float32))


@ct.kernel
def k_iter_tile_op(out):
    for i in ct.static_iter(ct.ones((4,), dtype=ct.int32)):  # E:iter_tile_op
        pass
    ct.store(out, (0,), ct.full((8,), 1, ct.float32))


@ct.kernel
def k_iter_not_iterable(out):
    for i in ct.static_iter(42):  # E:not_iterable
        pass
    ct.store(out, (0,), ct.full((8,), 1, ct.float32))


@ct.kernel
def k_iter_bad_item(out):
    for i in ct.static_iter(([1, 2], [3, 4])):  # E:bad_item
        pass
    ct.store(out, (0,), ct.full((8,), 1, ct.float32))


def failing_gen():
    yield 1
    raise KeyError("k")


@ct.kernel
def k_iter_raises(out):
    for i in ct.static_iter(failing_gen()):  # E:iter_raises
        pass
    ct.store(out, (0,), ct.full((8,), 1, ct.float32))


@pytest.mark.parametrize("kernel,args,cls,fragment,marker", [
    (k_iter_tile_op, (x8(),), ct.TileStaticEvalError,
     r"ones\(\) cannot be called inside static_iter\(\) iterable", "iter_tile_op"),
    (k_iter_break, (x8(),), ct.TileSyntaxError,
     r"Break in a for loop with static_iter\(\) is not supported", "break"),
    (k_iter_return, (x8(),), ct.TileSyntaxError,
     r"Returning from a for loop is not supported \(here a static_iter\(\)", "return"),
    (k_iter_elsewhere, (x8(),), ct.TileSyntaxError,
     r"static_iter\(\) is only allowed as iterable in a `for` loop",
     "elsewhere"),
    (k_iter_too_many, (x8(),), ct.TileStaticEvalError,
     r"Maximum number of iterations \(1000\) has been reached", "too_many"),
    (k_iter_not_iterable, (x8(),), ct.TileTypeError,
     re.escape("Invalid static_iter() iterable: 'int' object is not iterable"), "not_iterable"),
    (k_iter_bad_item, (x8(),), ct.TileStaticEvalError,
     re.escape("Invalid item #0 of static_iter() iterable: Cannot create constant from value "
               "of type"), "bad_item"),
    (k_iter_raises, (x8(),), ct.TileTypeError,
     re.escape("Error was raised while obtaining item #1 from the static_iter() iterable: 'k'"),
     "iter_raises"),
    (k_iter_dynamic, (x8(), 3), ct.StaticException,
     "Symbolic tile has no concrete value and thus cannot be converted to an integer",
     "dynamic"),
])
def test_static_iter_errors(kernel, args, cls, fragment, marker):
    """R-META-3 / R-CF-9: break/continue/return inside, use outside a for/comprehension,
    more than 1000 items, a non-iterable, an item that is not a tile-code value, an iterator
    that raises and runtime bounds are rejected (1.7's classes and messages)."""
    expect_error(kernel, args, cls, fragment, marker)


# -- ensure_constant (R-META-4) and assume_divisible_by (R-HINT-1) -----------------------------
@ct.kernel
def k_ensure(x, out, N: ct.Constant[int], n):
    t = ct.load(x, (0,), (8,))
    if ct.ensure_constant(N > 1):                   # R-CF-3: a constant condition folds
        t = t + ct.ensure_constant(N)
    m = ct.assume_divisible_by(n, 4)
    k = ct.assume_divisible_by(N, 2)
    ct.store(out, (0,), t + m + k)


def test_ensure_constant_and_assume_divisible_by_return_their_argument():
    """R-META-4, R-HINT-1: both return the value unchanged."""
    out = np.zeros(8, np.float32)
    ct.launch(None, (1,), k_ensure, (x8(), out, 4, 8))
    np.testing.assert_array_equal(out, x8() + 4 + 8 + 4)


@ct.kernel
def k_ensure_runtime(out, n):
    m = ct.ensure_constant(n)  # E:ensure
    ct.store(out, (0,), ct.full((8,), m, ct.float32))


@ct.kernel
def k_divisible_contradicts(out):
    m = ct.assume_divisible_by(6, 4)  # E:contradicts
    ct.store(out, (0,), ct.full((8,), m, ct.float32))


@ct.kernel
def k_divisible_bad_divisor(out, n):
    m = ct.assume_divisible_by(n, 0)  # E:divisor
    ct.store(out, (0,), ct.full((8,), m, ct.float32))


@ct.kernel
def k_divisible_float(out, y):
    m = ct.assume_divisible_by(y, 2)  # E:float
    ct.store(out, (0,), ct.full((8,), m, ct.float32))


@pytest.mark.parametrize("kernel,args,cls,fragment,marker", [
    (k_ensure_runtime, (x8(), 3), ct.TileStaticAssertionError,
     r"Argument of ensure_constant\(\) is not a compile-time constant", "ensure"),
    (k_divisible_contradicts, (x8(),), ct.TileTypeError, "contradicts a known constant",
     "contradicts"),
    (k_divisible_bad_divisor, (x8(), 3), ct.TileTypeError, "requires a positive divisor",
     "divisor"),
    (k_divisible_float, (x8(), 2.0), ct.TileTypeError, "requires an integer scalar", "float"),
])
def test_ensure_constant_and_hint_errors(kernel, args, cls, fragment, marker):
    """R-META-4: a runtime value -> TileStaticAssertionError; R-HINT-1 argument checks."""
    expect_error(kernel, args, cls, fragment, marker)


def test_static_functions_refuse_host_calls():
    """R-PY-7: the static functions are device-only."""
    for f in (ct.static_eval, ct.static_assert, ct.static_iter, ct.static_exception,
              ct.ensure_constant, ct.assume_divisible_by):
        with pytest.raises(RuntimeError, match="Device functions can only be called"):
            f(1)


@ct.kernel
def k_assert_proxy_message(x, out):
    t = ct.load(x, (0,), (8,))
    ct.static_assert(t.dtype == ct.int32, f"Expected {t} to be int32")  # E:proxy_msg
    ct.store(out, (0,), t)


def test_static_assert_message_shows_proxies():
    """R-META-2: the message is evaluated like static_eval; a tile prints as 1.7 prints it."""
    e = expect_error(k_assert_proxy_message, (x8(), x8()), ct.TileStaticAssertionError,
                     "Static assertion failed", "proxy_msg")
    assert e.message == "Static assertion failed: Expected <tile[float32, (8,)]> to be int32"


# -- static_exception / StaticException (R-META-5, 1.7) ----------------------------------------
def checked_n(n):
    if n > 16:
        raise ct.static_exception(ValueError(f"N={n} is too large"))  # E:static_exc
    return n


@ct.kernel
def k_static_exc(x, out, N: ct.Constant[int]):
    ct.store(out, (0,), ct.load(x, (0,), (8,)) + checked_n(N))


@ct.kernel
def k_static_exc_runtime_branch(x, out, n):
    t = ct.load(x, (0,), (8,))
    if n > 3:                                # a runtime condition: both branches compile
        raise ct.static_exception(KeyError("k"))  # E:exc_runtime
    ct.store(out, (0,), t)


@ct.kernel
def k_raise_plain(out):
    raise ValueError("no")  # E:raise_plain


@ct.kernel
def k_raise_from(out):
    raise ct.static_exception(ValueError("a")) from None  # E:raise_from


@ct.kernel
def k_static_exc_elsewhere(out):
    e = ct.static_exception(ValueError("a"))  # E:exc_elsewhere
    ct.store(out, (0,), ct.full((8,), 1, ct.float32))


@ct.kernel
def k_static_exc_class(out):
    raise ct.static_exception(123)  # E:exc_class


@ct.kernel
def k_static_exc_arity(out):
    raise ct.static_exception(ValueError("a"), 2)  # E:exc_arity


def test_static_exception_not_reached_compiles():
    """R-META-5: a raise in a branch folded away by a constant condition is never reached."""
    out = np.zeros(8, np.float32)
    ct.launch(None, (1,), k_static_exc, (x8(), out, 4))
    np.testing.assert_array_equal(out, x8() + 4)


def test_static_exception_reached_fails_compilation():
    """R-META-5: reaching ``raise ct.static_exception(exc)`` raises ct.StaticException (a
    TileStaticEvalError) naming the exception, at the raise line of the helper."""
    e = expect_error(k_static_exc, (x8(), np.zeros(8, np.float32), 20), ct.StaticException,
                     "Exception was raised at compile time", "static_exc")
    assert e.message == "Exception was raised at compile time (ValueError: N=20 is too large)"
    assert isinstance(e, ct.TileStaticEvalError)
    e = expect_error(k_static_exc_runtime_branch, (x8(), x8(), 1), ct.StaticException,
                     "KeyError", "exc_runtime")


@pytest.mark.parametrize("kernel,args,cls,fragment,marker", [
    (k_raise_plain, (x8(),), ct.TileSyntaxError,
     r"Raised exception must be wrapped in static_exception\(\)", "raise_plain"),
    (k_raise_from, (x8(),), ct.TileSyntaxError, "'raise from' syntax is not supported",
     "raise_from"),
    (k_static_exc_elsewhere, (x8(),), ct.TileSyntaxError,
     r"static_exception\(\) is only allowed after `raise`", "exc_elsewhere"),
    (k_static_exc_class, (x8(),), ct.StaticException,
     re.escape("Exception was raised inside static_exception() expression (TypeError: 'int' "
               "is not derived from 'BaseException')"), "exc_class"),
    (k_static_exc_arity, (x8(),), ct.TileSyntaxError,
     r"static_exception\(\) expects a single expression", "exc_arity"),
])
def test_static_exception_errors(kernel, args, cls, fragment, marker):
    """R-META-5 / R-PY-1: only ``raise ct.static_exception(<exception instance>)`` is accepted;
    ``raise ... from`` and static_exception() outside a raise are TileSyntaxError."""
    expect_error(kernel, args, cls, fragment, marker)


def test_static_eval_exception_is_a_static_exception():
    """R-META-1 (1.7): an exception inside static_eval is a ct.StaticException."""
    expect_error(k_eval_unknown, (np.zeros(8, np.float32),), ct.StaticException,
                 r"Exception was raised inside static_eval\(\) \(NameError: ", "unknown")


# -- static_eval: pure ct operations, reprs, methods (R-META-1, 1.7) ----------------------------
REPRS: list = []


@ct.kernel
def k_eval_pure_ops(x, out):
    t = ct.load(x, (0,), (8,))
    n = ct.static_eval(ct.cdiv(len(SIZES) * 7, 2))          # constants fold: 11
    m = ct.static_eval(ct.minimum(t, 3.0) + ct.maximum(t, 5.0))   # proxies: runtime tiles
    ct.static_eval(REPRS.append(repr(x)))
    ct.static_eval(REPRS.append(repr(t)))
    sl = ct.static_eval(x.slice)                              # a method, called in tile code
    first = ct.gather(sl(0, 1, 8), 0)
    ct.store(out, (0,), m * n + first)


def test_static_eval_pure_ops_reprs_and_methods():
    """R-META-1 (1.7): the pure ct arithmetic/comparison ops work inside static_eval (on
    constants and on proxies); repr shows dtype and shape (unknown extents as ?); a method
    of an array may be returned and called in tile code."""
    REPRS.clear()
    out = np.zeros(8, np.float32)
    ct.launch(None, (1,), k_eval_pure_ops, (x8(), out))
    x = x8()
    np.testing.assert_array_equal(out, (np.minimum(x, 3) + np.maximum(x, 5)) * 11 + x[1])
    assert REPRS == ["<array[float32, (?,)]>", "<tile[float32, (8,)]>"]


@ct.kernel
def k_eval_calls_closure(out):
    def f(n):
        return n + 1
    v = ct.static_eval(f(3))  # E:eval_closure
    ct.store(out, (0,), ct.full((8,), v, ct.float32))


@ct.kernel
def k_eval_calls_method(x, out):
    v = ct.static_eval(x.slice(0, 1, 2))  # E:eval_method
    ct.store(out, (0,), ct.full((8,), 1, ct.float32))


@pytest.mark.parametrize("kernel,args,fragment,marker", [
    (k_eval_calls_closure, (x8(),), r"function cannot be called inside static_eval\(\)",
     "eval_closure"),
    (k_eval_calls_method, (x8(), x8()), r"slice\(\) cannot be called inside static_eval\(\)",
     "eval_method"),
])
def test_static_eval_refuses_tile_code_calls(kernel, args, fragment, marker):
    """R-META-1: a tile-code function or a method call inside static_eval."""
    expect_error(kernel, args, ct.TileStaticEvalError, fragment, marker)

"""Compile-time metaprogramming and hints: §21.3 (R-META-1..4) and §21.4 (R-HINT-1), on the
interpreter.  Error tests assert the class, the message and the user's line (``# E:<name>``)."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

import cutile as ct

_SRC = open(__file__).read().splitlines()
SIZES = (1, 2, 3)
MISSING_LIMIT = 4


def line_of(marker: str) -> int:
    pat = re.compile(rf"# E:{re.escape(marker)}(\s|$)")
    return next(i for i, s in enumerate(_SRC, 1) if pat.search(s))


def expect_error(kernel, args, cls, fragment, marker):
    with pytest.raises(cls, match=fragment) as info:
        ct.launch(None, (1,), kernel, args)
    e = info.value
    frames, loc = [], e.loc
    while loc is not None:
        frames.append(loc.line)
        loc = loc.caller
    assert line_of(marker) in frames, f"error points at lines {frames}"
    assert os.path.basename(__file__) in str(e)
    return e


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
     r"static_eval\(\) cannot be used inside static_eval", "nested"),
    (k_eval_two_args, (x8(),), ct.TileSyntaxError, "expects a single expression", "two_args"),
    (k_eval_alias, (x8(),), ct.TileSyntaxError, "must be used directly", "alias"),
    (k_eval_walrus, (x8(),), ct.TileSyntaxError, "attempted to modify a local", "walrus"),
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


@pytest.mark.parametrize("kernel,args,cls,fragment,marker", [
    (k_assert_runtime, (x8(), x8()), ct.TileTypeError, "must be a compile-time constant",
     "runtime_cond"),
    (k_assert_not_bool, (x8(),), ct.TileTypeError, "must be a boolean", "not_bool"),
    (k_assert_arity, (x8(),), ct.TileSyntaxError, r"static_assert\(cond, msg=None, /\)",
     "arity"),
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


@pytest.mark.parametrize("kernel,args,cls,fragment,marker", [
    (k_iter_break, (x8(),), ct.TileSyntaxError,
     r"Break in a for loop with static_iter\(\) is not supported", "break"),
    (k_iter_return, (x8(),), ct.TileSyntaxError, "Return in a for loop with static_iter",
     "return"),
    (k_iter_elsewhere, (x8(),), ct.TileSyntaxError, "only allowed as the iterable",
     "elsewhere"),
    (k_iter_too_many, (x8(),), ct.TileStaticEvalError,
     r"Maximum number of iterations \(1000\) has been reached", "too_many"),
    (k_iter_dynamic, (x8(), 3), ct.TileStaticEvalError, "Symbolic tile has no concrete value",
     "dynamic"),
])
def test_static_iter_errors(kernel, args, cls, fragment, marker):
    """R-META-3 / R-CF-9: break/continue/return inside, use outside a for/comprehension,
    more than 1000 items and runtime bounds are rejected."""
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
    for f in (ct.static_eval, ct.static_assert, ct.static_iter, ct.ensure_constant,
              ct.assume_divisible_by):
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

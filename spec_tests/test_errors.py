"""Bad input gets a clear error that points at the user's line (§25, R-ERR-*, R-CONV-4).

Each kernel marks the offending line with ``# E:<name>``; the test asserts the error class,
a message fragment, and that ``e.loc`` (and the printed message) name that exact line.
"""

from __future__ import annotations

import math

import error_markers
import numpy as np
import pytest
from spec_executor import interp_only_ub

import cutile as ct

line_of, expect_error = error_markers.for_file(__file__, strict=True)


F32 = np.zeros(16, np.float32)
I32 = np.zeros(16, np.int32)


@ct.kernel
def k_shape_not_pow2(a):
    t = ct.load(a, (0,), (3,))  # E:pow2


@ct.kernel
def k_store_dtype(a, out):
    ct.store(out, (0,), ct.load(a, (0,), (4,)) + 2.5)  # E:store_dtype


@ct.kernel
def k_try(a):
    try:  # E:try
        pass
    except Exception:
        pass


def _bad_helper(x):
    return x.no_such_attribute  # E:helper_attr


@ct.kernel
def k_helper(a):
    t = ct.load(a, (0,), (4,))
    _bad_helper(t)  # E:helper_call


@ct.kernel
def k_unknown_kw(a):
    ct.load(a, (0,), (4,), paddingmode=ct.PaddingMode.ZERO)  # E:kw


@ct.kernel
def k_bid_axis(a):
    ct.bid(3)  # E:bid_axis


@ct.kernel
def k_undefined(a):
    ct.store(a, (0,), nope)  # E:undefined  # noqa: F821


@ct.kernel
def k_array_subscript(a):
    x = a[0]  # E:array_sub


@ct.kernel
def k_array_aug_assign(a):
    a[0] += 1  # E:array_aug


@ct.kernel
def k_tile_assign(a):
    t = ct.load(a, (0,), (4,))
    t[0] = 1  # E:tile_assign


@ct.kernel
def k_promotion(a, b):
    x = ct.load(a, (0,), (4,))
    y = ct.load(b, (0,), (4,))
    z = x + y  # E:promo


@ct.kernel
def k_broadcast(a):
    x = ct.load(a, (0,), (4,))
    y = ct.load(a, (0,), (8,))
    z = x * y  # E:bcast


@ct.kernel
def k_while_else(a):
    while False:  # E:while_else
        pass
    else:
        pass


@ct.kernel
def k_import(a):
    import math as m  # E:import  # noqa: F401


@ct.kernel
def k_round(a):
    x = round(1.5)  # E:round


@ct.kernel
def k_inner_kernel(a):
    pass


@ct.kernel
def k_call_kernel(a):
    k_inner_kernel(a)  # E:call_kernel


@ct.kernel
def k_runtime_shape(a, n):
    ct.load(a, (0,), (n,))  # E:runtime_shape


@ct.kernel
def k_padding_none(a):
    ct.load(a, (0,), (4,), padding_mode=None)  # E:padding


@ct.kernel
def k_full_shape(a):
    ct.full((2, 3), 0, ct.float32)  # E:full_shape


@ct.kernel
def k_arange_positional(a):
    ct.arange(8, ct.int32)  # E:arange


@ct.kernel
def k_reshape(a):
    ct.reshape(ct.load(a, (0,), (4,)), (8,))  # E:reshape


@ct.kernel
def k_mma_dtypes(a, b):
    x = ct.load(a, (0, 0), (4, 4))
    y = ct.load(b, (0, 0), (4, 4))
    ct.mma(x, y, ct.zeros((4, 4), ct.float32))  # E:mma


COUNTER = 0


@ct.kernel
def k_global_assign(a):
    global COUNTER  # E:global


@ct.kernel
def k_nested_decorator(a):
    @staticmethod  # E:decorator
    def f():
        pass


@ct.kernel
def k_const_div_zero(a):
    x = 1 // 0  # E:divzero


@ct.kernel
def k_int8_range(a):
    t = ct.load(a, (0,), (4,))
    u = t - 300  # E:int8_range


@ct.kernel
def k_reduce_f8(a):
    t = ct.load(a, (0,), (4,)).astype(ct.float8_e4m3fn)
    ct.sum(t)  # E:reduce_f8


@ct.kernel
def k_nonconst_axis(a, n):
    ct.sum(ct.load(a, (0,), (4,)), axis=n)  # E:axis


@ct.kernel
def k_index_rank(a):
    ct.load(a, (0, 0), (4,))  # E:index_rank


@ct.kernel
def k_lambda_error(a):
    f = lambda x: x.bad  # E:lambda  # noqa: E731
    f(ct.load(a, (0,), (4,)))


CASES = [
    (k_shape_not_pow2, (F32,), ct.TileTypeError, "is not a power of two", "pow2"),
    (k_store_dtype, (I32, I32), ct.TileTypeError, "Stored tile is incompatible", "store_dtype"),
    (k_try, (F32,), ct.TileSyntaxError, "Unsupported syntax", "try"),
    (k_helper, (F32,), ct.TileTypeError, "no attribute", "helper_attr"),
    (k_helper, (F32,), ct.TileTypeError, "no attribute", "helper_call"),
    (k_unknown_kw, (F32,), ct.TileTypeError, r"load\(\):", "kw"),
    (k_bid_axis, (F32,), ct.TileTypeError, "Axis must be 0, 1, or 2", "bid_axis"),
    (k_undefined, (F32,), ct.TileSyntaxError, "Undefined variable nope", "undefined"),
    (k_array_subscript, (F32,), ct.TileTypeError, "not directly subscriptable", "array_sub"),
    (k_array_aug_assign, (F32,), ct.TileTypeError,        # read first, as Python (1.7)
     "Arrays are not directly subscriptable; use ct.load", "array_aug"),
    (k_tile_assign, (F32,), ct.TileTypeError,
     "Tiles are immutable: item assignment is not supported", "tile_assign"),
    (k_promotion, (np.zeros(4, np.uint32), np.zeros(4, np.int32)), ct.TileTypeError,
     "Implicit promotion of uint32 and int32", "promo"),
    (k_broadcast, (F32,), ct.TileTypeError, "not broadcastable", "bcast"),
    (k_while_else, (F32,), ct.TileSyntaxError, "'while-else' is not supported", "while_else"),
    (k_import, (F32,), ct.TileSyntaxError, "Unsupported syntax", "import"),
    (k_round, (F32,), ct.TileError, r"round\(\) is not supported", "round"),
    (k_call_kernel, (F32,), ct.TileTypeError, "cannot be called", "call_kernel"),
    (k_runtime_shape, (F32, 4), ct.TileTypeError, "constant integer tuple", "runtime_shape"),
    (k_padding_none, (F32,), ct.TileTypeError, "Expected PaddingMode", "padding"),
    (k_full_shape, (F32,), ct.TileTypeError,
     r"Dimension #1 of shape \(2, 3\) is not a power of two", "full_shape"),
    (k_arange_positional, (F32,), ct.TileTypeError, r"arange\(\)", "arange"),
    (k_reshape, (F32,), ct.TileTypeError, r"Cannot reshape \(4,\) to \(8,\)", "reshape"),
    (k_mma_dtypes, (np.zeros((4, 4), np.float16), np.zeros((4, 4), np.float32)),
     ct.TileTypeError, "x and y must have the same dtype", "mma"),
    (k_global_assign, (F32,), ct.TileSyntaxError, "Unsupported syntax", "global"),
    (k_nested_decorator, (F32,), ct.TileSyntaxError, "Decorators on nested functions",
     "decorator"),
    (k_const_div_zero, (F32,), ct.TileValueError, "Division by zero", "divzero"),
    (k_int8_range, (np.zeros(4, np.int8),), ct.TileValueError,
     "Integer constant -?300 is out of range of int8", "int8_range"),
    (k_reduce_f8, (F32,), ct.TileTypeError, "Non-arithmetic dtype float8_e4m3fn", "reduce_f8"),
    (k_nonconst_axis, (F32, 1), ct.TileTypeError, "constant", "axis"),
    (k_index_rank, (F32,), ct.TileTypeError, "Index size 2 does not match the array rank 1",
     "index_rank"),
    (k_lambda_error, (F32,), ct.TileTypeError, "no attribute", "lambda"),
]


@pytest.mark.parametrize("kernel,args,cls,fragment,marker", CASES,
                         ids=[c[4] for c in CASES])
def test_bad_input_points_at_user_line(kernel, args, cls, fragment, marker):
    # R-ERR-1, R-ERR-4, R-CONV-3
    expect_error(kernel, args, cls, fragment, marker)


def test_errors_are_raised_before_any_block_runs():
    # R-CONV-4: a kernel that would store then fail type checking writes nothing
    @ct.kernel
    def partial(out):
        ct.store(out, (0,), ct.full((4,), 1, ct.int32))
        ct.load(out, (0,), (3,))

    out = np.zeros(4, np.int32)
    with pytest.raises(ct.TileTypeError):
        ct.launch(None, (2,), partial, (out,))
    assert not out.any()


# -- host-side errors are plain Python exceptions (R-ERR-2, §24) ---------------------------
@ct.kernel
def two_args(a, b):
    pass


@ct.kernel
def one_arg(a):
    pass


def test_launch_argument_count():
    # R-LAUNCH-3
    with pytest.raises(TypeError, match="Kernel expects 2 arguments but 1 was given"):
        ct.launch(None, (1,), two_args, (F32,))
    with pytest.raises(TypeError, match="Kernel expects 1 argument but 2 were given"):
        ct.launch(None, (1,), one_arg, (F32, F32))


@pytest.mark.parametrize("grid,exc,frag", [
    ([1], TypeError, "Grid must be a tuple"),
    ((1, 1, 1, 1), ValueError, "Grid dimensions must be at most 3"),
    ((2 ** 24,), ValueError, r"Grid\[0\] exceeds 24-bit limit: max=16777215, got=16777216\. "
                             r"Use multiple kernel launches"),
    ((-1,), ValueError, "non-negative"),
])
def test_launch_grid_checks(grid, exc, frag):
    # R-LAUNCH-2
    with pytest.raises(exc, match=frag):
        ct.launch(None, grid, two_args, (F32, F32))


def test_launch_rejects_non_kernel_and_non_tuple_args():
    # R-LAUNCH-1
    with pytest.raises(TypeError, match="tile kernel as the third argument"):
        ct.launch(None, (1,), lambda: None, ())
    with pytest.raises(TypeError, match="tuple as the fourth argument"):
        ct.launch(None, (1,), two_args, [F32, F32])
    with pytest.raises(RuntimeError, match="Unexpected keyword argument"):
        ct.launch(None, (1,), two_args, (F32, F32), foo=1)


def test_unsupported_argument_object():
    # R-LAUNCH-3
    with pytest.raises(TypeError, match="Objects of type 'object' are not supported"):
        ct.launch(None, (1,), two_args, (F32, object()))


def test_scalar_overflow():
    # R-LAUNCH-3: a Python int out of int32 range
    with pytest.raises(OverflowError):
        ct.launch(None, (1,), two_args, (F32, 2 ** 40))


def test_kernel_not_callable_and_ops_device_only():
    # R-KERN-4, R-PY-7
    with pytest.raises(TypeError, match="cannot be called directly"):
        two_args(F32, F32)
    with pytest.raises(RuntimeError, match="Device functions can only be called from device"):
        ct.load(F32, (0,), (4,))
    assert ct.cdiv(10, 4) == 3                  # host-enabled (R-DIV-4)


def test_kernel_options_validated_at_decoration():
    # R-KERN-1/2
    with pytest.raises(ValueError, match="num_ctas should be power of 2"):
        ct.kernel(num_ctas=3)(lambda a: None)
    with pytest.raises(ValueError, match="occupancy"):
        @ct.kernel(occupancy=64)
        def f(a):
            pass
    with pytest.raises(ValueError, match="Invalid GPU architecture name: sm100"):
        ct.ByTarget(sm100=2)

    @ct.kernel(num_ctas=ct.ByTarget(sm_90=2, default=1), occupancy=2, opt_level=2)
    def g(out):
        ct.store(out, (0,), 1)

    out = np.zeros(1, np.int32)
    ct.launch(None, (1,), g, (out,))
    assert out[0] == 1


def test_variadic_kernel_parameters_rejected():
    # R-PY-6
    with pytest.raises(ct.TileSyntaxError, match="Variadic kernel parameters"):
        @ct.kernel
        def f(*args):
            pass


def test_internal_errors_are_tile_errors():
    # R-ERR-5: every compile-time diagnostic is a TileError subclass
    assert issubclass(ct.TileTypeError, ct.TileError)
    assert issubclass(ct.TileCompilerExecutionError, ct.TileInternalError)
    assert issubclass(ct.UndefinedBehaviorError, RuntimeError)
    from cutile import _exception  # upstream aliases (R-ERR-1)
    assert _exception.TypeCheckingError is ct.TileTypeError


# -- bad input found by the 43-kernel sweep (issue 11) ----------------------------------------
@ct.kernel
def k_huge_tile(a, b):
    t = ct.load(a, (0,), (1 << 40,))  # E:huge_tile
    ct.store(b, (0,), t)


@ct.kernel
def k_huge_full(b):
    ct.store(b, (0,), ct.full((1 << 13, 1 << 12), 0, ct.float32))  # E:huge_full


def test_tile_over_the_element_limit_is_a_compile_time_error():
    """R-TILE-1 (cutile limit): a tile of more than 2**24 elements is a TileValueError naming
    the limit at the user's line, before anything is allocated (not NumPy's MemoryError)."""
    e = expect_error(k_huge_tile, (F32, F32.copy()), ct.TileValueError,
                     r"has 1099511627776 elements, more than the 16777216 \(2\*\*24\)",
                     "huge_tile")
    assert "smaller tile shape" in e.message
    expect_error(k_huge_full, (F32,), ct.TileValueError, "more than the 16777216", "huge_full")


@ct.kernel
def k_while_true(a, b):
    x = ct.load(a, (0,), (4,))
    while True:  # E:while_true
        x = x * 1.0
    ct.store(b, (0,), x)


@ct.kernel
def k_spin(a, n: int):
    i = 0
    while True:  # E:spin
        i = i + n
    ct.store(a, (0,), ct.full((1,), i, ct.int32))


def _ub_at(info, marker: str, block=None):
    e = info.value
    assert e.rule == "R-EXEC-7" and e.loc is not None and e.loc.line == line_of(marker)
    if block is not None:
        assert e.block == block
    text = str(e)
    assert f"line {line_of(marker)}" in text and "block (" in text


@interp_only_ub
def test_while_true_without_break_is_reported_at_once():
    """R-EXEC-7: a loop whose body has no effects and whose iteration changes no carried value
    never ends; the interpreter says so at the first repeat, naming the block and the line."""
    import time
    t0 = time.monotonic()
    with pytest.raises(ct.UndefinedBehaviorError, match="never terminates") as info:
        ct.launch(None, (3,), k_while_true, (F32, F32.copy()))
    assert time.monotonic() - t0 < 10
    _ub_at(info, "while_true", block=(0, 0, 0))


@interp_only_ub
def test_launch_watchdog_stops_a_spinning_loop(monkeypatch):
    """R-EXEC-7: a loop whose state keeps changing is stopped by the wall-clock watchdog
    (CUTILE_INTERP_TIMEOUT) at the loop's block and line."""
    monkeypatch.setenv("CUTILE_INTERP_TIMEOUT", "0.5")
    with pytest.raises(ct.UndefinedBehaviorError, match="wall-clock limit") as info:
        ct.launch(None, (1,), k_spin, (I32, 1))
    _ub_at(info, "spin", block=(0, 0, 0))


@interp_only_ub
def test_ctrl_c_during_a_launch_names_block_and_line(monkeypatch):
    """Ctrl-C (KeyboardInterrupt) during an interpreter launch carries a note with the block
    and the user's line that was running."""
    import _thread
    import threading
    # compile first (a loaded machine may take longer than the timer to compile), so the
    # interrupt lands while the interpreter runs
    monkeypatch.setenv("CUTILE_INTERP_TIMEOUT", "0.2")
    with pytest.raises(ct.UndefinedBehaviorError, match="wall-clock limit"):
        ct.launch(None, (1,), k_spin, (I32, 1))
    # a process started with SIGINT ignored (a background job of a non-interactive shell)
    # would drop the simulated Ctrl-C: restore Python's handler; and a finite limit, so that a
    # lost interrupt fails the test instead of spinning forever
    import signal
    prev = signal.signal(signal.SIGINT, signal.default_int_handler)
    monkeypatch.setenv("CUTILE_INTERP_TIMEOUT", "60")
    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt) as info:
            ct.launch(None, (1,), k_spin, (I32, 1))
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, prev)
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "interrupted in block (0, 0, 0)" in notes
    assert "test_errors.py" in notes and "k_spin" in notes


@ct.kernel
def k_store_ro(a, b):
    ct.store(b, (0,), ct.load(a, (0,), (4,)))  # E:store_ro


def test_read_only_array_stored_to_is_a_launch_error():
    """R-ERR-2: a read-only NumPy array the kernel stores to is refused at launch (ValueError
    naming the argument and the storing line) instead of failing mid-launch in NumPy."""
    ro = np.zeros(4, np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match=rf"'b' of k_store_ro is a read-only array but the "
                                         rf"kernel stores to it \(it is written at .*test_errors"
                                         rf".py:{line_of('store_ro')}:"):
        ct.launch(None, (1,), k_store_ro, (F32, ro))


def test_stream_of_wrong_type_is_a_launch_error():
    """R-LAUNCH-1/R-ERR-2: ``stream='abc'`` is a TypeError at launch, not silently accepted."""
    with pytest.raises(TypeError, match="stream must be None, a CUstream handle .* got str"):
        ct.launch("abc", (1,), k_store_ro, (F32, F32.copy()))


_ = math


@ct.kernel
def k_carry_changes_before_break(x):
    a = 1
    for i in range(10):  # E:carry_break
        a *= 2.0
        if i >= 5:
            break
    ct.store(x, (0,), a)


def test_carried_type_change_with_break_is_a_type_error():
    """R-CTRL (1.7: "Type of `a` depends on path taken"): a loop-carried variable whose type
    changes in a loop left by ``break`` is a TileTypeError at the loop, not an internal error."""
    expect_error(k_carry_changes_before_break, (F32.copy(),), ct.TileTypeError,
                 "Type of loop-carried variable a changes inside the loop", "carry_break")


@ct.kernel
def k_float_of_string(x):
    ct.store(x, (0,), ct.full((2,), ct.float32("-inf"), dtype=ct.float32))
    ct.store(x, (1,), ct.full((2,), ct.float16("1.5"), dtype=ct.float32))


@ct.kernel
def k_float_of_bad_string(x):
    ct.store(x, (0,), ct.full((2,), ct.float32("one"), dtype=ct.float32))  # E:bad_str


def test_float_dtype_called_on_a_string_constant():
    """R-CONST-4 (as 1.7 and Python's float()): ``ct.float32("-inf")`` is a strictly typed
    constant; a string that is not a number is a TileTypeError at its line."""
    x = np.zeros(4, np.float32)
    ct.launch(None, (1,), k_float_of_string, (x,))
    np.testing.assert_array_equal(x, [-np.inf, -np.inf, 1.5, 1.5])
    expect_error(k_float_of_bad_string, (x,), ct.TileTypeError,
                 "could not convert string 'one' to a float", "bad_str")


# -- wording that tells a newcomer what to write instead (issue 23) ---------------------------
@ct.kernel
def k_dict_comp(a):
    d = {i: i for i in range(3)}  # E:dict_comp


@ct.kernel
def k_list_comp(a):
    d = [i for i in range(3)]  # E:list_comp


@ct.kernel
def k_np_exp(a, T: ct.Constant[int]):
    ct.store(a, (0,), np.exp(ct.load(a, (0,), (T,))))  # E:np_exp


@ct.kernel
def k_math_sqrt(a, T: ct.Constant[int]):
    ct.store(a, (0,), ct.load(a, (0,), (T,)) * math.sqrt(2.0))  # E:math_sqrt


@ct.kernel
def k_math_sqrt_folded(a, T: ct.Constant[int]):
    ct.store(a, (0,), ct.load(a, (0,), (T,)) * ct.static_eval(math.sqrt(2.0)))


@ct.kernel
def k_param_shape(a, T: int):
    ct.store(a, (0,), ct.load(a, (0,), (T,)))  # E:rt_param_shape


@ct.kernel
def k_runtime_shape_derived(a, T: ct.Constant[int]):
    n = ct.bid(0) + T
    ct.store(a, (0,), ct.load(a, (0,), (n,)))  # E:runtime_derived


@pytest.mark.parametrize("kernel,fragment,marker", [
    (k_dict_comp, "dict comprehensions are not supported in tile code; use a tuple", "dict_comp"),
    (k_list_comp, r"list comprehensions are not supported in tile code; use tuple\(\.\.\. for x "
                  r"in ct\.static_iter", "list_comp"),
])
def test_each_container_construct_is_named(kernel, fragment, marker):
    expect_error(kernel, (F32,), ct.TileSyntaxError, fragment, marker)


def test_numpy_and_math_calls_point_at_the_ct_operation():
    from cutile.errors import UnsupportedCallError
    expect_error(k_np_exp, (F32.copy(), 4), UnsupportedCallError,
                 r"np\.exp\(\) is not supported in device code; use ct\.exp\(\.\.\.\)", "np_exp")
    e = expect_error(k_math_sqrt, (F32.copy(), 4), UnsupportedCallError,
                     r"math\.sqrt\(\) is not supported in device code; use ct\.sqrt", "math_sqrt")
    assert "ct.static_eval(math.sqrt(2.0))" in str(e)         # the constant's portable spelling
    x = np.ones(4, np.float32)
    ct.launch(None, (1,), k_math_sqrt_folded, (x, 4))       # ... which works
    np.testing.assert_array_equal(x, np.float32(math.sqrt(2.0)))


def test_runtime_value_as_a_tile_shape_says_declare_it_constant():
    expect_error(k_param_shape, (F32, 4), ct.TileTypeError,
                 r"item #0 is the kernel parameter 'T', a runtime int32 value, but a tile shape "
                 r"must be known at compile time; declare it `T: ct.Constant\[int\]`",
                 "rt_param_shape")
    expect_error(k_runtime_shape_derived, (F32, 4), ct.TileTypeError,
                 r"item #0 is a runtime int32 value, but a tile shape must be known at compile "
                 r"time; compute it from literals and `ct.Constant\[int\]` parameters",
                 "runtime_derived")


def test_missing_launch_argument_names_the_kernel_and_the_parameter():
    with pytest.raises(TypeError, match=r"Kernel expects 2 arguments but 1 was given: kernel "
                                        r"two_args\(a, b\) got no value for 'b'"):
        ct.launch(None, (1,), two_args, (F32,))
    with pytest.raises(TypeError, match=r"1 argument\(s\) too many"):
        ct.launch(None, (1,), two_args, (F32, F32, F32))


def test_calling_a_kernel_directly_shows_the_ct_launch_call():
    with pytest.raises(TypeError, match=r"cannot be called directly\. Launch it with "
                                        r"ct\.launch\(None, grid, two_args, \(a, b\)\)"):
        two_args(F32, F32)


@ct.kernel
def k_racy(dst, T: ct.Constant[int]):
    ct.store(dst, (0,), ct.load(dst, (0,), (T,)) + 1.0)


@interp_only_ub
def test_data_race_names_the_array():
    with pytest.raises(ct.UndefinedBehaviorError, match=r"of array 'dst' that block \(0, 0, 0\) "
                                                        r"wrote"):
        ct.launch(None, (2,), k_racy, (np.zeros(4, np.float32), 4))


def test_kernel_typed_at_the_prompt_or_piped_says_define_it_in_a_file():
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = ("import numpy as np\nimport cutile as ct\n@ct.kernel\ndef k(x):\n"
            "    ct.store(x, (0,), ct.load(x, (0,), (4,)))\n\n"
            "ct.launch(None, (1,), k, (np.zeros(4, np.float32),))\n")
    r = subprocess.run([sys.executable, "-"], input=code, capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=root), timeout=120)
    assert "Cannot read the source of k" in r.stderr
    assert "define the kernel in a file or a notebook cell" in r.stderr

"""§21.1-21.2 and R-EXEC-8: ``printf``/``print`` (and the builtin ``print``), ``assert_``,
the programmatic-dependent-launch hints, and the memory scope CLUSTER on load/store.

Printed lines are compared with text built here with Python's own formatting (C printf and
Python's ``%`` agree on these conversions).  Every executor's text reaches ``sys.stdout``
before ``ct.launch`` returns (on a GPU through the device's ``printf``, moved there by the
Numba backend: cutile/numba_backend/printf_rt.py), so ``capsys`` sees it; only the order of
different blocks' lines is the interpreter's alone (R-PRINT-5).
"""

from __future__ import annotations

import enum
import linecache
import os
from dataclasses import dataclass, field

import numpy as np
import pytest
from spec_executor import interp_only_ub, test_backend

import cutile as ct
from cutile import Constant


def blocks_in_order() -> bool:
    """Whether lines of different blocks come in block order: the interpreter, and the
    simulator, which runs the blocks one after another (R-PRINT-5)."""
    return test_backend() == "interp" or os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


def lines(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


def launch(kernel, grid, *args):
    ct.launch(None, grid, kernel, args)


def kernel_from(body: str, params: str = "x"):
    """A kernel ``k(params)`` whose body is ``t = ct.load(x, (0,), (4,))`` then ``body``."""
    src = f"def k({params}):\n    t = ct.load(x, (0,), (4,))\n    {body}\n"
    name = f"<test_debug_{abs(hash(src))}>"
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    ns = {"ct": ct}
    exec(compile(src, name, "exec"), ns)
    return ct.kernel(ns["k"])


# -- printf (R-PRINT-1/2/5) --------------------------------------------------------------------
@ct.kernel
def k_printf(x, T: Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(T,))
    ct.printf("tile[%d]:%.5f\n", bid, t)


def test_printf_tile_per_block_in_block_order_R_PRINT_1_2_5(capsys):
    x = np.arange(16, dtype=np.float32)
    launch(k_printf, (2,), x, 8)
    want = [f"tile[{b}]:[" + ", ".join(f"{v:.5f}" for v in x[8 * b:8 * b + 8]) + "]"
            for b in range(2)]
    got = lines(capsys)
    assert (got if blocks_in_order() else sorted(got)) == want


@ct.kernel
def k_printf_2d(x):
    t = ct.load(x, (0, 0), (2, 4))
    ct.printf("%i|%3d|%%|%x|%#o|%u\n", t, ct.sum(t, None), ct.int32(-1), ct.int32(8),
              ct.uint8(200))
    ct.printf("%e %+.2f %g %5.1f|%-6.1f|\n", ct.float32(1.5), ct.float64(2.0), ct.float32(0.25),
              ct.float16(3.0), ct.float32(-1.0))
    ct.printf("%d %d\n", t > 3, True)


def test_printf_conversions_and_nesting_R_PRINT_1_2(capsys):
    launch(k_printf_2d, (1,), np.arange(8, dtype=np.int32).reshape(2, 4))
    out = lines(capsys)
    assert out[0] == "[[0, 1, 2, 3], [4, 5, 6, 7]]| 28|%|ffffffff|010|200"
    assert out[1] == f"{1.5:e} {2.0:+.2f} {0.25:g} {3.0:5.1f}|{-1.0:<6.1f}|"
    assert out[2] == "[[0, 0, 0, 0], [1, 1, 1, 1]] 1"          # bool elements print as 0/1


@pytest.mark.parametrize("body,match", [
    ("ct.printf(FMT, t)", "Expected a string constant"),
    ("ct.printf('%d', x)", "must be a tile or a scalar"),
    ("ct.printf('%d', (t, t))", "must be a tile or a scalar"),
    ("ct.printf('%c', t)", "Specifier c in %c is not supported"),
    ("ct.printf('%s', t)", "Specifier s in %s is not supported"),
    ("ct.printf('%q', t)", "Invalid format string"),
    ("ct.printf('%d %d', t)", "Not enough arguments for format string"),
    ("ct.printf('%d', t, t)", "Too many arguments for format string"),
    ("ct.printf('%f', t)", "Format %f for arg #0 got unexpected type"),
    ("ct.printf('%d', t.astype(ct.float32))", "Format %d for arg #0 got unexpected type"),
])
def test_printf_errors_R_PRINT_1(body, match):
    kern = kernel_from(body, "x, FMT")
    with pytest.raises(ct.TileTypeError, match=match):
        launch(kern, (1,), np.zeros(4, np.int32), 1)


# -- print and the builtin print (R-PRINT-3/4) -------------------------------------------------
class Color(enum.Enum):
    RED = 0
    GREEN = 1


@dataclass(frozen=True)
class Foo:
    x: object
    y: object = field(repr=False, default=0)
    z: str = "hello"


FOO = Foo((1, 2))


@ct.kernel
def k_print(x, T: Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(T,))
    ct.print(f"tile[{bid}]:{t:.5f}")
    print(f"tile[{bid}]:{t:10.4f}")
    ct.print("tile%:", t.astype(ct.int32), sep="")
    print(t.astype(ct.int32), end="")
    print("|", x.shape, (x.shape, bid), (), (bid,), ct.float32, Color.GREEN, sep=";")
    lhs = f"Foo({t.astype(ct.int32):#x})"
    rhs = f"BAR({bid + 3})"
    print(lhs + rhs)
    msg = f"bid={bid}"
    ct.print((msg, bid, "'a'", '"b'))
    print(FOO, (FOO,))


def test_print_fstrings_sep_end_and_constants_R_PRINT_3_4(capsys):
    x = np.arange(8, dtype=np.float32)
    launch(k_print, (1,), x, 8)
    out = lines(capsys)
    assert out[0] == "tile[0]:[" + ", ".join(f"{v:.5f}" for v in x) + "]"
    assert out[1] == "tile[0]:[" + ", ".join(f"{v:10.4f}" for v in x) + "]"
    ints = "[" + ", ".join(str(i) for i in range(8)) + "]"
    assert out[2] == f"tile%:{ints}"
    assert out[3] == f"{ints}|;(8,);((8,), 0);();(0,);float32;Color.GREEN"
    # {t:#x} becomes C's %#x, which prints 0 without the 0x prefix
    assert out[4] == "Foo([0, " + ", ".join(hex(i) for i in range(1, 8)) + "])BAR(3)"
    assert out[5] == repr(("bid=0", 0, "'a'", '"b'))
    assert out[6] == f"{FOO} {(FOO,)}"


@ct.kernel
def k_print_helper(x):
    _show(ct.load(x, (0,), (4,)))


def _show(t):
    print("helper", t)


def test_print_inside_a_helper_R_PRINT_3(capsys):
    launch(k_print_helper, (1,), np.array([1, -2, 3, 4], np.int64))
    assert lines(capsys) == ["helper [1, -2, 3, 4]"]


@pytest.mark.parametrize("body,exc,match", [
    ("ct.print(f'{t!r}')", ct.TileSyntaxError, "!r, !s, !a"),
    ("w = 5\n    ct.print(f'{t:{w}}')", ct.TileSyntaxError, "format spec must be a literal"),
    ("ct.print(f'{x.shape:10}')", ct.TileTypeError,
     "cannot apply format spec to a value of type tuple"),
    ("ct.print(f'{(t,):3}')", ct.TileTypeError,
     "cannot apply format spec to a value of type tuple"),
    ("ct.print(f'{t:.3f}')", ct.TileTypeError, "is incompatible with dtype"),
    ("ct.print(f'{t.astype(ct.float32):x}')", ct.TileTypeError, "is incompatible with dtype"),
    ("ct.print(t, sep=t)", ct.TileTypeError, "Expected a constant string or an f-string"),
    ("ct.print(x)", ct.TileTypeError, "Cannot print array"),
])
def test_print_errors_R_PRINT_3(body, exc, match):
    kern = kernel_from(body)
    with pytest.raises(exc, match=match):
        launch(kern, (1,), np.zeros(4, np.int32))


@dataclass(frozen=True)
class WithFormat:
    x: int

    def __format__(self, spec):
        return "custom"


WF = WithFormat(1)


@ct.kernel
def k_custom_format(x):
    ct.print(f"{WF}")


def test_dataclass_custom_format_rejected_in_fstring_R_PRINT_4():
    with pytest.raises(ct.TileTypeError, match="custom __format__"):
        launch(k_custom_format, (1,), np.zeros(1, np.int32))


@dataclass(frozen=True)
class WithStr:
    x: object

    def __str__(self):
        return f"S<{self.x}>"


@dataclass(frozen=True, repr=False)
class NoRepr:
    x: object


@dataclass(frozen=True, repr=False)
class OwnRepr:
    x: object

    def __repr__(self):
        return f"R<{self.x}|{ct.sum(self.x, None)}>"


@ct.kernel
def k_print_dataclasses(x):
    t = ct.load(x, (0,), (4,))
    ct.print(Foo(t, t + 1, "hi"))                       # the generated repr, y hidden
    print(WithStr(t), (WithStr(t),), NoRepr(t), (NoRepr(t),), sep="|")
    ct.print(OwnRepr(t), f"{WithStr(t + 1)}", repr(WithStr(t)), repr(Color.RED))
    ct.print(WithFormat(t))                             # print ignores __format__


def test_print_dataclass_values_built_in_tile_code_R_PRINT_3_4(capsys):
    """str picks a user __str__, else __repr__ (the user's, the generated one over the fields
    with repr=True, or ``<Name object>``); inside a tuple repr; user methods run as helpers."""
    launch(k_print_dataclasses, (1,), np.array([1, 2, 3, 4], np.int32))
    assert lines(capsys) == [
        "Foo(x=[1, 2, 3, 4], z='hi')",
        "S<[1, 2, 3, 4]>|(WithStr(x=[1, 2, 3, 4]),)|<NoRepr object>|(<NoRepr object>,)",
        "R<[1, 2, 3, 4]|10> S<[2, 3, 4, 5]> WithStr(x=[1, 2, 3, 4]) <Color.RED: 0>",
        "WithFormat(x=[1, 2, 3, 4])"]


@ct.kernel
def k_custom_format_in_tile_code(x):
    s = f"{WithFormat(ct.bid(0))}"  # noqa: F841


def test_dataclass_built_in_tile_code_custom_format_rejected_R_PRINT_4():
    with pytest.raises(ct.TileTypeError, match="Formatting dataclass values with custom "
                       "__format__"):
        launch(k_custom_format_in_tile_code, (1,), np.zeros(1, np.int32))


@ct.kernel
def k_print_poison(x):
    t = ct.load(x, (0,), (8,))            # 4 elements: the rest is UNDETERMINED padding
    ct.print(t)


@interp_only_ub
def test_printing_undetermined_padding_is_ub_R_UB_2():
    with pytest.raises(ct.UndefinedBehaviorError, match="R-UB-2"):
        launch(k_print_poison, (1,), np.zeros(4, np.float32))


# -- assert_ (R-ASSERT-1..3) --------------------------------------------------------------------
@ct.kernel
def k_assert(x, out):
    bid = ct.bid(0)
    t = ct.load(x, (bid,), (4,))
    ct.assert_(t < 10, "value too large")
    ct.store(out, (bid,), t)


def test_assert_passes_and_fails_naming_block_line_message_R_ASSERT_1_2():
    x = np.arange(12, dtype=np.int32)
    out = np.zeros(12, np.int32)
    launch(k_assert, (2,), x[:8].copy(), out)            # every element < 10: no effect
    np.testing.assert_array_equal(out[:8], x[:8])
    x[9] = 42                                            # block 2 fails
    with pytest.raises(AssertionError, match="value too large") as info:
        launch(k_assert, (3,), x, out)
    e = info.value
    assert e.block == (2, 0, 0)
    assert e.loc.line == k_assert_line() and "block (2, 0, 0)" in str(e)


def test_failed_assert_prints_its_message_on_stdout_R_ASSERT_1(capsys):
    """The failing block prints the message as one line of standard output, as the device
    does in cuda.tile 1.7 (users and 1.7's tests read it there); no message, no line."""
    x = np.arange(12, dtype=np.int32)
    x[9] = 42
    capsys.readouterr()
    with pytest.raises(AssertionError):
        launch(k_assert, (3,), x, np.zeros(12, np.int32))
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln]
    assert len(lines) == 1 and "value too large" in lines[0] and "block (2, 0, 0)" in lines[0]
    with pytest.raises(AssertionError):
        launch(k_assert_scalar, (2,), np.zeros(1, np.int32))
    assert capsys.readouterr().out == ""


def k_assert_line() -> int:
    import inspect
    src, first = inspect.getsourcelines(k_assert._pyfunc if hasattr(k_assert, "_pyfunc")
                                        else k_assert.__wrapped__)
    return first + next(i for i, s in enumerate(src) if "ct.assert_" in s)


@ct.kernel
def k_assert_scalar(out):
    ct.assert_(ct.bid(0) != 1)
    ct.store(out, (ct.bid(0),), ct.bid(0) + 1)


def test_assert_scalar_without_message_other_blocks_unaffected_R_ASSERT_1():
    out = np.zeros(1, np.int32)
    with pytest.raises(AssertionError):
        launch(k_assert_scalar, (2,), out)
    assert out[0] == 1                         # block 0 ran before block 1 failed


@pytest.mark.parametrize("body,match", [
    ("ct.assert_(t)", "Type of condition must be bool"),
    ("ct.assert_(t > 0, t)", "Expected a constant string or None"),
])
def test_assert_errors_R_ASSERT_1(body, match):
    kern = kernel_from(body)
    with pytest.raises(ct.TileTypeError, match=match):
        launch(kern, (1,), np.zeros(4, np.int32))


@ct.kernel
def k_assert_stmt(x):
    assert x.shape[0] == 4


def test_python_assert_statement_is_a_syntax_error_R_ASSERT_3():
    with pytest.raises(ct.TileSyntaxError, match="Unsupported syntax"):
        launch(k_assert_stmt, (1,), np.zeros(4, np.int32))


# -- programmatic dependent launch (R-EXEC-8) ---------------------------------------------------
@ct.kernel
def k_pdl(x, y):
    ct.grid_dependency_control_wait()
    t = ct.load(x, (ct.bid(0),), (4,))
    ct.grid_dependency_control_launch_dependents()
    ct.store(y, (ct.bid(0),), t * 2)


def test_grid_dependency_control_has_no_effect_R_EXEC_8():
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.float32)
    launch(k_pdl, (2,), x, y)
    np.testing.assert_array_equal(y, x * 2)


# -- memory scopes on load/store (R-LOAD-7, R-ATOM-8) -------------------------------------------
@ct.kernel
def k_cluster_load(x):
    ct.load(x, (0,), (4,), memory_order=ct.MemoryOrder.ACQUIRE,
            memory_scope=ct.MemoryScope.CLUSTER)


@ct.kernel
def k_cluster_store(x):
    ct.store(x, (0,), ct.zeros((4,), ct.float32), memory_order=ct.MemoryOrder.RELEASE,
             memory_scope=ct.MemoryScope.CLUSTER)


@pytest.mark.parametrize("kern", [k_cluster_load, k_cluster_store])
def test_cluster_scope_rejected_on_load_store_R_LOAD_7(kern):
    with pytest.raises(ct.TileTypeError, match="Invalid memory scope"):
        launch(kern, (1,), np.zeros(4, np.float32))

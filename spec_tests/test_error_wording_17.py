"""Error messages that contain the words cuda.tile 1.7 gives (issue 27): users and tests
match on them.  Each test asserts the 1.7 words and, where cutile adds one, its own hint; a
compile error also keeps cutile's ``file:line:col:`` prefix.  Interpreter only (the wording
is the frontend's and the launcher's, shared by every executor)."""

from __future__ import annotations

import collections
import dataclasses
import re

import numpy as np
import pytest

import cutile as ct


# -- launch arguments (R-LAUNCH-3) ---------------------------------------------------------
@ct.kernel
def k_pair(out, p):
    ct.scatter(out, (0,), p[0] + p[1])


@ct.kernel
def k_const_tuple(out, c: ct.Constant[tuple]):
    ct.scatter(out, (0,), 1)


@ct.kernel
def k_nested_sized(out, p: tuple[tuple[int, int], int]):
    ct.scatter(out, (0,), p[1])


def test_namedtuple_argument_names_its_class():
    """A tuple subclass is refused; the message names it and says plain tuples are taken."""
    Point = collections.namedtuple("Point", "x y")
    out = np.zeros(1, np.int32)
    with pytest.raises(TypeError, match=re.escape(
            "Invalid kernel argument #1: 'Point' is a subclass of 'tuple'. "
            "Only plain tuples are accepted.")):
        ct.launch(None, (1,), k_pair, (out, Point(1, 2)))
    with pytest.raises(TypeError, match=re.escape("Invalid item #1 of kernel argument #1: "
                                                  "'Point' is a subclass of 'tuple'.")):
        ct.launch(None, (1,), k_pair, (out, (1, Point(2, 3))))


def test_constant_tuple_item_that_is_no_constant_names_the_item():
    out = np.zeros(1, np.int32)
    with pytest.raises(TypeError, match=re.escape(
            "Invalid item #0 of kernel argument #1: Could not interpret object of type "
            "'ndarray' as a constant.")):
        ct.launch(None, (1,), k_const_tuple, (out, (out, 1)))


def test_nested_tuple_length_names_the_item():
    out = np.zeros(1, np.int32)
    with pytest.raises(TypeError, match=re.escape(
            "Invalid item #0 of kernel argument #1: Received a tuple of length 3 for a "
            "parameter annotated as a tuple of length 2")):
        ct.launch(None, (1,), k_nested_sized, (out, ((1, 2, 3), 4)))


# -- tuples (R-CMP-6) ----------------------------------------------------------------------
@ct.kernel
def k_tuple_float_index(out):
    t = (1, 2, 3)
    ct.scatter(out, (0,), t[1.0])


@ct.kernel
def k_tuple_runtime_index(out):
    t = (1, 2, 3)
    ct.scatter(out, (0,), t[ct.bid(0)])


@ct.kernel
def k_tuple_compare_arrays(out, x):
    ct.scatter(out, (0,), 1 if (out,) == (x,) else 0)


@pytest.mark.parametrize("kernel,args,words", [
    (k_tuple_float_index, (), "Tuple indices must be integers or slices, not constant 1.0"),
    (k_tuple_runtime_index, (), "Tuple indices must be constant integers (a runtime index"),
    (k_tuple_compare_arrays, (np.zeros(1, np.int32),),
     "Tuple comparison is not supported for elements of type array"),
])
def test_tuple_errors_contain_the_17_words(kernel, args, words):
    with pytest.raises(ct.TileTypeError, match=r"test_error_wording_17\.py:\d+:\d+: " +
                       re.escape(words)):
        ct.launch(None, (1,), kernel, (np.zeros(1, np.int32), *args))


@ct.kernel
def k_e8m0_negative(out):
    ct.scatter(out, (0,), ct.astype(ct.float8_e8m0fnu(-0.5), ct.int32))


def test_negative_constant_of_an_unsigned_float_format():
    """R-CONST-4: e8m0 (like e5m3fnu) has no sign bit."""
    with pytest.raises(ct.TileValueError, match=re.escape(
            "Negative values cannot be represented in an unsigned float format (-0.5 as "
            "float8_e8m0fnu)")):
        ct.launch(None, (1,), k_e8m0_negative, (np.zeros(1, np.int32),))


# -- op arguments: 1.7 names the argument and the op -------------------------------------------
@ct.kernel
def k_full_branch_shape(out):
    if ct.bid(0) == 1:
        n = 1
    else:
        n = 2
    ct.store(out, (0,), ct.full((n,), 3, out.dtype))


def test_a_runtime_shape_names_the_argument_and_the_op():
    """R-LOAD-3: a shape item that differs by branch is a runtime value; the message names
    the argument and the op as 1.7 does, then cutile's hint."""
    with pytest.raises(ct.TileTypeError, match=re.escape(
            'Invalid argument "shape" of full(): Expected a constant integer tuple for shape: '
            'item #0 is a runtime int32 value, but a tile shape must be known at compile time')):
        ct.launch(None, (1,), k_full_branch_shape, (np.zeros(2, np.int32),))


# -- the traceback of inlined helpers (R-ERR-4) --------------------------------------------
def _helper_with_a_typo(x):
    ct.abracadabra(x)


@ct.kernel
def k_helper_typo(x):
    _helper_with_a_typo(x)


def test_traceback_lists_each_frame_as_17_does():
    """cutile names itself cuda.tile; each frame is ``File "f", line n, col c, in fn:``, then
    the source line with its own indentation and a caret under the expression."""
    with pytest.raises(ct.TileTypeError) as e:
        ct.launch(None, (1,), k_helper_typo, (np.zeros(1, np.float32),))
    text = str(e.value)
    assert "Module 'cuda.tile' has no attribute 'abracadabra'" in text
    assert re.search(r', in k_helper_typo:\n {8}_helper_with_a_typo\(x\)\n {8}\^{22}\n',
                     text), text
    assert re.search(r', in _helper_with_a_typo:\n {8}ct\.abracadabra\(x\)\n {8}\^{14}\n$',
                     text), text


@ct.kernel
def k_comprehension_runtime_if(out):
    t = tuple(i for i in ct.static_iter(range(2)) if ct.bid(0) == i)
    ct.scatter(out, (0,), len(t))


def test_a_runtime_comprehension_condition():
    """R-PY-3: the tuple's length is a compile-time fact, so is each condition."""
    with pytest.raises(ct.TileTypeError, match=r"test_error_wording_17\.py:\d+:\d+: Tuple "
                       r"comprehension if-conditions must be statically known: the tuple's "
                       r"length is fixed at compile time"):
        ct.launch(None, (1,), k_comprehension_runtime_if, (np.zeros(1, np.int32),))


# -- dataclasses in tile code (R-PY-10) ------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class _Pair:
    a: int
    b: int = 0


@dataclasses.dataclass(frozen=True)
class _Factory:
    a: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class _NoInitField:
    a: int
    b: int = dataclasses.field(default=0, init=False)


@dataclasses.dataclass(frozen=True)
class _NewPair:
    a: int

    def __new__(cls, *args):
        return super().__new__(cls)


@ct.kernel
def k_replace_unknown(out):
    p = dataclasses.replace(_Pair(1), c=2)
    ct.scatter(out, (0,), p.a)


@ct.kernel
def k_factory(out):
    ct.scatter(out, (0,), len(_Factory().a))


@ct.kernel
def k_no_init_field(out):
    ct.scatter(out, (0,), _NoInitField(1).a)


@ct.kernel
def k_custom_new(out):
    ct.scatter(out, (0,), _NewPair(1).a)


@ct.kernel
def k_call_instance(out):
    p = _Pair(1)
    ct.scatter(out, (0,), p(2))


@pytest.mark.parametrize("kernel, words", [
    (k_replace_unknown, "Dataclass '_Pair' has no such field 'c'"),
    (k_factory, "Dataclasses with default_factory fields are not supported"),
    (k_no_init_field, "Dataclasses with init=False fields are not supported"),
    (k_custom_new, "Dataclasses with custom __new__ are not supported"),
    (k_call_instance, "Cannot call an object of type _Pair"),
])
def test_dataclass_rules_in_1_7_words(kernel, words):
    """The dataclass rules of tile code say what 1.7 says, then which class and field."""
    with pytest.raises(ct.TileTypeError, match=re.escape(words)) as e:
        ct.launch(None, (1,), kernel, (np.zeros(1, np.int32),))
    assert "test_error_wording_17.py:" in str(e.value)

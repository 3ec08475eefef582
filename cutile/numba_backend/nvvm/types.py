"""The types of the generated dialect as Numba types them, without importing numba.

A scalar is a one-character code (``numba_table.CODES``: ``i`` int32, ``L`` uint64, ``f``
float32, ...), with the literal pseudo-types Numba gives constants (``n`` an int64 literal,
``N`` a uint64 literal, ``T`` a bool literal) carrying their value, because Numba types an
operation on a literal differently from one on a variable (``uint64 & 1`` is int64).  The
operation tables themselves are Numba's answers (``numba_table.py``); this module only looks
them up, so the rules live in one place (Numba) and the test compares with Numba's typing.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import numba_table as nt


class Unsupported(Exception):
    """A construct the direct NVVM path does not translate: the caller compiles this kernel
    through Numba instead."""


@dataclass(frozen=True)
class Scalar:
    code: str
    value: object = None          # the value of a literal (codes n, N, T)

    @property
    def literal(self) -> bool:
        return self.code in "nNT"

    def unlit(self) -> Scalar:
        return Scalar(UNLITERAL.get(self.code, self.code))


@dataclass(frozen=True)
class Array:
    dtype: str                    # scalar code of the element
    ndim: int
    layout: str                   # Numba's "C" or "A"
    space: str = "global"         # "global" (a kernel parameter) or "shared"


@dataclass(frozen=True)
class Tuple:
    items: tuple


@dataclass(frozen=True)
class Range:
    code: str                     # the loop variable's scalar code (i, l or L)


NONE = Tuple(())                  # what a call for its effect returns
UNLITERAL = {"n": "l", "N": "L", "T": "b"}
NAMES = {"b": "bool", "c": "int8", "s": "int16", "i": "int32", "l": "int64", "B": "uint8",
         "S": "uint16", "I": "uint32", "L": "uint64", "h": "float16", "f": "float32",
         "d": "float64"}
FROM_NAME = {v: k for k, v in NAMES.items()} | {"boolean": "b", "bool_": "b"}
ITEMSIZE = {c: {"b": 1, "c": 1, "B": 1, "s": 2, "S": 2, "h": 2, "i": 4, "I": 4, "f": 4}.get(c, 8)
            for c in NAMES}         # bytes of an element (a bool is stored as a byte)
CAST_CODES = {"b1": "b", "u8": "B", "u16": "S", "u32": "I", "u64": "L", "i8": "c",
              "i16": "s", "i32": "i", "i64": "l", "f16": "h", "f32": "f", "f64": "d"}
INTS = set("csilBSIL")
FLOATS = set("hfd")
_IX = {c: i for i, c in enumerate(nt.CODES)}
_N = len(nt.CODES)


def literal(v) -> Scalar:
    """The type Numba gives the constant ``v``."""
    if isinstance(v, bool):
        return Scalar("T", v)
    if isinstance(v, int):
        if -2**63 <= v < 2**63:
            return Scalar("n", v)
        if v < 2**64:
            return Scalar("N", v)
        raise Unsupported(f"integer constant {v} does not fit 64 bits")
    if isinstance(v, float):
        return Scalar("d")
    raise Unsupported(f"constant {v!r}")


def _scalar(t, what: str) -> Scalar:
    if not isinstance(t, Scalar):
        raise Unsupported(f"{what} of a {type(t).__name__}")
    return t


def binary(op: str, a, b) -> tuple[str, str, str]:
    """(result, left operand, right operand) codes of Numba's signature for ``a op b``."""
    a, b = _scalar(a, op), _scalar(b, op)
    i = 3 * (_IX[a.code] * _N + _IX[b.code])
    sig = nt.BINARY[op][i:i + 3]
    if "-" in sig:
        raise Unsupported(f"{op} of {a.code} and {b.code}: Numba has no such operation")
    return sig[0], sig[1], sig[2]


def unary(op: str, a) -> tuple[str, str]:
    """(result, operand) codes of Numba's signature for ``op a``."""
    a = _scalar(a, op)
    sig = nt.UNARY[op][2 * _IX[a.code]:2 * _IX[a.code] + 2]
    if "-" in sig:
        raise Unsupported(f"{op} of {a.code}: Numba has no such operation")
    return sig[0], sig[1]


def unify(a, b):
    """The type of a variable that holds ``a`` on one path and ``b`` on another (Numba's
    ``unify_pairs``); None stands for "not defined on that path"."""
    if a is None or a == b:
        return b
    if b is None:
        return a
    if isinstance(a, Scalar) and isinstance(b, Scalar):
        c = nt.UNIFY[_IX[a.code] * _N + _IX[b.code]]
        if c == "-":
            raise Unsupported(f"cannot unify {a.code} and {b.code}")
        return Scalar(UNLITERAL.get(c, c))
    if isinstance(a, Tuple) and isinstance(b, Tuple) and len(a.items) == len(b.items):
        return Tuple(tuple(unify(x, y) for x, y in zip(a.items, b.items)))
    if (isinstance(a, Array) and isinstance(b, Array) and a.space == b.space == "global"
            and (a.dtype, a.ndim) == (b.dtype, b.ndim)):
        return Array(a.dtype, a.ndim, "A")      # "C" and "A": Numba's unified layout
    raise Unsupported(f"cannot unify {a} and {b}")


def numba_str(t) -> str:
    """How Numba prints the (unliteral) type: the key of the agreement test."""
    if isinstance(t, Scalar):
        return NAMES[t.unlit().code]
    if isinstance(t, Array):
        return f"array({NAMES[t.dtype]}, {t.ndim}d, {t.layout})"
    if isinstance(t, Tuple):
        items = [numba_str(x) for x in t.items]
        if items and all(x == items[0] for x in items):
            return f"UniTuple({items[0]} x {len(items)})"
        return f"Tuple({', '.join(items)})"
    if isinstance(t, Range):
        return {"i": "range_state_int32", "l": "range_state_int64",
                "L": "range_state_uint64"}[t.code]
    raise TypeError(t)


def from_job_arg(a: list):
    """A kernel parameter type from ``spec_tests/diff/ptxcheck.job_for``'s description
    (``["array", dtype, ndim, layout?]`` or ``["scalar", dtype]``)."""
    if a[0] == "array":
        return Array(FROM_NAME[a[1]], a[2], a[3] if len(a) > 3 else "A")
    return Scalar(FROM_NAME[a[1]])


class ArrayValue:
    """An array in registers: its element pointer, shape and strides (i64 values)."""

    def __init__(self, t: Array, data, shape: list, strides: list):
        self.t, self.data, self.shape, self.strides = t, data, shape, strides

"""Mangled kernel symbols: ``<function>_K<convention>`` then ``_<parameter>`` per parameter.

cutile's own encoding (1.7 documents no stable scheme to copy), round-trip exact:

- array ``A<ndim><dtype>`` then its non-default assumptions: ``x<fact><axis>v<int>`` per axis
  (``s`` shape constant, ``t`` stride constant, ``i`` shape divisor, ``j`` stride divisor,
  ``l`` stride lower bound), ``p<int>`` base-address divisor, ``g<k>`` alias group number,
  ``m`` may alias internally, ``w`` int64 index dtype;
- list ``L`` + its element array's encoding (without ``A``), ``E`` elements may alias,
  ``G<k>`` alias group of the list storage;
- scalar ``S<dtype>``; constants ``B0``/``B1``, ``I<int>``, ``F<16 hex digits of the double>``,
  ``D<dtype>``; tuple ``T<n>`` then ``_<item>`` per item.

Integers are decimal with ``n`` for a minus sign.  Alias groups are numbered in order of first
use; demangling names them ``group<k>``.
"""

from __future__ import annotations

import re
import struct

from .. import dtypes as dt
from .constraints import (
    ArrayConstraint,
    ConstantConstraint,
    ListConstraint,
    ScalarConstraint,
    TupleConstraint,
)

_DTYPE_CODES = {dt.bool_: "b1", dt.uint8: "u8", dt.uint16: "u16", dt.uint32: "u32",
                dt.uint64: "u64", dt.int8: "i8", dt.int16: "i16", dt.int32: "i32",
                dt.int64: "i64", dt.float16: "f16", dt.float32: "f32", dt.float64: "f64",
                dt.bfloat16: "bf16", dt.tfloat32: "tf32", dt.float8_e4m3fn: "f8e4m3fn",
                dt.float8_e5m2: "f8e5m2", dt.float8_e8m0fnu: "f8e8m0fnu",
                dt.float8_e5m3fnu: "f8e5m3fnu", dt.float4_e2m1fn: "f4e2m1fn"}
_CODE_DTYPES = {v: k for k, v in _DTYPE_CODES.items()}
_DTYPE_RE = "|".join(sorted(_CODE_DTYPES, key=len, reverse=True))
_FACTS = (("s", "shape_constant", None), ("t", "stride_constant", None),
          ("i", "shape_divisible_by", 1), ("j", "stride_divisible_by", 1),
          ("l", "stride_lower_bound_incl", None))
CONVENTION_CODE = "c1"


def _int(v: int) -> str:
    return f"n{-v}" if v < 0 else str(v)


class _Groups:
    def __init__(self):
        self.ids: dict[str, int] = {}

    def __call__(self, name: str) -> int:
        return self.ids.setdefault(name, len(self.ids))


def _array_body(a: ArrayConstraint, groups: _Groups) -> str:
    out = f"{a.ndim}{_DTYPE_CODES[a.dtype]}"
    for code, field, default in _FACTS:
        for axis, v in enumerate(getattr(a, field)):
            if v != default:
                out += f"x{code}{axis}v{_int(v)}"
    if a.base_addr_divisible_by != 1:
        out += f"p{a.base_addr_divisible_by}"
    out += "".join(f"g{k}" for k in sorted(groups(g) for g in a.alias_groups))
    out += "m" if a.may_alias_internally else ""
    out += "w" if a.index_dtype is dt.int64 else ""
    return out


def _mangle(p, groups: _Groups) -> str:
    if isinstance(p, ArrayConstraint):
        return "A" + _array_body(p, groups)
    if isinstance(p, ListConstraint):
        return ("L" + _array_body(p.element, groups) + ("E" if p.elements_may_alias else "")
                + "".join(f"G{k}" for k in sorted(groups(g) for g in p.alias_groups)))
    if isinstance(p, ScalarConstraint):
        return "S" + _DTYPE_CODES[p.dtype]
    if isinstance(p, TupleConstraint):
        return f"T{len(p.items)}" + "".join("_" + _mangle(i, groups) for i in p.items)
    if isinstance(p, ConstantConstraint):
        v = p.value
        if isinstance(v, bool):
            return f"B{int(v)}"
        if isinstance(v, int):
            return "I" + _int(v)
        if isinstance(v, float):
            return "F" + struct.pack(">d", v).hex()
        return "D" + _DTYPE_CODES[v]
    raise TypeError(f"Unexpected constraint type: {type(p).__name__}")


def mangle_kernel_name(function_name: str, signature) -> str:
    """``function_name`` decorated with the signature's parameter constraints."""
    groups = _Groups()
    return f"{function_name}_K{CONVENTION_CODE}" + "".join(
        "_" + _mangle(p, groups) for p in signature.parameters)


class _Cursor:
    def __init__(self, text: str, pos: int):
        self.text, self.pos = text, pos

    def read(self, pattern: str) -> str | None:
        m = re.compile(pattern).match(self.text, self.pos)
        if m is None:
            return None
        self.pos = m.end()
        return m.group(0)

    def expect(self, pattern: str, what: str) -> str:
        got = self.read(pattern)
        if got is None:
            raise ValueError(f"Invalid mangled name {self.text!r} at offset {self.pos}: "
                             f"expected {what}")
        return got

    def int(self) -> int:
        s = self.expect(r"n?\d+", "an integer")
        return -int(s[1:]) if s[0] == "n" else int(s)

    def dtype(self) -> dt.DType:
        return _CODE_DTYPES[self.expect(_DTYPE_RE, "a dtype code")]


def _array(c: _Cursor) -> ArrayConstraint:
    ndim = int(c.expect(r"\d+", "ndim"))
    dtype = c.dtype()
    facts = {field: [default] * ndim for _, field, default in _FACTS}
    names = {code: field for code, field, _ in _FACTS}
    while c.read("x"):
        code = c.expect("[stijl]", "an axis fact")
        axis = int(c.expect(r"\d+", "an axis"))
        c.expect("v", "'v'")
        if axis >= ndim:
            raise ValueError(f"Invalid mangled name {c.text!r}: axis {axis} >= ndim {ndim}")
        facts[names[code]][axis] = c.int()
    base = int(c.read(r"p\d+")[1:]) if c.text.startswith("p", c.pos) else 1
    groups = []
    while (g := c.read(r"g\d+")) is not None:
        groups.append(f"group{g[1:]}")
    internal = c.read("m") is not None
    index = dt.int64 if c.read("w") is not None else dt.int32
    return ArrayConstraint(dtype, ndim, index_dtype=index, alias_groups=groups,
                           may_alias_internally=internal, base_addr_divisible_by=base, **facts)


def _param(c: _Cursor):
    kind = c.expect("[ALSTBIFD]", "a constraint letter")
    if kind == "A":
        return _array(c)
    if kind == "L":
        element = _array(c)
        may = c.read("E") is not None
        groups = []
        while (g := c.read(r"G\d+")) is not None:
            groups.append(f"group{g[1:]}")
        return ListConstraint(element, alias_groups=groups, elements_may_alias=may)
    if kind == "S":
        return ScalarConstraint(c.dtype())
    if kind == "T":
        n = int(c.expect(r"\d+", "a tuple length"))
        items = []
        for _ in range(n):
            c.expect("_", "'_'")
            items.append(_param(c))
        return TupleConstraint(items)
    if kind == "B":
        return ConstantConstraint(c.expect("[01]", "0 or 1") == "1")
    if kind == "I":
        return ConstantConstraint(c.int())
    if kind == "F":
        return ConstantConstraint(struct.unpack(">d", bytes.fromhex(
            c.expect("[0-9a-f]{16}", "16 hex digits")))[0])
    return ConstantConstraint(c.dtype())


def parse_kernel_name(symbol: str) -> tuple[str, str, list]:
    """``(function name, calling-convention code, parameter constraints)`` of a symbol made by
    ``mangle_kernel_name`` (``signature.demangle_kernel_name`` builds the signature)."""
    pos = symbol.rfind("_K")
    if pos < 0:
        raise ValueError(f"`{symbol}` is not a mangled kernel name")
    c = _Cursor(symbol, pos + 2)
    conv = c.expect("[a-z0-9]+", "a calling convention")
    params = []
    while c.pos < len(symbol):
        c.expect("_", "'_'")
        params.append(_param(c))
    return symbol[:pos], conv, params

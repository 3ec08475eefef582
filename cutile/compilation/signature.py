"""``KernelSignature`` (what one compiled specialisation of a kernel accepts) and the refusal
to export NVIDIA binary formats."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import TileUnsupportedFeatureError
from .constraints import (
    ArrayConstraint,
    ConstantConstraint,
    ScalarConstraint,
    TupleConstraint,
    to_constraint,
)
from .mangling import mangle_kernel_name, parse_kernel_name


@dataclass(frozen=True)
class CallingConvention:
    """How launch arguments map to a compiled kernel's parameters.  cutile has one:
    ``cutile_python_v1`` (code ``c1``): arrays carry dtype, rank and index dtype; shapes and
    strides are read at run time."""

    name: str = "cutile_python_v1"
    code: str = "c1"
    version: int = 1

    @staticmethod
    def from_code(code: str) -> CallingConvention:
        if code != "c1":
            raise ValueError(f"Unknown calling convention code {code!r} (cutile has 'c1')")
        return CallingConvention()

    @staticmethod
    def default() -> CallingConvention:
        return CallingConvention()

    @staticmethod
    def cutile_python_v1() -> CallingConvention:
        """The one convention cutile has (1.7 spells it so; 1.7 also has a ``v2``, which
        cutile does not implement)."""
        return CallingConvention()


@dataclass(frozen=True, init=False)
class KernelSignature:
    """One constraint per kernel parameter, the calling convention, and the symbol name."""

    parameters: tuple
    calling_convention: CallingConvention
    symbol: str | None

    def __init__(self, parameters: Sequence, calling_convention: CallingConvention | None = None,
                 symbol: str | None = None):
        if symbol is not None and not isinstance(symbol, str):
            raise TypeError(f"`symbol` must be a string, got {type(symbol).__name__}")
        conv = calling_convention or CallingConvention()
        if not isinstance(conv, CallingConvention):
            raise TypeError(f"Unsupported calling convention {conv!r}")
        object.__setattr__(self, "parameters", tuple(to_constraint(p) for p in parameters))
        object.__setattr__(self, "calling_convention", conv)
        object.__setattr__(self, "symbol", symbol)

    def with_symbol(self, symbol: str | None) -> KernelSignature:
        return dataclasses.replace(self, symbol=symbol)

    def with_mangled_symbol(self, function_name: str) -> KernelSignature:
        return self.with_symbol(mangle_kernel_name(function_name, self))

    @staticmethod
    def from_kernel_args(kernel, kernel_args: Sequence,
                         calling_convention: CallingConvention | None = None, *,
                         symbol: str | None = None) -> KernelSignature:
        """The signature a launch of ``kernel`` with ``kernel_args`` specialises to (the key
        of cutile's compile cache), with a mangled symbol unless ``symbol`` is given."""
        spec = kernel.specialize(tuple(kernel_args))
        sig = KernelSignature([_from_spec(p) for p in spec.params], calling_convention, symbol)
        return sig if symbol is not None else sig.with_mangled_symbol(kernel.__name__)


def _from_spec(p):
    if p.kind == "array":
        return ArrayConstraint(p.dtype, p.ndim, index_dtype=p.index_dtype)
    if p.kind == "scalar":
        return ScalarConstraint(p.dtype)
    if p.kind == "tuple":
        return TupleConstraint([_from_spec(i) for i in p.items])
    if p.kind == "const":
        try:
            return ConstantConstraint(p.value)
        except TypeError:
            raise TypeError(f"a constant of type {type(p.value).__name__} cannot be part of a "
                            "kernel signature (bool, int, float or DType)") from None
    raise TypeError(f"a {p.kind} parameter has no signature constraint in cutile")


def export_kernel(kernel, signatures, output_file, *, gpu_code: str, output_format: str,
                  bytecode_version=None):
    """1.7 writes a cubin or Tile IR bytecode file here; cutile cannot (see the module)."""
    raise TileUnsupportedFeatureError(
        f"export_kernel(output_format={output_format!r}): cutile cannot export NVIDIA's binary "
        "formats (cubin, Tile IR bytecode need NVIDIA's tileiras compiler); cutile compiles "
        "kernels just in time for its interpreter and its Numba backend. Use ct.launch, or "
        "KernelSignature.from_kernel_args to name a specialisation")


def demangle_kernel_name(symbol: str):
    """``(function name, KernelSignature)`` of a symbol made by ``mangle_kernel_name``."""
    name, conv, params = parse_kernel_name(symbol)
    return name, KernelSignature(params, CallingConvention.from_code(conv), symbol)

"""``ct.compilation``: kernel signatures, parameter constraints and name mangling (1.7's
``cuda.tile.compilation``) for cutile's executors; exporting NVIDIA binaries is refused.

A ``KernelSignature`` lists one constraint per kernel parameter: ``ArrayConstraint`` (dtype,
rank, index dtype and the layout assumptions 1.7 lets you state), ``ScalarConstraint``,
``ConstantConstraint``, ``TupleConstraint`` and ``ListConstraint``.
``KernelSignature.from_kernel_args`` gives the signature a launch with those arguments
specialises to (what cutile's compile cache is keyed on), with a mangled ``symbol``;
``demangle_kernel_name`` reads a symbol back.  cutile has no ahead-of-time binary format:
``export_kernel`` (cubin / Tile IR bytecode, which need NVIDIA's ``tileiras``) raises
``TileUnsupportedFeatureError``.

>>> sig = ct.compilation.KernelSignature.from_kernel_args(vec_add, (a, b, c, 1024))
>>> sig.symbol
'vec_add_Kc1_A1f32_A1f32_A1f32_I1024'
"""

from __future__ import annotations

from .constraints import (
    ArrayConstraint,
    ConstantConstraint,
    ListConstraint,
    ParameterConstraint,
    ScalarConstraint,
    TupleConstraint,
)
from .mangling import mangle_kernel_name
from .signature import CallingConvention, KernelSignature, demangle_kernel_name, export_kernel

__all__ = ["ArrayConstraint", "CallingConvention", "ConstantConstraint", "KernelSignature",
           "ListConstraint", "ParameterConstraint", "ScalarConstraint", "TupleConstraint",
           "demangle_kernel_name", "export_kernel", "mangle_kernel_name"]

"""cutile: the cuTile Python tile language (``cuda.tile``) on the CPU and, via Numba, the GPU.

``import cutile as ct`` runs kernels written for ``cuda.tile`` unchanged.  This module holds
public names only; importing it never imports numba.
"""

from __future__ import annotations

from . import compilation, tune  # submodules, as in cuda.tile
from .annotations import (
    ArrayAnnotation,
    Constant,
    ConstantAnnotation,
    IndexedWithInt64,
    ListAnnotation,
    ScalarInt64,
)
from .api.advanced_indexing import Slice, load_advanced_indexing, store_advanced_indexing
from .api.atomic import (
    atomic_add,
    atomic_and,
    atomic_cas,
    atomic_max,
    atomic_min,
    atomic_or,
    atomic_xchg,
    atomic_xor,
)
from .api.classes import Array, Scalar, Tile, TiledView
from .api.classes import RawArrayMemory as RawArrayMemory  # not in __all__ (as 1.7)
from .api.creation import arange, astile, full, ones, zeros
from .api.debug import (
    assert_,
    grid_dependency_control_launch_dependents,
    grid_dependency_control_wait,
    print,
    printf,
)
from .api.elementwise import (
    abs,
    add,
    astype,
    atan2,
    bitwise_and,
    bitwise_lshift,
    bitwise_not,
    bitwise_or,
    bitwise_rshift,
    bitwise_xor,
    cdiv,
    ceil,
    cos,
    cosh,
    divmod,
    equal,
    exp,
    exp2,
    floor,
    floordiv,
    greater,
    greater_equal,
    isnan,
    less,
    less_equal,
    log,
    log2,
    maximum,
    minimum,
    mod,
    mul,
    negative,
    not_equal,
    pow,
    rsqrt,
    sin,
    sinh,
    sqrt,
    sub,
    tan,
    tanh,
    truediv,
    where,
)
from .api.index import bid, num_blocks
from .api.matmul import matmul, mma, mma_scaled
from .api.memory import gather, load, num_tiles, scatter, store
from .api.meta import (
    assume_divisible_by,
    ensure_constant,
    static_assert,
    static_eval,
    static_exception,
    static_iter,
)
from .api.reduce import argmax, argmin, max, min, prod, reduce, sum
from .api.scan import cumprod, cumsum, scan
from .api.shape import (
    bitcast,
    broadcast_to,
    cat,
    expand_dims,
    extract,
    insert,
    pack_to_bytes,
    permute,
    reshape,
    transpose,
    unpack_from_bytes,
)
from .compile_timeout import compiler_timeout
from .dtypes import (
    DType,
    bfloat16,
    bool_,
    float4_e2m1fn,
    float8_e4m3fn,
    float8_e5m2,
    float8_e5m3fnu,
    float8_e8m0fnu,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    tfloat32,
    uint8,
    uint16,
    uint32,
    uint64,
)
from .dtypes import foreign_pointer_dtype as foreign_pointer_dtype  # not in __all__ (as 1.7)
from .enums import MemoryOrder, MemoryScope, PaddingMode, RoundingMode
from .errors import (
    StaticException,
    TileCompilerExecutionError,
    TileCompilerTimeoutError,
    TileError,
    TileInternalError,
    TileRecursionError,
    TileStaticAssertionError,
    TileStaticEvalError,
    TileSyntaxError,
    TileTypeError,
    TileUnsupportedFeatureError,
    TileValueError,
    UndefinedBehaviorError,
    UndefinedBehaviorWarning,
)
from .executors import set_backend
from .kernel import ByTarget, function, kernel, launch

__version__ = "0.1.0"

__all__ = [
    "launch", "ByTarget", "MemoryOrder", "MemoryScope", "PaddingMode", "RoundingMode", "DType",
    "bfloat16", "bool_", "float4_e2m1fn", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu",
    "float8_e5m3fnu", "float16", "float32", "float64", "int8", "int16", "int32", "int64",
    "tfloat32", "uint8", "uint16", "uint32", "uint64",
    "TileCompilerExecutionError", "TileCompilerTimeoutError", "TileError", "TileInternalError",
    "TileRecursionError", "TileStaticAssertionError", "TileStaticEvalError", "TileSyntaxError",
    "TileTypeError", "TileUnsupportedFeatureError", "TileValueError", "UndefinedBehaviorError",
    "UndefinedBehaviorWarning",
    "Array", "ArrayAnnotation", "Constant", "ConstantAnnotation", "IndexedWithInt64", "Scalar",
    "ScalarInt64", "Tile", "TiledView",
    "abs", "add", "arange", "argmax", "argmin", "astile", "astype", "atan2", "bid",
    "bitwise_and", "bitwise_lshift", "bitwise_not", "bitwise_or", "bitwise_rshift", "bitwise_xor",
    "divmod", "broadcast_to", "cdiv", "ceil",
    "cos", "cosh", "equal", "exp", "exp2", "expand_dims", "floor", "floordiv", "full", "gather",
    "greater", "greater_equal", "isnan", "less", "less_equal", "load", "log", "log2", "matmul",
    "max", "maximum", "min", "minimum", "mma", "mod", "mul", "negative", "not_equal",
    "num_blocks", "num_tiles", "ones", "permute", "pow", "prod", "reshape", "rsqrt", "scatter",
    "sin", "sinh", "sqrt", "store", "sub", "sum", "tan", "tanh", "transpose", "truediv", "where",
    "zeros", "function", "kernel", "set_backend", "compiler_timeout", "tune", "compilation",
    "atomic_add", "atomic_and", "atomic_cas", "atomic_max", "atomic_min", "atomic_or",
    "atomic_xchg", "atomic_xor",
    # scans, user reductions, cat/extract/insert, bits (issue 10 part B)
    "bitcast", "cat", "cumprod", "cumsum", "extract", "insert", "pack_to_bytes", "reduce",
    "scan", "unpack_from_bytes",
    "assume_divisible_by", "ensure_constant", "static_assert", "static_eval", "static_iter",
    "ListAnnotation", "static_exception", "StaticException",
]
# issue 10 part C: debugging, advanced indexing, mma_scaled, PDL
__all__ += [
    "assert_", "grid_dependency_control_launch_dependents", "grid_dependency_control_wait",
    "print", "printf", "mma_scaled", "Slice", "load_advanced_indexing", "store_advanced_indexing",
]
# ``RawArrayMemory`` (the type of ``Array.get_raw_memory()``) and ``foreign_pointer_dtype`` are
# importable names outside ``__all__``, as in cuda.tile 1.7.

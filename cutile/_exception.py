"""Upstream exception names (``cuda.tile._exception``), aliases of the public classes (R-ERR-1)."""

from .errors import (  # noqa: F401
    CompilerExecutionError, CompilerTimeoutError, InternalError, InvalidValueError,
    RecursionLimitError, StaticAssertionError, StaticEvalError, TileCompilerExecutionError,
    TileCompilerTimeoutError, TileError, TileInternalError, TileRecursionError,
    TileStaticAssertionError, TileStaticEvalError, TileSyntaxError, TileTypeError,
    TileUnsupportedFeatureError, TileValueError, TypeCheckingError, UnsupportedCallError,
    UnsupportedFeatureError, UnsupportedSyntaxError,
)

"""The compilation context: the IR builder and the source location of the call being compiled.

API functions (``cutile/api``) run at compile time inside a context and emit IR through it.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

from ..errors import Loc, TileInternalError
from ..ir.core import Builder, Op
from ..ir.types import ArrayType
from .values import ArrayV, FVal, TileV

# One stack per Python thread: kernels may be compiled by several threads at once.
_tls = threading.local()


def _stack() -> list[CompileContext]:
    st = getattr(_tls, "stack", None)
    if st is None:
        st = _tls.stack = []
    return st


class CompileContext:
    def __init__(self, builder: Builder):
        self.builder = builder
        self.loc: Loc | None = None
        self.depth = 0
        # the function compiler running the current call: ops that compile a user function
        # (reduce/scan combiners) call it through here
        self.compiler = None
        # "scan"/"reduction" while a combiner body compiles: a runtime branch there is
        # refused before its arms are compiled (R-RED-9), so their errors do not mask it
        self.combiner: str | None = None
        # ``cutile.debug.trace`` watchpoints: {line: names} in ``watch_file`` (None: off)
        self.watch: dict | None = None
        self.watch_file: str | None = None
        self.watch_live: dict = {}        # watched line -> the names live there (any emission)
        # the kernel's runtime parameters (IR values), for diagnostics
        self.params: list = []

    def emit(self, op: Op) -> Op:
        return self.builder.emit(op, self.loc)

    def emit_value(self, op: Op) -> FVal:
        """Emit an op with one result and wrap the result as a frontend value."""
        self.emit(op)
        v = op.result
        if isinstance(v.type, ArrayType):
            raise TileInternalError("emit_value on an array-producing op")
        return TileV(v)

    def emit_array(self, op: Op, static_shape: tuple) -> ArrayV:
        self.emit(op)
        return ArrayV(op.result, static_shape)


def current() -> CompileContext:
    st = _stack()
    if not st:
        raise RuntimeError("Device functions can only be called from device code.")
    return st[-1]


def in_tile_code() -> bool:
    return bool(_stack())


@contextmanager
def compiling(ctx: CompileContext):
    st = _stack()
    st.append(ctx)
    try:
        yield ctx
    finally:
        st.pop()


def emit(op: Op) -> Op:
    return current().emit(op)


def emit_value(op: Op) -> TileV:
    return current().emit_value(op)


_static = threading.local()


def in_static_eval() -> bool:
    """True while host Python runs a ``static_eval`` expression (R-META-1): tile operations
    called there raise instead of emitting IR."""
    return bool(getattr(_static, "places", None))


def static_place() -> str:
    """Where host Python runs now, as 1.7's messages name it ("static_eval()",
    "static_assert()", "static_iter() iterable"): "X() cannot be called inside <place>"."""
    places = getattr(_static, "places", None)
    return places[-1] if places else "static_eval()"


@contextmanager
def static_evaluation(place: str = "static_eval()"):
    if not hasattr(_static, "places"):
        _static.places = []
    _static.places.append(place)
    try:
        yield
    finally:
        _static.places.pop()

"""User combiners of ``reduce`` and ``scan`` (R-RED-8/9, R-SCAN-3), compiled to IR once.

The combiner (lambda, nested ``def``, ``@ct.function``, ``ct.*`` op or ``operator.*``) is
called once at compile time on 2N 0-d region arguments; what it emits becomes the op's
``body`` region, which both executors run (the interpreter vectorised over all pairs of one
combine step, the Numba backend as straight-line register code).
"""

from __future__ import annotations

from .. import dtypes as dt
from ..errors import TileSyntaxError, TileTypeError
from ..ir import ops
from ..ir.core import Region, Value, walk
from ..ir.types import TileType
from ..lang import coerce
from ..lang.context import current
from ..lang.values import Const, TileV, TupleV, describe

# ops a combiner body may contain: pure values, no memory, no control flow (R-RED-9)
_ALLOWED_SECTIONS = ("elementwise", "creation", "index")
_NESTED = ("reduce", "scan")


def operand_tiles(x, what: str) -> tuple[list[TileV], bool]:
    """``x`` as a list of tiles broadcast to one shape, and whether it was a tuple."""
    v = coerce.fval(x)
    is_tuple = isinstance(v, TupleV) or (isinstance(v, Const) and isinstance(v.value, tuple))
    items = list(coerce.tuple_items(v, what)) if is_tuple else [v]
    if not items:
        raise TileTypeError(f"{what}() expects at least one tile")
    tiles = []
    for it in items:
        if not (isinstance(it, TileV) or coerce.is_number_const(it)):
            raise TileTypeError(f"Expected a tile, got {describe(it)}")
        t = coerce.to_tile(it)
        if t.dtype.is_restricted:                              # R-RED-3, R-SCAN-2
            raise TileTypeError(f"Non-arithmetic dtype {t.dtype.name} is unsupported for "
                                f"{what}")
        tiles.append(t)
    try:
        shape = coerce.broadcast_shapes(*[t.shape for t in tiles])
    except TileTypeError:
        raise TileTypeError(f"Input tiles of {what}() with shapes "
                            f"{tuple(t.shape for t in tiles)} are not broadcastable to a "
                            "common shape") from None
    return [coerce.broadcast(t, shape) for t in tiles], is_tuple


def identities(identity, dtypes: list, is_tuple: bool) -> tuple:
    """Constant identity values, one per operand, converted to its dtype (R-RED-8)."""
    v = coerce.fval(identity)
    if is_tuple:
        items = coerce.tuple_items(v, "identity") if (isinstance(v, TupleV) or (
            isinstance(v, Const) and isinstance(v.value, tuple))) else (v,)
        if len(items) != len(dtypes):
            raise TileTypeError(f"Number of identity values ({len(items)}) does not match the "
                                f"number of input tiles ({len(dtypes)})")
    else:
        items = (v,)
    out = []
    for it, d in zip(items, dtypes):
        if not coerce.is_number_const(it):
            raise TileTypeError(f"Expected a constant scalar for identity, got {describe(it)}")
        out.append(dt.convert_constant(it.value, d))
    return tuple(out)


def compile_body(func, dtypes: list, what: str) -> Region:
    """Call ``func`` on 2N fresh 0-d arguments inside a new region; check and return it."""
    ctx = current()
    comp = ctx.compiler
    region = Region([Value(TileType(d, ()), f"c{i}") for i, d in enumerate(dtypes + dtypes)])
    fn = coerce.fval(func)
    outer, ctx.combiner = ctx.combiner, ("reduction" if what == "reduce" else "scan")
    try:
        with ctx.builder.open(region):
            outs = _body_results(comp.call(fn, [TileV(a) for a in region.args], {}, None,
                                           None), dtypes, what)
            ctx.emit(ops.Yield(tuple(outs)))
    finally:
        ctx.combiner = outer
    _check_body(region, what)
    return region


def _body_results(res, dtypes: list, what: str) -> list:
    """The combiner's result ``res`` as one IR value per operand, of its dtype."""
    n = len(dtypes)
    if n > 1:
        if not (isinstance(res, TupleV) or (isinstance(res, Const)
                                            and isinstance(res.value, tuple))):
            raise TileTypeError(f"{what} function must return a tuple of {n} tiles, got "
                                f"{describe(res)}")
        items = coerce.tuple_items(res, "result")
        if len(items) != n:
            raise TileTypeError(f"{what} function returned {len(items)} values, expected {n}")
    else:
        items = (res,)
    outs = []
    for it, d in zip(items, dtypes):
        if not (isinstance(it, TileV) or coerce.is_number_const(it)):
            raise TileTypeError(f"{what} function must return tiles, got {describe(it)}")
        if coerce.value_shape(it) != ():
            raise TileTypeError(f"{what} function must return a 0-d tile, got shape "
                                f"{coerce.value_shape(it)}")
        try:
            outs.append(coerce.implicit_cast(it, d, f"{what} function").value)
        except TileTypeError:
            raise TileTypeError(f"{what} function returned a tile of unexpected dtype "
                                f"{coerce.value_dtype(it).name}, expected {d.name}") from None
    return outs


def _check_body(region: Region, what: str) -> None:
    """R-RED-9's errors first (whichever op), then anything else the executors do not run."""
    where = "reduction" if what == "reduce" else "scan"
    body = [op for op in walk(region) if op is not region.terminator]
    for op in body:
        if op.section in _NESTED:
            raise TileSyntaxError("Nested scan/reduction is not supported", op.loc)
        if isinstance(op, (ops.For, ops.Loop)):
            raise TileSyntaxError(f"Loops inside {where} body are not supported", op.loc)
        if isinstance(op, ops.If) or op.is_terminator:
            raise TileSyntaxError(f"Branching inside {where} body is not supported", op.loc)
        if op.section == "debugger":
            raise TileSyntaxError(f"breakpoint() and trace watchpoints are not supported inside "
                                  f"{where} body", op.loc)
        if op.section in ("memory", "atomic", "debug"):
            raise TileSyntaxError(f"Operations with memory effects are not supported inside "
                                  f"{where} body", op.loc)
    for op in body:
        if op.section in _ALLOWED_SECTIONS or (op.rearranges          # a 0-d value moved
                                               and op.result.type.size == 1):
            continue
        raise TileSyntaxError(f"{type(op).__name__} is not supported inside {where} body "
                              "(only elementwise operations on 0-d tiles)", op.loc)

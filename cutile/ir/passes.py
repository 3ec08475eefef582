"""IR passes.  ``fuse_fma`` makes cuTile's multiply-add contraction explicit (R-FMA-1/2)."""

from __future__ import annotations

from collections import Counter

from .core import KernelIR, Region, walk
from .ops import Binary, Fma, Unary


def _use_counts(region: Region) -> Counter:
    uses: Counter = Counter()
    for op in walk(region):
        for v in op.operands():
            uses[id(v)] += 1
    return uses


def fuse_fma(kernel: KernelIR) -> None:
    """Replace ``x*y + z``, ``z + x*y``, ``x*y - z`` and ``z - x*y`` on floats by one ``Fma``
    where the product has no other use and both ops come from user arithmetic in one region."""
    uses = _use_counts(kernel.body)
    _fuse_region(kernel.body, uses)


def _fuse_region(region: Region, uses: Counter) -> None:
    producers = {}
    new_ops = []
    for op in region.ops:
        for r in op.regions():
            _fuse_region(r, uses)
        if (isinstance(op, Binary) and op.fusible and op.fn in ("add", "sub")
                and op.x.type.dtype.is_float and not op.x.type.dtype.is_restricted):
            fused = _try_fuse(op, producers, uses, new_ops)
            if fused is not None:
                new_ops.extend(fused)
                continue
        new_ops.append(op)
        if isinstance(op, Binary) and op.fn == "mul" and op.fusible:
            producers[id(op.result)] = op
    region.ops = new_ops


def _try_fuse(add: Binary, producers, uses, new_ops):
    for side in ("x", "y"):
        v = getattr(add, side)
        mul = producers.get(id(v))
        if mul is None or uses[id(v)] != 1 or mul not in new_ops:
            continue
        other = add.y if side == "x" else add.x
        a, b, c = mul.x, mul.y, other
        pre = []
        if add.fn == "sub":
            neg = Unary("negative", c if side == "x" else a)
            neg.loc, neg.results = add.loc, [type(add.result)(c.type if side == "x" else a.type)]
            pre.append(neg)
            if side == "x":
                c = neg.result            # x*y - z  ->  fma(x, y, -z)
            else:
                a = neg.result            # z - x*y  ->  fma(-x, y, z)
        new_ops.remove(mul)
        fma = Fma(a, b, c)
        fma.loc, fma.results = add.loc, add.results
        return pre + [fma]
    return None


# -- effects (launch checks, the interpreter's non-termination check) -------------------------
# Ops known to have no effect beyond their results.  Anything else (stores, scatters, atomics,
# prints, asserts, ops added later) counts as an effect: the analyses below stay conservative.
_PURE_OPS = frozenset({
    "ArgReduce", "ArrayDim", "ArraySlice", "ArrayStride", "Binary", "BlockId", "Broadcast",
    "Compare", "Constant", "Convert", "Fma", "Gather", "Iota", "Load", "Mma", "NumBlocks",
    "Permute", "Reduce", "Reshape", "Select", "Unary", "For", "If", "Loop", "Yield", "Break",
    "Continue", "Return"})


def region_is_pure(region: Region) -> bool:
    """True when no op of ``region`` (nested regions included) writes memory or prints."""
    return all(type(op).__name__ in _PURE_OPS for op in walk(region))


def _writes_array(op) -> bool:
    name = type(op).__name__
    return name in ("Store", "Scatter") or name.startswith("Atomic")


def written_params(kernel: KernelIR) -> dict[int, object]:
    """{index in ``kernel.params``: Loc of the first op that writes to it} for array params
    written by a store, scatter or atomic (directly or through a view of the param)."""
    root = {id(p): i for i, p in enumerate(kernel.params)}
    out: dict[int, object] = {}
    for op in walk(kernel.body):
        arr = getattr(op, "array", None)
        if arr is not None and _writes_array(op):
            i = root.get(id(arr))
            if i is not None and i not in out:
                out[i] = op.loc
        for r in op.results:                 # a view of an array shares its root
            if id(arr) in root:
                root[id(r)] = root[id(arr)]
    return out

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

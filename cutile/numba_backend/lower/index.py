"""Lowering of ``bid``/``num_blocks``: the logical grid is passed to the kernel (``gd0..2``) and
the block id is recovered from the linear CUDA block index, so a grid whose y/z extent exceeds
CUDA's 65535 can be launched folded into x (see ``launch.py``).  An unfolded launch (the CUDA
grid's x extent is the logical one) reads ``blockIdx`` directly: the test is uniform, and the
divisions it skips are a few dozen instructions per thread.  Only a folded launch uses the
linear index; it has fewer than 2**31 blocks (``launch.cuda_grid`` refuses more), and Numba
computes it in int64 anyway (its integer arithmetic widens to intp)."""

from __future__ import annotations

from ...ir import ops
from ..registry import lower


def bid_exprs(g):
    """The three block-id expressions of the generated kernel (hoisted once per kernel), from
    the launch grid, flat or folded into blockIdx.x."""
    lin = g.hoist(("blin",), "blin",
                  "i32(cuda.blockIdx.x) + i32(cuda.gridDim.x) * (i32(cuda.blockIdx.y) + "
                  "i32(cuda.gridDim.y) * i32(cuda.blockIdx.z))")
    flat = g.hoist(("bflat",), "bflat", "cuda.gridDim.x == gd0")
    return (g.hoist(("bid", 0), "bid0", f"i32(cuda.blockIdx.x) if {flat} else {lin} % gd0"),
            g.hoist(("bid", 1), "bid1",
                    f"i32(cuda.blockIdx.y) if {flat} else ({lin} // gd0) % gd1"),
            g.hoist(("bid", 2), "bid2",
                    f"i32(cuda.blockIdx.z) if {flat} else {lin} // (gd0 * gd1)"))


def index_subst(g, lds, iv, iv_expr: str) -> dict:
    """Index expressions of the loads with the induction variable at ``iv_expr`` (block ids
    and constants spelled out: the prologue runs before the loop body defines them)."""
    sub = {id(iv): iv_expr}
    for ld in lds:
        for v in ld.index:
            op = g.assign.invariant_index(v)
            if isinstance(op, ops.BlockId):
                sub[id(v)] = f"i32({bid_exprs(g)[op.axis]})"
            elif op is not None:
                sub[id(v)] = str(int(op.value))
    return sub


@lower(ops.BlockId)
def block_id(g, op):
    g.define(op.result, g.scalar_layout(), [f"i32({bid_exprs(g)[op.axis]})"])


@lower(ops.NumBlocks)
def num_blocks(g, op):
    g.define(op.result, g.scalar_layout(), [f"i32(gd{op.axis})"])

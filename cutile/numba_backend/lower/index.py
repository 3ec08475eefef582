"""Lowering of ``bid``/``num_blocks``: the logical grid is passed to the kernel (``gd0..2``) and
the block id is recovered from the linear CUDA block index, so a grid whose y/z extent exceeds
CUDA's 65535 can be launched folded into x (see ``launch.py``)."""

from __future__ import annotations

from ...ir import ops
from . import lower


def _bids(g):
    lin = g.hoist(("blin",), "blin",
                  "cuda.blockIdx.x + cuda.gridDim.x * (cuda.blockIdx.y + cuda.gridDim.y * "
                  "cuda.blockIdx.z)")
    return (g.hoist(("bid", 0), "bid0", f"{lin} % gd0"),
            g.hoist(("bid", 1), "bid1", f"({lin} // gd0) % gd1"),
            g.hoist(("bid", 2), "bid2", f"{lin} // (gd0 * gd1)"))


@lower(ops.BlockId)
def block_id(g, op):
    g.define(op.result, g.scalar_layout(), [f"i32({_bids(g)[op.axis]})"])


@lower(ops.NumBlocks)
def num_blocks(g, op):
    g.define(op.result, g.scalar_layout(), [f"i32(gd{op.axis})"])

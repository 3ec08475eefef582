"""Interpreter rules for block id and grid extent (R-EXEC-2)."""

from __future__ import annotations

import numpy as np

from ...ir import ops
from ..core import PTile, rule


@rule(ops.BlockId)
def block_id(frame, op):
    return PTile(np.array(frame.bid[op.axis], dtype=np.int32))


@rule(ops.NumBlocks)
def num_blocks(frame, op):
    return PTile(np.array(frame.grid[op.axis], dtype=np.int32))

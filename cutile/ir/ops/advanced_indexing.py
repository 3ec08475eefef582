"""Advanced indexing (§10): a gather/scatter over the index grid of one sparse dimension and
dense slices, which also knows its sparse axis and padding mode, so the interpreter can check
what plain gather/scatter allow: a tile entirely outside the array (R-UB-1), duplicate sparse
indices of a store (R-UB-7), and UNDETERMINED padding (poison, R-PAD-3)."""

from __future__ import annotations

from ...enums import PaddingMode
from ..core import opdef
from .memory import Gather, Scatter


@opdef("advanced_indexing")
class AdvancedGather(Gather):
    """``load_advanced_indexing``: ``indices`` broadcast to the result shape, one per dim."""

    sparse_axis: int = 0
    padding_mode: PaddingMode = PaddingMode.UNDETERMINED


@opdef("advanced_indexing")
class AdvancedScatter(Scatter):
    """``store_advanced_indexing``: ``indices`` broadcast to the tile shape, one per dim."""

    sparse_axis: int = 0

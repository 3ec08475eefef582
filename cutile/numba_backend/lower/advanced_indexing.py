"""Lowering of advanced indexing: exactly gather/scatter over the index grid (the UB checks of
the interpreter's rules are not generated, as for every op: docs/backend.md)."""

from __future__ import annotations

from ...ir import ops
from ..registry import lower
from .memory import gather, scatter

lower(ops.AdvancedGather)(gather)
lower(ops.AdvancedScatter)(scatter)

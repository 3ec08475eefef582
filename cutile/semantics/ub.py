"""``UB``: the marker for detected undefined behaviour, raised by a rule or a runtime helper.

The interpreter's machine adds the block id and the op's source line and raises
``UndefinedBehaviorError``; the Numba backend's simulator helpers (``numba_backend/
pointer_rt.py``) turn it into ``UndefinedBehaviorError`` themselves.
"""

from __future__ import annotations


class UB(Exception):
    """Raised by rules for detected undefined behaviour; the machine adds location and block."""

    def __init__(self, rule: str, message: str):
        super().__init__(message)
        self.rule = rule
        self.message = message

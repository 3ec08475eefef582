"""Source builder for generated kernels: indented lines, IR-op comments, line -> op map.

Generated source is deterministic (names come from counters in IR order), readable (every IR
op is introduced by a comment naming it and the user's source location) and can be mapped
back: ``op_at(lineno)`` gives the IR op whose lowering produced a generated line, so a Numba
error inside generated code is reported with the op and the user's line.
"""

from __future__ import annotations

from contextlib import contextmanager


def loc_str(loc) -> str:
    if loc is None:
        return "?"
    import os
    return f"{os.path.basename(loc.filename)}:{loc.line}"


class Emitter:
    """A list of source lines with an indentation level and the IR op of each line."""

    def __init__(self, indent: int = 1):
        self.lines: list[str] = []
        self.ops: list[object] = []
        self.level = indent
        self.current_op = None

    def line(self, text: str) -> None:
        self.lines.append("    " * self.level + text)
        self.ops.append(self.current_op)

    def comment(self, text: str) -> None:
        self.line("# " + text)

    @contextmanager
    def indent(self):
        self.level += 1
        try:
            yield
        finally:
            self.level -= 1

    @contextmanager
    def for_op(self, op):
        prev = self.current_op
        self.current_op = op
        try:
            yield
        finally:
            self.current_op = prev

    def mark(self) -> int:
        return len(self.lines)

    def truncate(self, mark: int) -> None:
        del self.lines[mark:]
        del self.ops[mark:]

    def splice(self, mark: int, other: Emitter) -> None:
        self.lines[mark:mark] = other.lines
        self.ops[mark:mark] = other.ops

    def ensure_body(self, mark: int) -> None:
        """Python needs a statement in every block: add ``pass`` if nothing was emitted."""
        if all(ln.strip().startswith("#") for ln in self.lines[mark:]):
            self.line("pass")


def describe_op(op) -> str:
    """``Binary(add) @ file.py:12`` for comments and error messages."""
    name = type(op).__name__
    fn = getattr(op, "fn", None)
    detail = f"({fn})" if isinstance(fn, str) else ""
    return f"{name}{detail} @ {loc_str(op.loc)}"

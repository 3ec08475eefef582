"""Source locations and the error classes of cuda.tile (spec §25), with a caret formatter.

Every diagnostic about user code carries a ``Loc``: file, line, column, the source line, and
the chain of call sites through inlined helper functions, so the message points at the user's
expression rather than at our internals.
"""

from __future__ import annotations

import linecache
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Loc:
    """A position in user source.  ``line`` is 1-based, ``col`` is 0-based (as in ``ast``)."""

    filename: str
    line: int
    col: int = 0
    end_col: int | None = None
    function: str = ""
    caller: Loc | None = None

    def source_line(self) -> str:
        return linecache.getline(self.filename, self.line).rstrip("\n")

    def with_caller(self, caller: Loc | None) -> Loc:
        return Loc(self.filename, self.line, self.col, self.end_col, self.function, caller)

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}:{self.col + 1}"

    def excerpt(self) -> str:
        """``file:line:col`` plus the source line, as written, and a caret under the offending
        expression (1.7's layout: ``, in f:`` and the line's own indentation)."""
        out = [f'  File "{self.filename}", line {self.line}, col {self.col + 1}'
               + (f", in {self.function}:" if self.function else "")]
        src = self.source_line()
        if src:
            out.append("    " + src)
            start = max(self.col, 0)
            width = 1
            if self.end_col is not None and self.end_col > self.col:
                width = self.end_col - self.col
            out.append("    " + " " * start + "^" * width)
        return "\n".join(out)

    def traceback(self) -> str:
        frames = []
        loc: Loc | None = self
        while loc is not None:
            frames.append(loc)
            loc = loc.caller
        # Outermost call first, like a Python traceback; a deep recursion shows its two ends.
        frames.reverse()
        if len(frames) > 16:
            cut = len(frames) - 12
            return "\n".join([f.excerpt() for f in frames[:6]]
                             + [f"  [... {cut} more inlined calls ...]"]
                             + [f.excerpt() for f in frames[-6:]])
        return "\n".join(f.excerpt() for f in frames)


class TileError(Exception):
    """Base of all tile-code diagnostics.  ``str()`` appends the source excerpt."""

    arg: str | None = None   # the op argument the message is about (1.7 names it; registry)

    def __init__(self, message: str, loc: Loc | None = None):
        super().__init__(message)
        self.message = message
        self.loc = loc

    def __str__(self) -> str:
        if self.loc is None:
            return self.message
        return f"{self.loc}: {self.message}\n{self.loc.traceback()}\n"   # 1.7 ends the same


class UnsupportedSyntaxError(TileError):
    """Unsupported Python construct in tile code."""


class TypeCheckingError(TileError):
    """Wrong argument kinds/dtypes/shapes, non-constant where a constant is required, ..."""


class InvalidValueError(TileError):
    """Out-of-range constants and other invalid constant values."""


class UnsupportedFeatureError(TileError):
    """A feature this executor (or the target) does not provide."""


class RecursionLimitError(TileError):
    """Helper inlining deeper than the limit."""


class StaticAssertionError(TileError):
    """A failed ``static_assert`` or ``ensure_constant``."""


class StaticEvalError(TileError):
    """A violation inside ``static_eval``/``static_assert``/``static_iter``."""


class StaticException(StaticEvalError):
    """A compile-time exception: ``raise ct.static_exception(exc)`` reached by the compiler, or
    an exception raised by host code inside ``static_eval``/``static_assert``/``static_iter``
    (R-META-5; cuda.tile 1.7 exports it under this name)."""


class InternalError(TileError):
    """A bug in cutile itself (non-Tile exceptions during compilation are wrapped in it)."""


class CompilerExecutionError(InternalError):
    """The backend compiler failed.  Constructed as in 1.7, ``(return_code, stderr,
    compiler_flags, compiler_version)``; cutile's backend has no compiler process and passes
    ``return_code=None`` and its own message (and the source location, ``loc``)."""

    def __init__(self, return_code: int | None, stderr: str, compiler_flags: str = "",
                 compiler_version: str | None = None, loc: Loc | None = None):
        head = "" if return_code is None else f"Return code {return_code}\n"
        super().__init__(head + stderr, loc)
        self.return_code = return_code
        self.compiler_flags = compiler_flags
        self.compiler_version = compiler_version


class CompilerTimeoutError(InternalError):
    """The backend compiler exceeded its time limit (1.7's constructor:
    ``(message, compiler_flags, compiler_version)``)."""

    def __init__(self, message: str, compiler_flags: str = "",
                 compiler_version: str | None = None):
        super().__init__(message)
        self.compiler_flags = compiler_flags
        self.compiler_version = compiler_version


class UnsupportedCallError(TileError):
    """An unsupported builtin/library call or class instantiation in tile code (R-PY-9)."""


class UndefinedBehaviorError(RuntimeError):
    """The interpreter detected undefined behaviour (spec §6.6, R-UB-*).  cutile-only.

    Carries the block id and the user's source location of the offending operation.
    """

    def __init__(self, message: str, loc: Loc | None = None, block: tuple | None = None,
                 rule: str | None = None):
        self.message = message
        self.loc = loc
        self.block = block
        self.rule = rule
        super().__init__(message)

    def __str__(self) -> str:
        head = self.message
        if self.rule:
            head = f"[{self.rule}] {head}"
        if self.block is not None:
            head += f" (block {self.block})"
        if self.loc is not None:
            return f"{self.loc}: {head}\n{self.loc.traceback()}"
        return head


class UndefinedBehaviorWarning(RuntimeWarning):
    """With ``CUTILE_STRICT=0`` the interpreter reports undefined behaviour it runs through
    instead of raising (R-UB-2: a result relying on UNDETERMINED padding, read as zeros there),
    once per source line per launch; Python's warning filters decide the rest (by default once
    per line per process; ``"error"`` turns it into an exception).  cutile-only."""


class TileAssertionError(AssertionError):
    """A failed ``ct.assert_`` (R-ASSERT-2): an ``AssertionError`` naming the block, the user's
    line and the message.  cutile-only."""

    def __init__(self, message: str | None, loc: Loc | None = None, block: tuple | None = None):
        self.message = message
        self.loc = loc
        self.block = block
        super().__init__(message or "")

    def _head(self) -> str:
        head = "ct.assert_ failed"
        if self.block is not None:
            head += f" in block {tuple(self.block)}"
        return f"{head}: {self.message}" if self.message else head

    def __str__(self) -> str:
        if self.loc is not None:
            return f"{self.loc}: {self._head()}\n{self.loc.traceback()}"
        return self._head()

    def printed(self) -> TileAssertionError:
        """``self`` after writing its message as the device does (R-ASSERT-1: a failing
        block prints the message, if given, as one line of the program's standard output,
        where 1.7's users and tests read it); both executors raise ``error.printed()``."""
        if self.message:
            sys.stdout.write(self._head() + "\n")
            sys.stdout.flush()
        return self


# cuda.tile 1.7 names its classes TypeCheckingError, ...; the Tile*Error names are aliases
# (R-ERR-1), checked on an H100.
TileSyntaxError = UnsupportedSyntaxError
TileTypeError = TypeCheckingError
TileValueError = InvalidValueError
TileUnsupportedFeatureError = UnsupportedFeatureError
TileRecursionError = RecursionLimitError
TileStaticAssertionError = StaticAssertionError
TileStaticEvalError = StaticEvalError
TileInternalError = InternalError
TileCompilerExecutionError = CompilerExecutionError
TileCompilerTimeoutError = CompilerTimeoutError

"""Tracebacks that end at the user's code, as pytest and JAX trim theirs.

An error in a kernel surfaces deep inside cutile (the launch, the executor, the block loop,
the rule of one op); the frames on the way are ours, not the user's, and they push the user's
line out of sight.  ``api_boundary`` wraps the public entry points (``ct.launch``,
``cutile.debug``, ``cutile.testing``): an exception leaving one keeps the user's frames (the
caller's, and any user function called from inside, such as a reference function) and drops
cutile's.  An error that knows its kernel line (``loc``: ``TileError``,
``UndefinedBehaviorError``, ``TileAssertionError``) gets frames at that line, and at the
helper calls leading to it, so the traceback ends at the user's kernel line, as a Python error
in a Python function would.

What remains of cutile is the boundary's own frame (one line, which says how to see the rest);
it carries ``__tracebackhide__``, so pytest and IPython hide it too.  ``CUTILE_TRACEBACK=full``
keeps every frame, and a ``TileInternalError`` (a bug in cutile) always keeps them.
"""

from __future__ import annotations

import functools
import os
import types

from . import config
from .errors import InternalError

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_MAX_KERNEL_FRAMES = 8          # a deep helper recursion shows its innermost calls


def _ours(tb: types.TracebackType) -> bool:
    return os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_PACKAGE)


def _user_frames(tb: types.TracebackType | None) -> types.TracebackType | None:
    """``tb`` less cutile's frames, relinked (``tb_next`` is writable)."""
    kept = []
    while tb is not None:
        if not _ours(tb):
            kept.append(tb)
        tb = tb.tb_next
    head = None
    for t in reversed(kept):
        head = types.TracebackType(head, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return head


class _At(Exception):
    """Raised once in a synthetic frame to obtain a frame object standing at a user line."""


def _raise_at():
    raise _At


def _frame_at(loc) -> types.TracebackType | None:
    """A traceback entry whose frame stands at ``loc`` (the kernel's file, line, function).

    The synthetic function starts on the line above (pytest shows a frame's lines from its
    first one) and calls ``_raise_at`` from the columns of the user's expression, padded to
    its width, so Python draws its carets under the user's expression; where that cannot be
    done, a raise statement spanning two lines makes it draw none."""
    if loc.line < 2:
        return None
    width = loc.end_col - loc.col if loc.end_col is not None else 0
    name = loc.function if loc.function.isidentifier() else "kernel"
    body = (" " * loc.col + "_(" + " " * (width - 3) + ")" if loc.col >= 1 and width >= 3
            else " raise (\n_At)")
    src = "\n" * (loc.line - 2) + f"def {name}():\n" + body
    scope = {"_": _raise_at, "_At": _At, "__name__": "__cutile_kernel__"}
    try:
        exec(compile(src, loc.filename, "exec"), scope)  # noqa: S102 - defines the function
        scope[name]()
    except _At as e:
        tb = e.__traceback__.tb_next
        e.__traceback__ = None
        return tb
    except Exception:                 # a location Python cannot stand at: no frame
        return None
    return None


def _kernel_frames(exc: BaseException):
    """Entries at the kernel lines of ``exc.loc``, outermost call first (None: no ``loc``)."""
    locs = []
    loc = getattr(exc, "loc", None)
    while loc is not None and len(locs) < _MAX_KERNEL_FRAMES:
        locs.append(loc)
        loc = loc.caller
    head = None
    for loc in locs:                  # innermost first: each becomes the next one's caller
        at = _frame_at(loc)
        if at is not None:
            head = types.TracebackType(head, at.tb_frame, at.tb_lasti, loc.line)
    return head


def trim(exc: BaseException) -> BaseException:
    """``exc`` with cutile's frames dropped from its traceback and, the first time, frames at
    its kernel lines appended (see the module doc)."""
    tb = _user_frames(exc.__traceback__)
    if not getattr(exc, "_cutile_trimmed", False):
        exc._cutile_trimmed = True
        tail = _kernel_frames(exc)
        if tb is None:
            tb = tail
        else:
            last = tb
            while last.tb_next is not None:
                last = last.tb_next
            last.tb_next = tail
    return exc.with_traceback(tb)


def api_boundary(fn):
    """Wrap a public entry point: exceptions leave it with cutile's frames trimmed."""

    @functools.wraps(fn)
    def boundary(*args, **kwargs):
        __tracebackhide__ = True      # noqa: F841 - read by pytest and IPython
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            if isinstance(e, InternalError) or config.traceback_full():
                raise
            trim(e)
            raise e  # cutile hid its frames from this traceback; CUTILE_TRACEBACK=full shows them

    return boundary

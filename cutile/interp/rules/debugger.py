"""Interpreter rules of the debugger ops: stop in pdb at ``breakpoint()``, record ``trace``
watchpoints.  What is active (block filter, trace records) lives in a ``DebugSession`` that
``cutile.debug`` installs for the launch (docs/debugging.md)."""

from __future__ import annotations

import bdb
import contextvars
import os
import pdb
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from ... import config
from ...ir import ops
from ...progress import paused
from ..core import PTile, rule


@dataclass
class DebugSession:
    """Debugger state of launches: which blocks stop at breakpoints (None: all), the
    watchpoint records of ``trace``, and pdb's input/output (None: the terminal)."""

    break_blocks: set | None = None
    records: list = field(default_factory=list)     # (bid, line, name, value)
    stdin: object = None
    stdout: object = None


current_session: contextvars.ContextVar = contextvars.ContextVar("cutile_debug_session",
                                                                default=None)


def session() -> DebugSession:
    s = current_session.get()
    return s if s is not None else _DEFAULT


_DEFAULT = DebugSession()


def _env_blocks() -> set | None:
    """``CUTILE_BREAK_BLOCKS="3,0;1,2"``: stop only in these blocks."""
    return config.break_blocks()


def _value(x, strip_poison: bool = True):
    """A runtime value as a user inspects it: tiles as NumPy arrays, 0-d tiles as NumPy
    scalars, arrays as they are."""
    if isinstance(x, PTile):
        d = x.data
        return d[()] if d.ndim == 0 else d.copy()
    return x


def _rebuild(lay, values, frame):
    kind, what = lay
    if kind == "v":
        return _value(frame[values[what]])
    if kind == "t":
        return tuple(_rebuild(i, values, frame) for i in what)
    return what


def live(frame, op) -> dict:
    """The op's names with their values in this block."""
    return {n: _rebuild(lay, op.values, frame) for n, lay in zip(op.names, op.layout)}


def _wanted(bid: tuple, chosen: set | None) -> bool:
    if chosen is None:
        return True
    return any(bid[:len(b)] == b and all(x == 0 for x in bid[len(b):]) for b in chosen)


@rule(ops.Breakpoint)
def breakpoint_(frame, op):
    if os.environ.get("PYTHONBREAKPOINT", None) == "0":       # Python's switch for breakpoint()
        return None
    s = session()
    chosen = s.break_blocks if s.break_blocks is not None else _env_blocks()
    if not _wanted(frame.bid, chosen):
        return None
    names = live(frame, op)
    names.setdefault("bid", frame.bid)
    t0 = time.monotonic()
    try:
        with paused():                        # no status line over the prompt
            stop_in_pdb(op.loc, names, frame.bid, s)
    finally:
        # time at the prompt is not the kernel's: the launch's watchdog does not count it
        if frame.watchdog.deadline is not None:
            frame.watchdog.deadline += time.monotonic() - t0
    return None


@rule(ops.Watch)
def watch(frame, op):
    s = current_session.get()
    if s is None:
        return None
    for name, value in live(frame, op).items():
        s.records.append((frame.bid, op.line, name, np.array(value, copy=True)
                          if isinstance(value, np.ndarray) else value))
    return None


class LaunchAborted(bdb.BdbQuit):
    """``q`` (or end of input, Ctrl-C at the prompt, ``sys.exit()``) in the kernel debugger:
    the launch stops here.  A ``bdb.BdbQuit``, as ``q`` raises in Python's own pdb."""


class _KernelPdb(pdb.Pdb):
    """pdb whose ways out end the launch.  The kernel is not a traced Python frame, so pdb's
    own ``q`` would only leave this stop (the launch went on to the next block); here ``q``,
    end of input, Ctrl-C at the prompt and ``sys.exit()`` typed at it all mark the session
    as quitting, and ``stop_in_pdb`` then raises ``LaunchAborted``."""

    _abort: BaseException | None = None

    def cmdloop(self, intro=None):
        try:
            return super().cmdloop(intro)
        except KeyboardInterrupt:
            self.message("--KeyboardInterrupt--")
            self.set_quit()

    def default(self, line):
        self._abort = None
        super().default(line)
        if self._abort is not None:           # sys.exit() or Ctrl-C in an evaluated statement
            self.set_quit()
            return 1
        return None

    def error(self, msg):
        exc = sys.exc_info()[1]               # pdb reports the statement's exception here
        if isinstance(exc, (SystemExit, KeyboardInterrupt)):
            self._abort = exc
        super().error(msg)


def stop_in_pdb(loc, names: dict, bid: tuple, s: DebugSession) -> None:
    """Enter pdb on a frame that stands at the user's source line, whose locals are the
    kernel's live names.  ``list`` shows the kernel's source; ``c`` continues to the next
    stop (the next block, or the next breakpoint); ``q`` raises ``LaunchAborted``."""
    header = (f"cutile: breakpoint in block {bid} at {loc.filename}:{loc.line}"
              + (f" (in {loc.function})" if loc.function else ""))
    namespace = dict(names)
    namespace["__builtins__"] = __builtins__
    namespace["np"] = namespace.get("np", np)
    holder: dict = {}
    namespace["__cutile_frame__"] = lambda: holder.setdefault("f", sys._getframe(1))
    code = compile("\n" * (loc.line - 1) + "__cutile_frame__()", loc.filename, "exec")
    code = code.replace(co_name=loc.function or "<kernel>")   # pdb shows the kernel's name
    exec(code, namespace)                                     # noqa: S102 - builds the frame
    target = holder["f"]
    # nosigint: pdb's `continue` would otherwise install its own SIGINT handler for the rest of
    # the process, so a later Ctrl-C enters pdb instead of raising KeyboardInterrupt
    debugger = _KernelPdb(stdin=s.stdin, stdout=s.stdout, nosigint=True)
    debugger.prompt = "(cutile-pdb) "
    out = s.stdout or sys.stdout
    print(header, file=out)
    debugger.reset()
    debugger.interaction(target, None)
    if debugger.quitting:
        raise LaunchAborted(f"the kernel debugger was quit in block {bid} at "
                            f"{loc.filename}:{loc.line}; the launch was aborted")

"""A one-line status on the terminal while a launch or a kernel test runs long.

Numba's CUDA simulator runs every GPU thread in Python (hundreds of times slower than the
interpreter) and a property test runs dozens of launches, so a run can sit silent for minutes.
Work that lasts more than ``DELAY`` seconds shows one line, redrawn in place every
``INTERVAL`` and erased when the work ends::

    cutile: test_matches_numpy[numba]: 7 launches, 45 s > scale_bias on numba: 3 s
    cutile: bias_gelu on interp: block 812/1024, 9 s

A ``task`` is one unit of work (a launch, a test); tasks nest (a test's launches), and
``advance`` counts the blocks of the innermost one.  A daemon thread draws the newest task of
the process with its parents.  Where it draws (``CUTILE_PROGRESS``): ``auto`` (default) on
standard error when that is a terminal, ``1`` always (even into a file), ``0`` never.  Under
pytest, whose capture hides standard error during a test, the plugin hands over the terminal
itself (``use_terminal``) and the line is drawn after what pytest wrote on the current line.
No progress library is needed; nothing is drawn unless a task outlives ``DELAY``.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
import threading
import time

from . import config

DELAY = 2.0           # seconds a task runs before the line appears
INTERVAL = 0.5        # seconds between redraws
_MAX = 100            # characters of the line at most

_current: contextvars.ContextVar = contextvars.ContextVar("cutile_progress", default=None)
_lock = threading.RLock()
_active: list = []                # running tasks, oldest first
_terminal = None                  # (stream, free columns) handed over by the pytest plugin
_drawn = 0                        # characters of the line now on the screen
_drawn_on = None                  # the stream it is on
_paused = 0
_wake = threading.Event()
_thread: threading.Thread | None = None


class Task:
    """One unit of work on the status line."""

    __slots__ = ("label", "total", "done", "start", "parent", "children", "stream", "quiet")

    def __init__(self, label: str, total: int | None, parent, stream, quiet: bool):
        self.label = label
        self.total = total
        self.done = 0
        self.start = time.monotonic()
        self.parent = parent
        self.children = 0           # tasks started inside this one (a test's launches)
        self.stream = stream
        self.quiet = quiet          # drawn only once it has children (a test without launches)

    def text(self, now: float) -> str:
        out = self.label
        if self.total:
            out += f": block {self.done}/{self.total}"
        elif self.children:
            out += f": {self.children} launch{'es' if self.children > 1 else ''}"
        return out + f", {now - self.start:.0f} s"


def use_terminal(stream, free_columns) -> None:
    """Draw on ``stream`` (None: back to standard error), after what is on the current line:
    ``free_columns()`` says how many columns are left on it (the pytest plugin)."""
    global _terminal
    with _lock:
        _clear()
        _terminal = None if stream is None else (stream, free_columns)


def _where():
    """(stream, free columns or None for a whole line) to draw on, or None: off."""
    mode = config.progress()
    if mode == "off":
        return None
    if _terminal is not None:
        return _terminal
    err = sys.stderr
    if mode == "on" or (err is not None and err.isatty()):
        return err, None
    return None


@contextlib.contextmanager
def task(label: str, total: int | None = None, *, quiet: bool = False):
    """Run the ``with`` body as a task named ``label`` (``total``: blocks to count)."""
    where = _where()
    if where is None:
        yield None
        return
    parent = _current.get()
    t = Task(label, total, parent, where, quiet)
    if parent is not None:
        parent.children += 1
    token = _current.set(t)
    with _lock:
        _active.append(t)
        _start_thread()
    try:
        yield t
    finally:
        _current.reset(token)
        with _lock:
            if time.monotonic() - _root(t).start >= DELAY:
                _draw(t)                    # its final state, in case no redraw caught it
            _active.remove(t)
            if t.parent is None:              # the work ended: its line goes
                _clear()


def advance(n: int = 1) -> None:
    """``n`` more blocks of the innermost task done."""
    t = _current.get()
    if t is not None:
        t.done += n


@contextlib.contextmanager
def paused():
    """No drawing inside (the kernel debugger's prompt); the line is erased first."""
    global _paused
    with _lock:
        _paused += 1
        _clear()
    try:
        yield
    finally:
        with _lock:
            _paused -= 1


def _root(t: Task) -> Task:
    while t.parent is not None:
        t = t.parent
    return t


def _line(t: Task, now: float) -> str:
    chain = []
    while t is not None:
        if not (t.quiet and not t.children):
            chain.append(t.text(now))
        t = t.parent
    return "cutile: " + " > ".join(reversed(chain)) if chain else ""


def _draw(t: Task) -> None:
    """Draw ``t``'s line (under ``_lock``)."""
    global _drawn, _drawn_on
    if _paused:
        return
    stream, free = t.stream
    text = _line(t, time.monotonic())
    room = _MAX if free is None else min(_MAX, free() + _drawn - 1)
    if not text or room < 20:
        return
    text = text[:room]
    try:
        if free is None:                    # a line of its own: back to its start
            pad = max(_drawn - len(text), 0)
            stream.write("\r" + text + " " * pad + "\r" + text)
        else:                               # after others' text: back over ours only
            pad = max(_drawn - len(text), 0)
            stream.write("\b" * _drawn + text + " " * pad + "\b" * pad)
        stream.flush()
    except (OSError, ValueError):           # a closed stream: nothing to draw on
        return
    _drawn, _drawn_on = len(text), t.stream


def _clear() -> None:
    """Erase the line (under ``_lock``)."""
    global _drawn, _drawn_on
    if not _drawn or _drawn_on is None:
        return
    stream, free = _drawn_on
    n = _drawn
    _drawn, _drawn_on = 0, None
    try:
        if free is None:
            stream.write("\r" + " " * n + "\r")
        else:
            stream.write("\b" * n + " " * n + "\b" * n)
        stream.flush()
    except (OSError, ValueError):
        pass


def _start_thread() -> None:
    global _thread
    _wake.set()
    if _thread is None or not _thread.is_alive():
        _thread = threading.Thread(target=_loop, name="cutile-progress", daemon=True)
        _thread.start()


def _loop() -> None:
    """Redraw the newest task every ``INTERVAL`` (and when a task starts) once its root has
    run ``DELAY``; sleep while nothing runs."""
    while True:
        with _lock:
            _wake.clear()
            newest = _active[-1] if _active else None
            if newest is not None and time.monotonic() - _root(newest).start >= DELAY:
                _draw(newest)
        _wake.wait(None if newest is None else INTERVAL)

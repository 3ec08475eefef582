"""``ct.compiler_timeout``: a wall-clock limit on compiling one kernel specialisation (§25).

The limit comes from the innermost ``with ct.compiler_timeout(sec):`` block, else from the
``CUDA_TILE_COMPILER_TIMEOUT_SEC`` environment variable (1.7's name), else there is none.
It covers what cutile compiles: the frontend (AST -> typed IR) and, on the Numba backend, the
kernel source generation.  A compile that overruns raises ``TileCompilerTimeoutError``; the
abandoned compile finishes in a daemon thread and its result is dropped (nothing is cached).
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from contextlib import contextmanager
from typing import TypeVar

from . import config
from .errors import TileCompilerTimeoutError

T = TypeVar("T")

_limit: contextvars.ContextVar = contextvars.ContextVar("cutile_compiler_timeout", default=None)


@contextmanager
def compiler_timeout(timeout_sec: float):
    """Limit each kernel compilation inside the block to ``timeout_sec`` seconds.

    >>> with ct.compiler_timeout(10):
    ...     ct.launch(None, grid, kernel, args)
    """
    if isinstance(timeout_sec, bool) or not isinstance(timeout_sec, (int, float)):
        raise TypeError(f"timeout_sec must be a number, got {type(timeout_sec).__name__}")
    if not timeout_sec > 0:
        raise ValueError(f"timeout_sec must be positive, got {timeout_sec}")
    token = _limit.set(float(timeout_sec))
    try:
        yield
    finally:
        _limit.reset(token)


def current_limit() -> float | None:
    v = _limit.get()
    return v if v is not None else config.compiler_timeout()


def run_with_timeout(fn: Callable[[], T], what: str) -> T:
    """``fn()`` under the current compiler time limit (inline when there is none)."""
    limit = current_limit()
    if limit is None:
        return fn()
    box: dict = {}
    ctx = contextvars.copy_context()

    def work():
        try:
            box["value"] = ctx.run(fn)
        except BaseException as e:  # handed to the waiting thread
            box["error"] = e

    t = threading.Thread(target=work, name=f"cutile-compile-{what}", daemon=True)
    t.start()
    t.join(limit)
    if t.is_alive():
        raise TileCompilerTimeoutError(
            f"compiling {what} took longer than the compiler timeout of {limit:g} s "
            "(ct.compiler_timeout / CUDA_TILE_COMPILER_TIMEOUT_SEC)")
    if "error" in box:
        raise box["error"]
    return box["value"]

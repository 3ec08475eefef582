"""UNDETERMINED padding in the interpreter (R-PAD-3, R-UB-2): where a block's poison came
from, and what relying on it does.

A load that pads with UNDETERMINED marks its out-of-bounds lanes in the tile's poison mask
(``memory_model``) and its source location is recorded in the block's frame (``note_load``),
so that a later report at a store, a branch or a print also names the load(s).

Relying on such a lane (``relied_on``):

- strict (the default): ``UndefinedBehaviorError`` (R-UB-2) at the op, naming the load(s);
- ``CUTILE_STRICT=0``: the lanes hold zeros, as on cutile's GPU backend (``cutile.padding``),
  the launch goes on, and an ``UndefinedBehaviorWarning`` is issued once per source line per
  launch (then Python's filters apply: by default once per line per process).  The batched
  path (``batch/``) cannot name the loads: the first time a line relies on the padding in a
  launch its batch falls back and the per-block run issues the warning; later batches go on.
"""

from __future__ import annotations

import contextlib
import contextvars
import warnings

from ..errors import Loc, UndefinedBehaviorWarning
from ..ir.core import Op
from ..semantics.ub import UB
from .core import Fallback, Frame, PTile

# Key of the frame's value table under which the locations of the UNDETERMINED-padded loads
# executed so far by the block are kept (a list of ``Loc``, first-seen order).
_LOADS = object()

# The lines that warned in the running launch ((filename, line) pairs; None outside a launch).
_warned: contextvars.ContextVar = contextvars.ContextVar("cutile_undetermined_warned",
                                                         default=None)
# Python's per-location registry for ``warnings.warn_explicit`` (the "default" action shows a
# message once per registry; pytest and ``catch_warnings`` reset it when filters change).
_REGISTRY: dict = {}


def note_load(frame, op) -> None:
    """Record that the block ran the UNDETERMINED-padded load ``op`` with lanes out of bounds."""
    locs = frame.values.setdefault(_LOADS, [])
    if op.loc not in locs:
        locs.append(op.loc)


def padding_origin(frame) -> str:
    """Suffix of R-UB-2 messages naming the UNDETERMINED load(s) this block executed so far."""
    locs = [loc for loc in frame.values.get(_LOADS, ()) if loc is not None]
    if not locs:
        return " (choose a padding_mode)"
    where = ", ".join(f"{loc.filename}:{loc.line}" for loc in locs[:4])
    more = f" and {len(locs) - 4} more" if len(locs) > 4 else ""
    noun = "load" if len(locs) == 1 else "loads"
    return (f"; the UNDETERMINED padding comes from the {noun} at {where}{more} "
            f"(choose a padding_mode)")


def relied_on(frame, op, what: str) -> None:
    """R-UB-2: ``what`` (at ``op``) depends on UNDETERMINED padding.  Strict: raise.  Lenient:
    warn once per line per launch and go on.  A batched frame (``frame.batched``) falls back
    instead, unless the launch already warned at this line."""
    if getattr(frame, "batched", False):
        if frame.strict or not _seen(op.loc):
            raise Fallback(f"{what} depends on UNDETERMINED padding")
        return
    message = f"{what} depends on UNDETERMINED padding{padding_origin(frame)}"
    if frame.strict:
        raise UB("R-UB-2", message)
    _warn(op.loc, message)


def check_not_poisoned(frame: Frame, op: Op | None, t: PTile, what: str, *,
                       always: bool = False) -> None:
    """R-UB-2: an UNDETERMINED-padded value observed (branch condition, loop bound, print).

    With strict checking off the value (zero padding, ``undetermined``) is used with a
    warning, except for loop bounds (``always``): a loop running on padding is an error
    whatever the flag says.
    """
    if t.poison is None:
        return
    if always:
        raise UB("R-UB-2", f"{what} depends on UNDETERMINED padding{padding_origin(frame)}")
    relied_on(frame, op, what)


def _key(loc: Loc | None):
    return None if loc is None else (loc.filename, loc.line)


def _seen(loc: Loc | None) -> bool:
    warned = _warned.get()
    return warned is not None and _key(loc) in warned


def _warn(loc: Loc | None, message: str) -> None:
    warned = _warned.get()
    if warned is not None:
        if _key(loc) in warned:
            return
        warned.add(_key(loc))
    text = (f"[R-UB-2] {message}; with CUTILE_STRICT=0 the interpreter reads those lanes as "
            f"zeros, as cutile's GPU backend does (the real cuTile gives unspecified values)")
    if loc is None:
        warnings.warn(text, UndefinedBehaviorWarning, stacklevel=2)
    else:
        warnings.warn_explicit(UndefinedBehaviorWarning(text), UndefinedBehaviorWarning,
                               loc.filename, loc.line, registry=_REGISTRY)


@contextlib.contextmanager
def launch_scope():
    """One launch: lines warn once within it (``machine.run_kernel``)."""
    token = _warned.set(set())
    try:
        yield
    finally:
        _warned.reset(token)

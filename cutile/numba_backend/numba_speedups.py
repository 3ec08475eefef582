"""Three compile-time fixes to Numba's own code, applied once before the first compile.

Generated kernels are long straight-line blocks (hundreds to thousands of statements), where
two pieces of numba-cuda cost time out of proportion to the work (``benchmarks/compile.py``;
docs/backend.md, "Compile time"):

- ``Lower._find_singly_assigned_variable`` (lowering) rescans the whole block for every
  variable defined in it, quadratic in the block's length: 20-40% of a kernel's lowering, most
  of it for a matmul.  The replacement counts each block's assignments once and yields the
  same set of variables, so the LLVM IR is unchanged (``spec_tests/test_backend_compile.py``
  compares it).
- Typing resolves every call by trying the function's templates in turn
  (``BaseFunction.get_call_type``), again at every call site: a kernel calls ``i64(...)``,
  ``cuda.selp(...)``, ``+`` ... with the same argument types hundreds of times.  Inside
  ``typing_memo()`` (around the compile of one generated kernel) each (function type, typing
  context, argument types, keywords, active Numba flags) is resolved once and its signature
  reused: 20-50% of typing + lowering.  A resolution that fails is not kept (it raises again),
  and one made under other flags (a device function compiled on the way) is kept apart; the
  LLVM IR is unchanged (the same test).
- Every overload template that does not match an argument tuple during typing builds an error
  message that is thrown away, and with the default ``no_color`` scheme (bold only) each
  piece of the message goes through colorama's stream set-up and tear-down: thousands of times
  per kernel.  With that default scheme the messages get numba-cuda's plain scheme (the one it
  uses without colorama): the text is the same, without the bold escape codes.

Each replacement is installed only when the function it replaces is the exact source it was
written against (a SHA-256 of its text), so another numba-cuda version keeps its own code;
``CUTILE_NUMBA_SPEEDUPS=0`` installs none.
"""

from __future__ import annotations

import hashlib
import inspect
import threading
from collections import Counter, defaultdict
from contextlib import contextmanager

# SHA-256 of the replaced method's source (numba-cuda 0.30.4)
SINGLY_ASSIGNED_SHA = "c3b499f76517288510a5188fbb59bb96f7ca7d619b0cf4245b5f66a8bd90bbe4"
# ... of numba's BaseFunction.get_call_type (numba 0.68.1)
GET_CALL_TYPE_SHA = "6559c167bfc0ad36ab4af049ed2f2b9ddc28ce1eedbc2e3462b69b62079e850e"
# modules that keep numba-cuda's message scheme in a global of their own
_SCHEME_HOLDERS = ("numba.cuda.typing.typeof", "numba.cuda.types.cuda_functions")
_applied: dict[str, bool] | None = None
_lock = threading.Lock()


def _source_sha(fn) -> str:
    return hashlib.sha256(inspect.getsource(fn).encode()).hexdigest()


def _find_singly_assigned_variable(self):
    """numba-cuda's ``Lower._find_singly_assigned_variable``, counting each block's
    assignments once instead of once per variable."""
    from numba.cuda.core import ir
    from numba.cuda.core.analysis import compute_use_defs, must_use_alloca
    func_ir = self.func_ir
    blocks = func_ir.blocks
    sav = set()
    if not self.func_ir.func_id.is_generator:
        use_defs = compute_use_defs(blocks)
        alloca_vars = must_use_alloca(blocks)
        var_assign_map = defaultdict(set)
        for blk, vl in use_defs.defmap.items():
            for var in vl:
                var_assign_map[var].add(blk)
        var_use_map = defaultdict(set)
        for blk, vl in use_defs.usemap.items():
            for var in vl:
                var_use_map[var].add(blk)
        counts: dict = {}
        for var in var_assign_map:
            if var not in alloca_vars and len(var_assign_map[var]) == 1:
                if len(var_use_map[var]) == 0:
                    [defblk] = var_assign_map[var]
                    c = counts.get(defblk)
                    if c is None:
                        c = counts[defblk] = Counter(
                            stmt.target.name
                            for stmt in self.blocks[defblk].find_insts(ir.assign_types))
                    if c[var] == 1:
                        sav.add(var)
    self._singly_assigned_vars = sav
    self._blk_local_varmap = {}


_tls = threading.local()          # .memo: the typing memo of this thread's compile, or None


def _memo_get_call_type(orig):
    from numba.cuda.core.targetconfig import ConfigStack

    def get_call_type(self, context, args, kws):
        memo = getattr(_tls, "memo", None)
        if memo is None:
            return orig(self, context, args, kws)
        flags = ConfigStack.top_or_none()
        try:
            key = (self, context, tuple(args), tuple(kws.items()), id(flags))
            got = memo.get(key)
        except TypeError:                       # an unhashable type: resolve as Numba does
            return orig(self, context, args, kws)
        if got is not None and got[0] is flags:
            return got[1]
        sig = orig(self, context, args, kws)
        memo[key] = (flags, sig)
        return sig
    get_call_type.__wrapped__ = orig
    return get_call_type


@contextmanager
def typing_memo():
    """Reuse call resolutions while compiling one kernel (nested blocks share the outer)."""
    if not (_applied or {}).get("typing"):
        yield
        return
    prev = getattr(_tls, "memo", None)
    _tls.memo = {} if prev is None else prev
    try:
        yield
    finally:
        _tls.memo = prev


def _patch_typing() -> bool:
    from numba.core.types import functions
    cur = functions.BaseFunction.get_call_type
    if getattr(cur, "__wrapped__", None) is not None:
        return getattr(cur, "__module__", "") == __name__
    if _source_sha(cur) != GET_CALL_TYPE_SHA:
        return False
    functions.BaseFunction.get_call_type = _memo_get_call_type(cur)
    return True


class _PlainScheme:
    """numba-cuda's message scheme without colorama: every piece as it is."""

    def __init__(self, *a, **k):
        pass

    def code(self, msg):
        return msg

    errmsg = filename = indicate = highlight = reset = code


def _patch_lowering() -> bool:
    from numba.cuda import lowering
    cur = lowering.Lower._find_singly_assigned_variable
    if cur is _find_singly_assigned_variable:
        return True
    if _source_sha(cur) != SINGLY_ASSIGNED_SHA:
        return False
    lowering.Lower._find_singly_assigned_variable = _find_singly_assigned_variable
    return True


def _patch_messages() -> bool:
    import numba.core.config
    from numba.cuda.core import errors
    scheme = getattr(errors, "HighlightColorScheme", None)
    if scheme is None or getattr(numba.core.config, "COLOR_SCHEME", None) != "no_color":
        return False                      # no colorama, or a colour scheme the user chose
    import importlib
    inst = errors.termcolor()
    if isinstance(inst, _PlainScheme):
        return True
    if type(inst) is not scheme:
        return False
    plain = _PlainScheme()
    errors._termcolor_inst = plain
    for name in _SCHEME_HOLDERS:
        mod = importlib.import_module(name)
        if getattr(mod, "_termcolor", None) is inst:
            mod._termcolor = plain
    return True


def apply() -> dict[str, bool]:
    """Install the fixes (once per process); returns which ones are in force."""
    global _applied
    if _applied is None:
        with _lock:
            if _applied is None:
                got = {}
                for name, fn in (("lowering", _patch_lowering), ("typing", _patch_typing),
                                 ("messages", _patch_messages)):
                    try:
                        got[name] = fn()
                    except Exception:             # any surprise: numba-cuda's own code
                        got[name] = False
                _applied = got
    return _applied


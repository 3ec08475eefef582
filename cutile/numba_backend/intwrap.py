"""Signed integer add, sub and mul that wrap (R-MATH-4) in everything Numba compiles here.

numba-cuda lowers ``+``, ``-`` and ``*`` of signed integers with LLVM's ``nsw`` flag ("no
signed wrap"), so NVVM may assume they never overflow: an overflow is poison, and a branch on
poison may go either way.  The tile language defines the wrap, and a wrapped value reaches
bounds checks: ``idx = x * 2`` with ``x = 0x6b72010aa24f55bd`` wraps negative, and NVVM
folded the atomic's check ``0 <= idx`` into ``0 <= x`` (true), so an ``atomic_add`` with a
negative index ran and faulted (CUDA_ERROR_ILLEGAL_ADDRESS on an H200, found by the random
programs; ``spec_tests/diff/test_diff_gpu_regressions.py``).  A store's check could let a
write land outside its array the same way.

``apply()`` (called before generated source is compiled: ``rt.namespace``) makes numba-cuda's
flag helper return no flags, for the rest of the process: every signed add/sub/mul then wraps,
as C's ``-fwrapv``.  Other Numba kernels of the process compile with the same, defined
semantics (only an optimisation assumption is gone).  The index arithmetic inside Numba's own
array access keeps its flags (it passes them itself; cutile's indices are checked before).
``CUTILE_NUMBA_SPEEDUPS`` does not turn this off: it is a fix of the semantics, not of speed.
"""

from __future__ import annotations

import importlib
import threading

# numba-cuda modules whose integer add/sub/mul implementations ask this helper for their flags
_FLAG_HOLDERS = ("numba.cuda.cpython.numbers", "numba.cuda.np.math.numbers")
_HELPER = "_int_arith_flags"
_lock = threading.Lock()
_applied: list[str] | None = None


def _no_flags(rettype) -> list:
    """Flags for an integer add/sub/mul of ``rettype``: none, so a signed overflow wraps."""
    return []


def apply() -> list[str]:
    """Install ``_no_flags`` in every numba-cuda module that holds the flag helper (once);
    the modules patched.  A numba-cuda without the helper in any of them gets a warning (its
    integer lowering moved and must be checked again: see the module docstring); checked
    against numba-cuda 0.30.4."""
    global _applied
    with _lock:
        if _applied is None:
            done = []
            for name in _FLAG_HOLDERS:
                try:
                    mod = importlib.import_module(name)
                except ImportError:
                    continue
                if callable(getattr(mod, _HELPER, None)):
                    setattr(mod, _HELPER, _no_flags)
                    done.append(name)
            if not done:
                import warnings
                warnings.warn(
                    "cutile: numba-cuda's signed integer arithmetic helper "
                    f"{_HELPER!r} was not found in {', '.join(_FLAG_HOLDERS)}: this numba-cuda "
                    "may compile integer overflow as undefined instead of wrapping (R-MATH-4); "
                    "cutile was checked against numba-cuda 0.30.4", RuntimeWarning,
                    stacklevel=2)
            _applied = done
        return list(_applied)

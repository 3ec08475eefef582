"""Stand-ins for NVIDIA internals cutile has no equivalent of (bytecode writer, MLIR passes,
the C extension, ...).

Importing one must work, so that a test file whose *other* tests are applicable still
collects; *using* one (calling it, ``isinstance`` against it, iterating it, subclassing it,
comparing it) skips the test with a reason starting ``not applicable:``, which the runner
counts apart from ordinary skips.  Attribute access only yields another stand-in (module level
code such as ``{"launch": _cext.launch}`` or ``BytecodeVersion.V_13_2`` must not skip).
"""

from __future__ import annotations

import threading
import types

PREFIX = "not applicable:"
# Set by the pytest plugin.  Elsewhere (a Python subprocess a test starts, which gets the
# finder from ``site/sitecustomize.py``) and in threads other than pytest's, a skip would be
# swallowed or end a thread silently, so a plain error is raised instead: the test then fails
# rather than passing without having run.
IN_PYTEST = False


class NotApplicableError(RuntimeError):
    """An NVIDIA internal was used where a pytest skip cannot reach the test."""


def skip_not_applicable(what: str):
    """Skip the running test (or, at import time, the whole module)."""
    if not IN_PYTEST or threading.current_thread() is not threading.main_thread():
        raise NotApplicableError(f"{PREFIX} {what}")
    import pytest
    pytest.skip(f"{PREFIX} {what}", allow_module_level=True)


class NotApplicable:
    """One NVIDIA-internal name: harmless to import and to pass around, skips when used."""

    __slots__ = ("_na_name",)

    def __init__(self, name: str):
        object.__setattr__(self, "_na_name", name)

    def _na_skip(self, how: str = "used"):
        skip_not_applicable(f"{self._na_name} is an NVIDIA cuTile internal ({how}); cutile "
                            "has no equivalent")

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return NotApplicable(f"{self._na_name}.{name}")

    def __repr__(self) -> str:
        return f"<not applicable: {self._na_name}>"

    def __call__(self, *args, **kwargs):
        self._na_skip("called")

    def __instancecheck__(self, obj):
        self._na_skip("isinstance")

    def __subclasscheck__(self, cls):
        self._na_skip("issubclass")

    def __mro_entries__(self, bases):
        self._na_skip("subclassed")

    def __iter__(self):
        self._na_skip("iterated")

    def __getitem__(self, key):
        self._na_skip("indexed")

    def __bool__(self):
        self._na_skip("tested for truth")

    def __lt__(self, other):
        self._na_skip("compared")

    __le__ = __gt__ = __ge__ = __lt__

    def __enter__(self):
        self._na_skip("used as a context manager")

    def __exit__(self, *exc):
        return False


class NotApplicableModule(types.ModuleType):
    """A module of NVIDIA internals cutile lacks: every public-looking name is a stand-in."""

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return NotApplicable(f"{self.__name__}.{name}")


def fallback_getattr(module_name: str, real=None):
    """A PEP 562 ``__getattr__`` for a shim module: names of ``real`` (a cutile module) first,
    then a stand-in for anything else."""
    def __getattr__(name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if real is not None:
            try:
                return getattr(real, name)
            except AttributeError:
                pass
        return NotApplicable(f"{module_name}.{name}")
    return __getattr__

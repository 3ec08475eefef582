"""``import cuda.tile`` (and ``cuda.tile.X``) resolved to ``cutile``, through a ``sys.meta_path``
finder installed by the pytest plugin.

Resolution of ``cuda.tile.<path>``, first match wins:

1. ``nvsuite.shim.<path>``: hand-written stand-ins for the NVIDIA internals the suite's
   ``conftest.py``/``util.py`` and many tests import (``_compile``, ``_cext``, ``_bytecode``,
   ``_ir.typing_support``, ...), using cutile's real equivalent where one exists;
2. ``cutile.<path>``: the same module of cutile.  A private path (a part starting with ``_``)
   gets a forwarding module whose missing names are stand-ins (``nvsuite.placeholder``), so
   ``from cuda.tile._exception import FunctionDesc`` does not stop a whole file from
   collecting; a public path is cutile's module itself (a missing public name is a real gap);
3. a private path cutile lacks: a module of stand-ins;
4. otherwise not found (``ModuleNotFoundError``: a public module cutile lacks).

The finder sits first on ``sys.meta_path`` so that ``cuda.tile.compilation`` is never loaded a
second time from cutile's files under another name.  The loader replaces the module it was
given by the target in ``sys.modules``, which ``importlib`` then returns (cutile's own
``__spec__`` is left alone).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys

from .placeholder import NotApplicableModule

ALIAS = "cuda.tile"
SHIM = "nvsuite.shim"
# NVIDIA packages beside ``cuda.tile`` that cutile has no counterpart of: importing one skips
# (the test, or at module level the file) as not applicable.
FOREIGN = {"cuda.tile_internal": "NVIDIA's internal MLIR extension (FileCheck of Tile IR)",
           "cutile_cache": "NVIDIA's on-disk cubin cache package and its CLI (cutile's cache is "
                           "cutile.cache, with another format)"}


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, AttributeError, ValueError):
        return False


def _is_private(rel: str) -> bool:
    return any(part.startswith("_") for part in rel.split("."))


class _Loader(importlib.abc.Loader):
    def __init__(self, make):
        self._make = make

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        sys.modules[module.__name__] = self._make(module.__name__)


class CudaTileFinder(importlib.abc.MetaPathFinder):
    """Maps ``cuda.tile[.X]`` onto cutile (see the module docstring)."""

    def find_spec(self, fullname, path=None, target=None):
        top = next((f for f in FOREIGN if fullname == f or fullname.startswith(f + ".")), None)
        if top is not None:
            return importlib.machinery.ModuleSpec(fullname, _Loader(_skip_foreign(top)),
                                                  is_package=True)
        if fullname.startswith("cutile.") and _is_private(fullname[len("cutile."):]):
            # ``from cuda.tile import _cext`` imports ``cutile._cext`` (cuda.tile *is* cutile):
            # a private name cutile's files lack resolves as ``cuda.tile._cext`` would
            if importlib.machinery.PathFinder.find_spec(fullname, path) is not None:
                return None
            make = _resolve(fullname[len("cutile."):], cutile_has=False)
        elif fullname == ALIAS:
            make = lambda n: _cutile("")   # noqa: E731
        elif fullname.startswith(ALIAS + "."):
            make = _resolve(fullname[len(ALIAS) + 1:])
        else:
            return None
        if make is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader(make), is_package=True)


def _resolve(rel: str, cutile_has: bool | None = None):
    """The module factory for ``cuda.tile.<rel>`` (see the module docstring), or None."""
    if _module_exists(f"{SHIM}.{rel}"):
        return lambda n: importlib.import_module(f"{SHIM}.{rel}")
    if cutile_has is None:
        cutile_has = _module_exists(f"cutile.{rel}")
    if cutile_has:
        return (lambda n: _Forwarding(n, _cutile(rel))) if _is_private(rel) \
            else (lambda n: _cutile(rel))
    if _is_private(rel):
        return _stand_in_module
    return None


def _cutile(rel: str):
    return importlib.import_module("cutile" + (f".{rel}" if rel else ""))


class _Forwarding(NotApplicableModule):
    """cutile's module under a private ``cuda.tile`` path; names it lacks are stand-ins."""

    def __init__(self, name, real):
        super().__init__(name, real.__doc__)
        self.__dict__["_nvsuite_real"] = real
        self.__path__ = []

    def __getattr__(self, name):
        try:
            return getattr(self.__dict__["_nvsuite_real"], name)
        except AttributeError:
            return super().__getattr__(name)


def _stand_in_module(name: str):
    mod = NotApplicableModule(name, "NVIDIA cuTile internal without a cutile equivalent")
    mod.__path__ = []
    return mod


def _skip_foreign(top: str):
    def make(name: str):
        from .placeholder import skip_not_applicable
        skip_not_applicable(f"{name}: {FOREIGN[top]}")
    return make


def _ours(mod) -> bool:
    return isinstance(mod, NotApplicableModule) or \
        getattr(mod, "__name__", "").startswith(("cutile", "nvsuite"))


_FINDER = CudaTileFinder()


def install(bind: bool = True) -> None:
    """Put the finder first on ``sys.meta_path`` (idempotent); with ``bind``, import
    ``cuda.tile`` now (a real cuda.tile imported before us is dropped first)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    if bind:
        for name in [n for n in sys.modules if n == ALIAS or n.startswith(ALIAS + ".")]:
            if not _ours(sys.modules[name]):
                del sys.modules[name]
        import cuda.tile  # noqa: F401

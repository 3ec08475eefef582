"""``cuda.tile._compile``: what the suite's ``conftest.py`` asks about NVIDIA's compiler (its
path, the bytecode versions ``tileiras`` accepts) and the target architecture.  cutile has no
``tileiras``: it reports the newest released bytecode version, so version-gated tests of
language features run; ``compile_tile``/``compile_cubin`` are stand-ins (tests that drive or
patch them skip as not applicable; so does replacing one by assignment, e.g. a stub that fails
"compilation" to provoke 1.7's crash dump of Tile IR bytecode, which cutile never writes)."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass
from functools import cache

from ..placeholder import NotApplicable, fallback_getattr, skip_not_applicable
from ._bytecode.version import BytecodeVersion
from ._cext import get_compute_capability

__getattr__ = fallback_getattr("cuda.tile._compile")

_SUPPORTED_VERSIONS = [v for v in BytecodeVersion if not v.dev_only]

compile_tile = NotApplicable("cuda.tile._compile.compile_tile")
compile_cubin = NotApplicable("cuda.tile._compile.compile_cubin")


@dataclass(frozen=True)
class _CompilerBinary:
    path: str


def _find_compiler_bin() -> _CompilerBinary:
    return _CompilerBinary("(none: cutile compiles without NVIDIA's tileiras)")


def _get_max_supported_bytecode_version(temp_dir: str = "", allow_dev: bool = False):
    return max(v for v in BytecodeVersion if allow_dev or not v.dev_only)


def format_sm_arch(major: int, minor: int) -> str:
    return f"sm_{major}{minor}"


@cache
def get_sm_arch(device_id: int = 0) -> str:
    return format_sm_arch(*get_compute_capability(device_id))


class _ShimModule(types.ModuleType):
    """Assigning ``compile_tile``/``compile_cubin`` replaces an entry point cutile never calls:
    the replacement would never run, so the test is not applicable (as with ``mock.patch``)."""

    def __setattr__(self, name: str, value) -> None:
        if name in ("compile_tile", "compile_cubin"):
            skip_not_applicable(f"the test replaces cuda.tile._compile.{name}, an NVIDIA "
                                "cuTile internal cutile never calls")
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _ShimModule

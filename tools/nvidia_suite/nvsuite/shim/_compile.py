"""``cuda.tile._compile``: what the suite's ``conftest.py`` asks about NVIDIA's compiler (its
path, the bytecode versions ``tileiras`` accepts) and the target architecture.  cutile has no
``tileiras``: it reports the newest released bytecode version, so version-gated tests of
language features run; ``compile_tile``/``compile_cubin`` are stand-ins (tests that drive or
patch them skip as not applicable)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..placeholder import NotApplicable, fallback_getattr
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

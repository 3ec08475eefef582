"""``cuda.tile._bytecode`` (NVIDIA's Tile IR bytecode writer): only the version enum is real
(the suite gates tests on it); everything else is a stand-in."""

from ...placeholder import fallback_getattr
from .version import BytecodeVersion  # noqa: F401

__getattr__ = fallback_getattr("cuda.tile._bytecode")

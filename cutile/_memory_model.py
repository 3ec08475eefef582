"""``cuda.tile._memory_model``'s public names at the same private path (see
``_numeric_semantics``).  One definition: ``cutile.enums``."""

from .enums import MemoryOrder, MemoryScope

__all__ = ["MemoryOrder", "MemoryScope"]

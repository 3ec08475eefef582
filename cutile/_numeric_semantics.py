"""``cuda.tile._numeric_semantics``'s public names at the same private path: kernels copied from
NVIDIA's TileGym import ``RoundingMode``/``PaddingMode`` from there.  One definition:
``cutile.enums``."""

from .enums import PaddingMode, RoundingMode

__all__ = ["PaddingMode", "RoundingMode"]

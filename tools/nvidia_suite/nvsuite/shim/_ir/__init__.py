"""``cuda.tile._ir`` (NVIDIA's typed IR): stand-ins, except the two dtype helpers below."""

from ...placeholder import fallback_getattr

__getattr__ = fallback_getattr("cuda.tile._ir")

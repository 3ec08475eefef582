"""The public enums of cuda.tile: padding modes, rounding modes, memory order and scope."""

from __future__ import annotations

import enum


class PaddingMode(enum.Enum):
    """Value placed in out-of-bounds lanes of a tile-space load (R-PAD-1)."""

    UNDETERMINED = "undetermined"
    ZERO = "zero"
    NEG_ZERO = "neg_zero"
    NAN = "nan"
    POS_INF = "pos_inf"
    NEG_INF = "neg_inf"


class RoundingMode(enum.Enum):
    """Rounding modes for arithmetic and conversions (R-MATH-8a)."""

    RN = "nearest_even"
    RZ = "zero"
    RM = "negative_inf"
    RP = "positive_inf"
    RA = "nearest_away"
    FULL = "full"
    APPROX = "approx"
    RZI = "nearest_int_to_zero"


class MemoryOrder(enum.Enum):
    """Memory ordering of loads, stores and atomics (R-ATOM-8)."""

    WEAK = "weak"
    RELAXED = "relaxed"
    ACQUIRE = "acquire"
    RELEASE = "release"
    ACQ_REL = "acq_rel"


class MemoryScope(enum.Enum):
    """Scope of a memory ordering (R-ATOM-8)."""

    NONE = "none"
    BLOCK = "block"
    CLUSTER = "cluster"
    DEVICE = "device"
    SYS = "sys"

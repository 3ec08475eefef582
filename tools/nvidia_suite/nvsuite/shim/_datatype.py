"""``cuda.tile._datatype``: cutile's dtypes (``cutile._datatype`` forwards to them) plus the
dtype predicates and categories the suite imports, answered from ``cutile.dtypes``; other
internals are stand-ins."""

from __future__ import annotations

import enum

import cutile._datatype as _real
from cutile import dtypes as _dt

from ..placeholder import fallback_getattr

__getattr__ = fallback_getattr("cuda.tile._datatype", _real)


class NumericDTypeCategory(enum.IntEnum):
    Boolean = 0
    Integral = 1
    Float = 2
    RestrictedFloat = 3


def numeric_dtype_category(d) -> NumericDTypeCategory:
    if d.is_restricted:
        return NumericDTypeCategory.RestrictedFloat
    return NumericDTypeCategory(d.category)


def is_float(d) -> bool:
    return d.is_float


def is_integral(d) -> bool:
    return d.is_integral


def is_boolean(d) -> bool:
    return d.is_bool


def is_signed(d) -> bool:
    """Signed integers and every float (floats carry a sign bit)."""
    return d.is_signed or d.is_float


def is_restricted_float(d) -> bool:
    return d.is_restricted


def is_unrestricted_float(d) -> bool:
    return d.is_float and not d.is_restricted


class _DTypePromotionImpl:
    """Only the promotion order of the numeric dtypes (R-PROMO-3)."""
    _order = list(_dt._ORDER)

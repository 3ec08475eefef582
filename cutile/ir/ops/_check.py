"""Assertions used by op type rules: a failed one is a frontend bug, not a user error."""

from __future__ import annotations

from ...errors import TileInternalError
from ..types import ArrayType, TileType


def expect(cond: bool, op, what: str) -> None:
    if not cond:
        raise TileInternalError(f"ill-typed {type(op).__name__}: {what}")


def tile(v, op, name: str) -> TileType:
    expect(isinstance(v.type, TileType), op, f"{name} must be a tile, got {v.type}")
    return v.type


def scalar(v, op, name: str) -> TileType:
    t = tile(v, op, name)
    expect(t.is_scalar, op, f"{name} must be a scalar, got {t}")
    return t


def array(v, op, name: str) -> ArrayType:
    expect(isinstance(v.type, ArrayType), op, f"{name} must be an array, got {v.type}")
    return v.type

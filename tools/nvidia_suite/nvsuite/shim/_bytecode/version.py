"""Tile IR bytecode versions, by the names the suite uses to gate tests (``V_13_2``...).

Values encode major*10000 + minor*100; the last one is NVIDIA's unreleased (dev) version."""

from __future__ import annotations

import enum


class BytecodeVersion(enum.IntEnum):
    V_13_1 = 13_01_00
    V_13_2 = 13_02_00
    V_13_3 = 13_03_00
    V_13_4 = 13_04_00

    @property
    def dev_only(self) -> bool:
        return self is BytecodeVersion.V_13_4

    def major(self) -> int:
        return self.value // 10000

    def minor(self) -> int:
        return self.value // 100 % 100

    def as_string(self) -> str:
        return f"{self.major()}.{self.minor()}"

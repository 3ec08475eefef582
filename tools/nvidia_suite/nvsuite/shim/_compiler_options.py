"""``cuda.tile._compiler_options.CompilerOptions``: the option fields and their defaults, as
1.7's kernel options (``num_ctas``, ``occupancy``, ``opt_level``, ``num_worker_warps``; the
suite reads the default ``opt_level`` at import).  Lowering them to ``tileiras`` flags and
bytecode hints (``hints_by_target``, ``opt_level_for_target``) is NVIDIA's compiler's job:
those are stand-ins."""

from __future__ import annotations

from dataclasses import dataclass

from ..placeholder import NotApplicable, fallback_getattr

__getattr__ = fallback_getattr("cuda.tile._compiler_options")


@dataclass(frozen=True)
class CompilerOptions:
    num_ctas: object = None
    occupancy: object = None
    opt_level: object = 3
    num_worker_warps: object = None

    hints_by_target = NotApplicable("cuda.tile._compiler_options.CompilerOptions.hints_by_target")
    opt_level_for_target = NotApplicable(
        "cuda.tile._compiler_options.CompilerOptions.opt_level_for_target")

"""Every environment knob of cutile, read in one place.

- ``CUTILE_BACKEND``: ``interp`` (default while no GPU backend is usable), ``numba`` or ``auto``.
- ``CUTILE_STRICT``: ``1`` (default) makes the interpreter raise ``UndefinedBehaviorError`` on
  detected undefined behaviour; ``0`` degrades to the documented fallbacks (R-UB §6.6).
- ``CUTILE_DUMP_IR``: ``1`` prints each specialised kernel's IR when it is compiled.
- ``CUTILE_SHUFFLE_BLOCKS``: ``<seed>`` runs the interpreter's blocks in a shuffled order.
- ``CUTILE_NUMBA_THREADS``: threads per block on the Numba backend (power of two <= 1024).
- ``CUTILE_NUMBA_MMA_ACC``: ``f32`` (default) or ``exact`` mma accumulation on the Numba
  backend (docs/backend.md).
- ``CUTILE_NUMBA_TENSOR_CORES``: ``1`` (default) lets float16/bfloat16 mma use the tensor
  cores on a GPU (``mma_acc="f32"`` only); ``0`` keeps the FFMA path.
- ``CUTILE_FAILLOG`` (spec_tests only): append each test failure to this file as it happens.
- ``CUTILE_DURLOG`` (spec_tests only): append each test's start and duration to this file.
"""

from __future__ import annotations

import os


def backend() -> str:
    return os.environ.get("CUTILE_BACKEND", "auto").strip().lower() or "auto"


def strict() -> bool:
    return os.environ.get("CUTILE_STRICT", "1").strip() not in ("0", "false", "no")


def dump_ir() -> bool:
    return os.environ.get("CUTILE_DUMP_IR", "0").strip() not in ("0", "", "false", "no")


def shuffle_blocks() -> int | None:
    """``CUTILE_SHUFFLE_BLOCKS=<seed>`` runs the interpreter's blocks in a shuffled order."""
    v = os.environ.get("CUTILE_SHUFFLE_BLOCKS", "").strip()
    return int(v) if v else None


def numba_threads() -> int | None:
    v = os.environ.get("CUTILE_NUMBA_THREADS", "").strip()
    if not v:
        return None
    n = int(v)
    if n <= 0 or n & (n - 1) or n > 1024:
        raise ValueError(f"CUTILE_NUMBA_THREADS must be a power of two <= 1024, got {v}")
    return n


def numba_mma_acc() -> str:
    v = os.environ.get("CUTILE_NUMBA_MMA_ACC", "f32").strip().lower() or "f32"
    if v not in ("f32", "exact"):
        raise ValueError(f"CUTILE_NUMBA_MMA_ACC must be 'f32' or 'exact', got {v!r}")
    return v


def numba_tensor_cores() -> bool:
    return os.environ.get("CUTILE_NUMBA_TENSOR_CORES", "1").strip().lower() not in (
        "0", "false", "no")

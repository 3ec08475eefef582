"""Package combinations below the backend that are known not to work, refused up front.

numba-cuda (every release up to 0.30.4, the newest; the project is in maintenance mode and
closed the fix unmerged, NVIDIA/numba-cuda#907 and #916) registers an overload for
``np.row_stack``, which NumPy 2.5 removed.  The module doing it is loaded lazily, by the first
kernel compile, so without this check every GPU launch fails deep inside Numba with
``module 'numpy' has no attribute 'row_stack'``.  ``pyproject.toml`` caps NumPy below 2.5 so a
fresh install cannot pick the pair; this check covers environments that got there anyway.
Numba's CUDA simulator never loads that module and keeps working.
"""

from __future__ import annotations

import numpy as np

from ..errors import TileUnsupportedFeatureError

_checked = False


def check_gpu_toolchain() -> None:
    """Load numba-cuda's NumPy registry (what the first compile loads) and turn the NumPy 2.5
    failure into an error that says what to install.  Once per process when it succeeds."""
    global _checked
    if _checked:
        return
    try:
        import numba.cuda.np.arrayobj  # noqa: F401
    except AttributeError as e:
        if "row_stack" not in str(e):
            raise
        raise TileUnsupportedFeatureError(
            f"the numba backend cannot compile with NumPy {np.__version__}: numba-cuda "
            f"{_version('numba-cuda')} uses np.row_stack, which NumPy 2.5 removed, and no "
            "numba-cuda release fixes it. Install an older NumPy: "
            "python3 -m pip install 'numpy>=1.24,<2.5' (or run on the interpreter: "
            "CUTILE_BACKEND=interp)") from e
    _checked = True


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"

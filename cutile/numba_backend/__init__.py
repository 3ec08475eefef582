"""The Numba-CUDA executor: typed tile IR -> generated ``numba.cuda.jit`` kernel source.

Imported only when the numba executor is selected (``cutile.executors``); importing ``cutile``
never imports numba.  See docs/backend.md.
"""

from __future__ import annotations

from .compile import compile_kernel  # noqa: F401
from .launch import run  # noqa: F401
from .threads import choose_threads  # noqa: F401

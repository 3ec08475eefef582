"""The Numba-CUDA executor: typed tile IR -> generated ``numba.cuda.jit`` kernel source.

Imported only when the numba executor is selected (``cutile.executors``); importing ``cutile``
never imports numba.  See docs/backend.md.
"""

from __future__ import annotations

from .launch import choose_threads, compile_kernel, run  # noqa: F401

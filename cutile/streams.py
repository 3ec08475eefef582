"""The ``stream`` argument of ``ct.launch``: what is accepted, checked once for every executor.

A stream is ``None``/``0`` (the default stream), a non-negative ``int`` CUstream handle, or a
stream object of PyTorch (``cuda_stream``), CuPy (``ptr``), cuda.core / cuda-python
(``__cuda_stream__`` or an int ``handle``) or Numba.  Anything else is a ``TypeError`` at
launch (R-LAUNCH-1, R-ERR-2), before any compilation, on the interpreter as well.
"""

from __future__ import annotations

import numpy as np

_HANDLE_ATTRS = ("cuda_stream", "ptr", "handle")


def is_numba_stream(stream) -> bool:
    return (type(stream).__module__ or "").startswith("numba")


def stream_handle(stream) -> int | None:
    """The CUstream handle of ``stream`` (0 for ``None``); ``None`` for a Numba stream object,
    which the Numba backend uses as it is.  Raises ``TypeError``/``ValueError`` otherwise."""
    if stream is None:
        return 0
    if isinstance(stream, (bool, np.bool_)):
        raise TypeError("stream must be None, a CUstream handle (int) or a CUDA stream object, "
                        "got bool")
    if isinstance(stream, (int, np.integer)):
        if int(stream) < 0:
            raise ValueError(f"stream handle must be non-negative, got {int(stream)}")
        return int(stream)
    if is_numba_stream(stream):
        return None
    proto = getattr(stream, "__cuda_stream__", None)
    if callable(proto):                                  # the CUDA stream protocol
        try:
            return int(proto()[1])
        except Exception:
            pass
    for attr in _HANDLE_ATTRS:                           # torch, cupy, cuda-python
        h = getattr(stream, attr, None)
        if isinstance(h, (int, np.integer)) and not isinstance(h, bool):
            return int(h)
    text = repr(stream)
    if len(text) > 40:
        text = text[:37] + "..."
    raise TypeError(f"stream must be None, a CUstream handle (int) or a CUDA stream object "
                    f"(PyTorch, CuPy, Numba, cuda.core), got {type(stream).__name__} {text}")


def check_stream(stream) -> None:
    """Validate a launch's stream argument (its handle is not needed on the interpreter)."""
    stream_handle(stream)

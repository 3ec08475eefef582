"""Host (CPU) array arguments as zero-copy NumPy views: NumPy itself, PyTorch CPU tensors of
every dtype cuTile has, and any CPU DLPack or ``__array_interface__`` producer.

The executors write results through these views, so a kernel's stores land in the caller's
tensor.  A conversion that would copy is refused (the writes would be lost).  PyTorch:
``detach()`` gives a view of the same storage (so tensors that require grad are accepted, as
1.7 accepts them); dtypes NumPy lacks (bfloat16, float8_*) are viewed as same-width integers
and re-viewed as the matching ``ml_dtypes`` type.  Device (CUDA) arrays are handled in
``device_arrays``.
"""

from __future__ import annotations

import sys

import numpy as np

# torch dtypes NumPy cannot hold, by torch's name: (same-width torch integer, ml_dtypes name)
_BITS_VIEW = {"bfloat16": ("int16", "bfloat16"), "float8_e4m3fn": ("uint8", "float8_e4m3fn"),
              "float8_e5m2": ("uint8", "float8_e5m2"),
              "float8_e8m0fnu": ("uint8", "float8_e8m0fnu")}


def _torch_cpu_view(t) -> np.ndarray:
    torch = sys.modules["torch"]
    if t.device.type != "cpu":
        raise TypeError(f"a PyTorch tensor on device {t.device} is not supported (pass a CPU "
                        "tensor, or a CUDA tensor on the Numba backend)")
    t = t.detach()                          # same storage; drops the autograd requirement
    if t.is_conj() or t.is_neg():
        raise TypeError("a PyTorch tensor with a lazy conj/neg bit is not supported")
    name = str(t.dtype).rsplit(".", 1)[-1]
    bits = _BITS_VIEW.get(name)
    if bits is not None:
        import ml_dtypes
        return t.view(getattr(torch, bits[0])).numpy().view(getattr(ml_dtypes, bits[1]))
    try:
        return t.numpy()
    except (TypeError, RuntimeError) as e:
        raise TypeError(f"PyTorch tensors of dtype {t.dtype} are not supported: {e}") from None


def _is_torch_tensor(x) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def as_host_array(x) -> np.ndarray | None:
    """A NumPy view of ``x`` without copying, or None when ``x`` is not a host array."""
    if isinstance(x, np.ndarray):
        return x
    if _is_torch_tensor(x):
        return _torch_cpu_view(x)
    if hasattr(x, "__cuda_array_interface__"):
        return None
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__") \
            and not hasattr(x, "__array_interface__"):
        try:
            dev = x.__dlpack_device__()[0]
        except Exception:
            dev = None
        if dev == 1:                                      # kDLCPU
            try:
                return np.from_dlpack(x)
            except Exception as e:
                raise TypeError(f"{type(x).__name__}: its DLPack export cannot be viewed by "
                                f"NumPy ({e})") from None
    if hasattr(x, "__array_interface__") or (hasattr(x, "__array__") and hasattr(x, "shape")):
        try:
            a = np.asarray(x)
        except Exception:
            return None
        if a.base is None and not hasattr(x, "__array_interface__"):
            # np.asarray had to copy: writes to the copy would be lost, so refuse.
            raise TypeError(f"{type(x).__name__} converts to NumPy only by copying; pass a "
                            "NumPy array (or an object NumPy can view without a copy)")
        return a
    return None

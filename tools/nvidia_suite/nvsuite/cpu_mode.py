"""CPU mode: run the suite's ``device="cuda"`` tests on host tensors (cutile's interpreter,
or its Numba backend under the CUDA simulator, take CPU torch tensors).

Two pieces, enabled only when ``NVSUITE_MODE=cpu``:

* a ``TorchFunctionMode`` pushed for the whole session, which rewrites a CUDA ``device``
  (``"cuda"``, ``"cuda:0"``, ``torch.device("cuda")``) to ``"cpu"`` in every torch call that
  takes one (factories, ``*_like``, ``Tensor.to``, ``torch.testing.make_tensor``'s calls)
  and makes ``Tensor.cuda()`` return the tensor;
* ``torch.cuda``'s stream, event, synchronisation and device queries replaced by host
  equivalents (a stream is handle 0, events time with ``perf_counter``, the device is an sm_90
  one as in ``shim._cext``).  CUDA graphs skip as not applicable.

The tests' references are torch's results, which on the GPU come from CUDA kernels.  Where the
host kernel is known to compute something else that the CUDA one does not, the mode computes
what CUDA does: ``torch.sqrt`` of float32 (and of integers and bool, promoted to float32) is
IEEE's correctly rounded square root on CUDA (nvcc's default ``-prec-sqrt=true``), while torch's
AVX2 host kernel is not correctly rounded (e.g. sqrt(19) is off by one ulp).  Other float32
functions (log, sin, cos, tan, ...) are approximations on both devices, different ones, and
are left alone: no host computation reproduces CUDA's.
"""

from __future__ import annotations

import contextlib
import time
import types

import torch
from torch.overrides import TorchFunctionMode

from .placeholder import skip_not_applicable
from .shim._cext import CPU_MODE_CC


def _is_cuda(dev) -> bool:
    if isinstance(dev, torch.device):
        return dev.type == "cuda"
    if isinstance(dev, str):
        return dev == "cuda" or dev.startswith("cuda:")
    return False


def _host(dev):
    return "cpu" if _is_cuda(dev) else dev


_SQRT = (torch.sqrt, torch.Tensor.sqrt)


def _ieee_sqrt(x: torch.Tensor) -> torch.Tensor:
    """float32 sqrt as CUDA computes it: correctly rounded (the float64 root rounded to
    float32 is, since 53 >= 2 * 24 + 2 bits)."""
    return torch.sqrt(x.to(torch.float32).to(torch.float64)).to(torch.float32)


class CudaToHost(TorchFunctionMode):
    """Every CUDA device argument becomes the host (and ``torch.sqrt`` of float32 rounds as
    on CUDA)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func is torch.Tensor.cuda:
            return args[0]
        if func in _SQRT and not kwargs and len(args) == 1 and isinstance(args[0], torch.Tensor) \
                and (args[0].dtype == torch.float32 or not (args[0].is_floating_point()
                                                            or args[0].is_complex())):
            return _ieee_sqrt(args[0])
        if "device" in kwargs:
            kwargs["device"] = _host(kwargs["device"])
        if func is torch.Tensor.to:
            args = tuple(_host(a) for a in args)
        return func(*args, **kwargs)


class _Stream:
    """A host 'stream': handle 0, work is already done when queued."""

    cuda_stream = 0
    device = torch.device("cpu")

    def __init__(self, *args, **kwargs):
        pass

    def synchronize(self):
        pass

    def query(self):
        return True

    def wait_stream(self, other):
        pass

    def wait_event(self, event):
        pass

    def record_event(self, event=None):
        event = event or _Event()
        event.record(self)
        return event

    def __eq__(self, other):
        return isinstance(other, _Stream)

    def __hash__(self):
        return 0


class _Event:
    def __init__(self, *args, **kwargs):
        self._t = None

    def record(self, stream=None):
        self._t = time.perf_counter()

    def synchronize(self):
        pass

    def wait(self, stream=None):
        pass

    def query(self):
        return True

    def elapsed_time(self, end) -> float:
        return (end._t - self._t) * 1000.0


_DEFAULT_STREAM = _Stream()


def _props(device=None):
    return types.SimpleNamespace(name="cutile interpreter (CPU mode)", major=CPU_MODE_CC[0],
                                 minor=CPU_MODE_CC[1], multi_processor_count=132,
                                 L2_cache_size=50 * 2**20, total_memory=80 * 2**30)


def _no_graphs(*args, **kwargs):
    skip_not_applicable("CUDA graphs (torch.cuda.graph/CUDAGraph) need a GPU; CPU mode")


def _patch_torch_cuda() -> None:
    c = torch.cuda
    c.current_stream = lambda device=None: _DEFAULT_STREAM
    c.default_stream = lambda device=None: _DEFAULT_STREAM
    c.Stream = _Stream
    c.Event = _Event
    c.stream = lambda s=None: contextlib.nullcontext(s)
    c.device = lambda d=None: contextlib.nullcontext(d)
    c.set_device = lambda d=None: None
    c.synchronize = lambda device=None: None
    c.current_device = lambda: 0
    c.device_count = lambda: 1
    c.get_device_properties = _props
    c.get_device_capability = lambda device=None: CPU_MODE_CC
    c.get_device_name = lambda device=None: _props().name
    c.empty_cache = lambda: None
    c.manual_seed = lambda seed: torch.manual_seed(seed)
    c.manual_seed_all = lambda seed: torch.manual_seed(seed)
    c.graph = _no_graphs
    c.CUDAGraph = _no_graphs


_MODE: CudaToHost | None = None


def enable() -> None:
    """Push the mode (for the rest of the process) and patch ``torch.cuda``; idempotent."""
    global _MODE
    if _MODE is not None:
        return
    _patch_torch_cuda()
    _MODE = CudaToHost()
    _MODE.__enter__()

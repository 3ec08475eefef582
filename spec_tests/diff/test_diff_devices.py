"""R-LAUNCH (device arrays are used in place) on real GPUs: a launch runs on the device that
holds its arrays, whichever device the caller's thread has current, and writes through array
variables chosen at run time land in zero-copy device arrays (R-ARRAY-3).

These need a GPU (and the multi-device ones two): Numba's CUDA simulator has one simulated
device and no real device memory, so they are skipped there with that reason."""

from __future__ import annotations

import numpy as np
import pytest

import cutile as ct
from cutile import Constant

from .harness import sim

N, TS = 4096, 256


def _gpus() -> int:
    if sim():
        return 0
    try:
        from numba import cuda
        return len(cuda.gpus)
    except Exception:
        return 0


needs_gpu = pytest.mark.skipif(_gpus() < 1, reason="needs a real CUDA GPU (the simulator "
                                                   "has no device memory to place arrays in)")
needs_two = pytest.mark.skipif(_gpus() < 2, reason="needs two CUDA GPUs (launch on the "
                                                   "device holding the arrays)")


@ct.kernel
def vadd(a, b, c, ts: Constant[int]):
    i = ct.bid(0)
    ct.store(c, (i,), ct.load(a, (i,), (ts,)) + ct.load(b, (i,), (ts,)))


@ct.kernel
def store_through_loop(x, y, n: int, T: Constant[int]):
    a = x
    for i in range(n):
        a = y
    ct.store(a, (ct.bid(0),), ct.full((T,), 3, x.dtype))
    ct.atomic_add(a, ct.arange(T, dtype=ct.int32), ct.full((T,), 1, x.dtype))


@pytest.fixture(autouse=True)
def _on_numba():
    from cutile.executors import backend
    with backend("numba"):
        yield


def _torch():
    return pytest.importorskip("torch", reason="PyTorch is needed for CUDA tensors")


@needs_gpu
def test_zero_copy_write_through_loop_chosen_array():
    torch = _torch()
    x = torch.zeros(2 * 8, dtype=torch.int32, device="cuda")
    y = torch.zeros(2 * 8, dtype=torch.int32, device="cuda")
    ct.launch(torch.cuda.current_stream(), (2,), store_through_loop, (x, y, 1, 8))
    torch.cuda.synchronize()
    assert not x.any().item()
    want = np.full(16, 3, np.int32)
    want[:8] += 2                                  # both blocks add 1 to elements 0..7
    np.testing.assert_array_equal(y.cpu().numpy(), want)


@needs_two
@pytest.mark.parametrize("dev", [0, 1])
def test_torch_tensors_on_each_device(dev):
    torch = _torch()
    other = 1 - dev
    with torch.cuda.device(other):                 # the caller's current device is the other
        a = torch.randn(N, device=f"cuda:{dev}")
        b = torch.randn(N, device=f"cuda:{dev}")
        c = torch.empty(N, device=f"cuda:{dev}")
        ct.launch(torch.cuda.current_stream(dev), (N // TS,), vadd, (a, b, c, TS))
        torch.cuda.synchronize(dev)
    torch.testing.assert_close(c.cpu(), (a + b).cpu())


@needs_two
def test_torch_device_context_and_default_stream():
    torch = _torch()
    for dev in range(2):
        with torch.cuda.device(dev):
            a = torch.randn(N, device=f"cuda:{dev}")
            b = torch.randn(N, device=f"cuda:{dev}")
            c = torch.empty(N, device=f"cuda:{dev}")
            ct.launch(0, (N // TS,), vadd, (a, b, c, TS))
            torch.cuda.synchronize()
        torch.testing.assert_close(c.cpu(), (a + b).cpu())


@needs_two
def test_numba_arrays_on_second_device_and_numpy_arguments():
    from numba import cuda
    a = np.random.rand(N).astype(np.float32)
    b = np.random.rand(N).astype(np.float32)
    with cuda.gpus[1]:
        da, db = cuda.to_device(a), cuda.to_device(b)
        dc = cuda.device_array(N, np.float32)
    ct.launch(None, (N // TS,), vadd, (da, db, dc, TS))       # current device: 0
    with cuda.gpus[1]:
        got = dc.copy_to_host()
    np.testing.assert_array_equal(got, a + b)
    c = np.empty_like(a)
    with cuda.gpus[1]:                                        # NumPy arguments: current device
        ct.launch(None, (N // TS,), vadd, (a, b, c, TS))
    np.testing.assert_array_equal(c, a + b)


@needs_two
def test_arrays_on_two_devices_are_refused():
    torch = _torch()
    a = torch.randn(N, device="cuda:0")
    b = torch.randn(N, device="cuda:1")
    c = torch.empty(N, device="cuda:0")
    with pytest.raises(ValueError, match="different GPUs: argument 0 on device 0, argument 1 "
                                         "on device 1"):
        ct.launch(None, (N // TS,), vadd, (a, b, c, TS))


def test_numba_array_device_is_its_memory_context():
    """A Numba device array tells its device through its memory's context: measured on two
    H200s, the pointer query alone left a ``cuda.gpus[1]`` array on device 0 (output zero).
    A stand-in object runs this without a GPU."""
    from types import SimpleNamespace as NS
    from cutile.device_arrays import DeviceArrayRef
    from cutile.numba_backend.devices import array_device
    arr = NS(gpu_data=NS(context=NS(device=NS(id=1))))
    assert array_device(DeviceArrayRef(arr, 0, (4,), (4,), np.dtype(np.float32))) == 1
    assert array_device(DeviceArrayRef(NS(), 0, (4,), (4,), np.dtype(np.float32))) is None

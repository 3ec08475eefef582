"""Which GPU a launch runs on: the device that holds its array arguments.

A kernel reads and writes its arrays where they live, so a launch whose device arrays (a
PyTorch tensor on ``cuda:1``, a CuPy array or a Numba array of ``cuda.gpus[1]``) sit on
another device than the calling thread's current one makes that device current for the launch
(compile, copies of NumPy arguments, parameter packing, the launch itself) and restores the
caller's afterwards.  Arrays on different devices in one launch are refused: no GPU kernel can
dereference both.  The caches that hold per-context objects (streams, dynamic shared memory
opt-ins) are keyed by the device id from here.
"""

from __future__ import annotations

import contextlib

from ..device_arrays import DeviceArrayRef

_ctx_devices: dict[int, int] = {}       # current context handle -> its device ordinal


def current_device_id() -> int:
    """The id of the device whose context is current on this thread (the driver's current
    context, which ``torch.cuda.device``/``cudaSetDevice``/Numba's ``cuda.gpus[i]`` set).

    Asked several times per launch, so from the driver directly (``cuCtxGetCurrent``, its
    device remembered per context handle): Numba's ``cuda.current_context()`` retains the
    primary context on every call: on a lent H200's host a launch (four calls) took 270-310
    us of host time, 170-200 without them, against a 4096^3 matmul's ~230 us of kernel time.
    Without a current context (a fresh thread), Numba's call makes one current."""
    try:
        from cuda.bindings import driver as cu
        err, ctx = cu.cuCtxGetCurrent()
        h = int(ctx) if err == cu.CUresult.CUDA_SUCCESS else 0
        if h:
            dev = _ctx_devices.get(h)
            if dev is None:
                err, d = cu.cuCtxGetDevice()
                if err != cu.CUresult.CUDA_SUCCESS:
                    raise RuntimeError(err)
                dev = _ctx_devices.setdefault(h, int(d))
            return dev
    except Exception:  # noqa: BLE001 - no cuda-bindings or a driver surprise: Numba's view
        pass
    from numba import cuda
    return cuda.current_context().device.id


def array_device(ref: DeviceArrayRef) -> int | None:
    """The device ordinal holding ``ref``'s memory; None when it cannot be told (a null
    pointer, host-accessible memory)."""
    dev = getattr(getattr(ref.obj, "device", None), "index", None)      # torch
    if dev is None:
        dev = getattr(getattr(ref.obj, "device", None), "id", None)     # CuPy
    if isinstance(dev, int):
        return dev
    dev = _numba_array_device(ref.obj)
    if dev is not None:
        return dev
    if not ref.ptr:
        return None
    try:
        from cuda.bindings import driver as cu
        err, ordinal = cu.cuPointerGetAttribute(
            cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ref.ptr)
    except Exception:          # no cuda-bindings: the current device, as before
        return None
    return int(ordinal) if err == cu.CUresult.CUDA_SUCCESS else None


def _numba_array_device(obj) -> int | None:
    """A Numba device array's device: its memory's context (``gpu_data.context``).  Measured on
    two H200s: the pointer query below did not tell a Numba array of ``cuda.gpus[1]`` apart,
    the launch ran on device 0 and the output stayed zero."""
    ctx = getattr(getattr(obj, "gpu_data", None), "context", None)
    dev = getattr(getattr(ctx, "device", None), "id", None)
    return dev if isinstance(dev, int) else None


def launch_device(leaves: list) -> int | None:
    """The device the launch's device arrays live on (None: no device array tells)."""
    found: dict[int, int] = {}
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, DeviceArrayRef):
            dev = array_device(leaf)
            if dev is not None:
                found.setdefault(dev, i)
    if len(found) > 1:
        (d0, i0), (d1, i1) = list(found.items())[:2]
        raise ValueError(f"kernel arguments live on different GPUs: argument {i0} on device "
                         f"{d0}, argument {i1} on device {d1}; move them to one device")
    return next(iter(found), None)


@contextlib.contextmanager
def on_device(dev: int | None):
    """Make ``dev`` current for the block (nothing to do when it already is)."""
    if dev is None or dev == current_device_id():
        yield
        return
    from numba import cuda
    with cuda.gpus[dev]:
        yield

"""The wgmma probe's host side on the GPU (``wgmma_probe.py``, issue 24): result lines, the
kernels compiled and opted in to their dynamic shared memory, timing, the guard that
reports a failed part and goes on, and the TMA tensor maps encoded on the host.
"""

from __future__ import annotations

import os
import re

import numpy as np
from numba import cuda

RESULTS: list[tuple[str, str]] = []


def note(key, value):
    RESULTS.append((key, value))
    print(f"{key:58s} {value}", flush=True)


def f16_bits(x):
    return cuda.to_device(np.ascontiguousarray(x.astype(np.float16).view(np.uint16)))


def gemm_operands(size):
    """The mini GEMMs' A and B^T (size x size, integers in [-2, 2]: every product sum exact
    in float32) on the host, their float16 bits on the device, and C = A @ B as NumPy's."""
    rng = np.random.default_rng(2)
    a = rng.integers(-2, 3, (size, size)).astype(np.float32)
    bt = rng.integers(-2, 3, (size, size)).astype(np.float32)
    return a, bt, f16_bits(a), f16_bits(bt), a @ bt.T


def prepare(name, smem):
    """The kernel compiled for its probe signature (sm_90a: see ``wgmma_probe.py``'s
    docstring) and opted in to ``smem`` bytes of dynamic shared memory."""
    from numba.cuda.cudadrv.driver import binding, driver
    if name not in DISPATCHERS:
        spec = ALL[name]
        fn, sig = spec[0], spec[1]
        disp = cuda.jit(launch_bounds=spec[2])(fn) if len(spec) > 2 else cuda.jit(fn)
        DISPATCHERS[name] = (disp, disp.compile(sig))
    disp, kern = DISPATCHERS[name]
    if os.environ.get("WGMMA_PROBE_CUBINS"):    # for `cuobjdump -sass`: HGMMA/UTMALDG present?
        with open(os.path.join(os.environ["WGMMA_PROBE_CUBINS"], name + ".cubin"), "wb") as f:
            cubin = kern._codelibrary.get_cubin()
            f.write(bytes(getattr(cubin, "code", cubin)))   # cuda.core ObjectCode or bytes
    cufunc = kern._codelibrary.get_cufunc()
    attr = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    try:                                # as cutile/numba_backend/compile.py does
        driver.cuKernelSetAttribute(attr, smem, cufunc.kernel.handle,
                                    cuda.get_current_device().id)
    except Exception:  # noqa: BLE001 - older wrappers: the function-handle form
        driver.cuFuncSetAttribute(cufunc.handle, attr, smem)
    if not TARGET:
        ptx = kern._codelibrary.get_asm_str()
        m = re.search(r"^\.target (\S+)", ptx, flags=re.M)
        TARGET.append(m.group(1) if m else "?")
        note("target of launched kernels (needs sm_90a)", TARGET[0])
    return disp, kern.regs_per_thread


DISPATCHERS: dict = {}
TARGET: list = []
ALL: dict = {}


_SPIN: list = []


def _spin(ms: float) -> None:
    """Keep the default stream busy for about ``ms`` milliseconds (one thread sleeping in
    1 us steps), so the launches queued behind it run back to back when it ends."""
    if not _SPIN:
        @cuda.jit
        def spin(steps):
            for _ in range(steps):
                cuda.nanosleep(1000)
        _SPIN.append(spin)
    _SPIN[0][1, 1](int(ms * 1000))


def best_time(fn, reps=5, burst=10):
    """Seconds per call of ``fn`` (a kernel launch on the default stream): the best of
    ``reps`` bursts of ``burst`` back-to-back launches timed by CUDA events.  Each burst is
    queued behind a kernel that keeps the GPU busy while the host enqueues it (the events
    start when that one ends), so the figure is the GPU's alone: a ``cutile.launch`` costs
    the host 170-300 us on a lent H200 (an empty Numba kernel: 20 us), about a 4096^3
    GEMM's time, and without the wait the figure measured the host (128x256x64 float16:
    cp.async 391-443, TMA ring 327-399 TFLOP/s; queued: 487 and 767, steady over rounds).
    A single launch timed with ``synchronize`` read the 4096^3 GEMM ~10% slow."""
    fn()
    cuda.synchronize()
    best = float("inf")
    for _ in range(reps):
        t0, t1 = cuda.event(), cuda.event()
        _spin(2 + 0.5 * burst)              # longer than the host takes to enqueue the burst
        t0.record()
        for _ in range(burst):
            fn()
        t1.record()
        t1.synchronize()
        best = min(best, cuda.event_elapsed_time(t0, t1) / 1e3 / burst)
    return best


def report_gemms(entries, size, ref):
    """Time every GEMM of ``entries`` ((label, launch, output with ``copy_to_host``)) in
    ``PROBE_ROUNDS`` interleaved rounds (default 1: a card's clocks drift between processes
    and over a run, so interleaving compares like with like), then note each one's median
    TFLOP/s, every round's figure, and whether its output equals ``ref`` exactly."""
    rounds = int(os.environ.get("PROBE_ROUNDS", "1"))
    figures = {label: [] for label, _, _ in entries}
    for _ in range(rounds):
        for label, launch, _ in entries:
            figures[label].append(2 * size ** 3 / best_time(launch, reps=10) / 1e12)
    for label, _, out in entries:
        bad = int(np.count_nonzero(out.copy_to_host() != ref))
        f = figures[label]
        each = "" if rounds == 1 else " (" + " ".join(f"{v:.0f}" for v in f) + ")"
        note(f"{label}, {size}^3", f"{np.median(f):.0f} TFLOP/s{each}, "
             + ("exact" if bad == 0 else f"{bad} elements WRONG"))


def guarded(title):
    def deco(f):
        def run(*a):
            try:
                f(*a)
            except Exception as e:  # noqa: BLE001 - the probe reports and goes on
                note(title, f"FAILED {type(e).__name__}: {str(e)[:300]}")
        return run
    return deco


def tensor_map(arr, box_rows=64, box_cols=64, swizzle=128):
    """128 encoded bytes (16 uint64) of a 2-D float16 tensor map over the row-major device
    array ``arr`` (uint16 bits), ``swizzle``-byte swizzle (128 or 64: a box row of at most
    that many bytes), zero fill out of bounds."""
    from cuda.bindings import driver as drv
    rows, cols = arr.shape
    u32, u64 = drv.cuuint32_t, drv.cuuint64_t
    err, tm = drv.cuTensorMapEncodeTiled(
        drv.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2,
        arr.__cuda_array_interface__["data"][0],
        [u64(cols), u64(rows)], [u64(cols * 2)], [u32(box_cols), u32(box_rows)],
        [u32(1), u32(1)], drv.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        getattr(drv.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{swizzle}B"),
        drv.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
        drv.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    if err != drv.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuTensorMapEncodeTiled: {err}")
    return np.array([int(v) for v in tm.opaque], dtype=np.uint64)


def maps_on_device(*arrs, **box):
    return cuda.to_device(np.concatenate([tensor_map(a, **box) for a in arrs]))


def dev_addr(d):
    return np.uint64(d.__cuda_array_interface__["data"][0])

"""Run one kernel on the interpreter and on the Numba backend and compare every output element.

- Every array argument is embedded in a larger buffer (a guard band of ``GUARD`` elements on
  every side of every dimension, filled with a sentinel); the kernel gets the inner view
  (non-contiguous for 2-D and up).  After the launch the guard band must be untouched.
- Output arrays are poisoned by the caller (NaN / sentinel) so unwritten elements show.
- Comparison: integers and bools bit-exactly; floats bit-exactly by default (NaN matches any
  NaN), or within ``ulps`` units in the last place, or ``atol + rtol*|ref|``; ``signed_zero=
  False`` accepts -0.0 for +0.0 (min/max of zeros are unspecified, R-MATH-6).
- ``device=True`` passes Numba device-array views of device buffers instead of NumPy arrays.
  On a GPU that is the zero-copy path, and the guard band checks the kernel's own bounds checks
  in device memory; the simulator's fake device arrays expose ``__array_interface__`` and are
  taken as host views of the device buffer (still checking that nothing outside the view is
  written).
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import re
import sys
import tempfile

import numpy as np

import cutile as ct
from cutile import dtypes as dt
from cutile.executors import backend

GUARD = 2
_counter = itertools.count()
_tmpdir = tempfile.mkdtemp(prefix="cutile_diff_")


_PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
# (examples multiplier, shards) per profile: see ``examples`` and ``shards``
_SCALE = {"gpu": (5, 10), "deep": (32, 16)}.get(_PROFILE, (1, 1))


def examples(n: int) -> int:
    """Hypothesis examples per shard: ``n`` in CI; with HYPOTHESIS_PROFILE=gpu (deep) the
    test runs 5x (32x) as many examples in total, split over ``shards()``.  The gpu profile
    is sized to finish in one 10-minute device call with ``-n 16`` (about 6 minutes)."""
    scale, parts = _SCALE
    return max(1, n * scale // parts)


def shards() -> range:
    """Parametrisation that splits a Hypothesis test into independently seeded copies.

    Hypothesis runs one test's examples serially, and on a GPU every example is a Numba
    compile (about a second); split in shards, ``pytest -n 16`` (pytest-xdist) spreads the
    examples of the gpu/deep profiles over the cores.  One shard in CI.
    """
    return range(_SCALE[1])


def numba_ready() -> bool:
    """The Numba backend can run: Numba's CUDA simulator is active, or a GPU is usable."""
    if sim():
        return True
    from cutile.executors import gpu_usable
    return gpu_usable()


def sim() -> bool:
    """Whether numba.cuda is the simulator (asks Numba: the environment may be stale)."""
    from cutile.numba_backend.rt import simulator
    return simulator()


def kernel_from_source(src: str, name: str):
    """Define a kernel from source text (the frontend needs a real file for line numbers)."""
    path = os.path.join(_tmpdir, f"k{next(_counter)}_{name}.py")
    with open(path, "w") as f:
        f.write("import cutile as ct\nfrom cutile import Constant\n\n" + src)
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return getattr(mod, name)


def sentinel(dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.array(-7.25e3 if dtype.itemsize > 1 else 3.0, dtype=dtype)
    if dtype.kind == "b":
        return np.array(True)
    return np.frombuffer(b"\xa7" * dtype.itemsize, dtype=dtype)[0]


def poison(shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.full(shape, np.nan, dtype=dtype)
    if dtype.kind == "b":
        return np.ones(shape, dtype=bool)
    return np.full(shape, np.frombuffer(b"\x5c" * dtype.itemsize, dtype=dtype)[0], dtype)


def embed(a: np.ndarray):
    """(buffer, view): ``a`` copied into the middle of a guarded buffer."""
    if a.ndim == 0:
        buf = np.full((1 + 2 * GUARD,), sentinel(a.dtype), dtype=a.dtype)
        buf[GUARD] = a
        return buf, buf[GUARD:GUARD + 1].reshape(())
    shape = tuple(d + 2 * GUARD for d in a.shape)
    buf = np.full(shape, sentinel(a.dtype), dtype=a.dtype)
    sl = tuple(slice(GUARD, GUARD + d) for d in a.shape)
    buf[sl] = a
    return buf, buf[sl]


def _guard_ok(buf: np.ndarray, ndim: int, dtype) -> bool:
    mask = np.ones(buf.shape, dtype=bool)
    if ndim == 0:
        mask[GUARD] = False
    else:
        mask[tuple(slice(GUARD, d - GUARD) for d in buf.shape)] = False
    s = np.ascontiguousarray(np.broadcast_to(sentinel(dtype), buf.shape))
    return bool(np.array_equal(_bits(buf)[mask], _bits(s)[mask]))


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    if a.dtype == np.bool_:
        return a.view(np.uint8)
    return a.view(f"u{a.dtype.itemsize}")


def _launch(kernel, grid, args, executor: str, opts: dict, device: bool):
    bufs, call = [], []
    for a in args:
        if isinstance(a, np.ndarray):
            buf, view = embed(a)
            if device and executor == "numba" and a.ndim > 0:
                from numba import cuda
                dbuf = cuda.to_device(buf)
                dview = dbuf[tuple(slice(GUARD, GUARD + d) for d in a.shape)]
                bufs.append((buf, dbuf, a))
                call.append(dview)
            else:
                bufs.append((buf, None, a))
                call.append(view)
        else:
            call.append(a)
    with backend(executor, **(opts if executor == "numba" else {})):
        ct.launch(None, grid, kernel, tuple(call))
    outs, guards = [], []
    for buf, dbuf, a in bufs:
        if dbuf is not None:
            buf = dbuf.copy_to_host()
        if a.ndim == 0:
            outs.append(buf[GUARD:GUARD + 1].reshape(()).copy())
        else:
            outs.append(buf[tuple(slice(GUARD, GUARD + d) for d in a.shape)].copy())
        guards.append(_guard_ok(buf, a.ndim, a.dtype))
    return outs, guards


def run_both(kernel, grid, args, *, threads=None, mma_acc=None, device=False):
    """(interpreter outputs, backend outputs): every array argument after the launch."""
    ref, gref = _launch(kernel, grid, args, "interp", {}, False)
    got, ggot = _launch(kernel, grid, args, "numba", {"threads": threads, "mma_acc": mma_acc},
                        device)
    assert all(gref), "interpreter wrote into a guard band (harness bug)"
    bad = [i for i, ok in enumerate(ggot) if not ok]
    assert not bad, f"numba backend wrote outside array argument(s) {bad}"
    return ref, got


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in representable values between same-dtype floats (NaN handled by caller)."""
    w = a.dtype.itemsize * 8

    def key(x):
        i = np.ascontiguousarray(x).view(f"i{a.dtype.itemsize}").astype(np.int64)
        mag = i & np.int64((1 << (w - 1)) - 1)
        return np.where(i < 0, -mag, mag)

    return np.abs(key(a) - key(b))


def assert_same(ref: np.ndarray, got: np.ndarray, *, ulps: int = 0, atol: float = 0.0,
                rtol: float = 0.0, signed_zero: bool = True, what: str = "") -> None:
    assert ref.shape == got.shape and ref.dtype == got.dtype, (ref.shape, got.shape)
    d = dt.from_numpy(ref.dtype)
    if not (d is not None and d.is_float):             # bfloat16/float8 are kind "V"
        bad = _bits(ref) != _bits(got)
        if bad.any():
            i = tuple(int(x) for x in np.argwhere(bad)[0])
            raise AssertionError(f"{what}: {int(bad.sum())} element(s) differ, first at {i}: "
                                 f"interp {ref[i]!r} vs numba {got[i]!r}")
        return
    rn, gn = np.isnan(ref), np.isnan(got)
    bad = rn != gn
    both = ~rn & ~gn
    r64, g64 = ref.astype(np.float64), got.astype(np.float64)
    if atol or rtol:
        close = np.abs(r64 - g64) <= atol + rtol * np.abs(r64)
        close |= (r64 == g64)
        bad |= both & ~close
    elif ulps:
        bad |= both & (ulp_distance(ref, got) > ulps) & ~((r64 == 0) & (g64 == 0))
    else:
        same = _bits(ref) == _bits(got)
        if not signed_zero:
            same |= (r64 == 0) & (g64 == 0)
        bad |= both & ~same
    if bad.any():
        i = tuple(int(x) for x in np.argwhere(bad)[0])
        raise AssertionError(f"{what}: {int(bad.sum())} of {ref.size} element(s) differ, first "
                             f"at {i}: interp {ref[i]!r} vs numba {got[i]!r}")


def check_no_divergent_barrier(source: str) -> None:
    """No ``cuda.syncthreads()`` under an ``if`` whose condition depends on the thread."""
    stack: list[tuple[int, bool]] = []
    per_thread = re.compile(r"\btid\b|\bL\d+_w\b|\blead\b|\b0 <= ")
    for n, line in enumerate(source.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        ind = len(line) - len(line.lstrip())
        while stack and stack[-1][0] >= ind:
            stack.pop()
        if s.startswith(("if ", "elif ", "else:", "for ", "while ")):
            div = s.startswith(("if ", "elif ")) and bool(per_thread.search(s))
            if s.startswith("else:") and stack:
                div = False
            stack.append((ind, div or any(d for _, d in stack)))
        if s == "cuda.syncthreads()" and any(d for _, d in stack):
            raise AssertionError(f"barrier in divergent control flow at generated line {n}")

"""Concurrent launches from several Python threads give exact results (R-LAUNCH-6, §24).

Compilation caches are filled under locks and the compile context is per thread, so first
launches of one kernel racing from many threads compile it once and every launch is correct.
Kernels are defined inside the tests so that their first launches happen in the threads.
"""

from __future__ import annotations

import threading

import numpy as np

import cutile as ct
from cutile.frontend import build


def _kernels():
    @ct.kernel
    def add(a, b, c, T: ct.Constant[int]):
        i = ct.bid(0)
        ct.store(c, (i,), ct.load(a, (i,), (T,)) + ct.load(b, (i,), (T,)))

    @ct.kernel
    def scale(a, c, k: float, T: ct.Constant[int]):
        i = ct.bid(0)
        ct.store(c, (i,), ct.load(a, (i,), (T,)) * k)

    @ct.kernel
    def rowsum(a, c, T: ct.Constant[int]):
        i = ct.bid(0)
        ct.store(c, (i,), ct.sum(ct.load(a, (i, 0), (1, T)), axis=1))

    return add, scale, rowsum


def _one_launch(kernels, tid: int, it: int, rng) -> None:
    """One launch of one of the three kernels; its result checked against NumPy."""
    add, scale, rowsum = kernels
    k = (it + tid) % 3
    if k == 0:
        a = rng.integers(-1000, 1000, 16).astype(np.int32)
        b = rng.integers(-1000, 1000, 16).astype(np.int32)
        c = np.zeros(16, np.int32)
        tile = (8, 4)[it % 2]                       # two specialisations of one kernel
        ct.launch(None, (16 // tile,), add, (a, b, c, tile))
        np.testing.assert_array_equal(c, a + b)
    elif k == 1:
        a = rng.standard_normal(16).astype(np.float32)
        c = np.zeros(16, np.float32)
        ct.launch(None, (4,), scale, (a, c, 2.5, 4))
        np.testing.assert_array_equal(c, a * np.float32(2.5))
    else:
        a = rng.integers(-1000, 1000, (4, 8)).astype(np.int32)
        c = np.zeros(4, np.int32)
        ct.launch(None, (4,), rowsum, (a, c, 8))
        np.testing.assert_array_equal(c, a.sum(axis=1, dtype=np.int32))


def run_threads(n_threads: int, n_launches: int, kernels, backend: str | None = None) -> list:
    """Start all threads at once (a barrier), each doing ``n_launches``; the errors raised."""
    errors: list = []
    barrier = threading.Barrier(n_threads)

    def work(tid: int):
        rng = np.random.default_rng(tid)
        try:
            barrier.wait()
            if backend is None:
                for it in range(n_launches):
                    _one_launch(kernels, tid, it, rng)
            else:
                from cutile.executors import backend as scoped
                with scoped(backend):
                    for it in range(n_launches):
                        _one_launch(kernels, tid, it, rng)
        except BaseException as e:   # collected and reported by the test
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_stress_8_threads_100_launches_3_kernels_interp():
    """R-LAUNCH-6: 8 threads x 100 launches of 3 kernels, first launches included, all exact."""
    errors = run_threads(8, 100, _kernels(), backend="interp")
    assert not errors, f"{len(errors)} threads failed; first: {errors[0]!r}"


def test_concurrent_first_launches_compile_once(monkeypatch):
    """Racing first launches of one signature build its IR exactly once (per-kernel lock)."""
    calls = []
    real = build.build_kernel

    def counting(kernel, spec):
        calls.append(spec.key)
        return real(kernel, spec)

    monkeypatch.setattr(build, "build_kernel", counting)
    kernels = _kernels()
    errors = run_threads(8, 3, kernels, backend="interp")
    assert not errors, repr(errors[:1])
    # add: two tile sizes; scale and rowsum: one signature each
    assert sorted(map(str, calls)) == sorted(map(str, set(calls))) and len(calls) == 4


def test_compile_context_is_per_thread():
    """A thread that is not compiling is not inside tile code while another thread is."""
    from cutile.lang import context
    seen = []
    started, release = threading.Event(), threading.Event()

    @ct.kernel
    def slow(a):
        ct.store(a, (0,), ct.load(a, (0,), (4,)))

    real = build.FunctionCompiler.run_body

    def pausing(self, stmts, env):
        if not started.is_set():
            started.set()
            release.wait(5)
        return real(self, stmts, env)

    build.FunctionCompiler.run_body = pausing
    try:
        t = threading.Thread(target=ct.launch, args=(None, (1,), slow,
                                                     (np.zeros(4, np.float32),)))
        t.start()
        started.wait(5)
        seen.append(context.in_tile_code())
        release.set()
        t.join()
    finally:
        build.FunctionCompiler.run_body = real
    assert seen == [False]

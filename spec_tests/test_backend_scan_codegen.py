"""Numba backend, generated code of the issue-10 part B ops (no launch): barriers only at
block-uniform points (also inside a runtime loop), one exchange barrier per staged op, the
combiner region emitted as register code, and 0-d combiner bodies only."""

from __future__ import annotations

import pytest
from diff.harness import check_no_divergent_barrier  # spec_tests/ is on sys.path

import cutile as ct
from cutile import Constant


def gen(kernel, args, T=32):
    import numpy as np  # noqa: F401

    from cutile.numba_backend.compile import generate
    ir = kernel.compile(kernel.specialize(tuple(args)))
    g = generate(ir, T, "f32")
    check_no_divergent_barrier(g.source)
    return g.source


@ct.kernel
def scans_in_loop(a, o, n, N: Constant[int]):
    acc = ct.zeros((4, N), ct.float32)
    for i in range(n):
        x = ct.load(a, (i, 0), (4, N), padding_mode=ct.PaddingMode.ZERO)
        acc = acc + ct.cumsum(x, 1) + ct.scan(x, 0, lambda p, q: p * 0.5 + q, 0.0, reverse=True)
        v, j = ct.reduce((x, ct.broadcast_to(ct.arange(N, dtype=ct.int32), (4, N))), 1,
                         lambda p, i, q, k: (ct.maximum(p, q), ct.minimum(i, k)), (0.0, 0),
                         keepdims=True)
        acc = acc + v + ct.astype(j, ct.float32)
    ct.store(o, (0, 0), acc)


@ct.kernel
def staged(a, o, o2, i):
    x = ct.load(a, (0, 0), (4, 8))
    y = ct.cat((ct.extract(x, (i, 0), (2, 8)), ct.extract(x, (0, 0), (2, 8))), 0)
    y = y.insert((1, 1), ct.full((2, 4), 1.0, ct.float32))
    ct.store(o, (0, 0), y)
    ct.store(o2, (0,), ct.pack_to_bytes(ct.bitcast(x, ct.int32)))


def test_scan_and_reduce_fn_in_a_loop_keep_barriers_uniform():  # R-SCAN-1, R-RED-8
    import numpy as np
    src = gen(scans_in_loop, (np.zeros((8, 16), np.float32), np.zeros((4, 16), np.float32), 2,
                              16))
    assert "for _i" in src                      # the per-thread line loop of the scans
    assert src.count("cuda.syncthreads()") >= 4


def test_staged_ops_one_barrier_each():  # R-SHAPE-6..8, R-BITCAST-2
    import numpy as np
    src = gen(staged, (np.zeros((4, 8), np.float32), np.zeros((4, 8), np.float32),
                       np.zeros(128, np.uint8), 1))
    assert "libdevice.float_as_int" in src      # bitcast float32 -> int32 in registers
    assert src.count("cuda.syncthreads()") <= 12


def test_combiner_reshape_beyond_0d_refused():  # R-RED-9 (cutile: 0-d bodies only)
    import numpy as np

    @ct.kernel
    def k(a, o):
        x = ct.load(a, (0,), (8,))
        ct.store(o, (0,), ct.reshape(ct.reduce(x, 0, lambda p, q: ct.reshape(
            ct.reshape(p, (1,)) + ct.reshape(q, (1,)), ()), 0.0), (1,)))

    # size-1 reshapes are allowed; the interpreter and the backend both run them
    gen(k, (np.zeros(8, np.float32), np.zeros(1, np.float32)))
    with pytest.raises(ct.TileSyntaxError, match="Broadcast is not supported inside reduction"):
        @ct.kernel
        def bad(a, o):
            x = ct.load(a, (0,), (8,))
            r = ct.reduce(x, 0, lambda p, q: p + ct.extract(ct.broadcast_to(q, (2,)), (0,), ()),
                          0.0)
            ct.store(o, (0,), ct.reshape(r, (1,)))
        ct.launch(None, (1,), bad, (np.zeros(8, np.float32), np.zeros(1, np.float32)))


def test_integer_cumsum_is_a_parallel_scan():  # R-SCAN-1 (backend: order-free integers)
    import numpy as np

    @ct.kernel
    def k(a, o):
        x = ct.load(a, (0,), (64,))
        ct.store(o, (0,), ct.cumsum(x, reverse=True))

    src = gen(k, (np.zeros(64, np.int32), np.zeros(64, np.int32)))
    assert "for _i" not in src                  # no sequential line loop
    assert src.count("cuda.syncthreads()") == 1 + 2 * 6    # staging + two per step (log2 64)

"""Execution model and launches: §1 (R-EXEC-*), §2.3 constants as parameters, §24 (R-KERN-*,
R-LAUNCH-*)."""

from __future__ import annotations

import numpy as np
import pytest

import cutile as ct


@ct.kernel
def grid_info(out):
    x, y, z = ct.bid(0), ct.bid(1), ct.bid(2)
    nx, ny = ct.num_blocks(0), ct.num_blocks(1)
    flat = (z * ny + y) * nx + x
    ct.store(out, (flat, 0), ct.reshape(ct.astile((x, y, z, nx, ny, ct.num_blocks(2), 0, 0),
                                                   dtype=ct.int32), (1, 8)))


@pytest.mark.parametrize("grid,padded", [((2, 3, 4), (2, 3, 4)), ((8,), (8, 1, 1)),
                                         ((3, 2), (3, 2, 1)), ((), (1, 1, 1))])
def test_bid_and_num_blocks(grid, padded):
    # R-EXEC-1, R-EXEC-2: shorter grids are padded with 1s; every block runs once
    n = int(np.prod(padded))
    out = np.full((n, 8), -1, np.int32)
    ct.launch(None, grid, grid_info, (out,))
    for flat in range(n):
        x = flat % padded[0]
        y = (flat // padded[0]) % padded[1]
        z = flat // (padded[0] * padded[1])
        assert out[flat, :6].tolist() == [x, y, z, *padded]


def test_zero_grid_launches_nothing():
    # R-LAUNCH-2 (cutile): a zero extent launches no blocks
    out = np.full((1, 8), -1, np.int32)
    ct.launch(None, (0,), grid_info, (out,))
    assert (out == -1).all()


@ct.kernel
def typed_scalars(out, i, f, b):
    ct.store(out, (0,), i.dtype == ct.int32 and f.dtype == ct.float32 and b.dtype == ct.bool_)


def test_runtime_scalar_argument_dtypes():
    # R-PROMO-6, R-LAUNCH-3: int -> int32, float -> float32, bool -> bool_
    out = np.zeros(1, np.int32)
    ct.launch(None, (1,), typed_scalars, (out, 3, 2.5, True))
    assert out[0] == 1


@ct.kernel
def int64_scalar(out, n: ct.ScalarInt64):
    ct.store(out, (0,), n)


def test_scalar_int64_annotation():
    # R-LAUNCH-4
    out = np.zeros(1, np.int64)
    ct.launch(None, (1,), int64_scalar, (out, 2 ** 40))
    assert out[0] == 2 ** 40


@ct.kernel
def array_index_dtype(a: ct.IndexedWithInt64, out):
    ct.store(out, (0,), a.shape[0].dtype == ct.int64)


def test_indexed_with_int64():
    # R-ARRAY-2, R-LAUNCH-4
    out = np.zeros(1, np.int32)
    ct.launch(None, (1,), array_index_dtype, (np.zeros(3, np.float32), out))
    assert out[0] == 1


COMPILES = []


@ct.kernel
def specialised(a, out, K: ct.Constant[int]):
    t = ct.load(a, (0,), (4,))
    ct.store(out, (0,), t * K)


def test_specialisation_cache_per_signature():
    # R-LAUNCH-6, R-CONST-2: each constant value and dtype is its own specialisation
    specialised._cache.clear()
    for dtype in (np.float32, np.int32):
        for k in (2, 3, 2):
            a = np.arange(4, dtype=dtype)
            out = np.zeros(4, dtype)
            ct.launch(None, (1,), specialised, (a, out, k))
            np.testing.assert_array_equal(out, a * k)
    assert len(specialised._cache) == 4


@ct.kernel
def tuple_args(pair, out, shape: ct.Constant[tuple]):
    a, scale = pair
    t = ct.load(a, (0,), shape)
    ct.store(out, (0,), t * scale)


def test_tuple_arguments():
    # R-LAUNCH-3, R-DISC-1: plain tuples of arrays and scalars
    a = np.arange(4, dtype=np.float32)
    out = np.zeros(4, np.float32)
    ct.launch(None, (1,), tuple_args, ((a, 2.0), out, (4,)))
    np.testing.assert_array_equal(out, a * 2)


def test_namedtuple_rejected():
    # R-LAUNCH-3
    from collections import namedtuple
    P = namedtuple("P", "a b")
    with pytest.raises(TypeError, match="Only plain tuples"):
        ct.launch(None, (1,), tuple_args, (P(np.zeros(4, np.float32), 1.0),
                                           np.zeros(4, np.float32), (4,)))


def test_replace_hints_returns_new_kernel():
    # R-KERN-3
    k2 = specialised.replace_hints(occupancy=4)
    assert k2 is not specialised and k2.options["occupancy"] == 4
    a = np.arange(4, dtype=np.float32)
    out = np.zeros(4, np.float32)
    ct.launch(None, (1,), k2, (a, out, 5))
    np.testing.assert_array_equal(out, a * 5)


def test_function_decorator():
    # R-KERN-5
    def f(x):
        return x

    assert ct.function(f) is f
    assert ct.function(host=True)(f) is f

    @ct.function
    def g(x):
        return x + 1

    @ct.kernel
    def use(out):
        ct.store(out, (0,), g(1))

    out = np.zeros(1, np.int32)
    ct.launch(None, (1,), use, (out,))
    assert out[0] == 2


def test_cpu_torch_tensors_are_views():
    # R-LAUNCH-3 (cutile): host objects that NumPy can view without a copy
    torch = pytest.importorskip("torch", reason="PyTorch is not installed: CPU tensor arguments "
                                                "cannot be exercised")
    a = torch.arange(8, dtype=torch.float32)
    out = torch.zeros(8, dtype=torch.float32)

    @ct.kernel
    def double(x, y):
        ct.store(y, (ct.bid(0),), ct.load(x, (ct.bid(0),), (4,)) * 2)

    ct.launch(None, (2,), double, (a, out))
    assert out.tolist() == [2 * i for i in range(8)]


def test_import_does_not_load_numba():
    # The interpreter alone stays light.
    import subprocess
    import sys
    code = "import sys, cutile; assert 'numba' not in sys.modules, 'numba imported'"
    subprocess.run([sys.executable, "-c", code], check=True)

"""Random programs (spec_tests/diff/progen.py) that once failed on a GPU, kept as they were
generated, on both executors.  Each ran to agreement on the simulator when it was found.

- ``illegal_address_119`` (seed 23001 of ``progen --seed 23 --jobs 3 --profile gpu``, H200,
  2026-11-28): CUDA_ERROR_ILLEGAL_ADDRESS inside the generated kernel (with
  CUDA_LAUNCH_BLOCKING=1 the launch itself reported it), every later launch of the process then
  failing.  Not yet explained: its generated source checks every global index, and Numba's
  LLVM IR for it is the same with and without numba_speedups.py.  Open on the GPU (issue 22).
"""

from __future__ import annotations

import ml_dtypes  # noqa: F401
import numpy as np

import cutile as ct

from .progen import compare_launch


def h3(arr, blk, scale):
    t = ct.load(arr, (blk, 0), (4, 16), padding_mode=ct.PaddingMode.ZERO)
    return t, t * scale

@ct.kernel
def kern(TM: ct.Constant[int], TN: ct.Constant[int], x0, x4, t7, o9, o10, o11):
    b = ct.bid(0)
    u1 = x0.tiled_view((TM, TN), padding_mode=ct.PaddingMode.UNDETERMINED).load((b, 0))
    rows = (b * 4 + ct.arange(4, dtype=ct.int32))[:, None] < x0.shape[0]
    v2 = ct.where(rows & (ct.arange(16, dtype=ct.int32)[None, :] < x0.shape[1]), u1, 0)
    v5, v6 = h3(x4, b, 2)
    ct.atomic_add(t7, v6, v6.astype(ct.int32))
    v8 = ct.zeros((4, 1), ct.float32)
    ct.store(o9, (b, 0), v2)
    ct.store(o10, (b, 0), v5)
    ct.store(o11, (b, 0), v8)

def _arr(hexdata, dtype, shape):
    return np.frombuffer(bytes.fromhex(hexdata), dtype).reshape(shape).copy()


X0 = ('fcffffffffffffff0200000000000000aebcce0e392af8f101000000000000000500000000000000'
        '8731eab31101f81d020000000000000008000000000000000500000000000000fcffffffffffffff'
        '08000000000000000600000000000000fcffffffffffffff00000000000000000400000000000000'
        '2a652d1770747ca5feffffffffffffff79995a0e383a6a28feffffffffffffff0500000000000000'
        '04000000000000000600000000000000000000000000000007000000000000000200000000000000'
        'ffe56ff90eaec650')
X4 = ('02000000000000000000000000000000020000000000000001000000000000000700000000000000'
        '060000000000000006000000000000000000000000000000ffffffffffffffff9bfe848dd1696e12'
        '080b240db17e1ed1196b786f9ea6ecccbd554fa20a01726b02000000000000000400000000000000'
        'feffffffffffffff')
T7 = ('05000000020000000200000001000000060000000400000003000000070000000400000006000000'
        '02000000060000000100000005000000070000000600000005000000010000000700000005000000'
        '010000000500000001000000')
ARGS = (4, 16, _arr(X0, np.int64, (13, 2)), _arr(X4, np.int64, (16, 1)),
        _arr(T7, np.int32, (23,)), np.full((16, 2), 0x5C5C5C5C5C5C5C5C, np.int64),
        np.full((15, 3), 0x5C5C5C5C5C5C5C5C, np.int64), np.full((14, 1), np.nan, np.float32))


def test_illegal_address_119():
    bounds = {n: (0, True) for n in ("x0", "x4", "t7", "o9", "o10", "o11")}
    assert compare_launch(kern, (4,), ARGS, bounds) == "agree"


@ct.kernel
def branch_u64(x, f, o, n: int, T: ct.Constant[int]):
    if n == 0:
        r = ct.load(x, (0,), (T,))
    else:
        r = ct.load(f, (0,), (T,)).astype(ct.uint64)
    ct.store(o, (0,), r)


def test_uint64_from_a_float_in_one_branch():
    """Random programs 41005/41009 (``progen --seed 41 --jobs 10 --profile gpu``, H200): a
    variable that is a loaded uint64 in one branch and a float -> uint64 conversion in the
    other came back rounded through float64 (Numba unified libdevice's int64 result with
    uint64 into float64)."""
    x = np.array([0xdffeaa36d89136ab, 2**64 - 3] + [5] * 14, np.uint64)
    f = np.full(16, 1.5e19, np.float32)
    for n in (0, 1):
        bounds = {k: (0, True) for k in ("x", "f", "o")}
        assert compare_launch(branch_u64, (1,), (x, f, np.zeros(16, np.uint64), n, 16),
                              bounds) == "agree"

"""Random programs (spec_tests/diff/progen.py) that once failed on a GPU, kept as they were
generated, on both executors.  Each ran to agreement on the simulator when it was found.

- ``illegal_address_119`` (seed 23001 of ``progen --seed 23 --jobs 3 --profile gpu``, H200,
  2026-11-28): CUDA_ERROR_ILLEGAL_ADDRESS inside the generated kernel (with
  CUDA_LAUNCH_BLOCKING=1 the launch itself reported it), every later launch of the process then
  failing.  Not yet explained: its generated source checks every global index, and Numba's
  LLVM IR for it is the same with and without numba_speedups.py.  Open on the GPU (issue 22).
- ``where_zero_sign`` and ``bf16_fma_tie`` (the gpu profile of the differential suite, H200,
  2026-11-29): below.
"""

from __future__ import annotations

import ml_dtypes  # noqa: F401
import numpy as np

import cutile as ct

from .harness import assert_same, run_both
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


@ct.kernel
def where_zero(x0, C6: ct.Constant[int], o9, o10):
    b = ct.bid(0)
    v1 = ct.load(x0, (b, 0), (4, 8), padding_mode=ct.PaddingMode.ZERO)
    ct.store(o9, (b, 0), ct.where(v1 < 0, v1, C6))
    ct.store(o10, (b, 0), ct.where(v1 > -0.0, v1, -0.0))


def test_where_zero_sign():
    """R-SEL-1: ``where(x < 0, x, 0)`` of x = -0.0 is the constant, +0.0 (program 10 of the
    gpu profile's ``test_random_programs_agree``: -0.0 on the H200).  NVVM rewrote the select
    into ``min.f32(x, 0)``, which returns -0.0; float selects are now inline ``selp``
    (exprs.select_value).  The mirror case: ``where(x > -0.0, x, -0.0)`` of +0.0 is -0.0
    (``max.f32`` gives +0.0)."""
    x = np.array([[-0.0, 0.0, -1.5, 2.0] * 2] * 8, np.float32)
    o9, o10 = np.full((8, 8), np.nan, np.float32), np.full((8, 8), np.nan, np.float32)
    ref, got = run_both(where_zero, (2,), [x, 0, o9, o10])
    assert np.signbit(ref[1][0, :2]).tolist() == [False, False]         # the oracle's answer
    assert np.signbit(ref[2][0, :2]).tolist() == [True, True]
    for r, g in zip(ref[1:], got[1:]):
        assert_same(r, g, signed_zero=True)


@ct.kernel
def bf16_fma(a0, a1, out, T0: ct.Constant[int], T1: ct.Constant[int]):
    x0 = ct.load(a0, (ct.bid(0), 0), (T0, T1), padding_mode=ct.PaddingMode.ZERO)
    x1 = ct.load(a1, (ct.bid(0), 0), (T0, T1), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, (ct.bid(0), 0), x0 * x1 + x1)


def test_bf16_fma_tie():
    """R-FMA-2: ``x0 * x1 + x1`` on bfloat16 is one fused multiply-add, one rounding (example
    of ``test_elementwise_chains[0]``, gpu profile: one element 1 ulp off, on the simulator
    too).  8.1704e28 * -26 lies exactly half-way between two bfloat16 values; the -26 added
    decides the rounding (away from the even neighbour).  The backend rounded to odd in
    float32 from RZ and RU, which agree for every negative result, so the tie stayed a tie;
    it now tests exactness with RD and RU.  Also: exact zero sums keep round-to-nearest's
    sign (+0 for -1 * 5 + 5, where rounding down gives -0)."""
    bf = ml_dtypes.bfloat16
    a0 = np.array([[8.1704e28, -8.1704e28, -1.0, 3.0, 0.5, 1e-30, -2.0, 1.5]] * 4, bf)
    a1 = np.array([[-26, -26, 5, 1, -128, 127, 3, -7]] * 4, np.int8)
    out = np.full((4, 8), np.nan, bf)
    ref, got = run_both(bf16_fma, (1,), [a0, a1, out, 4, 8])
    # the exact results' correct roundings: the tie broken by the addend, and +0
    assert ref[2][0, :3].astype(np.float64).tolist() == [-2.129256867570854e+30,
                                                         2.119353347256571e+30, 0.0]
    assert not np.signbit(ref[2][0, 2])
    assert_same(ref[2], got[2], signed_zero=True)

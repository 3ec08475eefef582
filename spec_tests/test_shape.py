"""Shape manipulation through whole kernels (§12 R-SHAPE-1..10, §12.2 R-BITCAST-1..3) and tile
subscripts, attributes and methods (R-TILE-3, R-TILE-4)."""

from __future__ import annotations

import numpy as np
import pytest
from spec_executor import interp_only_ub  # noqa: E402
from tile_harness import make1, run  # noqa: E402

import cutile as ct


def fails(fn, x, match):
    with pytest.raises(ct.TileTypeError, match=match):
        k = make1(fn, x.shape, ())
        ct.launch(None, (1,), k, (x, np.zeros(1, x.dtype), np.zeros(1, np.int32)))


A8 = np.arange(8, dtype=np.int32)
A24 = np.arange(2 * 4 * 8, dtype=np.int32).reshape(2, 4, 8)


# -- R-SHAPE-1 reshape -------------------------------------------------------------------------
def test_reshape_row_major():  # R-SHAPE-1
    def f(t):
        return ct.reshape(t, (2, 4))

    def m(t):
        return t.reshape((4, 2))

    def infer(t):
        return ct.reshape(t, (-1, 2))

    def infer_mid(t):
        return t.reshape(shape=(2, -1, 2))

    np.testing.assert_array_equal(run(f, A8, (2, 4)), [[0, 1, 2, 3], [4, 5, 6, 7]])
    np.testing.assert_array_equal(run(m, A8, (4, 2)), A8.reshape(4, 2))
    np.testing.assert_array_equal(run(infer, A8, (4, 2)), A8.reshape(4, 2))
    np.testing.assert_array_equal(run(infer_mid, A8, (2, 2, 2)), A8.reshape(2, 2, 2))
    x = A24.astype(np.float32)

    def g(t):
        return ct.reshape(t, (8, 8))

    np.testing.assert_array_equal(run(g, x, (8, 8)), x.reshape(8, 8))


def test_reshape_errors():  # R-SHAPE-1
    x = np.zeros(2, np.int32)

    def bare_int(t):
        return ct.reshape(t, 2)

    def two_minus_one(t):
        return ct.reshape(t, (-1, -1))

    def to_scalar(t):
        return ct.reshape(t, ())

    def below_minus_one(t):
        return ct.reshape(t, (-2, -1))

    def count(t):
        return ct.reshape(t, (4,))

    def runtime(t):
        return ct.reshape(t, (ct.bid(0), 2))

    fails(bare_int, x, "Expected a tuple")
    fails(two_minus_one, x, "Only one dimension can be -1")
    fails(to_scalar, x, r"Cannot reshape \(2,\) to \(\)")
    fails(below_minus_one, x, "Invalid dimension")
    fails(count, x, r"Cannot reshape \(2,\) to \(4,\)")
    fails(runtime, x, "constant")


def test_reshape_to_and_from_scalar():  # R-SHAPE-1, R-TILE-2
    def f(t):
        return ct.reshape(ct.reshape(t, ()), (1, 1))

    np.testing.assert_array_equal(run(f, np.array([7], np.int16), (1, 1)), [[7]])


# -- R-SHAPE-2 broadcast_to --------------------------------------------------------------------
def test_broadcast_to():  # R-SHAPE-2, R-BCAST-1
    x = np.array([[1, 2, 3, 4]], np.int32)

    def rows(t):
        return ct.broadcast_to(t, (2, 4))

    def rank_up(t):
        return ct.broadcast_to(t, (2, 2, 4))

    def col(t):
        return ct.broadcast_to(ct.reshape(t, (4, 1)), (4, 8))

    np.testing.assert_array_equal(run(rows, x, (2, 4)), np.broadcast_to(x, (2, 4)))
    np.testing.assert_array_equal(run(rank_up, x, (2, 2, 4)), np.broadcast_to(x, (2, 2, 4)))
    np.testing.assert_array_equal(run(col, x, (4, 8)), np.broadcast_to(x.reshape(4, 1), (4, 8)))


def test_broadcast_to_errors():  # R-SHAPE-2
    x = np.zeros((2, 4), np.int32)

    def reduce_rank(t):
        return ct.broadcast_to(t, (4,))

    def incompatible(t):
        return ct.broadcast_to(t, (4, 4))

    def not_pow2(t):
        return ct.broadcast_to(ct.reshape(t, (8, 1)), (8, 3))

    fails(reduce_rank, x, "is not broadcastable to")
    fails(incompatible, x, "is not broadcastable to")
    fails(not_pow2, x, "is not a power of two")


# -- R-SHAPE-3 expand_dims ---------------------------------------------------------------------
@pytest.mark.parametrize("axis, shape", [(0, (1, 4)), (1, (4, 1)), (-1, (4, 1)), (-2, (1, 4))])
def test_expand_dims(axis, shape):  # R-SHAPE-3
    x = np.arange(4, dtype=np.int32)

    def f(t):
        return ct.expand_dims(t, axis)

    np.testing.assert_array_equal(run(f, x, shape), np.expand_dims(x, axis))


def test_expand_dims_errors():  # R-SHAPE-3
    x = np.zeros(4, np.int32)

    def too_far(t):
        return ct.expand_dims(t, 2)

    def too_neg(t):
        return ct.expand_dims(t, -3)

    def runtime(t):
        return ct.expand_dims(t, ct.bid(0))

    fails(too_far, x, "out of range")
    fails(too_neg, x, "out of range")
    fails(runtime, x, "integer constant")


# -- R-SHAPE-4 permute -------------------------------------------------------------------------
def test_permute_seed_example():  # R-SHAPE-4
    def f(t):
        return ct.permute(ct.reshape(t, (2, 2, 2)), (2, 0, 1))

    got = run(f, A8, (2, 2, 2))
    np.testing.assert_array_equal(got, [[[0, 2], [4, 6]], [[1, 3], [5, 7]]])


@pytest.mark.parametrize("axes", [(0, 1, 2), (2, 0, 1), (1, 2, 0), (2, 1, 0), (-1, 0, -2),
                                  (0, 2, 1)])
def test_permute_matches_numpy(axes):  # R-SHAPE-4
    def f(t):
        return ct.permute(t, axes)

    def m(t):
        return t.permute(axes)

    exp = np.transpose(A24, axes)
    np.testing.assert_array_equal(run(f, A24, exp.shape), exp)
    np.testing.assert_array_equal(run(m, A24, exp.shape), exp)


def test_permute_errors():  # R-SHAPE-4
    def short(t):
        return ct.permute(t, (1, 0))

    def repeated(t):
        return ct.permute(t, (0, 1, 1))

    def repeated_neg(t):
        return ct.permute(t, (0, 2, -1))

    def not_tuple(t):
        return ct.permute(t, 0)

    fails(short, A24, "Num axes must match input's rank")
    fails(repeated, A24, "Repeated axis")
    fails(repeated_neg, A24, "Repeated axis")
    fails(not_tuple, A24, "tuple")


# -- R-SHAPE-5 transpose -----------------------------------------------------------------------
def test_transpose_2d_seed():  # R-SHAPE-5
    x = A8.reshape(2, 4)

    def f(t):
        return ct.transpose(t)

    def m(t):
        return t.transpose()

    np.testing.assert_array_equal(run(f, x, (4, 2)), x.T)
    np.testing.assert_array_equal(run(m, x, (4, 2)), x.T)


@pytest.mark.parametrize("a0, a1", [(0, 2), (2, 0), (1, -1), (-3, 1), (1, 1)])
def test_transpose_axes(a0, a1):  # R-SHAPE-5
    def f(t):
        return ct.transpose(t, a0, a1)

    def m(t):
        return t.transpose(axis0=a0, axis1=a1)

    exp = np.swapaxes(A24, a0, a1)
    np.testing.assert_array_equal(run(f, A24, exp.shape), exp)
    np.testing.assert_array_equal(run(m, A24, exp.shape), exp)


def test_transpose_errors():  # R-SHAPE-5
    def one_d(t):
        return ct.transpose(t)

    def three_d(t):
        return ct.transpose(t)

    def one_none(t):
        return ct.transpose(t, 0)

    def other_none(t):
        return ct.transpose(t, axis1=1)

    fails(one_d, A8, "Cannot transpose a tile with fewer than 2 dimensions")
    fails(three_d, A24, "`axes` must be specified for tile with more than 2 dimensions")
    fails(one_none, A24, "transpose axes must either both be specified or both be None")
    fails(other_none, A24, "transpose axes must either both be specified or both be None")


# -- R-TILE-3 subscripts -----------------------------------------------------------------------
def test_newaxis_subscripts():  # R-TILE-3
    x = np.arange(4, dtype=np.int32)
    x2 = A8.reshape(2, 4)

    def col(t):
        return t[:, None]

    def row(t):
        return t[None]

    def trail(t):
        return t[..., None]

    def lead(t):
        return t[None, ...]

    def mid(t):
        return t[:, None, :]

    def sandwich(t):
        return t[None, :, None]

    def noop(t):
        return t[..., :]

    np.testing.assert_array_equal(run(col, x, (4, 1)), x[:, None])
    np.testing.assert_array_equal(run(row, x, (1, 4)), x[None])
    np.testing.assert_array_equal(run(trail, x2, (2, 4, 1)), x2[..., None])
    np.testing.assert_array_equal(run(lead, x2, (1, 2, 4)), x2[None, ...])
    np.testing.assert_array_equal(run(mid, x2, (2, 1, 4)), x2[:, None, :])
    np.testing.assert_array_equal(run(sandwich, x, (1, 4, 1)), x[None, :, None])
    np.testing.assert_array_equal(run(noop, x2, (2, 4)), x2)


def test_newaxis_broadcasting_outer_product():  # R-TILE-3, R-BCAST-1
    x = np.arange(4, dtype=np.int32)

    def outer(t):
        return t[:, None] * t[None, :]

    np.testing.assert_array_equal(run(outer, x, (4, 4)), np.outer(x, x))


def test_subscript_errors():  # R-TILE-3
    x = A8.reshape(2, 4)

    def element(t):
        return t[0]

    def sliced(t):
        return t[0:1]

    def runtime(t):
        return t[ct.bid(0)]

    def too_many(t):
        return t[:, :, :]

    def two_ellipses(t):
        return t[..., None, ...]

    def bare_slice(t):           # 1.7: a key that is not a tuple may only be None
        return t[:]

    def bare_ellipsis(t):
        return t[...]

    for f in (element, sliced, runtime, bare_slice, bare_ellipsis):
        fails(f, x, "Directly indexing a tile is not supported")
    fails(too_many, x, "Too many indices")
    fails(two_ellipses, x, "ellipsis")


def test_tiles_are_immutable():  # R-TILE-3
    x = np.zeros(4, np.int32)

    @ct.kernel
    def k(X):
        t = ct.load(X, index=(0,), shape=(4,))
        t[0] = 1
        ct.store(X, index=(0,), tile=t)

    with pytest.raises(ct.TileTypeError,
                       match="Tiles are immutable: item assignment is not supported"):
        ct.launch(None, (1,), k, (x,))


# -- R-TILE-4 attributes and methods -----------------------------------------------------------
def test_item():  # R-TILE-4
    def f(t):
        return ct.reshape(t, (1, 1)).item()

    def bad(t):
        return t.item()

    assert run(f, np.array([9], np.int8), ()) == 9
    fails(bad, np.zeros(2, np.int32), "Cannot reshape")


def test_attributes_are_constants():  # R-TILE-4
    x = A24.astype(np.int16)

    def f(t):
        # shape, dtype and ndim are compile-time constants usable as shapes and dtypes
        s = t.shape
        return ct.full((s[2], s[0]), t.ndim * 10 + len(s), dtype=t.dtype)

    np.testing.assert_array_equal(run(f, x, (8, 2)), np.full((8, 2), 33, np.int16))

    def g(t):
        if t.dtype == ct.int16 and t.ndim == 3 and t.shape == (2, 4, 8):
            return ct.full((1,), 1, dtype=ct.int32)
        return ct.full((1,), 0, dtype=ct.int32)

    assert run(g, x, (1,), np.int32)[0] == 1


def test_methods_reshape_astype_chain():  # R-TILE-4
    def f(t):
        return t.reshape((2, 4)).transpose().astype(ct.float32)

    np.testing.assert_array_equal(run(f, A8, (4, 2), np.float32),
                                  A8.reshape(2, 4).T.astype(np.float32))

    def kw(t):  # keyword forms of the methods' parameters
        return t.reshape(shape=(2, 2, 2)).permute(axes=(2, 1, 0)).astype(dtype=ct.int16)

    np.testing.assert_array_equal(run(kw, A8, (2, 2, 2), np.int16),
                                  A8.reshape(2, 2, 2).transpose(2, 1, 0))


def test_array_slice_method_keywords():  # §7 R-ARR-1 through methods.call_method
    @ct.kernel
    def k(X, Y):
        v = X.slice(axis=0, start=1, stop=3)
        ct.store(Y, index=(0, 0), tile=ct.load(v, index=(0, 0), shape=(2, 4)))

    x = np.arange(16, dtype=np.int32).reshape(4, 4)
    y = np.zeros((2, 4), np.int32)
    ct.launch(None, (1,), k, (x, y))
    np.testing.assert_array_equal(y, x[1:3])


def test_poison_moves_with_shape_ops():  # shape ops keep data and poison mask aligned
    from cutile.interp.core import PTile
    from cutile.interp.rules import shape as ishape
    from cutile.ir import ops  # noqa: F401  (rules are registered on import)

    class Op:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    data = np.arange(8).reshape(2, 4)
    poison = data % 3 == 0
    frame = {"x": PTile(data, poison)}
    r = ishape.permute(frame, Op(x="x", axes=(1, 0)))
    np.testing.assert_array_equal(r.poison, poison.T)
    r = ishape.reshape(frame, Op(x="x", shape=(4, 2)))
    np.testing.assert_array_equal(r.poison, poison.reshape(4, 2))
    r = ishape.broadcast(frame, Op(x="x", shape=(3, 2, 4)))
    np.testing.assert_array_equal(r.poison, np.broadcast_to(poison, (3, 2, 4)))


# -- R-SHAPE-6 cat --------------------------------------------------------------------------------
def test_cat_spec_example():  # R-SHAPE-6
    x = np.full((2, 2), 3, np.int32)

    def ax0(t):
        return ct.cat((t, t + 4), 0)

    def ax1(t):
        return ct.cat((t, t + 4), axis=-1)

    def one(t):
        return ct.cat((t,), 0)

    np.testing.assert_array_equal(run(ax0, x, (4, 2)), [[3, 3], [3, 3], [7, 7], [7, 7]])
    np.testing.assert_array_equal(run(ax1, x, (2, 4)), [[3, 3, 7, 7], [3, 3, 7, 7]])
    np.testing.assert_array_equal(run(one, x, (2, 2)), x)


def test_cat_errors():  # R-SHAPE-6
    x = np.zeros((2, 2), np.int32)
    fails(lambda t: ct.cat((), 0), x, "empty tuple")
    fails(lambda t: ct.cat((t, t, t), 0), x, "at most 2 tiles")
    fails(lambda t: ct.cat((t, t.astype(ct.float32)), 0), x, "same dtype")
    fails(lambda t: ct.cat((t, ct.reshape(t, (4,))), 0), x, "same rank")
    fails(lambda t: ct.cat((t, ct.zeros((2, 4), ct.int32)), 0),
          x, "Expected tiles to have the same shape for non axis dimensions")
    fails(lambda t: ct.cat((t, ct.zeros((4, 2), ct.int32)), 0), x, "power of 2")


# -- R-SHAPE-7..10 extract / insert ---------------------------------------------------------------
def test_extract_cells_not_offsets():  # R-SHAPE-7
    x = np.arange(32, dtype=np.int32).reshape(4, 8)

    def f(t):
        return ct.extract(t, (1, 2), (2, 2))

    def method(t):
        return t.extract(index=(3, 0), shape=(1, 8))

    def one_d(t):
        return ct.extract(ct.reshape(t, (32,)), 3, 8)

    def element(t):
        return ct.extract(t, (2, 5), ())

    np.testing.assert_array_equal(run(f, x, (2, 2)), x[2:4, 4:6])
    np.testing.assert_array_equal(run(method, x, (1, 8)), x[3:4, :])
    np.testing.assert_array_equal(run(one_d, x, (8,)), np.arange(24, 32))
    np.testing.assert_array_equal(run(element, x, ()), x[2, 5])


def test_extract_runtime_index():  # R-SHAPE-7 (runtime cell index)
    x = np.arange(16, dtype=np.float32)

    def f(t):
        i = ct.astype(ct.extract(t, (3,), ()), ct.int32) // 4     # 3 // 4 == 0 at run time
        return ct.extract(t, (i + 1,), (4,))

    np.testing.assert_array_equal(run(f, x, (4,)), x[4:8])


def test_insert_copy_and_round_trip():  # R-SHAPE-8
    x = np.arange(16, dtype=np.int16).reshape(4, 4)

    def f(t):
        v = ct.full((2, 2), -1, ct.int16)
        y = t.insert((1, 0), v)
        return ct.extract(y, (1, 0), (2, 2)) * 10 + ct.extract(t, (1, 0), (2, 2))

    def g(t):
        return ct.insert(t, (3, 1), ct.int16(7))

    exp = np.full((2, 2), -10, np.int16) + x[2:4, 0:2]
    np.testing.assert_array_equal(run(f, x, (2, 2)), exp)
    e2 = x.copy()
    e2[3, 1] = 7
    np.testing.assert_array_equal(run(g, x, (4, 4)), e2)


def test_extract_insert_errors():  # R-SHAPE-7, R-SHAPE-8, R-SHAPE-9
    x = np.zeros((4, 8), np.int32)
    fails(lambda t: ct.extract(t, (0, 0), (3, 8)), x, "not divisible by")
    fails(lambda t: ct.extract(t, (0,), (2, 8)), x, "Index size 1 does not match the tile rank 2")
    fails(lambda t: ct.extract(t, (2, 0), (2, 8)), x, "out of bounds")
    fails(lambda t: ct.insert(t, (0, 0), ct.zeros((2, 2), ct.int16)), x, "Cannot insert a tile "
          "of dtype")
    fails(lambda t: ct.insert(t, (0, 0), ct.zeros((2,), ct.int32)), x, "does not match the tile "
          "rank")
    fails(lambda t: ct.insert(t, (0, 0), ct.zeros((4, 4, 1), ct.int32)), x, "does not match")


@interp_only_ub
def test_runtime_index_outside_grid_is_ub():  # R-SHAPE-10
    x = np.arange(8, dtype=np.int32)

    def f(t):
        return ct.extract(t, (ct.extract(t, (7,), ()),), (4,))    # cell 7 of 2

    with pytest.raises(ct.UndefinedBehaviorError, match="outside the 2 cells"):
        run(f, x, (4,))


# -- R-BITCAST-1..3 -------------------------------------------------------------------------------
def test_bitcast_spec_example_and_dtypes():  # R-BITCAST-1
    x = np.array([1.0, -2.5, np.inf, 0.0], np.float32)

    def f(t):
        return ct.bitcast(t, ct.uint32)

    def back(t):
        return ct.bitcast(ct.bitcast(t, ct.int32), ct.float32)

    np.testing.assert_array_equal(run(f, x, (4,), np.uint32), x.view(np.uint32))
    assert run(f, x, (4,), np.uint32)[0] == 0x3F800000
    np.testing.assert_array_equal(run(back, x, (4,)), x)


@pytest.mark.parametrize("src,dst", [(np.float16, "bfloat16"), (np.int8, "float8_e4m3fn"),
                                     (np.float64, "uint64"), (np.int16, "float16")])
def test_bitcast_equal_width_pairs(src, dst):  # R-BITCAST-1
    import ml_dtypes
    rng = np.random.default_rng(5)
    raw = rng.integers(0, 2 ** 8, 8 * np.dtype(src).itemsize, dtype=np.uint8)
    x = raw.view(src)
    if np.issubdtype(src, np.floating):
        x = np.where(np.isnan(x), src(1), x).astype(src)
    dnp = np.dtype(getattr(ml_dtypes, dst, None) or dst)
    target = getattr(ct, dst)

    def f(t):
        return ct.bitcast(t, target)

    got = run(f, x, (8,), dnp)
    np.testing.assert_array_equal(got.view(np.uint8), x.view(np.uint8))


def test_bitcast_errors():  # R-BITCAST-1
    x = np.zeros(4, np.int32)
    fails(lambda t: ct.bitcast(t, ct.int16), x, "bit width is different")
    fails(lambda t: ct.bitcast(t > 0, ct.uint8), x, "bitcast to or from bool")


def test_pack_and_unpack_spec_examples():  # R-BITCAST-2, R-BITCAST-3
    x = np.array([0x04030201, -1], np.int32)

    def pack(t):
        return ct.pack_to_bytes(t)

    def unpack(t):
        return ct.unpack_from_bytes(ct.arange(8, dtype=ct.uint8) + 1, ct.int32)

    def two_d(t):
        return ct.pack_to_bytes(ct.reshape(t.astype(ct.int16), (2, 1)))

    np.testing.assert_array_equal(run(pack, x, (8,), np.uint8), x.view(np.uint8))
    assert list(run(pack, x, (8,), np.uint8)[:4]) == [1, 2, 3, 4]
    np.testing.assert_array_equal(run(unpack, x, (2,)), [0x04030201, 0x08070605])
    np.testing.assert_array_equal(run(two_d, x, (4,), np.uint8),
                                  x.astype(np.int16).view(np.uint8))


def test_pack_float4_low_nibble_first():  # R-BITCAST-3 (cutile: element 2k in the low nibble)
    x = np.array([0.5, -6.0, 1.0, 0.0], np.float32)

    def f(t):
        return ct.pack_to_bytes(t.astype(ct.float4_e2m1fn))

    np.testing.assert_array_equal(run(f, x, (2,), np.uint8), [0x1 | 0xF << 4, 0x2])


def test_pack_unpack_errors():  # R-BITCAST-2, R-BITCAST-3
    x = np.zeros(4, np.uint8)
    fails(lambda t: ct.pack_to_bytes(t > 0), x, "from a bool_ tile")
    fails(lambda t: ct.unpack_from_bytes(ct.reshape(t, (2, 2)), ct.int8), x, "requires a 1D tile")
    fails(lambda t: ct.unpack_from_bytes(t.astype(ct.int8), ct.int8), x, "requires uint8 tile")
    fails(lambda t: ct.unpack_from_bytes(ct.extract(t, (0,), (2,)), ct.int32), x,
          "not divisible by 32")

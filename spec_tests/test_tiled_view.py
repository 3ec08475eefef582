"""Tiled views (spec §8, R-VIEW-1..6): properties, load/store, traversal steps, num_tiles,
store broadcasting and casts, argument errors."""

from __future__ import annotations

import re

import numpy as np
import pytest

import cutile as ct

P = ct.PaddingMode


def make_kernel(body):
    @ct.kernel
    def k(x2, x1, o1):
        body(x2, x1, o1)
    return k


def launch_case(body, x2=None, x1=None, o1=None):
    x2 = np.zeros((8, 8), np.float32) if x2 is None else x2
    x1 = np.zeros(16, np.int32) if x1 is None else x1
    o1 = np.zeros(16, np.int32) if o1 is None else o1
    ct.launch(None, (1,), make_kernel(body), (x2, x1, o1))


# -- properties (R-VIEW-3) -----------------------------------------------------------------------
def p_properties(x2, x1, o1):
    v = x2.tiled_view((2, 4))
    w = x1.tiled_view(4, traversal_steps=3)
    z = x2.tiled_view(())
    # Properties are compile-time constants: they can build constant tile shapes.
    a = ct.zeros(v.tile_shape, ct.int32)
    b = ct.zeros(w.tile_shape, ct.int32)
    c = ct.zeros(z.tile_shape, ct.int32)
    d = ct.zeros((v.traversal_steps[0], v.traversal_steps[1], z.traversal_steps[0]), ct.int32)
    ct.store(o1, (0,), a.shape[0] * 10 + a.shape[1])        # (2, 4)
    ct.store(o1, (1,), b.ndim * 10 + b.shape[0])            # (4,)
    ct.store(o1, (2,), c.ndim)                               # ()
    ct.store(o1, (3,), d.shape[0] * 100 + d.shape[1] * 10 + d.shape[2])  # steps (2,4), (1,)
    ct.store(o1, (4,), w.traversal_steps[0] * 10 + len(w.traversal_steps))
    ct.store(o1, (5,), len(z.traversal_steps) * 10 + z.traversal_steps[1])
    ct.store(o1, (6,), (v.dtype == ct.float32) + 2 * (w.dtype == ct.int32))


def test_view_properties():
    # R-VIEW-3: tile_shape as given (int -> 1-tuple, () stays ()); traversal_steps default to
    # the tile shape, (1,)*ndim for (); dtype is the array's.
    o = np.full(16, -1, np.int32)
    launch_case(p_properties, o1=o)
    np.testing.assert_array_equal(o[:7], [24, 14, 0, 241, 31, 21, 3])


def p_num_tiles(x2, x1, o1):
    ct.store(o1, (0,), x2.tiled_view((4, 2)).num_tiles(0))
    ct.store(o1, (1,), x2.tiled_view((4, 2)).num_tiles(-1))
    ct.store(o1, (2,), x1.tiled_view(4, traversal_steps=2).num_tiles(0))
    ct.store(o1, (3,), x1.tiled_view(4, traversal_steps=8).num_tiles(0))
    ct.store(o1, (4,), x1.tiled_view(4, traversal_steps=5).num_tiles(0))
    ct.store(o1, (5,), x1.tiled_view(()).num_tiles(0))
    ct.store(o1, (6,), x2.tiled_view((), traversal_steps=(2, 3)).num_tiles(1))
    ct.store(o1, (7,), x1.tiled_view(4).num_tiles(0).dtype == ct.int32)


def test_view_num_tiles():
    # R-VIEW-4: cdiv(shape[axis], steps[axis]) as runtime int32.
    x2 = np.zeros((10, 7), np.float32)
    x1 = np.zeros(16, np.int32)
    o = np.zeros(16, np.int32)
    launch_case(p_num_tiles, x2=x2, x1=x1, o1=o)
    np.testing.assert_array_equal(o[:8], [3, 4, 8, 2, 4, 16, 3, 1])


# -- load / store --------------------------------------------------------------------------------
@ct.kernel
def view_copy_2d(x, y, n, TM: ct.Constant[int], TN: ct.Constant[int]):
    bm, bn = ct.bid(0), ct.bid(1)
    tv_x = x.tiled_view((TM, TN), padding_mode=ct.PaddingMode.ZERO)
    tv_y = y.tiled_view((TM, TN))
    tv_y.store((bm, bn), tv_x.load((bm, bn)))
    tv_n = n.tiled_view(())
    if bm == 0 and bn == 0:
        tv_n.store(0, tv_x.num_tiles(0))
        tv_n.store(1, tv_x.num_tiles(1))


@pytest.mark.parametrize("shape,tile", [((128, 256), (64, 64)), ((19, 13), (8, 4)),
                                        ((5, 3), (8, 8))])
@pytest.mark.parametrize("noncontiguous", [False, True])
def test_view_copy_2d(shape, tile, noncontiguous):
    # R-VIEW-5/6 with partial edge tiles (ZERO padded load, discarded OOB store lanes).
    base = np.arange(4 * shape[0] * shape[1], dtype=np.float32).reshape(2 * shape[0], -1)
    x = base[::2, ::2] if noncontiguous else np.ascontiguousarray(base[::2, ::2])
    assert x.shape == shape
    y = np.zeros(shape, np.float32)
    n = np.zeros(2, np.int32)
    grid = (ct.cdiv(shape[0], tile[0]), ct.cdiv(shape[1], tile[1]))
    ct.launch(None, grid, view_copy_2d, (x, y, n, *tile))
    np.testing.assert_array_equal(y, x)
    np.testing.assert_array_equal(n, grid)


@ct.kernel
def view_0d(x, out, SH: ct.Constant[int], SW: ct.Constant[int], NH: ct.Constant[int],
            NW: ct.Constant[int]):
    tv = x.tiled_view((), traversal_steps=(SH, SW))
    out_tv = out.tiled_view(())
    for i in range(NH):
        for j in range(NW):
            t = tv.load((i, j))
            out_tv.store(i * NW + j, t + t.ndim)


@pytest.mark.parametrize("steps", [(1, 1), (2, 3)])
def test_view_0d_tiles_with_steps(steps):
    # R-VIEW-1/2/5: tile_shape () gives 0-D results; steps select elements x[i*sh, j*sw].
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    nh, nw = 4 // steps[0], 6 // steps[1]
    out = np.zeros(nh * nw, np.float32)
    ct.launch(None, (1,), view_0d, (x, out, *steps, nh, nw))
    np.testing.assert_array_equal(out, x[::steps[0], ::steps[1]].ravel())


@ct.kernel
def conv_box(x, out, KH: ct.Constant[int], KW: ct.Constant[int], OH: ct.Constant[int],
             OW: ct.Constant[int]):
    tv = x.tiled_view((KH, KW), traversal_steps=(1, 1))
    out_tv = out.tiled_view(())
    for i in range(OH):
        for j in range(OW):
            out_tv.store(i * OW + j, ct.sum(tv.load((i, j))))


def test_view_sliding_window_box_filter():
    # R-VIEW-2: steps smaller than the tile give overlapping windows.
    x = (np.arange(36).reshape(6, 6) * 7 % 10).astype(np.int32)
    out = np.zeros(25, np.int32)
    ct.launch(None, (1,), conv_box, (x, out, 2, 2, 5, 5))
    ref = np.array([[x[i:i + 2, j:j + 2].sum() for j in range(5)] for i in range(5)])
    np.testing.assert_array_equal(out, ref.ravel())


def _steps_copy(tile, step):
    @ct.kernel
    def k(x, out):
        tv = x.tiled_view(tile, padding_mode=ct.PaddingMode.ZERO, traversal_steps=step)
        tv_out = out.tiled_view(tile, traversal_steps=step)
        for i in range(tv.num_tiles(0)):
            tv_out.store(i, tv.load(i))
    return k


@pytest.mark.parametrize("tile,step,n", [(4, 2, 8), (4, 8, 16), (4, 3, 12), (4, 3, 13),
                                         (2, 5, 11)])
def test_view_steps_store_program_order(tile, step, n):
    # R-VIEW-2/6: overlapping stores land in program order; gaps are left untouched; the
    # last window's OOB lanes are discarded.
    x = np.arange(1, n + 1, dtype=np.int64)
    out = np.full(n, -1, np.int64)
    ct.launch(None, (1,), _steps_copy(tile, step), (x, out))
    ref = np.full(n, -1, np.int64)
    for start in range(0, n, step):
        ref[start:start + tile] = x[start:start + tile]
    np.testing.assert_array_equal(out, ref)


def _bcast_store(src_shape, dst_shape):
    @ct.kernel
    def k(x, y):
        tile = x.tiled_view(src_shape).load((0, 0))
        y.tiled_view(dst_shape).store((0, 0), tile)
    return k


@pytest.mark.parametrize("src,dst", [((), (16, 16)), ((1, 16), (8, 16)), ((16, 1), (16, 4)),
                                     ((1, 1), (4, 2))])
def test_view_store_broadcasts(src, dst):
    # R-VIEW-6: the stored tile is broadcast to the view's tile shape.
    x = np.arange(1, 1 + int(np.prod(src or (1, 1))), dtype=np.float32).reshape(src or (1, 1))
    y = np.zeros(dst, np.float32)
    ct.launch(None, (1,), _bcast_store(src, dst), (x, y))
    np.testing.assert_array_equal(y, np.broadcast_to(x, dst))


@ct.kernel
def view_store_scalars(x, y):
    vx = x.tiled_view(4)
    vx.store(1, 7)                                  # loose int broadcast, then cast to f32
    vx.store(2, ct.arange(4, dtype=ct.int16))       # i16 -> f32
    vx.store(3, ct.full((1,), 0.5, ct.float16))     # (1,) f16 broadcast to (4,), then cast
    vy = y.tiled_view(())
    vy.store(5, True)                               # bool -> i64 at element 5


def test_view_store_scalar_and_cast():
    # R-VIEW-6 broadcast then R-CAST implicit widening.
    x = np.zeros(16, np.float32)
    y = np.zeros(8, np.int64)
    ct.launch(None, (1,), view_store_scalars, (x, y))
    np.testing.assert_array_equal(x, [0] * 4 + [7] * 4 + [0, 1, 2, 3] + [0.5] * 4)
    np.testing.assert_array_equal(y, [0, 0, 0, 0, 0, 1, 0, 0])


@ct.kernel
def view_helpers(x, y, TILE: ct.Constant[int], USE_X: ct.Constant[bool]):
    def get_view(arr, t):
        return arr.tiled_view(t)

    def copy_tile(src, dst, i):
        dst.store(i, src.load(i))

    tv = get_view(x, TILE) if USE_X else y.tiled_view(TILE)
    out = y.tiled_view(TILE)
    for i in range(tv.num_tiles(0)):
        copy_tile(tv, out, i)


def test_view_through_helpers_and_branches():
    # R-VIEW-8: views pass through helper functions and compile-time branches.
    x = np.arange(32, dtype=np.float32)
    y = np.zeros(32, np.float32)
    ct.launch(None, (1,), view_helpers, (x, y, 8, True))
    np.testing.assert_array_equal(y, x)


@ct.kernel
def view_loop_carried(x, y, z, TILE: ct.Constant[int]):
    tv = x.tiled_view(TILE)
    tv_z = z.tiled_view(TILE)
    for i in range(tv_z.num_tiles(0)):
        tv_z.store(i, tv.load(0))
        tv = y.tiled_view(TILE)


def test_view_loop_carried():
    # R-VIEW-8: a view carried through a loop (same view type each iteration).
    x = np.arange(8, dtype=np.float32)
    y = -np.arange(8, dtype=np.float32)
    z = np.zeros(24, np.float32)
    ct.launch(None, (1,), view_loop_carried, (x, y, z, 8))
    np.testing.assert_array_equal(z, np.concatenate([x, y, y]))


# -- errors --------------------------------------------------------------------------------------
def e_rank(x2, x1, o1):
    x1.tiled_view((1, 2))


def e_rank_int_2d(x2, x1, o1):
    x2.tiled_view(4)


def e_shape_pow2(x2, x1, o1):
    x2.tiled_view((4, 6))


def e_shape_runtime(x2, x1, o1):
    x1.tiled_view((ct.bid(0),))


def e_steps_len(x2, x1, o1):
    x2.tiled_view((4, 4), traversal_steps=(2,))


def e_steps_len_0d(x2, x1, o1):
    x2.tiled_view((), traversal_steps=())


def e_steps_len_1d(x2, x1, o1):
    x1.tiled_view(4, traversal_steps=(2, 2))


def e_steps_zero(x2, x1, o1):
    x2.tiled_view((4, 4), traversal_steps=(4, 0))


def e_steps_negative(x2, x1, o1):
    x1.tiled_view(4, traversal_steps=-1)


def e_padding_none(x2, x1, o1):
    x2.tiled_view((4, 4), padding_mode=None)


def e_padding_float_on_int(x2, x1, o1):
    x1.tiled_view(4, padding_mode=ct.PaddingMode.NAN)


def e_load_index_size(x2, x1, o1):
    x2.tiled_view((2, 2)).load((0, 0, 0))


def e_load_index_unsigned(x2, x1, o1):
    x1.tiled_view(4).load(ct.uint32(1))


def e_load_latency(x2, x1, o1):
    x1.tiled_view(4).load(0, latency=0)


def e_load_check_bounds(x2, x1, o1):
    x1.tiled_view(4).load(0, check_bounds=None)


def e_store_shape(x2, x1, o1):
    x1.tiled_view(4).store(0, ct.zeros((8,), ct.int32))


def e_store_rank_high(x2, x1, o1):
    x1.tiled_view(4).store(0, ct.zeros((1, 4), ct.int32))


def e_store_cast(x2, x1, o1):
    x1.tiled_view(4).store(0, ct.zeros((4,), ct.float32))


def e_store_const_cast(x2, x1, o1):
    x1.tiled_view(4).store(0, 1.5)


def e_store_index_size(x2, x1, o1):
    x2.tiled_view((2, 2)).store((0,), 1.0)


def e_view_num_tiles_axis(x2, x1, o1):
    x2.tiled_view((2, 2)).num_tiles(2)


ERRORS = [
    (e_rank, ct.TileTypeError, "Expected shape length to be 1, got 2"),
    (e_rank_int_2d, ct.TileTypeError, "Expected shape length to be 2, got 1"),
    (e_shape_pow2, ct.TileTypeError, "is not a power of two"),
    (e_shape_runtime, ct.TileTypeError, "Expected a constant integer tuple"),
    (e_steps_len, ct.TileTypeError, "Expected traversal_steps length to be 2, got 1"),
    (e_steps_len_0d, ct.TileTypeError, "Expected traversal_steps length to be 2, got 0"),
    (e_steps_len_1d, ct.TileTypeError, "Expected traversal_steps length to be 1, got 2"),
    (e_steps_zero, ct.TileTypeError, "of traversal_steps (4, 0) is not positive"),
    (e_steps_negative, ct.TileTypeError, "of traversal_steps (-1,) is not positive"),
    (e_padding_none, ct.TileTypeError, "Expected PaddingMode"),
    (e_padding_float_on_int, ct.TileTypeError, "Padding mode NAN requires a float"),
    (e_load_index_size, ct.TileTypeError, "Index size 3 does not match the tiled view rank 2"),
    (e_load_index_unsigned, ct.TileTypeError, "Expected a tuple of signed integers"),
    (e_load_latency, ct.TileValueError, "Latency must be between 1 and 10"),
    (e_load_check_bounds, ct.TileTypeError, "check_bounds"),
    (e_store_shape, ct.TileTypeError,
     "Tile shape (8,) is not broadcastable to the tiled view's tile shape (4,)"),
    (e_store_rank_high, ct.TileTypeError, "is not broadcastable to the tiled view's tile shape"),
    (e_store_cast, ct.TileTypeError, "Stored tile is incompatible with tiled view's dtype"),
    (e_store_const_cast, ct.TileTypeError, "Stored tile is incompatible with tiled view's dtype"),
    (e_store_index_size, ct.TileTypeError, "Index size 1 does not match the tiled view rank 2"),
    (e_view_num_tiles_axis, ct.TileTypeError, "Axis 2 is out of range for rank 2"),
]


@pytest.mark.parametrize("body,exc,frag", ERRORS, ids=[e[0].__name__ for e in ERRORS])
def test_view_errors(body, exc, frag):
    with pytest.raises(exc, match=re.escape(frag)):
        launch_case(body)

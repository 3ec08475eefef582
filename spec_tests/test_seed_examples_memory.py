"""The memory examples of the seed note (seeds/000) and of spec §6-§9, as runnable kernels.

Every expected value is computed with NumPy in the test; rule ids are cited per test.
"""

from __future__ import annotations

import numpy as np

import cutile as ct

P = ct.PaddingMode


# -- seed 2.4.6.1.1: vec_add through tiled views ------------------------------------------------
@ct.kernel
def vec_add_view(a, b, c, TILE: ct.Constant[int]):
    a_view = a.tiled_view((TILE,))
    b_view = b.tiled_view((TILE,))
    c_view = c.tiled_view((TILE,))
    bid = ct.bid(0)
    a_tile = a_view.load((bid,))
    b_tile = b_view.load((bid,))
    c_view.store((bid,), a_tile + b_tile)  # store(index, tile)


def test_seed_vec_add_tiled_view():
    # R-VIEW-1/5/6: one 8-element tile per block over a 128-element array.
    a = np.arange(128, dtype=np.float32)
    b = np.linspace(-3, 3, 128).astype(np.float32)
    c = np.zeros(128, np.float32)
    ct.launch(None, (128 // 8,), vec_add_view, (a, b, c, 8))
    np.testing.assert_array_equal(c, a + b)


# -- seed 2.4.6.1.2: vec_add, one-call form ------------------------------------------------------
@ct.kernel
def vec_add_onecall(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    a_tile = ct.load(a, index=(bid,), shape=(TILE,))
    b_tile = ct.load(b, index=(bid,), shape=(TILE,))
    ct.store(c, index=(bid,), tile=a_tile + b_tile)


def test_seed_vec_add_one_call():
    # R-LOAD-2, R-STORE-1: same access pattern as the tiled view form.
    a = np.arange(128, dtype=np.float32)
    b = (a * 0.5).astype(np.float32)
    c1 = np.zeros(128, np.float32)
    c2 = np.zeros(128, np.float32)
    ct.launch(None, (16,), vec_add_onecall, (a, b, c1, 8))
    ct.launch(None, (16,), vec_add_view, (a, b, c2, 8))
    np.testing.assert_array_equal(c1, a + b)
    np.testing.assert_array_equal(c1, c2)


# -- seed 2.4.6.1.3: edge_safe -------------------------------------------------------------------
@ct.kernel
def edge_safe(arr_in, arr_out, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    tile = ct.load(arr_in, index=(bid,), shape=(TILE,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(arr_out, index=(bid,), tile=tile)


def test_seed_edge_safe():
    # R-LOAD-4 (ZERO padding of the partial last tile), R-STORE-3 (its OOB lanes discarded).
    x = np.arange(30, dtype=np.float32)
    buf = np.full(40, -1.0, np.float32)
    y = buf[:30]  # the 10 elements after the array are a guard band
    ct.launch(None, (ct.cdiv(30, 8),), edge_safe, (x, y, 8))
    np.testing.assert_array_equal(y, x)
    np.testing.assert_array_equal(buf[30:], np.full(10, -1.0, np.float32))


# -- seed 2.4.6.2: vec_add_gather ----------------------------------------------------------------
@ct.kernel
def vec_add_gather(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    indices = bid * TILE + ct.arange(TILE, dtype=ct.int32)
    a_tile = ct.gather(a, indices)
    b_tile = ct.gather(b, indices)
    ct.scatter(c, indices, a_tile + b_tile)


def test_seed_vec_add_gather_exact_and_ragged():
    # R-GS-2/3: in-bounds lanes are gathered, OOB lanes read padding 0 and scatter skips them.
    for n in (64, 61):
        a = np.arange(n, dtype=np.int32)
        b = (3 * a - 7).astype(np.int32)
        buf = np.full(n + 8, 12345, np.int32)
        c = buf[:n]
        ct.launch(None, (ct.cdiv(n, 8),), vec_add_gather, (a, b, c, 8))
        np.testing.assert_array_equal(c, a + b)
        np.testing.assert_array_equal(buf[n:], 12345)


# -- seed 2.4.7.1: tile_sum (grid (1,)) ----------------------------------------------------------
@ct.kernel
def tile_sum(arr, out, TILE: ct.Constant[int], N_TILES: ct.Constant[int]):
    acc = ct.zeros((TILE,), dtype=ct.float32)
    for k in range(N_TILES):
        tile = ct.load(arr, index=(k,), shape=(TILE,))
        acc = acc + tile
    ct.store(out, index=(0,), tile=acc)


def test_seed_tile_sum():
    # R-EXEC-3 loop in one block; the K tiles are summed lane-wise in program order.
    arr = np.random.default_rng(0).standard_normal(5 * 8).astype(np.float32)
    out = np.zeros(8, np.float32)
    ct.launch(None, (1,), tile_sum, (arr, out, 8, 5))
    ref = np.zeros(8, np.float32)
    for k in range(5):
        ref = (ref + arr[8 * k:8 * k + 8]).astype(np.float32)
    np.testing.assert_array_equal(out, ref)


# -- seed 2.4.7.2: conditional_load --------------------------------------------------------------
@ct.kernel
def conditional_load(arr, out, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    if bid < ct.num_blocks(0) - 1:  # every block but the last
        tile = ct.load(arr, index=(bid,), shape=(TILE,))
    else:
        tile = ct.zeros((TILE,), dtype=ct.float32)  # last block: zeros
    ct.store(out, index=(bid,), tile=tile)


def test_seed_conditional_load():
    # R-EXEC-3: a scalar condition picks one path per block; the last block stores zeros,
    # including over its partial tail (its OOB lanes are discarded, R-STORE-3).
    arr = np.arange(1, 30, dtype=np.float32)  # 29 elements: 4 blocks of 8, last is partial
    out = np.full(29, -5.0, np.float32)
    ct.launch(None, (4,), conditional_load, (arr, out, 8))
    ref = arr.copy()
    ref[24:] = 0
    np.testing.assert_array_equal(out, ref)


# -- §6 examples ---------------------------------------------------------------------------------
@ct.kernel
def load_2x4(a, out, I0: ct.Constant[int], I1: ct.Constant[int]):
    t = ct.load(a, (I0, I1), (2, 4))
    ct.store(out, (0, 0), t)


def test_space_1_seed_figure():
    # R-SPACE-1: array (10,16), tile (2,4): tile space (5,4); index (1,2) is rows 2-3, cols 8-11.
    a = np.arange(160, dtype=np.int32).reshape(10, 16)
    out = np.zeros((2, 4), np.int32)
    ct.launch(None, (1,), load_2x4, (a, out, 1, 2))
    np.testing.assert_array_equal(out, a[2:4, 8:12])


@ct.kernel
def space_shape(a, out):
    ct.store(out, (0,), ct.num_tiles(a, 0, (2, 4)))
    ct.store(out, (1,), ct.num_tiles(a, 1, (2, 4)))


def test_space_1_tile_space_shape():
    # R-SPACE-1 / R-SPACE-4: tile space of (10,16) with (2,4) tiles is (5,4).
    out = np.zeros(2, np.int32)
    ct.launch(None, (1,), space_shape, (np.zeros((10, 16), np.float32), out))
    np.testing.assert_array_equal(out, [5, 4])


@ct.kernel
def load_order_f(a, out):
    t = ct.load(a, (2, 0), (1, 4), order="F")
    ct.store(out, (0, 0), t)


@ct.kernel
def load_order_021(a, out):
    t = ct.load(a, (1, 0, 0), (1, 2, 2), order=(0, 2, 1))
    ct.store(out, (0, 0, 0), t)


def test_space_2_order_examples():
    # R-SPACE-2: load(a, idx, shp, order=P) == load(np.transpose(a, P), idx, shp).
    a = np.arange(16, dtype=np.int32).reshape(4, 4)
    out = np.zeros((1, 4), np.int32)
    ct.launch(None, (1,), load_order_f, (a, out))
    np.testing.assert_array_equal(out, [[2, 6, 10, 14]])
    np.testing.assert_array_equal(out, a.T[2:3, 0:4])
    b = np.arange(8, dtype=np.int32).reshape(2, 2, 2)
    out3 = np.zeros((1, 2, 2), np.int32)
    ct.launch(None, (1,), load_order_021, (b, out3))
    np.testing.assert_array_equal(out3, [[[4, 6], [5, 7]]])
    np.testing.assert_array_equal(out3, np.transpose(b, (0, 2, 1))[1:2])


@ct.kernel
def store_discard(x):
    ct.store(x, (0,), ct.ones((4,), dtype=ct.int32))
    ct.store(x, (1,), 2 * ct.ones((4,), dtype=ct.int32))


def test_store_3_discard_example():
    # R-STORE-3: the second store's lanes 2,3 (elements 6,7) fall outside and are dropped.
    buf = np.full(9, -1, np.int32)
    x = buf[:6]
    x[:] = 0
    ct.launch(None, (1,), store_discard, (x,))
    np.testing.assert_array_equal(x, [1, 1, 1, 1, 2, 2])
    np.testing.assert_array_equal(buf[6:], [-1, -1, -1])


@ct.kernel
def store_scalar(x):
    ct.store(x, (0, 1), tile=1)


def test_store_1_scalar_example():
    # R-STORE-1: a scalar is stored as an all-ones tile; the index is an element index.
    x = np.zeros((3, 4), np.float32)
    ct.launch(None, (1,), store_scalar, (x,))
    ref = np.zeros((3, 4), np.float32)
    ref[0, 1] = 1
    np.testing.assert_array_equal(x, ref)


@ct.kernel
def slice_load(x, out):
    t = ct.load(x.slice(0, 1, 3), (0, 0), (2, 4))
    ct.store(out, (0, 0), t)


def test_arr_2_slice_example():
    # R-ARR-2: load(x.slice(0,1,3), (0,0), (2,4)) == [[4..7],[8..11]].
    x = np.arange(16, dtype=np.int32).reshape(4, 4)
    out = np.zeros((2, 4), np.int32)
    ct.launch(None, (1,), slice_load, (x, out))
    np.testing.assert_array_equal(out, [[4, 5, 6, 7], [8, 9, 10, 11]])
    np.testing.assert_array_equal(out, x[1:3])


def _steps_kernel(tile, step):
    @ct.kernel
    def k(x, out, counts):
        v = x.tiled_view(tile, padding_mode=ct.PaddingMode.ZERO, traversal_steps=step)
        ct.store(counts, (0,), v.num_tiles(0))
        for i in range(v.num_tiles(0)):
            ct.store(out, (i, 0), ct.reshape(v.load(i), (1, tile)))
    return k


def test_view_2_4_steps_examples():
    # R-VIEW-2: tile i starts at i*step and spans `tile` elements (steps need not be powers of
    # two); R-VIEW-4: num_tiles = cdiv(N, step).  N=16, tile=4: step 2 -> 8 overlapping
    # windows, step 8 -> 2 windows with gaps; windows past the end are ZERO-padded.
    x = np.arange(1, 17, dtype=np.float32)
    for step, n_ref in ((2, 8), (8, 2), (4, 4), (3, 6)):
        out = np.full((8, 4), -1.0, np.float32)
        counts = np.zeros(1, np.int32)
        ct.launch(None, (1,), _steps_kernel(4, step), (x, out, counts))
        assert counts[0] == n_ref == ct.cdiv(16, step)
        padded = np.concatenate([x, np.zeros(8, np.float32)])
        ref = np.full((8, 4), -1.0, np.float32)
        for i in range(n_ref):
            ref[i] = padded[i * step:i * step + 4]
        np.testing.assert_array_equal(out, ref)


@ct.kernel
def gather_bcast(x, out, M: ct.Constant[int], N: ct.Constant[int], K: ct.Constant[int]):
    i0 = ct.reshape(ct.arange(M, dtype=ct.int32), (M, 1, 1))
    i1 = ct.reshape(ct.arange(K, dtype=ct.int32), (1, 1, K)) + ct.reshape(
        ct.arange(N, dtype=ct.int32), (1, N, 1))
    t = ct.gather(x, (i0, i1))
    ct.store(out, (0, 0, 0), t)


def test_gs_2_broadcast_index_example():
    # R-GS-2: ind0 (M,1,1) [as (M,N,1) after broadcasting] and ind1 (1,N,K) give (M,N,K).
    x = np.arange(4 * 16, dtype=np.float32).reshape(4, 16)
    out = np.zeros((4, 2, 8), np.float32)
    ct.launch(None, (1,), gather_bcast, (x, out, 4, 2, 8))
    i0 = np.arange(4)[:, None, None]
    i1 = np.arange(8)[None, None, :] + np.arange(2)[None, :, None]
    np.testing.assert_array_equal(out, x[i0, i1])


@ct.kernel
def num_tiles_example(a, x1d, out):
    ct.store(out, (0,), ct.num_tiles(a, 0, (4, 8)))
    ct.store(out, (1,), ct.num_tiles(a, 1, (4, 8)))
    ct.store(out, (2,), ct.num_tiles(x1d, 0, ()))
    ct.store(out, (3,), ct.num_tiles(a, -1, (4, 8), order="F"))


def test_space_4_num_tiles_example():
    # R-SPACE-4: (42,64) with (4,8) -> 11 and 8; num_tiles(x1d, 0, ()) == x1d.shape[0];
    # with order "F" axis -1 is the array's axis 0 with tile extent 8 -> cdiv(42, 8) = 6.
    out = np.zeros(4, np.int32)
    ct.launch(None, (1,), num_tiles_example,
              (np.zeros((42, 64), np.float16), np.zeros(37, np.int8), out))
    np.testing.assert_array_equal(out, [11, 8, 37, ct.cdiv(42, 8)])

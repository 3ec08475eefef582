"""Array arguments (spec §2.1, §7): layouts (non-contiguous, Fortran, negative strides,
transposed, slices of bigger buffers with guard bands), attributes inside kernels, int64
indexing and ``Array.slice``."""

from __future__ import annotations

from typing import Annotated

import numpy as np
import pytest

import cutile as ct

P = ct.PaddingMode
GUARD = -77


SLICERS = {
    # kind: (base shape from (m, n), base memory order, view of the base)
    "c": (lambda m, n: (m + 2, n + 3), "C", lambda b, m, n: b[1:1 + m, 2:2 + n]),
    "fortran": (lambda m, n: (m + 2, n + 2), "F", lambda b, m, n: b[1:1 + m, 1:1 + n]),
    "strided": (lambda m, n: (2 * m + 1, 3 * n + 1), "C",
                lambda b, m, n: b[1::2, 1::3][:m, :n]),
    "negative": (lambda m, n: (m + 2, n + 2), "C", lambda b, m, n: b[m:0:-1, n:0:-1]),
    "transposed": (lambda m, n: (n + 2, m + 2), "C", lambda b, m, n: b[1:1 + n, 1:1 + m].T),
    "neg_fortran_strided": (lambda m, n: (2 * m + 2, n + 2), "F",
                            lambda b, m, n: b[2 * m:0:-2, 1:1 + n]),
}
KINDS = list(SLICERS)


def layout(kind: str, shape, dtype=np.float32):
    """(base buffer, view of ``shape`` inside it, guard mask of the base)."""
    base_shape, order, view_of = SLICERS[kind]
    base = np.full(base_shape(*shape), GUARD, dtype, order=order)
    view = view_of(base, *shape)
    mark = np.zeros_like(base, dtype=bool)
    view_of(mark, *shape)[...] = True
    assert view.shape == tuple(shape) and np.shares_memory(view, base)
    return base, view, ~mark


@ct.kernel
def copy_tiles(x, y, TM: ct.Constant[int], TN: ct.Constant[int]):
    t = ct.load(x, (ct.bid(0), ct.bid(1)), (TM, TN), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, (ct.bid(0), ct.bid(1)), t * 2)


@pytest.mark.parametrize("kx", KINDS)
@pytest.mark.parametrize("ky", ["c", "negative", "fortran", "strided"])
def test_layouts_load_store(kx, ky):
    # R-ARRAY-1: any strided layout is a valid argument; partial tiles never touch the guard.
    shape = (7, 10)
    bx, x, _ = layout(kx, shape)
    x[...] = np.arange(70, dtype=np.float32).reshape(shape)
    by, y, gy = layout(ky, shape)
    y[...] = 0
    bx0 = bx.copy()
    ct.launch(None, (2, 3), copy_tiles, (x, y, 4, 4))
    np.testing.assert_array_equal(y, x * 2)
    np.testing.assert_array_equal(bx, bx0)                # the source is only read
    np.testing.assert_array_equal(by[gy], GUARD)          # guard band of y untouched


@ct.kernel
def scatter_gather_copy(x, y):
    i = ct.arange(8, dtype=ct.int32)[:, None] - 1
    j = ct.arange(16, dtype=ct.int32) - 3
    t = ct.gather(x, (i, j), padding_value=0.5)
    ct.scatter(y, (i, j), t + 1)


@pytest.mark.parametrize("kind", KINDS)
def test_layouts_gather_scatter(kind):
    # R-GS-3 on strided layouts: OOB positions neither read nor write outside the view.
    shape = (5, 9)
    _, x, _ = layout(kind, shape)
    x[...] = np.arange(45, dtype=np.float32).reshape(shape)
    by, y, gy = layout(kind, shape)
    y[...] = 0
    ct.launch(None, (1,), scatter_gather_copy, (x, y))
    np.testing.assert_array_equal(y, x + 1)
    np.testing.assert_array_equal(by[gy], GUARD)


@ct.kernel
def attributes(a, out):
    ct.store(out, (0,), a.shape[0])
    ct.store(out, (1,), a.shape[1])
    ct.store(out, (2,), a.strides[0])
    ct.store(out, (3,), a.strides[1])
    ct.store(out, (4,), a.ndim)
    ct.store(out, (5,), ct.zeros((a.ndim * 4,), ct.int32).shape[0])  # ndim is a constant
    ct.store(out, (6,), (a.dtype == ct.float32) * 1 + (a.dtype == ct.int16) * 2)
    ct.store(out, (7,), (a.shape[0].dtype == ct.int32) + 2 * (a.strides[1].dtype == ct.int32))


@pytest.mark.parametrize("kind", KINDS)
def test_attributes_in_elements(kind):
    # R-ARRAY-1/2, §7: shape, strides (in elements, may be negative), ndim, dtype; int32.
    _, a, _ = layout(kind, (6, 11))
    out = np.zeros(8, np.int64)
    ct.launch(None, (1,), attributes, (a, out))
    strides = [s // a.itemsize for s in a.strides]
    np.testing.assert_array_equal(out, [6, 11, *strides, 2, 8, 1, 3])


@ct.kernel
def attributes_int64(a: ct.IndexedWithInt64,
                     b: Annotated[ct.Array, ct.ArrayAnnotation(index_dtype=ct.int64)], out):
    ct.store(out, (0,), a.shape[0])
    ct.store(out, (1,), a.strides[0])
    ct.store(out, (2,), (a.shape[0].dtype == ct.int64) + 2 * (a.strides[0].dtype == ct.int64))
    ct.store(out, (3,), (b.shape[1].dtype == ct.int64) * b.shape[1])
    t = ct.load(a, (ct.bid(0),), (4,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, (4,), ct.sum(t))
    ct.store(out, (5,), ct.num_tiles(a, 0, (4,)).dtype == ct.int32)


def test_int64_indexed_arrays():
    # R-ARRAY-2: IndexedWithInt64 / ArrayAnnotation(index_dtype=int64) give int64 shape and
    # strides; loads work the same; num_tiles stays int32 (R-SPACE-4).
    a = np.arange(20, dtype=np.int64)[::-2]
    b = np.zeros((3, 5), np.float32)
    out = np.zeros(6, np.int64)
    ct.launch(None, (1,), attributes_int64, (a, b, out))
    np.testing.assert_array_equal(out, [10, -2, 3, 5, a[:4].sum(), 1])


@ct.kernel
def alias_store(a, out):
    b = a  # R-ARRAY-3: arrays are views; assigning aliases
    ct.store(b, (0,), ct.full((2,), 9.0, ct.float32))
    ct.store(out, (0,), ct.load(a, (0,), (2,)))


def test_array_alias():
    a = np.zeros(4, np.float32)
    out = np.zeros(2, np.float32)
    ct.launch(None, (1,), alias_store, (a, out))
    np.testing.assert_array_equal(a, [9, 9, 0, 0])
    np.testing.assert_array_equal(out, [9, 9])


# -- Array.slice (R-ARR-1/2) ---------------------------------------------------------------------
@ct.kernel
def slice_views(x, out, lo, hi):
    s = x.slice(0, 2, 16)
    ct.store(out, (0,), ct.zeros((s.shape[0] + 2,), ct.int32).shape[0])  # constant 14 + 2
    r = x.slice(-1, lo, hi)             # runtime bounds, negative axis
    ct.store(out, (1,), r.shape[0])
    ct.store(out, (2,), r.strides[0])
    rr = r.slice(0, 1, 3)               # a slice of a slice
    ct.store(rr, (0,), ct.full((2,), -5, ct.int32))  # writes through to x
    w = x.slice(0, ct.full((), 3, dtype=ct.int8), ct.full((), 6, dtype=ct.int64))
    ct.store(out, (3,), ct.sum(ct.load(w, (0,), (4,), padding_mode=ct.PaddingMode.ZERO)))


def test_slice_views_write_through():
    # R-ARR-1: no copy, writes through the view modify the original; R-ARR-2 constant extent.
    base = np.full(24, GUARD, np.int32)
    x = base[2:22:1][:18]
    x[:] = np.arange(18)
    out = np.zeros(4, np.int32)
    ct.launch(None, (1,), slice_views, (x, out, 4, 11))
    ref = np.arange(18)
    ref[5:7] = -5
    np.testing.assert_array_equal(x, ref)
    np.testing.assert_array_equal(out, [16, 7, 1, 3 + 4 - 5])  # R-EXEC-5 order
    np.testing.assert_array_equal(base[:2], GUARD)
    np.testing.assert_array_equal(base[20:], GUARD)


@ct.kernel
def slice_2d_store(x, r0, r1):
    v = x.slice(1, 2, 5).slice(0, r0, r1)
    t = ct.full((4, 4), 1.0, ct.float32)
    ct.store(v, (0, 0), t)   # partial tile: only the (r1-r0, 3) window is written


@pytest.mark.parametrize("kind", ["c", "fortran", "negative", "transposed"])
def test_slice_2d_store_clips_to_view(kind):
    # R-ARR-1 + R-STORE-3: OOB lanes of the sliced view are discarded even though the parent
    # array has elements there.
    base, x, g = layout(kind, (6, 8))
    x[...] = 0
    ct.launch(None, (1,), slice_2d_store, (x, 1, 3))
    ref = np.zeros((6, 8), np.float32)
    ref[1:3, 2:5] = 1
    np.testing.assert_array_equal(x, ref)
    np.testing.assert_array_equal(base[g], GUARD)


def e_slice_neg_start(x):
    x.slice(0, -1, 2)


def e_slice_neg_stop(x):
    x.slice(0, 0, -2)


def e_slice_order(x):
    x.slice(0, 3, 2)


def e_slice_axis(x):
    x.slice(5, 0, 2)


def e_slice_unsigned(x):
    x.slice(0, ct.uint32(0), 2)


def e_slice_float(x):
    x.slice(0, 0, 2.0)


def e_slice_bool(x):
    x.slice(0, False, 2)


def e_subscript(x):
    x[0]


@pytest.mark.parametrize("body,frag", [
    (e_slice_neg_start, "Slice start must be non-negative"),
    (e_slice_neg_stop, "Slice stop must be non-negative"),
    (e_slice_order, "Slice stop must be greater than or equal to start"),
    (e_slice_axis, "Invalid axis for slice: 'Axis 5 is out of range for rank 1'"),
    (e_slice_unsigned, "Expected a signed integer scalar"),
    (e_slice_float, "Expected a signed integer scalar"),
    (e_slice_bool, "Expected a signed integer scalar"),
    (e_subscript, "Arrays are not directly subscriptable"),
], ids=lambda v: getattr(v, "__name__", "frag"))
def test_array_method_errors(body, frag):
    @ct.kernel
    def k(x):
        body(x)

    with pytest.raises(ct.TileTypeError, match=frag):
        ct.launch(None, (1,), k, (np.zeros(8, np.float32),))


@ct.kernel
def _untouched(value, out_):
    pass


@ct.kernel
def _untouched64(value: ct.IndexedWithInt64, out_: ct.IndexedWithInt64):
    pass


def test_stride_beyond_int32_is_an_overflow_error_at_launch_R_ARRAY_2():
    """R-ARRAY-2 (as 1.7's test_int64_index_overflow_without_annotation): an int32-indexed
    array whose stride in elements exceeds INT32_MAX is an OverflowError at launch, even if
    the kernel never reads it; ct.IndexedWithInt64 accepts it."""
    from numpy.lib.stride_tricks import as_strided
    base = np.zeros(128, np.float32)
    x = as_strided(base, (1, 25165824, 1, 128), (2 ** 32 * 4, 0, 0, 4), writeable=False)
    with pytest.raises(OverflowError, match="stride .* does not fit in int32"):
        ct.launch(None, (1,), _untouched, (x, x))
    from cutile.executors import backend
    with backend("interp"):          # the Numba backend would copy all 3.2e9 elements over
        ct.launch(None, (1,), _untouched64, (x, x))


# -- static_shape_dims / static_stride_dims (R-ARRAY-2, 1.7) -----------------------------
StaticRowStride = Annotated[ct.Array, ct.ArrayAnnotation(static_stride_dims=(0,),
                                                         static_shape_dims=(-1,))]


@ct.kernel
def k_static_dims(x: StaticRowStride, out):
    pitch = ct.static_eval(x.strides[0])              # compile-time values in tile code
    ct.static_assert(x.shape[1] == 8)
    ct.store(out, (0,), ct.full((2,), pitch, ct.int64) + ct.arange(2, dtype=ct.int64) * 0
             + ct.full((2,), x.strides[1], ct.int64) * ct.arange(2, dtype=ct.int64))


def test_static_stride_and_shape_dims_are_compile_time_constants_R_ARRAY_2():
    out = np.zeros(2, np.int64)
    ct.launch(None, (1,), k_static_dims, (np.zeros((4, 10), np.float32)[:, :8], out))
    assert out.tolist() == [10, 11]                   # x.strides[1] stays a runtime value
    ct.launch(None, (1,), k_static_dims, (np.zeros((3, 12), np.float32)[:, 1:9], out))
    assert out.tolist() == [12, 13]                   # another stride: another specialisation


@ct.kernel
def k_static_list(xs: Annotated[list, ct.ListAnnotation(element=ct.ArrayAnnotation(
        static_stride_dims=(0,)))], out):
    ct.static_assert(xs[0].strides[0] == 10)


@pytest.mark.parametrize("make,exc,match", [
    (lambda: ct.ArrayAnnotation(static_shape_dims=(False,)), TypeError, "must be int"),
    (lambda: ct.ArrayAnnotation(static_stride_dims=[0]), TypeError, "must be a tuple"),
    (lambda: ct.launch(None, (1,), k_static_list, (
        [np.zeros((4, 10))[:, :8], np.zeros((4, 12))[:, :8]], np.zeros(2))),
     ValueError, "vary in static stride at axis 0"),
    (lambda: ct.compilation.ArrayConstraint(ct.float32, 2, stride_constant=(None, 6),
                                            stride_divisible_by=(1, 4)),
     ValueError, r"stride_constant\[1\] = 6 is not divisible by 4"),
])
def test_static_dims_checked_R_ARRAY_2(make, exc, match):
    with pytest.raises(exc, match=match):
        make()


@ct.kernel
def k_static_axis_5(x: Annotated[ct.Array, ct.ArrayAnnotation(static_stride_dims=(5,))]):
    pass


def test_static_dims_axis_out_of_range_R_ARRAY_2():
    with pytest.raises(ValueError, match="static_stride_dims contains axis 5"):
        ct.launch(None, (1,), k_static_axis_5, (np.zeros((4, 8)),))

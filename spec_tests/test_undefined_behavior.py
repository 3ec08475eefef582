"""Undefined behaviour of the load/store family (spec §6.6, R-PAD-3, R-UB-1..4) and the
``CUTILE_STRICT=0`` fallbacks (a tile entirely outside reads its padding fill, UNDETERMINED
lanes and those of a broken ``check_bounds=False`` promise read zeros, as on the GPU backend,
with an ``UndefinedBehaviorWarning`` once per line where a result relies on them; writes out of
bounds are dropped; no error)."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest
from spec_executor import interp_only_ub

import cutile as ct

pytestmark = interp_only_ub

P = ct.PaddingMode
UBE = ct.UndefinedBehaviorError


def line_of(kernel, text: str) -> str:
    """``file:line`` of the first source line of ``kernel`` containing ``text``."""
    fn = kernel.__wrapped__
    src, first = inspect.getsourcelines(fn)
    for k, line in enumerate(src):
        if text in line:
            return f"{inspect.getsourcefile(fn)}:{first + k}"
    raise AssertionError(f"{text!r} not found")


def guarded(n, dtype=np.float32, fill=-1, pad=4):
    """An ``n``-element view inside a bigger buffer whose guard bands must stay ``fill``."""
    buf = np.full(n + 2 * pad, fill, dtype)
    return buf, buf[pad:pad + n]


def assert_guard(buf, n, fill=-1, pad=4):
    np.testing.assert_array_equal(buf[:pad], fill)
    np.testing.assert_array_equal(buf[pad + n:], fill)


# -- R-PAD-3 / R-UB-2: relying on UNDETERMINED padding -------------------------------------------
@ct.kernel
def undetermined_store(x, y):
    t = ct.load(x, (ct.bid(0),), (8,))  # UNDETERMINED padding (the default)
    ct.store(y, (ct.bid(0),), t)  # y is larger than x: padded lanes land in bounds


def test_ub2_padding_stored_in_bounds():
    # R-PAD-3: the error is located at the store, names the block and the load's line; the
    # failing store writes nothing (the first block's full tile was stored normally).
    x = np.arange(12, dtype=np.float32)
    y = np.zeros(16, np.float32)
    with pytest.raises(UBE) as info:
        ct.launch(None, (2,), undetermined_store, (x, y))
    e = info.value
    msg = str(e)
    assert isinstance(e, RuntimeError) and e.rule == "R-UB-2"
    assert e.block == (1, 0, 0) and "(block (1, 0, 0))" in msg
    assert msg.startswith(line_of(undetermined_store, "ct.store") + ":")
    assert line_of(undetermined_store, "ct.load") in msg and "UNDETERMINED" in msg
    np.testing.assert_array_equal(y[:8], x[:8])
    np.testing.assert_array_equal(y[8:], 0)


@ct.kernel
def undetermined_reduce(x, out):
    t = ct.load(x, (0,), (8,))
    s = ct.sum(t)
    ct.store(out, (0,), s)


@ct.kernel
def undetermined_branch(x, out):
    t = ct.load(x, (0,), (8,))
    if ct.max(t) > 3:
        ct.store(out, (0,), 1.0)


@ct.kernel
def undetermined_gather_index(x, out):
    t = ct.load(x, (0,), (8,))
    ct.store(out, (0,), ct.gather(out, t.astype(ct.int32)))


@ct.kernel
def undetermined_scatter_value(x, out):
    t = ct.load(x, (0,), (8,))
    ct.scatter(out, ct.arange(8, dtype=ct.int32), t)


@ct.kernel
def undetermined_scatter_mask(x, out):
    t = ct.load(x, (0,), (8,))
    ct.scatter(out, ct.arange(8, dtype=ct.int32), 1.0, mask=t > 2)


@ct.kernel
def undetermined_view_store(x, out):
    t = x.tiled_view(8).load(0)
    out.tiled_view(8).store(0, t + 1)


@pytest.mark.parametrize("kernel", [undetermined_reduce, undetermined_branch,
                                    undetermined_gather_index, undetermined_scatter_value,
                                    undetermined_scatter_mask, undetermined_view_store],
                         ids=lambda k: k.__name__)
def test_ub2_padding_observed(kernel):
    # R-PAD-3: padding reaching an in-bounds store, a reduction whose result is stored, a
    # branch condition, a gather index, a scatter value or mask -> UndefinedBehaviorError.
    x = np.arange(6, dtype=np.float32)
    out = np.zeros(8, np.float32)
    with pytest.raises(UBE, match="UNDETERMINED") as info:
        ct.launch(None, (1,), kernel, (x, out))
    assert info.value.rule == "R-UB-2" and "block (0, 0, 0)" in str(info.value)
    np.testing.assert_array_equal(out, 0)


@ct.kernel
def load_modify_store(x, TILE: ct.Constant[int]):
    t = ct.load(x, (ct.bid(0),), (TILE,))
    ct.store(x, (ct.bid(0),), t * 2 + 1)


def test_load_modify_store_padding_only_reaches_discarded_lanes():
    # R-PAD-3: padded lanes that only flow into discarded OOB store lanes are fine.
    buf, x = guarded(30)
    x[:] = np.arange(30)
    ct.launch(None, (ct.cdiv(30, 8),), load_modify_store, (x, 8))
    np.testing.assert_array_equal(x, np.arange(30) * 2 + 1)
    assert_guard(buf, 30)


@ct.kernel
def masked_reduction(x, out, n):
    t = ct.load(x, (0,), (8,))
    valid = ct.arange(8, dtype=ct.int32) < n
    ct.store(out, (0,), ct.sum(ct.where(valid, t, 0.0)))
    g = ct.gather(x, ct.arange(8, dtype=ct.int32), padding_value=t)  # padding poison unused
    ct.store(out, (1,), ct.sum(ct.where(valid, g, 0.0)))


def test_padding_masked_out_per_element():
    # R-PAD-3 tracks elements: lanes replaced by `where` are clean, so no error.
    x = np.arange(1, 7, dtype=np.float32)
    out = np.zeros(2, np.float32)
    ct.launch(None, (1,), masked_reduction, (x, out, 6))
    np.testing.assert_array_equal(out, [x.sum(), x.sum()])


@ct.kernel
def gather_padding_from_undetermined(x, out):
    t = ct.load(x, (0,), (8,))
    g = ct.gather(x, ct.arange(8, dtype=ct.int32) + 2, padding_value=t)
    ct.store(out, (0,), g)


def test_gather_padding_value_poison_observed_where_used():
    # R-PAD-3: gather positions 4..7 are OOB and take padding_value[k]; k=6,7 are padding.
    x = np.arange(6, dtype=np.float32)
    out = np.zeros(8, np.float32)
    with pytest.raises(UBE, match="UNDETERMINED"):
        ct.launch(None, (1,), gather_padding_from_undetermined, (x, out))


def test_strict_off_poisoned_store_no_error(monkeypatch):
    # §6.6 with CUTILE_STRICT=0: no error (a warning); in-bounds lanes are written, the padded
    # ones as zeros (what the GPU backend reads), nothing outside.
    monkeypatch.setenv("CUTILE_STRICT", "0")
    x = np.arange(12, dtype=np.float32)
    buf, y = guarded(16)
    with pytest.warns(ct.UndefinedBehaviorWarning, match="stored in bounds"):
        ct.launch(None, (2,), undetermined_store, (x, y))
    np.testing.assert_array_equal(y[:12], x)
    np.testing.assert_array_equal(y[12:], 0)
    assert_guard(buf, 16)
    out = np.full(8, 5, np.float32)
    with pytest.warns(ct.UndefinedBehaviorWarning, match="scattered in bounds"):
        ct.launch(None, (1,), undetermined_scatter_value, (x[:6], out))
    np.testing.assert_array_equal(out, np.r_[x[:6], 0, 0])


# -- R-UB-2 with CUTILE_STRICT=0: zeros, as on the GPU backend, and one warning per line ------
@ct.kernel
def undetermined_rows(x, y):
    t = ct.load(x, (ct.bid(0), 0), (1, 8))  # rows of 6: lanes 6, 7 are UNDETERMINED
    ct.store(y, (ct.bid(0), 0), t + 1)      # y rows of 8: those lanes land in bounds


def _ub_warnings(record) -> list:
    return [w for w in record if issubclass(w.category, ct.UndefinedBehaviorWarning)]


@pytest.mark.parametrize("batch", ["0", "1"])
def test_strict_off_reads_zeros_and_warns_once_per_line(monkeypatch, batch):
    # Issue 22: with CUTILE_STRICT=0 UNDETERMINED lanes read 0 (cutile.padding, what the Numba
    # backend reads) and relying on them warns once per source line and launch, naming the
    # store's line and the load's; Python's registry then keeps it to one per process by
    # default.  Batched (one block per batch): only the first batch falls back.
    from cutile.interp import batch as interp_batch
    monkeypatch.setenv("CUTILE_STRICT", "0")
    monkeypatch.setenv("CUTILE_BATCH", batch)
    monkeypatch.setenv("CUTILE_BATCH_BYTES", "1")
    x = np.arange(36, dtype=np.float32).reshape(6, 6)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        y = np.full((6, 8), -1, np.float32)
        ct.launch(None, (6,), undetermined_rows, (x, y))
        np.testing.assert_array_equal(y[:, :6], x + 1)
        np.testing.assert_array_equal(y[:, 6:], 1)          # 0 + 1: the padding read 0
        if batch == "1":
            assert interp_batch.LAST["batches"] == 6 and interp_batch.LAST["fallbacks"] == 1
        ws = _ub_warnings(record)
        assert len(ws) == 1, [str(w.message) for w in ws]
        store = line_of(undetermined_rows, "ct.store")
        assert f"{ws[0].filename}:{ws[0].lineno}" == store
        assert line_of(undetermined_rows, "ct.load") in str(ws[0].message)
        assert "R-UB-2" in str(ws[0].message)
        warnings.simplefilter("default")     # Python's default: once per line per process
        ct.launch(None, (6,), undetermined_rows, (x, y))
        ct.launch(None, (6,), undetermined_rows, (x, y))
        assert len(_ub_warnings(record)) == 2
        ct.launch(None, (6,), undetermined_rows, (x, y))
        assert len(_ub_warnings(record)) == 2


@pytest.mark.parametrize("kernel,line", [
    (undetermined_reduce, "ct.store"), (undetermined_branch, "if ct.max"),
    (undetermined_gather_index, "ct.gather"), (undetermined_scatter_value, "ct.scatter"),
    (undetermined_scatter_mask, "ct.scatter"), (undetermined_view_store, ".store(")],
    ids=lambda k: getattr(k, "__name__", None))
def test_strict_off_observations_warn(monkeypatch, kernel, line):
    # The R-UB-2 cases of test_ub2_padding_observed: with CUTILE_STRICT=0 one warning at the
    # observing line, naming the load, and the run goes on with zeros in the padding.
    monkeypatch.setenv("CUTILE_STRICT", "0")
    x = np.arange(6, dtype=np.float32)
    out = np.zeros(8, np.float32)
    with pytest.warns(ct.UndefinedBehaviorWarning) as record:
        ct.launch(None, (1,), kernel, (x, out))
    ws = _ub_warnings(record)
    assert [f"{w.filename}:{w.lineno}" for w in ws] == [line_of(kernel, line)]
    assert line_of(kernel, ".load(") in str(ws[0].message)
    if kernel is undetermined_reduce:
        assert out[0] == x.sum()                 # the padding added zeros


def _attention_case(m, n, heads=2, d=16, seed=0):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((heads, r, d)).astype(np.float32) for r in (m, n, n))
    return q, k, v, np.zeros_like(q)


def test_attention_ragged_strict_names_loads_and_store():
    # Issue 22/27: NVIDIA's attention pattern (UNDETERMINED K/V tiles, a `where` mask on the
    # scores) relies on finite padding: V's padded rows meet zero weights in the mma.  Strict,
    # that is R-UB-2 at the store, naming the K and V loads.
    from backend_kernels import attention_ragged
    q, k, v, o = _attention_case(20, 37)
    with pytest.raises(UBE) as info:
        ct.launch(None, (2, 2), attention_ragged, (q, k, v, o, 0.25, 16, 16, 16))
    msg = str(info.value)
    assert info.value.rule == "R-UB-2"
    assert msg.startswith(line_of(attention_ragged, "ct.store") + ":")
    assert line_of(attention_ragged, "ct.load(k") in msg
    assert line_of(attention_ragged, "ct.load(v") in msg


@pytest.mark.parametrize("m,n", [(20, 37), (16, 33), (5, 16)])
def test_attention_ragged_strict_off_matches_float64(monkeypatch, m, n):
    # With CUTILE_STRICT=0 the padding reads 0 and the kernel gives softmax attention
    # (float64 reference, float32 rounding); uneven key lengths warn once, at the store.
    # m=5: the padded rows of Q reach only discarded store lanes (R-PAD-3), no warning.
    from backend_kernels import attention_ragged, attention_reference
    monkeypatch.setenv("CUTILE_STRICT", "0")
    q, k, v, o = _attention_case(m, n)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        ct.launch(None, (ct.cdiv(m, 16), 2), attention_ragged, (q, k, v, o, 0.25, 16, 16, 16))
    ws = _ub_warnings(record)
    assert len(ws) == (1 if n % 16 else 0)     # padded query rows are only stored out of bounds
    assert all(f"{w.filename}:{w.lineno}" == line_of(attention_ragged, "ct.store") for w in ws)
    np.testing.assert_allclose(o, attention_reference(q, k, v, 0.25), rtol=1e-5, atol=1e-6)


# -- R-UB-1: tile entirely outside the array -----------------------------------------------------
@ct.kernel
def load_by_bid(x, y, SHIFT: ct.Constant[int]):
    t = ct.load(x, (ct.bid(0) + SHIFT,), (4,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, (ct.bid(0),), t)


@ct.kernel
def store_by_bid(x, y, SHIFT: ct.Constant[int]):
    t = ct.load(x, (ct.bid(0),), (4,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, (ct.bid(0) + SHIFT,), t)


@ct.kernel
def view_by_bid(x, y, SHIFT: ct.Constant[int], STORE: ct.Constant[bool]):
    vx = x.tiled_view(4, padding_mode=ct.PaddingMode.ZERO)
    vy = y.tiled_view(4)
    if STORE:
        vy.store(ct.bid(0) + SHIFT, vx.load(ct.bid(0)))
    else:
        vy.store(ct.bid(0), vx.load(ct.bid(0) + SHIFT))


@ct.kernel
def steps_view_negative(x, y, STORE: ct.Constant[bool]):
    # Tile 4 / step 2: index -1 spans [-2, 2) but a negative tile index is entirely outside
    # (cuda.tile 1.7 on an H100 pads all lanes and stores nothing).
    v = x.tiled_view(4, padding_mode=ct.PaddingMode.ZERO, traversal_steps=2)
    if STORE:
        v.store(ct.bid(0) - 1, ct.full((4,), 5.0, ct.float32))
    else:
        ct.store(y, (0,), v.load(ct.bid(0) - 1))


@ct.kernel
def load_2d_row_oob(x, y):
    t = ct.load(x, (ct.bid(0), 1), (2, 4), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, (0, 0), t)


CASES_UB1 = [
    # (kernel, args factory, grid, failing block, text of the failing line)
    (load_by_bid, lambda: (np.zeros(10, np.float32), np.zeros(16, np.float32), 0), (4,), 3,
     "ct.load"),
    (load_by_bid, lambda: (np.zeros(10, np.float32), np.zeros(16, np.float32), -1), (2,), 0,
     "ct.load"),
    (store_by_bid, lambda: (np.zeros(10, np.float32), np.zeros(10, np.float32), 1), (3,), 2,
     "ct.store"),
    (store_by_bid, lambda: (np.zeros(10, np.float32), np.zeros(10, np.float32), -2), (3,), 0,
     "ct.store"),
    (view_by_bid, lambda: (np.zeros(8, np.float32), np.zeros(8, np.float32), 2, False), (2,),
     0, "vx.load(ct.bid(0) + SHIFT)"),
    (view_by_bid, lambda: (np.zeros(8, np.float32), np.zeros(8, np.float32), 1, True), (2,),
     1, "vy.store(ct.bid(0) + SHIFT"),
    (load_2d_row_oob, lambda: (np.zeros((3, 5), np.float32), np.zeros((2, 4), np.float32)),
     (3,), 2, "ct.load"),
    (steps_view_negative, lambda: (np.zeros(16, np.float32), np.zeros(4, np.float32), False),
     (1,), 0, "v.load(ct.bid(0) - 1)"),
    (steps_view_negative, lambda: (np.zeros(16, np.float32), np.zeros(4, np.float32), True),
     (1,), 0, "v.store(ct.bid(0) - 1"),
]


@pytest.mark.parametrize("case", range(len(CASES_UB1)))
def test_ub1_entirely_outside(case):
    # R-UB-1: the error names the user's file:line and the block (negative indices included).
    kernel, args, grid, block, text = CASES_UB1[case]
    with pytest.raises(UBE, match="entirely outside") as info:
        ct.launch(None, grid, kernel, args())
    e = info.value
    assert e.rule == "R-UB-1" and e.block == (block, 0, 0)
    msg = str(e)
    assert f"(block ({block}, 0, 0))" in msg
    assert line_of(kernel, text) in msg


@pytest.mark.parametrize("case", range(len(CASES_UB1)))
def test_ub1_strict_off(case, monkeypatch):
    # §6.6: flag off -> no error, writes outside dropped (guard bands untouched).
    monkeypatch.setenv("CUTILE_STRICT", "0")
    kernel, args, grid, _, _ = CASES_UB1[case]
    a = args()
    bufs = []
    for i, arr in enumerate(a[:2]):
        buf = np.full(arr.size + 16, -1, arr.dtype)
        view = buf[8:8 + arr.size].reshape(arr.shape)
        view[...] = np.arange(arr.size).reshape(arr.shape) if i == 0 else 0
        bufs.append((buf, view))
    ct.launch(None, grid, kernel, (bufs[0][1], bufs[1][1], *a[2:]))
    np.testing.assert_array_equal(bufs[0][1], np.arange(a[0].size).reshape(a[0].shape))
    for buf, view in bufs:
        np.testing.assert_array_equal(buf[:8], -1)
        np.testing.assert_array_equal(buf[8 + view.size:], -1)


# -- R-UB-3: check_bounds=False promises broken --------------------------------------------------
@ct.kernel
def unchecked_load(x, y):
    t = ct.load(x, (ct.bid(0),), (8,), check_bounds=False)
    ct.store(y, (ct.bid(0),), t)


@ct.kernel
def unchecked_store(x, y):
    t = ct.load(x, (ct.bid(0),), (8,), padding_mode=ct.PaddingMode.ZERO)
    ct.store(y, (ct.bid(0),), t, check_bounds=False)


@ct.kernel
def unchecked_view(x, y):
    t = x.tiled_view(8, padding_mode=ct.PaddingMode.ZERO).load(ct.bid(0), check_bounds=False)
    y.tiled_view(8).store(ct.bid(0), t)


@ct.kernel
def unchecked_gather(x, y, off):
    ind = ct.arange(8, dtype=ct.int32) + off
    ct.store(y, (0,), ct.gather(x, ind, check_bounds=False))


@ct.kernel
def unchecked_scatter(x, y, off):
    ind = ct.arange(8, dtype=ct.int32) + off
    ct.scatter(y, ind, ct.load(x, (0,), (8,)), check_bounds=False)


@pytest.mark.parametrize("kernel", [unchecked_load, unchecked_store, unchecked_view])
def test_ub3_tile_space(kernel):
    # R-UB-3: full tiles are fine; the partial last tile breaks the promise.
    x = np.arange(12, dtype=np.float32)
    y = np.zeros(12, np.float32)
    ct.launch(None, (1,), kernel, (x, y))
    np.testing.assert_array_equal(y[:8], x[:8])
    with pytest.raises(UBE, match="check_bounds=False") as info:
        ct.launch(None, (2,), kernel, (x, y))
    assert info.value.rule == "R-UB-3" and info.value.block == (1, 0, 0)


@pytest.mark.parametrize("kernel", [unchecked_gather, unchecked_scatter])
@pytest.mark.parametrize("off", [-1, 1])
def test_ub3_gather_scatter(kernel, off):
    # R-UB-3 / R-GS-7: an OOB index (negative counts as OOB) with check_bounds=False.
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.float32)
    ct.launch(None, (1,), kernel, (x, y, 0))
    np.testing.assert_array_equal(y, x)
    with pytest.raises(UBE, match="check_bounds=False") as info:
        ct.launch(None, (1,), kernel, (x, y, off))
    assert info.value.rule == "R-UB-3"
    assert line_of(kernel, "check_bounds=False") in str(info.value)


@pytest.mark.parametrize("kernel", [unchecked_load, unchecked_store, unchecked_view])
def test_ub3_tile_space_strict_off(kernel, monkeypatch):
    monkeypatch.setenv("CUTILE_STRICT", "0")
    x = np.arange(12, dtype=np.float32)
    buf, y = guarded(12)
    ct.launch(None, (2,), kernel, (x, y))
    np.testing.assert_array_equal(y[:8], x[:8])
    if kernel is unchecked_store:  # its load is ZERO-padded and checked
        np.testing.assert_array_equal(y, x)
    assert_guard(buf, 12)


@pytest.mark.parametrize("kernel", [unchecked_gather, unchecked_scatter])
@pytest.mark.parametrize("off", [-3, 3])
def test_ub3_gather_scatter_strict_off(kernel, off, monkeypatch):
    monkeypatch.setenv("CUTILE_STRICT", "0")
    xbuf, x = guarded(8)
    x[:] = np.arange(8)
    ybuf, y = guarded(8, fill=-2)
    y[:] = 0
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        ct.launch(None, (1,), kernel, (x, y, off))
    assert_guard(xbuf, 8)
    assert_guard(ybuf, 8, fill=-2)
    lo, hi = max(0, -off), min(8, 8 - off)
    if kernel is unchecked_scatter:  # in-bounds positions are written, the rest dropped
        np.testing.assert_array_equal(y[lo + off:hi + off], x[lo:hi])
        assert not _ub_warnings(record)
    else:  # out-of-bounds positions are UNDETERMINED: zeros, and the store warns
        np.testing.assert_array_equal(y[lo:hi], x[lo + off:hi + off])
        np.testing.assert_array_equal(np.delete(y, np.s_[lo:hi]), 0)
        assert [w.lineno for w in _ub_warnings(record)] == [int(line_of(kernel, "ct.store")
                                                             .rsplit(":", 1)[1])]


# -- R-UB-4: Array.slice bounds at run time ------------------------------------------------------
@ct.kernel
def runtime_slice(x, y, start, stop):
    s = x.slice(0, start, stop)
    ct.store(y, (0,), ct.load(s, (0,), (4,), padding_mode=ct.PaddingMode.ZERO))


@pytest.mark.parametrize("start,stop", [(-1, 3), (3, 2), (0, 11), (11, 12)])
def test_ub4_runtime_slice_bounds(start, stop, monkeypatch):
    # R-UB-4: 0 <= start <= stop <= N must hold at run time; strict off clamps the view.
    x = np.arange(10, dtype=np.float32)
    y = np.zeros(4, np.float32)
    with pytest.raises(UBE, match="slice") as info:
        ct.launch(None, (1,), runtime_slice, (x, y, start, stop))
    assert info.value.rule == "R-UB-4"
    monkeypatch.setenv("CUTILE_STRICT", "0")
    ybuf, y = guarded(4)
    y[:] = 0
    ct.launch(None, (1,), runtime_slice, (x, y, start, stop))  # no error
    assert_guard(ybuf, 4)


# -- R-EXEC-4: data races between blocks -----------------------------------------------------
@ct.kernel
def race_read_after_write(a, T: ct.Constant[int]):
    x = ct.load(a, (0,), (T,))                 # every block reads tile 0 ...
    ct.store(a, (ct.bid(0),), x + 1.0)          # ... which block 0 writes


@ct.kernel
def race_write_write(a, T: ct.Constant[int]):
    v = ct.full((T,), 1.0, ct.float32) * ct.bid(0).astype(ct.float32)
    ct.store(a, (0,), v)                         # different values into the same elements


@ct.kernel
def same_flag_everywhere(a, flag, T: ct.Constant[int]):
    x = ct.load(a, (ct.bid(0),), (T,))
    ct.store(a, (ct.bid(0),), x * 2.0)          # each block its own tile
    ct.store(flag, (0,), ct.full((1,), 7, ct.int32))   # the same value from every block


@ct.kernel
def race_gather_scatter(a, b):
    i = ct.arange(8, dtype=ct.int32)
    g = ct.gather(a, (i + 8 * ct.bid(0) + 4) % 16)    # reads half of the other block's part
    ct.scatter(a, i + 8 * ct.bid(0), g + 1.0)
    ct.store(b, (ct.bid(0),), g)


@ct.kernel
def race_through_view(a, T: ct.Constant[int]):
    s = a.slice(0, T // 2, T + T // 2)           # a view overlapping both blocks' tiles
    x = ct.load(s, (0,), (T,))
    ct.store(a, (ct.bid(0),), x)


@pytest.mark.parametrize("kernel,args,grid,line", [
    (race_read_after_write, lambda: (np.zeros(16, np.float32), 8), (2,),
     "x = ct.load(a, (0,), (T,))"),
    (race_write_write, lambda: (np.zeros(8, np.float32), 8), (3,), "ct.store(a, (0,), v)"),
    (race_gather_scatter, lambda: (np.arange(16, dtype=np.float32), np.zeros(16, np.float32)),
     (2,), "g = ct.gather(a,"),               # block 1 reads what block 0 scattered
    (race_through_view, lambda: (np.arange(16, dtype=np.float32), 8), (2,),
     "x = ct.load(s, (0,), (T,))"),
])
def test_exec4_races_between_blocks(kernel, args, grid, line):
    # R-EXEC-4: a non-atomic access to an element another block writes is a data race
    with pytest.raises(UBE, match=r"R-EXEC-4.*data race") as e:
        ct.launch(None, grid, kernel, args())
    assert str(e.value).startswith(line_of(kernel, line) + ":")    # names the access


def test_exec4_same_value_and_own_elements_are_fine():
    a, flag = np.arange(32, dtype=np.float32), np.zeros(1, np.int32)
    ct.launch(None, (4,), same_flag_everywhere, (a, flag, 8))
    np.testing.assert_array_equal(a, np.arange(32, dtype=np.float32) * 2)
    assert flag[0] == 7


def test_exec4_one_block_and_strict_off(monkeypatch):
    a = np.zeros(16, np.float32)
    ct.launch(None, (1,), race_read_after_write, (a, 8))     # one block: no other block
    monkeypatch.setenv("CUTILE_STRICT", "0")
    ct.launch(None, (2,), race_read_after_write, (np.zeros(16, np.float32), 8))


@ct.kernel
def _to_int8(x, y):
    ct.store(y, (0,), ct.load(x, (0,), (8,)).astype(ct.int8))


@interp_only_ub
def test_float_to_int_out_of_range_is_ub_and_saturates_when_lax(monkeypatch):
    """R-UB-6: float->int of NaN, inf or an out-of-range value is undefined; with
    CUTILE_STRICT=0 the interpreter gives the GPU's cvt.rzi value (truncate, saturate, NaN->0)."""
    x = np.array([128.0, -200.5, np.nan, np.inf, -np.inf, 3.9, -3.9, 127.0], np.float32)
    y = np.zeros(8, np.int8)
    with pytest.raises(UBE, match=r"R-UB-6.*128\.0"):
        ct.launch(None, (1,), _to_int8, (x, y))
    monkeypatch.setenv("CUTILE_STRICT", "0")
    ct.launch(None, (1,), _to_int8, (x, y))
    np.testing.assert_array_equal(y, [127, -128, 0, 127, -128, 3, -3, 127])


@pytest.mark.parametrize("mode,value", [(ct.PaddingMode.ZERO, 0.0), (ct.PaddingMode.NEG_INF,
                                                                     -np.inf),
                                        (ct.PaddingMode.POS_INF, np.inf)])
def test_entirely_outside_reads_padding_when_lax(monkeypatch, mode, value):
    """R-UB-1 with CUTILE_STRICT=0: a load entirely outside reads the padding fill, as the GPU
    gives it (NVIDIA's test_tiled_view_padding_mode: tile 128, index 1, 100 elements)."""
    @ct.kernel
    def k(x, z, TILE: ct.Constant[int]):
        tv = x.tiled_view(TILE, padding_mode=mode)
        ct.store(z, 0, tile=tv.load(1))

    x, z = np.arange(100, dtype=np.float32), np.full(1, 7.0, np.float32)
    with pytest.raises(UBE, match="R-UB-1"):
        ct.launch(None, (1,), k, (x, z, 128))
    monkeypatch.setenv("CUTILE_STRICT", "0")
    ct.launch(None, (1,), k, (x, z, 128))
    assert z[0] == value

"""Memory semantics of one block's load/store/gather/scatter on a host NumPy array (§6/§8/§9)."""

from __future__ import annotations

import numpy as np

from cutile.enums import PaddingMode
from cutile.padding import float_fill, padding_fill

__all__ = [
    "OutOfBounds", "PoisonObserved", "atomic_positions", "gather", "load_fill", "poison_fill",
    "scatter", "tile_space_load", "tile_space_store",
]

# Every function indexes the ndarray it is given (through views: np.transpose + basic slices or
# fancy indexing), so any strides, negative strides, Fortran order or slices of a larger buffer
# are handled by NumPy itself, and nothing outside the array's own elements is ever touched.


class OutOfBounds(Exception):
    """Undefined behaviour detected by the model.

    The model knows nothing of source locations, so the caller catches this and re-raises it as
    ``cutile.UndefinedBehaviorError`` with the user's line.  ``rule`` is "R-UB-1" (tile entirely
    outside the array) or "R-UB-3" (``check_bounds=False`` promise broken).
    """

    def __init__(self, rule: str, message: str):
        super().__init__(f"{rule}: {message}")
        self.rule = rule
        self.message = message


class PoisonObserved(OutOfBounds):
    """An UNDETERMINED-padded element (R-PAD-3) reached memory in bounds: R-UB-2.

    A subclass of OutOfBounds so a caller that converts model errors to
    ``UndefinedBehaviorError`` needs one ``except`` clause; ``rule`` is always "R-UB-2".
    """

    def __init__(self, message: str):
        super().__init__("R-UB-2", message)


# ----------------------------------------------------------------------------------------------
# fill values


def point_addresses(array: np.ndarray, sel: tuple) -> np.ndarray:
    """Byte addresses of ``array[sel]`` for integer index arrays ``sel`` (one per axis)."""
    addr = np.int64(array.__array_interface__["data"][0])
    out = np.zeros(np.shape(sel[0]) if sel else (1,), dtype=np.int64) + addr
    for ix, st in zip(sel, array.strides):
        out = out + np.asarray(ix, dtype=np.int64) * st
    return out.ravel()


def poison_fill(dtype) -> np.generic:
    """The R-PAD-3 poison scalar: NaN for floats, bytes 0x5A for ints, True for bool.

    Not a benign value like 0, so a kernel that reads padding by mistake shows it; the poison
    *mask* stays authoritative (float4_e2m1fn has no NaN, and 0x5A.. is a legal int value).
    """
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return np.True_
    if dtype.kind in "iu":
        return np.frombuffer(b"\x5a" * dtype.itemsize, dtype=dtype)[0]
    return float_fill(np.nan, dtype)


def load_fill(dtype, padding: PaddingMode, strict: bool) -> np.generic:
    """Scalar the interpreter places in out-of-bounds lanes for ``padding`` (R-PAD-1).

    UNDETERMINED lanes are also marked in the poison mask; their data is the R-PAD-3 poison
    when ``strict`` (a value that shows a kernel relying on them, should the mask ever miss
    it), else what cutile's GPU backend reads (``cutile.padding``: zero), so that with
    ``CUTILE_STRICT=0`` both executors give the same bits.
    """
    if padding is PaddingMode.UNDETERMINED and strict:
        return poison_fill(dtype)
    return padding_fill(dtype, padding)


# ----------------------------------------------------------------------------------------------
# tile-space load / store (§6, §8)


def _window(array, index, shape, order, steps, check_bounds, strict, op):
    """Locate the tile in ``np.transpose(array, order)`` (R-SPACE-1/2, R-VIEW-2).

    Returns ``(view, src, dst, full)``: ``view`` is the transposed array (a view), ``src`` the
    basic slices of its in-bounds intersection with the tile, ``dst`` the matching slices of the
    tile, ``full`` whether the whole tile is in bounds.  ``src``/``dst`` are None when nothing
    is in bounds (only possible with ``strict=False``).  A negative tile index along any axis
    makes the whole tile out of bounds (R-UB-1), even when traversal steps smaller than the tile
    would make its span overlap [0, N): cuda.tile 1.7 on an H100 returns an all-padding tile
    for ``tiled_view(4, traversal_steps=2).load(-1)`` and its ``store(-1, t)`` writes nothing.
    """
    ndim = array.ndim
    assert ndim >= 1, "tile-space load/store on a 0-D array (R-ARRAY-4)"
    order = tuple(int(p) for p in order)
    assert sorted(order) == list(range(ndim)), f"order {order} is not a permutation"
    index = tuple(int(i) for i in index)
    shape = tuple(int(s) for s in shape)
    assert len(index) == ndim and len(shape) == ndim and min(shape) >= 1
    steps = shape if steps is None else tuple(int(s) for s in steps)
    assert len(steps) == ndim and min(steps) >= 1
    view = np.transpose(array, order)
    src, dst, full, empty = [], [], True, False
    for i, t, s, n in zip(index, shape, steps, view.shape):
        start = i * s
        lo, hi = max(start, 0), min(start + t, n)
        if i < 0 or lo >= hi:
            empty = True
            lo = hi = 0
        full = full and lo == start and hi == start + t
        src.append(slice(lo, hi))
        dst.append(slice(lo - start, hi - start))

    def where():
        extra = "" if steps == shape else f", traversal steps {steps}"
        perm = "" if order == tuple(range(ndim)) else f" (axes permuted by order {order})"
        return (f"tile index {index} with tile shape {shape}{extra} for an array of shape "
                f"{tuple(view.shape)}{perm}")

    if empty:
        # An array with no elements (a slice of length 0) has no tile to be outside of:
        # cuda.tile 1.7 runs such a load/store as a no-op (docs/decisions.md).
        if strict and not (view.size == 0 and min(index) >= 0):
            neg = " (negative tile index)" if min(index) < 0 else ""
            raise OutOfBounds("R-UB-1", f"{op}: {where()} lies entirely outside the array{neg}")
        return view, None, None, False
    if not full and not check_bounds and strict:
        raise OutOfBounds("R-UB-3", f"{op} with check_bounds=False: {where()} has elements "
                                    f"out of bounds")
    return view, tuple(src), tuple(dst), full


def tile_space_load(array: np.ndarray, index: tuple[int, ...], shape: tuple[int, ...], *,
                    order: tuple[int, ...], steps: tuple[int, ...] | None,
                    padding: PaddingMode, check_bounds: bool,
                    strict: bool = True,
                    touched: list | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """``ct.load`` / ``TiledView.load`` of one tile (R-LOAD-2/4, R-SPACE-2, R-VIEW-2/5).

    Returns ``(tile, poison)``: a fresh C-contiguous array of ``array.dtype`` and ``shape`` with
    ``tile[x] = A'[index*steps + x]`` (``A' = transpose(array, order)``; ``steps=None`` means the
    ordinary partition), out-of-bounds lanes holding the padding fill (R-PAD-1).  ``poison``
    marks the UNDETERMINED lanes (R-PAD-3) and is None when there are none.

    Undefined behaviour raises OutOfBounds: R-UB-1 for a tile entirely outside, R-UB-3 for
    ``check_bounds=False`` with an out-of-bounds lane.  With ``strict=False`` (the interpreter's
    strict-checking flag off, §6.6) nothing is raised: a tile entirely outside reads the
    ``padding`` fill, as the GPU's bounds-checked copy gives it (NVIDIA's own tests rely on
    that: test_tiled_view_padding_mode), UNDETERMINED lanes being poison as usual; a broken
    ``check_bounds=False`` promise makes the out-of-bounds lanes UNDETERMINED whatever
    ``padding`` says.  The data of UNDETERMINED lanes is ``load_fill``'s: the poison value when
    ``strict``, else zero (what cutile's GPU backend reads).  With a ``touched`` list, the
    elements read are appended to it (``("win", view)``, for races.py).
    """
    view, src, dst, full = _window(array, index, shape, order, steps, check_bounds, strict,
                                   "load")
    shape = tuple(int(s) for s in shape)
    if touched is not None and src is not None:
        touched.append(("win", view[src]))
    if full:  # fast path: one copy of a strided view
        return np.array(view[src], order="C"), None
    if not check_bounds:                 # a broken promise, only reachable with strict=False
        padding = PaddingMode.UNDETERMINED
    tile = np.full(shape, load_fill(array.dtype, padding, strict), dtype=array.dtype)
    poison = None
    if padding is PaddingMode.UNDETERMINED:
        poison = np.ones(shape, dtype=bool)
    if src is not None:
        tile[dst] = view[src]
        if poison is not None:
            poison[dst] = False
    return tile, poison


def tile_space_store(array: np.ndarray, index: tuple[int, ...], tile: np.ndarray, *,
                     order: tuple[int, ...], steps: tuple[int, ...] | None,
                     check_bounds: bool, poison: np.ndarray | None = None,
                     strict: bool = True, touched: list | None = None) -> bool:
    """``ct.store`` / ``TiledView.store`` of one tile (R-STORE-3/5, R-VIEW-6).

    ``tile`` already has the array's dtype and one dimension per array dimension.  The in-bounds
    part is written through ``transpose(array, order)``; out-of-bounds lanes are discarded.
    R-UB-1 / R-UB-3 as for the load (with ``strict=False``: nothing raised, out-of-bounds lanes
    dropped).  A poisoned lane landing in bounds raises PoisonObserved (R-UB-2) before anything
    is written, so a failing store leaves the array untouched; poisoned lanes that fall out of
    bounds are fine (the load-modify-store idiom of R-PAD-3).  With ``strict=False`` poisoned
    lanes are written like any other, and the result says whether any was (the caller warns).
    With a ``touched`` list, ``("win", view, old values, new values)`` of the elements written
    is appended (races.py).
    """
    tile = np.asarray(tile)
    assert tile.dtype == array.dtype, f"tile dtype {tile.dtype} != array dtype {array.dtype}"
    view, src, dst, _ = _window(array, index, tile.shape, order, steps, check_bounds, strict,
                                "store")
    if src is None:
        return False
    observed = False
    if poison is not None:
        poison = np.broadcast_to(np.asarray(poison, dtype=bool), tile.shape)
        observed = bool(poison[dst].any())
        if observed and strict:
            pos = tuple(int(p) for p in np.argwhere(poison[dst])[0])
            pos = tuple(p + d.start for p, d in zip(pos, dst))
            raise PoisonObserved(f"store: tile element {pos} (tile index {tuple(index)}, array "
                                 f"shape {tuple(view.shape)}) holds UNDETERMINED padding and "
                                 f"was stored in bounds")
    if touched is not None:
        sub = view[src]
        touched.append(("win", sub, np.array(sub), np.asarray(tile[dst])))
    view[src] = tile[dst]
    return observed


# ----------------------------------------------------------------------------------------------
# gather / scatter / atomics (§9, §20)


def _index_int64(ind: np.ndarray) -> np.ndarray:
    """Exact int64 copy of an index array; uint64 values >= 2**63 become -1 (out of bounds).

    Every other integer dtype fits int64, so bounds tests never overflow (R-GS-3).
    """
    ind = np.asarray(ind)
    assert ind.dtype.kind in "iu", f"index dtype {ind.dtype} is not an integer type"
    out = ind.astype(np.int64)
    if ind.dtype == np.uint64:
        out[ind > np.uint64(np.iinfo(np.int64).max)] = -1
    return out


def gather_positions(array, indices, mask, check_bounds, strict, op, *shapes):
    """Common part of gather/scatter/atomics (R-GS-1/3/5, R-ATOM-6).

    Returns ``(S, idx, accessed)``: the index shape, int64 index arrays of shape S and the bool
    mask of accessed positions (``mask`` AND in bounds).  With ``check_bounds=False`` a masked-in
    out-of-bounds position is R-UB-3 (negative indices included); with ``strict=False`` it is
    simply not accessed.
    """
    indices = tuple(indices)
    assert len(indices) == array.ndim, f"{len(indices)} index arrays for rank {array.ndim}"
    shapes = shapes + tuple(np.shape(i) for i in indices)
    if mask is not None:
        shapes += (np.shape(mask),)
    S = np.broadcast_shapes(*shapes)
    idx = tuple(np.broadcast_to(_index_int64(i), S) for i in indices)
    inb = np.ones(S, dtype=bool)
    for ix, n in zip(idx, array.shape):
        inb &= (ix >= 0) & (ix < n)
    want = np.ones(S, dtype=bool) if mask is None else np.broadcast_to(
        np.asarray(mask, dtype=bool), S)
    if not check_bounds and strict:
        bad = want & ~inb
        if bad.any():
            k = tuple(int(p) for p in np.argwhere(bad)[0])
            raise OutOfBounds("R-UB-3", f"{op} with check_bounds=False: position {k} has "
                                        f"index {tuple(int(ix[k]) for ix in idx)} outside the "
                                        f"array of shape {tuple(array.shape)} (index shape {S})")
    return S, idx, want & inb


def gather(array: np.ndarray, indices: tuple[np.ndarray, ...], *, mask: np.ndarray | None,
           padding: np.ndarray, check_bounds: bool, strict: bool = True,
           with_accessed: bool = False, touched: list | None = None):
    """``ct.gather`` (R-GS-2..5): a fresh array of ``array.dtype`` and the index shape.

    Accessed positions read ``array[ind0[k], ind1[k], ...]``; the others get ``padding[k]``.
    The index shape S is the broadcast of ``padding``, the indices and the mask (for a rank-0
    array ``indices == ()`` and S comes from ``padding``).  Out-of-bounds positions with
    ``check_bounds=False`` raise R-UB-3 (with ``strict=False`` they are UNDETERMINED and get
    ``load_fill``'s value, zero; callers mark them poisoned).  With ``with_accessed=True`` returns
    ``(result, accessed)``: ``accessed`` (bool, index shape) marks the positions read from the
    array, so a caller can drop poison carried by ``padding`` there.
    """
    padding = np.asarray(padding)
    S, idx, accessed = gather_positions(array, indices, mask, check_bounds, strict, "gather",
                                  padding.shape)
    result = np.array(np.broadcast_to(padding, S), dtype=array.dtype, order="C")
    if not check_bounds:  # strict=False only: unmasked-in OOB positions would be UB
        wanted = np.ones(S, bool) if mask is None else np.broadcast_to(mask, S)
        result[wanted & ~accessed] = load_fill(array.dtype, PaddingMode.UNDETERMINED, strict)
    if array.ndim == 0:
        result[accessed] = array[()]
        sel = ()
    else:
        sel = tuple(ix[accessed] for ix in idx)
        result[accessed] = array[sel]
    if touched is not None and accessed.any():
        touched.append(("pts", point_addresses(array, sel)))
    return (result, accessed) if with_accessed else result


def scatter(array: np.ndarray, indices: tuple[np.ndarray, ...], value: np.ndarray, *,
            mask: np.ndarray | None, check_bounds: bool, poison: np.ndarray | None = None,
            strict: bool = True, touched: list | None = None) -> bool:
    """``ct.scatter`` (R-GS-3/5/6): write ``value[k]`` to ``array[ind[k]]`` where accessed.

    When several accessed positions address one element the value of the *last* of them in
    row-major order of the index shape survives (R-GS-6 leaves it unspecified; NumPy's fancy
    assignment does not promise an order, so duplicates are removed explicitly).  A poisoned
    value at an accessed position raises PoisonObserved (R-UB-2, R-PAD-3) before any write
    (with ``strict=False`` it is written, and the result says whether any was).
    """
    value = np.asarray(value)
    assert value.dtype == array.dtype, f"value dtype {value.dtype} != array dtype {array.dtype}"
    S, idx, accessed = gather_positions(array, indices, mask, check_bounds, strict, "scatter",
                                  value.shape)
    observed = False
    if poison is not None:
        bad = np.broadcast_to(np.asarray(poison, dtype=bool), S) & accessed
        observed = bool(bad.any())
        if observed and strict:
            k = tuple(int(p) for p in np.argwhere(bad)[0])
            raise PoisonObserved(f"scatter: value at position {k} of index shape {S} holds "
                                 f"UNDETERMINED padding and was stored in bounds at index "
                                 f"{tuple(int(ix[k]) for ix in idx)}")
    value = np.broadcast_to(value, S)
    if array.ndim == 0:
        if accessed.any():
            if touched is not None:
                touched.append(("pts", point_addresses(array, ()), np.ravel(array[()]),
                                np.ravel(value[()])))
            array[()] = value[()]
        return observed
    sel = tuple(ix[accessed] for ix in idx)
    vals = value[accessed]
    if vals.size > 1:
        flat = np.ravel_multi_index(sel, array.shape)
        # np.unique on the reversed list finds the last occurrence of every element.
        _, first_rev = np.unique(flat[::-1], return_index=True)
        keep = np.sort(vals.size - 1 - first_rev)
        sel = tuple(s[keep] for s in sel)
        vals = vals[keep]
    if touched is not None and vals.size:
        touched.append(("pts", point_addresses(array, sel), np.ravel(array[sel]),
                        np.ravel(vals)))
    array[sel] = vals
    return observed


def atomic_positions(array: np.ndarray, indices: tuple[np.ndarray, ...], *,
                     mask: np.ndarray | None, check_bounds: bool,
                     strict: bool = True) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """Where an atomic (R-ATOM-2/6) acts: ``(accessed, idx)``, both of the index shape S.

    ``idx`` holds C-contiguous int64 copies of the indices; the interpreter applies the
    operation at ``tuple(ix[k] for ix in idx)`` for every ``k`` with ``accessed[k]``, in
    row-major order of S, so duplicate positions see each other's updates.  Entries where
    ``accessed`` is False are meaningless (possibly out of bounds: uint64 >= 2**63 shows as -1).
    """
    _, idx, accessed = gather_positions(array, indices, mask, check_bounds, strict, "atomic")
    return np.array(accessed, order="C"), tuple(np.array(ix, order="C") for ix in idx)

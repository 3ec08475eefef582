"""Hypothesis strategies for property-testing tile kernels (needs ``hypothesis``).

They draw what breaks tile kernels: extents that are not multiples of the tile (ragged last
tiles), empty and one-element arrays, power-of-two tile shapes with the grid that covers an
array, every dtype family (bfloat16 and float8 through ml_dtypes), and values that include
the special cases (NaN, +-inf, -0.0, subnormals, the extremes of integer types).

>>> from hypothesis import given
>>> from cutile.testing import strategies as cts
>>> @given(cts.tiled_shapes(ndim=2), cts.dtypes("float"))
... def test_copy(case, dtype): ...
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np
from hypothesis import strategies as st

_FAMILIES = {
    "float": ("float16", "bfloat16", "float32", "float64"),
    "int": ("int8", "int16", "int32", "int64"),
    "uint": ("uint8", "uint16", "uint32", "uint64"),
    "bool": ("bool",),
    "float8": ("float8_e4m3fn", "float8_e5m2"),
}
_FAMILIES["integer"] = _FAMILIES["int"] + _FAMILIES["uint"]
_FAMILIES["all"] = (_FAMILIES["float"] + _FAMILIES["integer"] + _FAMILIES["bool"]
                    + _FAMILIES["float8"])


def _np_dtype(name: str) -> np.dtype:
    return np.dtype(getattr(ml_dtypes, name)) if hasattr(ml_dtypes, name) and \
        not hasattr(np, name) else np.dtype(name)


def dtypes(*families: str) -> st.SearchStrategy[np.dtype]:
    """NumPy dtypes of the given families: "float", "int", "uint", "integer", "bool",
    "float8", "all" (default "all")."""
    names: list[str] = []
    for f in families or ("all",):
        if f not in _FAMILIES:
            raise ValueError(f"unknown dtype family {f!r}; expected one of {sorted(_FAMILIES)}")
        names += [n for n in _FAMILIES[f] if n not in names]
    return st.sampled_from([_np_dtype(n) for n in names])


def tile_shapes(ndim: int = 1, *, min_side: int = 1, max_side: int = 64,
                max_elements: int = 4096) -> st.SearchStrategy[tuple]:
    """Power-of-two tile shapes (R-TILE-2) of ``ndim`` dimensions."""
    sides = [1 << k for k in range(max_side.bit_length()) if min_side <= 1 << k <= max_side]
    return st.tuples(*[st.sampled_from(sides)] * ndim).filter(
        lambda t: int(np.prod(t)) <= max_elements)


def array_shapes(ndim: int = 1, *, max_side: int = 100, tile: tuple | None = None,
                 allow_empty: bool = True) -> st.SearchStrategy[tuple]:
    """Extents that stress the edges: 0 (when ``allow_empty``), 1, multiples of the tile and
    one off, or anything up to ``max_side``."""
    def side(t):
        edge = [1, t - 1, t, t + 1, 2 * t - 1, 2 * t + 1] if t else [1]
        edge = [e for e in edge if 0 < e <= max(max_side, 1)]
        choices = [st.sampled_from(edge), st.integers(1, max(max_side, 1))]
        if allow_empty:
            choices.append(st.just(0))
        return st.one_of(*choices)
    tile = tile or (0,) * ndim
    return st.tuples(*[side(t) for t in tile])


@dataclass(frozen=True)
class TiledCase:
    """An array shape, a tile shape and the grid of tiles that covers the array."""

    shape: tuple
    tile: tuple
    grid: tuple


@st.composite
def tiled_shapes(draw, ndim: int = 1, *, max_side: int = 100, max_tile: int = 64,
                 allow_empty: bool = False) -> TiledCase:
    """A ``TiledCase``: tile shape, array shape (ragged relative to the tile) and the grid
    ``cdiv(shape, tile)`` (at least one block per dimension)."""
    tile = draw(tile_shapes(ndim, max_side=max_tile))
    shape = draw(array_shapes(ndim, max_side=max_side, tile=tile, allow_empty=allow_empty))
    grid = tuple(max(1, -(-s // t)) for s, t in zip(shape, tile))
    return TiledCase(shape, tile, grid)


def _specials(dtype: np.dtype) -> np.ndarray:
    if dtype.kind == "b":
        return np.array([False, True])
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        vals = [0, 1, info.max, info.min, info.max - 1] + ([-1, info.min + 1]
                                                            if dtype.kind == "i" else [])
        return np.array(vals, dtype=dtype)
    ml = dtype.type.__module__.startswith("ml_dtypes")   # float8_e5m2 says kind "f"
    fin = ml_dtypes.finfo(dtype) if ml else np.finfo(dtype)
    vals = [0.0, -0.0, 1.0, -1.0, float(fin.max), -float(fin.max), float(fin.tiny),
            float(fin.smallest_subnormal), -float(fin.smallest_subnormal)]
    with np.errstate(all="ignore"):
        probe = np.array([np.inf, np.nan], np.float32).astype(dtype).astype(np.float32)
    vals += [v for v, p in zip([np.inf, -np.inf, np.nan], [probe[0], probe[0], probe[1]])
             if not np.isfinite(p) or np.isnan(p)]
    with np.errstate(all="ignore"):
        return np.array(vals, np.float64).astype(dtype)


@st.composite
def arrays(draw, dtype, shape, *, special: float = 0.1, magnitude: int = 3) -> np.ndarray:
    """An array of ``dtype`` and ``shape``: realistic values (floats normal with scales
    10^-magnitude .. 10^magnitude, integers mostly small, some anywhere in range) and, with
    probability ``special`` per element, the special values of the dtype."""
    dtype = np.dtype(dtype)
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if dtype.kind == "b":
        v = rng.random(n) < 0.5
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        wide = rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
        small = rng.integers(-5 if dtype.kind == "i" else 0, 6, size=n).astype(dtype)
        v = np.where(rng.random(n) < 0.7, small, wide).astype(dtype)
    else:
        v = rng.standard_normal(n) * 10.0 ** rng.integers(-magnitude, magnitude + 1, size=n)
        with np.errstate(all="ignore"):
            v = v.astype(dtype)
    if special and n:
        sp = _specials(dtype)
        pick = rng.random(n) < special
        v = np.where(pick, sp[rng.integers(0, len(sp), size=n)], v).astype(dtype)
    return v.reshape(shape)

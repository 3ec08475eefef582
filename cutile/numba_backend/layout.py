"""Tile layouts: which thread holds which tile element in which register (linear, bit-wise).

Every tile dimension is a power of two (R-TILE-1) and so is the thread count ``T``, so a layout
can name, for every bit of every element coordinate, where that bit comes from: a bit of the
thread id (``("t", i)``) or a bit of the register index (``("r", i)``).  Thread bits that no
coordinate uses make *replicas*: those threads hold the same elements (a scalar is held by every
thread; a 16-element tile over 64 threads is held four times).  This is the "linear layout"
idea of Triton, restricted to what the backend needs:

- ``flat(shape, T)``: thread ``t`` holds row-major flat elements ``t + k*T`` (the default: loads
  and stores are coalesced, elementwise chains stay in registers);
- ``blocked(shape, T, ty, tx)``: a 2-D cyclic distribution of the last two dims over a
  ``ty x tx`` thread grid; each thread holds a ``(M/ty) x (N/tx)`` register sub-tile (the mma
  accumulator, thread coarsening);
- anything derived from those by the reductions (dropping bits) or by relabelling size-1 dims.

For each register ``k`` the coordinate along dim ``j`` is ``tc_j(t) + off_j(k)``: the thread
part is computed once per kernel, the register part is a compile-time constant, so the
generated code indexes with one add per dimension.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

Bit = tuple  # ("t", i) or ("r", i)


def log2(n: int) -> int:
    assert n > 0 and n & (n - 1) == 0, f"{n} is not a power of two"
    return n.bit_length() - 1


class Layout:
    """A linear distribution of a tile of ``shape`` over ``T`` threads (see module doc)."""

    __slots__ = ("shape", "T", "bits", "__dict__")

    def __init__(self, shape: tuple, T: int, bits: tuple):
        self.shape = tuple(int(d) for d in shape)
        self.T = int(T)
        self.bits = tuple(tuple(b) for b in bits)
        assert len(self.bits) == len(self.shape)
        for d, bl in zip(self.shape, self.bits):
            assert len(bl) == log2(d), (self.shape, self.bits)
        regs = sorted(i for bl in self.bits for k, i in bl if k == "r")
        assert regs == list(range(len(regs))), f"register bits not dense: {self.bits}"
        thr = sorted(i for bl in self.bits for k, i in bl if k == "t")
        assert len(set(thr)) == len(thr) and all(i < log2(T) for i in thr), self.bits

    # -- identity --------------------------------------------------------------------------
    @cached_property
    def key(self) -> tuple:
        return (self.shape, self.T, self.bits)

    def __eq__(self, other) -> bool:
        return isinstance(other, Layout) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"Layout({self.shape}, T={self.T}, regs={self.nregs}, {self.describe()})"

    def describe(self) -> str:
        parts = []
        for bl in self.bits:
            parts.append("".join(f"{k}{i}" for k, i in reversed(bl)) or "-")
        return "[" + " | ".join(parts) + "]"

    # -- sizes -----------------------------------------------------------------------------
    @cached_property
    def nregs(self) -> int:
        return 1 << sum(1 for bl in self.bits for k, _ in bl if k == "r")

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @cached_property
    def thread_mask(self) -> int:
        """Thread-id bits used by some coordinate."""
        m = 0
        for bl in self.bits:
            for k, i in bl:
                if k == "t":
                    m |= 1 << i
        return m

    @property
    def replica_mask(self) -> int:
        """Thread-id bits that no coordinate uses: threads differing there hold the same data."""
        return (self.T - 1) & ~self.thread_mask

    # -- coordinates -----------------------------------------------------------------------
    def reg_offsets(self, k: int) -> tuple:
        """Compile-time part of the coordinates of register ``k``."""
        out = []
        for bl in self.bits:
            c = 0
            for b, (kind, i) in enumerate(bl):
                if kind == "r" and (k >> i) & 1:
                    c |= 1 << b
            out.append(c)
        return tuple(out)

    def thread_runs(self, j: int) -> list:
        """The thread part of dim ``j`` as runs ``(t_shift, width, coord_shift)``."""
        runs = []
        for b, (kind, i) in enumerate(self.bits[j]):
            if kind != "t":
                continue
            if runs and runs[-1][0] + runs[-1][1] == i and runs[-1][2] + runs[-1][1] == b:
                runs[-1] = (runs[-1][0], runs[-1][1] + 1, runs[-1][2])
            else:
                runs.append((i, 1, b))
        return runs

    def thread_coord_expr(self, j: int, tid: str) -> str:
        """Python expression of the thread part of coordinate ``j`` (``"0"`` if none)."""
        terms = []
        for ts, w, cs in self.thread_runs(j):
            e = f"({tid} >> {ts})" if ts else tid
            e = f"({e} & {(1 << w) - 1})"
            if cs:
                e = f"({e} << {cs})"
            terms.append(e)
        return " | ".join(terms) if terms else "0"

    def thread_coord(self, j: int, t: np.ndarray) -> np.ndarray:
        c = np.zeros_like(t)
        for ts, w, cs in self.thread_runs(j):
            c |= ((t >> ts) & ((1 << w) - 1)) << cs
        return c

    # -- analysis tables -------------------------------------------------------------------
    @cached_property
    def table(self) -> np.ndarray:
        """``coords[t, k, j]``: coordinate ``j`` of the element thread ``t`` holds in reg ``k``."""
        t = np.arange(self.T, dtype=np.int64)[:, None]
        out = np.zeros((self.T, self.nregs, len(self.shape)), dtype=np.int64)
        offs = np.array([self.reg_offsets(k) for k in range(self.nregs)], dtype=np.int64)
        for j in range(len(self.shape)):
            out[:, :, j] = self.thread_coord(j, t) + offs[None, :, j]
        return out

    def holder(self, coords: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For element coordinates ``coords[..., j]``: (required thread bits, register index)."""
        tbits = np.zeros(coords.shape[:-1], dtype=np.int64)
        reg = np.zeros(coords.shape[:-1], dtype=np.int64)
        for j, bl in enumerate(self.bits):
            for b, (kind, i) in enumerate(bl):
                bit = (coords[..., j] >> b) & 1
                if kind == "t":
                    tbits |= bit << i
                else:
                    reg |= bit << i
        return tbits, reg

    # -- derived layouts -------------------------------------------------------------------
    def relabel(self, shape: tuple) -> Layout:
        """The same distribution seen with size-1 dims inserted or removed (same size)."""
        shape = tuple(shape)
        real = [bl for d, bl in zip(self.shape, self.bits) if d != 1]
        bits, it = [], iter(real)
        for d in shape:
            bits.append(() if d == 1 else next(it))
        assert [d for d in shape if d != 1] == [d for d in self.shape if d != 1], \
            (self.shape, shape)
        return Layout(shape, self.T, tuple(bits))

    def drop_top_bit(self, j: int) -> Layout:
        """Halve dim ``j`` by removing its most significant coordinate bit.  A register bit
        goes (register bits above it move down by one); a thread bit becomes a replica bit
        (the two threads it told apart now hold the same element: a reduction's result)."""
        bl = self.bits[j]
        kind, ri = bl[-1]
        bits = []
        for jj, b in enumerate(self.bits):
            if jj == j:
                b = b[:-1]
            if kind == "r":
                b = tuple((k, i - 1 if (k == "r" and i > ri) else i) for k, i in b)
            bits.append(b)
        shape = list(self.shape)
        shape[j] //= 2
        return Layout(tuple(shape), self.T, tuple(bits))

    def reduced(self, axes) -> Layout:
        """The layout a reduction along ``axes`` leaves (keepdims shape): every bit of those
        axes dropped, from the top, as the reduction tree consumes them (``drop_top_bit``).
        One definition for the layout assignment and the lowering (lower/reduce.py)."""
        lay = self
        for ax in axes:
            while lay.shape[ax] > 1:
                lay = lay.drop_top_bit(ax)
        return lay


# -- constructors --------------------------------------------------------------------------------
def _split_flat(shape: tuple, flat_src: list) -> tuple:
    """Per-dim bit sources from the sources of the row-major flat index bits (LSB first)."""
    bits, pos = [], 0
    dims = []
    for d in reversed(shape):
        n = log2(d)
        dims.append(tuple(flat_src[pos:pos + n]))
        pos += n
    bits = tuple(reversed(dims))
    return bits


def flat(shape: tuple, T: int) -> Layout:
    """Thread ``t`` holds flat elements ``t + k*T`` (row-major); small tiles are replicated."""
    shape = tuple(shape)
    nbits = sum(log2(d) for d in shape)
    tb = log2(T)
    src = [("t", i) if i < tb else ("r", i - tb) for i in range(nbits)]
    return Layout(shape, T, _split_flat(shape, src))


def replicated(shape: tuple, T: int) -> Layout:
    """Every thread holds every element (register ``k`` = flat element ``k``)."""
    shape = tuple(shape)
    nbits = sum(log2(d) for d in shape)
    return Layout(shape, T, _split_flat(shape, [("r", i) for i in range(nbits)]))


def blocked(shape: tuple, T: int, ty: int, tx: int) -> Layout:
    """2-D cyclic distribution of the last two dims over a ``ty x tx`` thread grid.

    Thread ``t = ty_i * tx + tx_i`` holds rows ``ty_i + i*ty`` and columns ``tx_i + j*tx``;
    register ``k = ((b * RM) + i) * RN + j`` (leading batch dims, if any, are register bits
    above the sub-tile).
    """
    shape = tuple(shape)
    M, N = shape[-2], shape[-1]
    assert ty * tx <= T and M % ty == 0 and N % tx == 0
    ltx, lty = log2(tx), log2(ty)
    rn, rm = log2(N) - ltx, log2(M) - lty
    col = [("t", i) for i in range(ltx)] + [("r", i) for i in range(rn)]
    row = [("t", ltx + i) for i in range(lty)] + [("r", rn + i) for i in range(rm)]
    r = rn + rm
    lead = []
    for d in reversed(shape[:-2]):
        n = log2(d)
        lead.append(tuple(("r", r + i) for i in range(n)))
        r += n
    bits = tuple(reversed(lead)) + (tuple(row), tuple(col))
    return Layout(shape, T, bits)


def choose_blocked(shape: tuple, T: int) -> Layout:
    """The accumulator layout of an mma: a thread grid as square as the tile allows, at most
    ``T`` threads, each with a sub-tile of at least 2 columns when possible."""
    M, N = shape[-2], shape[-1]
    tx = 1
    ty = 1
    # Grow the thread grid alternately along N and M while threads remain.
    while tx * ty < T:
        if tx <= ty and tx < N:
            tx *= 2
        elif ty < M:
            ty *= 2
        elif tx < N:
            tx *= 2
        else:
            break
    return blocked(shape, T, ty, tx)


# -- conversions ---------------------------------------------------------------------------------
def rename_map(src: Layout, dst: Layout, dst_to_src) -> list | None:
    """If every thread already holds, in ``src``, the source element of each of its ``dst``
    registers, at a register index the same for all threads, return that index per ``dst``
    register (a free conversion).  ``dst_to_src`` maps a coords array ``[..., ndim_dst]`` to
    source coords ``[..., ndim_src]``."""
    coords = dst.table                                 # [T, Kd, nd]
    scoords = dst_to_src(coords)                       # [T, Kd, ns]
    tbits, reg = src.holder(scoords)                   # [T, Kd]
    t = np.arange(dst.T, dtype=np.int64)[:, None]
    if not np.all((t & src.thread_mask) == tbits):
        return None
    if not np.all(reg == reg[0:1, :]):
        return None
    return [int(r) for r in reg[0]]


def identity_map(coords):
    return coords

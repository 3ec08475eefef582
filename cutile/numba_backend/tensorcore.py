"""The tensor-core plan of an ``Mma``: warp grid, mma fragment layout, swizzled staging and the
``ldmatrix`` addresses (pure Python: the CPU tests check every index against NumPy models of
the instructions; ``lower/matmul.py`` emits the code, ``ptx.py`` holds the intrinsics).

tfloat32 operands (``x.astype(ct.tfloat32)``) use ``mma.sync.m16n8k8.tf32`` with the same
warp grid and C fragments: A (4 float32 registers per 16x8 tile, a chunk being 4 elements) is
read with the same ``ldmatrix.x4`` addresses; B has no 32-bit transposed ``ldmatrix``, so each
lane loads its two B values (``B[t + 4h, g]``) from the swizzled buffer.  int8/uint8 operands
(int32 accumulator) use ``mma.sync.m16n8k32``: A as for the others (a chunk is 16 elements);
B is staged transposed (``N x K``), so ``ldmatrix.x4`` without ``.trans`` gives each lane the
four consecutive k of its column that the B fragment holds.

One ``mma.sync.m16n8k16`` (float16 or bfloat16 operands, float32 accumulator) per 16x8 output
tile and 16-deep k step.  The ``T/32`` warps form a ``WM x WN`` grid over the ``M x N``
accumulator; warp ``(wm, wn)`` owns an ``(16*MI) x (8*NI)`` sub-tile, ``MI x NI`` mma tiles
whose C fragments stay in registers across the K loop.  Fragment of lane ``l`` (``g = l >> 2``,
``t = l & 3``), register ``c`` of mma tile ``(mi, ni)``: row ``16*mi + g + 8*(c >> 1)``, column
``8*ni + 2*t + (c & 1)``; as a linear layout (``layout.py``) register ``c + 4*(ni + NI*mi)``.

A (``M x K``) and B (``K x N``) are staged row-major in shared memory as 16-bit values with the
16-byte chunks of each row XOR-swizzled (``swizzle``): the eight 16-byte rows one ``ldmatrix``
phase reads then fall in eight different groups of four banks, conflict free.  A fragments are
read with ``ldmatrix.x4`` (rows of A), B fragments with ``ldmatrix.x4.trans`` (rows of B are k,
the transposed load gives each lane the column-major pairs the instruction expects).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import dtypes as dt
from . import layout as L

# operand dtype -> PTX type of the mma (float32 accumulation): m16n8k16 for the 16-bit
# floats, m16n8k8 for tfloat32 (float32 containers whose low 13 mantissa bits are zero)
MMA_KIND = {dt.float16: "f16", dt.bfloat16: "bf16", dt.tfloat32: "tf32", dt.int8: "s8",
            dt.uint8: "u8"}
MMA_M, MMA_N, MMA_K = 16, 8, 16
# (e4m3/e5m2: float8, Hopper's wgmma only, ``wgmma.py``)
KIND_K = {"f16": 16, "bf16": 16, "tf32": 8, "s8": 32, "u8": 32,   # k depth of one mma
          "e4m3": 32, "e5m2": 32}
KIND_EPC = {"f16": 8, "bf16": 8, "tf32": 4, "s8": 16, "u8": 16,   # elements per 16 bytes
            "e4m3": 16, "e5m2": 16}
KIND_ACC = {"f16": dt.float32, "bf16": dt.float32, "tf32": dt.float32, "s8": dt.int32,
            "u8": dt.int32, "e4m3": dt.float32, "e5m2": dt.float32}
INT_KINDS = ("s8", "u8")      # m16n8k32: B is staged transposed (k contiguous per column)


def swizzle_params(ncols: int, epc: int = 8) -> tuple[int, int]:
    """(shift, mask) of the chunk swizzle of a row of ``ncols`` elements, ``epc`` to a
    16-byte chunk: chunk ``c`` of row ``r`` is stored at ``c ^ ((r >> shift) & mask)``."""
    cpr = max(ncols // epc, 1)                     # 16-byte chunks per row
    mask = min(cpr, 8) - 1
    shift = 0 if cpr >= 8 else L.log2(8 // cpr)
    return shift, mask


def panel_width(ncols: int, epc: int) -> int:
    """Elements per row of one column panel of the wgmma layout (``rows`` given to
    ``swizzle``): 128 bytes, or the whole row when narrower."""
    return min(ncols, 8 * epc)


def swizzle(row, col, ncols: int, epc: int = 8, rows: int | None = None):
    """Element index of ``(row, col)`` in a swizzled row-major ``? x ncols`` tile (ints or
    NumPy arrays).  Linear over GF(2) in the bits of ``row`` and ``col``.

    ``rows``: the tile has ``rows`` rows and is stored as column panels 128 bytes wide
    (``panel_width``; panel ``p`` at element ``p * rows * width``), each panel swizzled as
    a tile of its width: the canonical layouts wgmma's descriptors address (``wgmma.py``;
    the same as the plain form for rows of at most 128 bytes)."""
    if rows is not None and ncols > 8 * epc:
        pw = 8 * epc
        return (col >> L.log2(pw)) * (rows * pw) + swizzle(row, col & (pw - 1), pw, epc)
    sh, mask = swizzle_params(ncols, epc)
    return row * ncols + (col ^ (((row >> sh) & mask) << L.log2(epc)))


def swizzle_expr(row: str, col: str, ncols: int, epc: int = 8, rows: int | None = None) -> str:
    """``swizzle`` as a Python expression of the expressions ``row`` and ``col``."""
    if rows is not None and ncols > 8 * epc:
        pw = 8 * epc
        inner = swizzle_expr(row, f"(({col}) & {pw - 1})", pw, epc)
        return f"(((({col}) >> {L.log2(pw)}) << {L.log2(rows * pw)}) ^ {inner})"
    sh, mask = swizzle_params(ncols, epc)
    r = f"({row} >> {sh})" if sh else f"({row})"
    sw = f"(({r} & {mask}) << {L.log2(epc)})" if mask else ""
    lk = L.log2(ncols)
    if row == "0":
        return col
    return f"((({row}) << {lk}) ^ ({col}){' ^ ' + sw if sw else ''})"


@dataclass(frozen=True)
class TCPlan:
    M: int
    N: int
    K: int
    T: int
    WM: int
    WN: int
    kind: str
    bt: bool = False         # B staged transposed (N x K): read with ldmatrix without .trans

    @property
    def MI(self) -> int:
        return self.M // self.WM // MMA_M

    @property
    def NI(self) -> int:
        return self.N // self.WN // MMA_N

    @property
    def mk(self) -> int:
        """k depth of one mma instruction."""
        return KIND_K[self.kind]

    @property
    def epc(self) -> int:
        """Operand elements per 16-byte chunk of shared memory."""
        return KIND_EPC[self.kind]

    @property
    def esize(self) -> int:
        """Bytes of one staged operand element."""
        return 16 // self.epc

    @property
    def b_transposed(self) -> bool:
        """Whether B lies transposed in shared memory (int8/uint8 always, ``bt``)."""
        return self.bt or self.kind in INT_KINDS

    def prefix(self) -> str:
        """Name prefix of the per-thread values (they depend on shape, kind and B's layout)."""
        return f"_tc{self.M}x{self.N}x{self.K}{self.kind}{'t' if self.bt else ''}_"

    def describe(self) -> str:
        return (f"tensor-core mma.sync m16n8k{self.mk}.{self.kind} {self.M}x{self.N}x{self.K}: "
                f"{self.WM}x{self.WN} warps, {self.MI}x{self.NI} mma tiles per warp"
                + (", B staged transposed" if self.bt else ""))

    # -- the accumulator layout --------------------------------------------------------------
    def layout(self) -> L.Layout:
        lmi, lni = L.log2(self.MI), L.log2(self.NI)
        lwm, lwn = L.log2(self.WM), L.log2(self.WN)
        row = ([("t", 2), ("t", 3), ("t", 4), ("r", 1)] + [("r", 2 + lni + i) for i in range(lmi)]
               + [("t", 5 + lwn + i) for i in range(lwm)])
        col = ([("r", 0), ("t", 0), ("t", 1)] + [("r", 2 + i) for i in range(lni)]
               + [("t", 5 + i) for i in range(lwn)])
        return L.Layout((self.M, self.N), self.T, (tuple(row), tuple(col)))

    def reg(self, mi: int, ni: int, c: int) -> int:
        """Register index of C fragment element ``c`` of mma tile ``(mi, ni)``."""
        return c + 4 * (ni + self.NI * mi)

    # -- per-thread values computed once (name -> expression of tid and earlier names) -------
    def hoisted(self, p: str) -> dict[str, str]:
        lwn = L.log2(self.WN)
        wm = f"((tid >> {5 + lwn}) & {self.WM - 1})" if self.WM > 1 else "0"
        wn = f"((tid >> 5) & {self.WN - 1})" if self.WN > 1 else "0"
        e = self.epc
        le = L.log2(e)
        sha, ma = swizzle_params(self.K, e)
        shb, mb = swizzle_params(self.N, e)
        WMs, WNs = self.M // self.WM, self.N // self.WN
        h = {
            f"{p}l7": "(tid & 7)",
            f"{p}j": "((tid >> 3) & 3)",
            # A: lane supplies row (l & 7) + 8*(j & 1) of mma rows, k chunk j >> 1 (for
            # tfloat32 a chunk is 4 elements: the x4 matrices are a0..a3 of m16n8k8 too)
            f"{p}ar": f"(({wm} * {WMs} + {p}l7 + (({p}j & 1) << 3)) << {L.log2(self.K)})",
            f"{p}ac": f"((({p}j >> 1) << {le}) ^ ((({p}l7 >> {sha}) & {ma}) << {le}))",
        }
        if self.kind in INT_KINDS or self.bt:
            # B staged transposed (N x K): ldmatrix.x4 (non-trans) rows are columns n of B;
            # matrices 0, 1: tile ni, k chunks 0, 1 (b0, b1); 2, 3: tile ni + 1
            shb, mb = swizzle_params(self.K, e)
            h[f"{p}btr"] = (f"(({wn} * {WNs} + {p}l7 + (({p}j >> 1) << 3)) << "
                            f"{L.log2(self.K)})")
            h[f"{p}btc"] = f"((({p}j & 1) << {le}) ^ ((({p}l7 >> {shb}) & {mb}) << {le}))"
            return h
        if self.kind == "tf32":
            # B: lane (g, t) reads B[t + 4h, g] of each 8x8 tile (no 32-bit ldmatrix.trans):
            # the thread part of the swizzled index, XORed with the tile's constant part
            for hh in (0, 1):
                h[f"{p}bq{hh}"] = swizzle_expr(f"((tid & 3) + {4 * hh})",
                                               f"({wn} * {WNs} + ((tid >> 2) & 7))", self.N, e)
            return h
        h.update({
            # B: lane supplies k row (l & 7) + 8*(j & 1), n chunk j >> 1 (x4.trans)
            f"{p}br": f"(({p}l7 + (({p}j & 1) << 3)) << {L.log2(self.N)})",
            f"{p}bc": f"(({wn} * {WNs}) ^ {('((' + p + 'j >> 1) << 3)') if self.NI > 1 else '0'}"
                      f" ^ ((({p}l7 >> {shb}) & {mb}) << 3))",
        })
        return h

    def a_index(self, p: str, mi: int, kk: int) -> str:
        """Index in the A buffer this lane gives ``ldmatrix.x4`` for tile ``mi``, k step
        ``kk`` (fragments a0..a3)."""
        off = mi * MMA_M * self.K
        return f"{p}ar + {off} + ({kk * self.mk} ^ {p}ac)" if off else \
            f"{p}ar + ({kk * self.mk} ^ {p}ac)"

    def bt_index(self, p: str, ni: int, kk: int) -> str:
        """int8/uint8: index in the transposed B buffer this lane gives ``ldmatrix.x4`` (x2
        when NI == 1) for n tiles ``ni, ni + 1``, k step ``kk``."""
        off = ni * MMA_N * self.K
        return f"{p}btr + {off} + ({kk * self.mk} ^ {p}btc)" if off else \
            f"{p}btr + ({kk * self.mk} ^ {p}btc)"

    def b_scalar_index(self, p: str, ni: int, kk: int, hh: int) -> str:
        """tfloat32: index in the B buffer of this lane's ``b{hh}`` of n tile ``ni``, k step
        ``kk`` (``B[8 kk + t + 4 hh, 8 ni + g]`` of the warp's columns)."""
        c = int(swizzle(kk * 8, ni * MMA_N, self.N, self.epc))
        return f"({p}bq{hh} ^ {c})" if c else f"{p}bq{hh}"

    def b_index(self, p: str, ni: int, kk: int) -> str:
        """Index in the B buffer for ``ldmatrix.x4.trans`` of n tiles ``ni, ni+1`` (``x2`` of
        tile ``ni`` when NI == 1), k step ``kk`` (fragments b0, b1 of each)."""
        off = kk * MMA_K * self.N
        return f"{p}br + {off} + ({p}bc ^ {ni * MMA_N})" if off else \
            f"{p}br + ({p}bc ^ {ni * MMA_N})"


def plan(op, T: int, rows_in_warps: bool = False) -> TCPlan | None:
    """The tensor-core plan of an ``Mma`` at ``T`` threads, or None where it does not apply
    (other dtypes, batched, a non-float32 accumulator, tiles too small for the warps).

    The warps split the tile as squarely as possible, or, with ``rows_in_warps`` (the kernel
    reduces an mma result along its rows: attention's softmax), along M only where M allows,
    so each row lies in one warp and its reduction needs shuffles, no shared memory and no
    barrier (each warp then reads all of B: more shared-memory reads, fewer registers)."""
    xd, yd, ad = op.x.type.dtype, op.y.type.dtype, op.acc.type.dtype
    kind = MMA_KIND.get(xd)
    if kind is None or yd is not xd or ad is not KIND_ACC[kind] or len(op.x.type.shape) != 2:
        return None
    M, K = op.x.type.shape
    N = op.y.type.shape[-1]
    if T < 32 or K < KIND_K[kind] or M < MMA_M or N < MMA_N:
        return None
    W = T // 32
    if rows_in_warps and M % W == 0 and M // W >= MMA_M:
        return TCPlan(M, N, K, T, W, 1, kind)
    best = None
    wm = 1
    while wm <= W:
        wn = W // wm
        if M // wm >= MMA_M and N // wn >= MMA_N and M % wm == 0 and N % wn == 0:
            # warp sub-tile as square as possible; ties: more rows per warp
            score = (abs(L.log2(M // wm) - L.log2(N // wn)), -(M // wm))
            if best is None or score < best[0]:
                best = (score, wm, wn)
        wm *= 2
    if best is None:
        return None
    return TCPlan(M, N, K, T, best[1], best[2], kind)

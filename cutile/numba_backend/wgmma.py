"""Hopper's warpgroup mma (``wgmma.mma_async``, sm_90a): the plan of an ``Mma`` that takes it,
its accumulator layout and the shared-memory descriptors of its operands (pure Python: the
CPU tests check every index; ``lower/matmul_tc.py`` emits the code, ``ptx_text.py`` holds
the instructions).

float8 (e4m3, e5m2) takes ``m64nNk32``: 8-bit operands are both read K-major (B staged
transposed), 32 k (32 bytes) per step, and each mma call's sums are added to the accumulator
in float32 (``WGPlan.promotes``).

A warpgroup is four consecutive warps (128 threads).  ``wgmma.m64nNk16`` multiplies a 64 x 16
slice of A by a 16 x N slice of B into a 64 x N float32 accumulator spread over the
warpgroup: warp ``w`` holds rows ``16w .. 16w+15``, lane ``l`` of it register ``j`` at row
``16w + l/4 + 8*((j/2)%2)``, column ``8*(j/4) + 2*(l%4) + j%2``, i.e. the C fragment of
``mma.sync.m16n8`` repeated over the N/8 column blocks.  The ``T/128`` warpgroups of a block
split the tile along M only (``GM``), each taking ``MI`` consecutive 64-row blocks, so every
row of the accumulator lies in one warp (a row reduction needs shuffles only, as the
``rows_in_warps`` plans of ``tensorcore.py``).

Both operands are read from shared memory through 64-bit matrix descriptors (start address,
leading and stride byte offsets, swizzle mode).  The staging (``tensorcore.swizzle`` with
``rows``) stores a tile as column panels 128 bytes wide, each panel row-major with the
16-byte chunks of row ``r`` XOR-swizzled as the 128/64/32-byte swizzle of its width does,
which are the canonical layouts the descriptors address:

- A (M x K, K contiguous) and a transposed B (``bt``: N x K): *K-major*, swizzle by the
  panel's row bytes, stride byte offset 8 rows (the next 8-row core-matrix group), leading
  byte offset unused; a k16 step moves the start address 32 bytes along the row, or to the
  next panel;
- B (K x N, N contiguous): *MN-major*, the instruction's transpose-B flag set, leading byte
  offset = the stride between 64-column panels, stride byte offset = 8 rows; a k16 step is
  16 rows down.

``tools/gpu/wgmma_probe.py --parts layouts`` checked these encodings exactly on an H200 for
K in 16..256 and N in 16..128 (the other assignment of the MN-major offsets is wrong there);
the swizzle is applied by the hardware to address bits, so every operand buffer starts on
a 1024-byte boundary (``smem.py``'s ``align1024``) and every tile offset is a multiple of
its swizzle atom (8 rows of the panel).

Synchronisation: shared-memory writes (``st.shared``, ``cp.async``) are made visible to the
wgmma's async proxy by ``fence.proxy.async`` in each writing thread before the barrier that
publishes them; ``wgmma.fence`` precedes the first wgmma of a K step (the accumulators were
last written by ordinary instructions), ``wgmma.commit_group`` + ``wait_group 0`` follow the
last, so the staging buffers may be overwritten after the next barrier.  The fence and the
wait take the accumulators as tied operands: no other instruction on them can be scheduled
into the asynchronous window.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import dtypes as dt
from . import layout as L
from .ptx_text import WGMMA_8BIT
from .tensorcore import KIND_ACC, KIND_K, TCPlan

WG_THREADS = 128
# operand dtype -> PTX type of a wgmma with float32 accumulation: m64nNk16 for the 16-bit
# floats, m64nNk32 for float8 (mma.sync has no float8 form before sm_89: tensorcore.py)
WG_KIND = {dt.float16: "f16", dt.bfloat16: "bf16", dt.float8_e4m3fn: "e4m3",
           dt.float8_e5m2: "e5m2"}
# the transposed-B flag exists for 16-bit types only: 8-bit operands are both read K-major,
# so a float8 B (K x N) is staged transposed (N x K)
K_MAJOR_KINDS = WGMMA_8BIT
MAX_ACC_REGS = 128              # accumulator registers per thread (m64n256)
# registers a wgmma kernel needs beyond its accumulators: ptxas refuses to assemble below
# that (C7602, "insufficient registers"; the 128x128x32 matmul's m64n128 needs 90 for its 64
# accumulators) rather than spilling, so a tighter launch bound keeps mma.sync
EXTRA_REGS = 32
SWIZZLE_CODE = {128: 1, 64: 2, 32: 3}   # panel row bytes -> descriptor bits 62-63


@dataclass(frozen=True)
class WGPlan(TCPlan):
    """A ``TCPlan`` whose warps are ``GM`` warpgroups along M (``WM = 4 GM``, ``WN = 1``):
    ``MI`` 64-row blocks per warpgroup, the whole N per instruction."""

    GM: int = 1

    @property
    def MI(self) -> int:
        return self.M // (64 * self.GM)

    @property
    def acc_regs(self) -> int:
        """Accumulator registers per thread (all ``MI`` blocks)."""
        return self.MI * self.N // 2

    @property
    def promotes(self) -> bool:
        """float8: each mma call's products are summed by the wgmmas into fresh registers,
        one 64-row block (and ``promote_n`` columns) at a time, then added to the
        accumulator in float32 (``FADD``).
        The tensor cores add a float8 k32 step to their accumulator keeping about 14 bits,
        so a K loop accumulating in them drifts with K (measured on an H200: max |C -
        exact| = 4962 * 2**-23 * |a| @ |b| at K = 4096; the real cuTile, which promotes,
        72); promoted, the error is one call's."""
        return self.kind in K_MAJOR_KINDS

    @property
    def promote_n(self) -> int:
        """Columns one promoted group of wgmmas sums into fresh registers: the whole N up to
        128, else 128 at a time (the fresh sums of an m64n256 beside its 128 accumulators
        would not fit 255 registers; the first 64 registers of the m64n256 fragment are the
        m64n128 fragment of its first 128 columns, so halves need no relayout)."""
        return min(self.N, 128)

    @property
    def regs_needed(self) -> int:
        """Accumulator registers live at once: the accumulators, and one group's fresh sums
        while ``promotes``."""
        return self.acc_regs + (self.promote_n // 2 if self.promotes else 0)

    def b_half_offset(self, h: int) -> int:
        """Bytes from B's start to row ``h * promote_n`` of the K-major (N x K) B: the
        descriptor of a promoted group's columns."""
        return h * self.promote_n * self._pw(self.K) * self.esize

    @property
    def b_transposed(self) -> bool:
        """Whether B lies transposed (N x K, K-major) in shared memory: ``bt`` (the kernel
        transposed a loaded tile), or any float8 B (``lower/staging.py`` transposes it)."""
        return self.bt or self.kind in K_MAJOR_KINDS

    def describe(self) -> str:
        b = "B^T K-major" if self.b_transposed else "B MN-major"
        return (f"tensor-core wgmma m64n{self.N}k{self.mk}.{self.kind} "
                f"{self.M}x{self.N}x{self.K}: "
                f"{self.GM} warpgroup(s) along M, {self.MI} x m64 each, A K-major, {b}, "
                f"operands by descriptor")

    def prefix(self) -> str:
        return f"_wg{self.M}x{self.N}x{self.K}{self.kind}{'t' if self.bt else ''}_"

    def layout(self) -> L.Layout:
        """Register ``c + 4*(ni + NI*mi)`` of thread ``t``: row ``64*(MI*g + mi) + 16*w +
        l/4 + 8*(c/2)``, column ``8*ni + 2*(l%4) + c%2`` (``g = t/128``, ``w = (t/32)%4``,
        ``l = t%32``)."""
        lmi, lni, lgm = L.log2(self.MI), L.log2(self.NI), L.log2(self.GM)
        row = ([("t", 2), ("t", 3), ("t", 4), ("r", 1), ("t", 5), ("t", 6)]
               + [("r", 2 + lni + i) for i in range(lmi)] + [("t", 7 + i) for i in range(lgm)])
        col = [("r", 0), ("t", 0), ("t", 1)] + [("r", 2 + i) for i in range(lni)]
        return L.Layout((self.M, self.N), self.T, (tuple(row), tuple(col)))

    # -- descriptors (offsets in bytes: ``esize`` 2 for 16-bit operands, 1 for float8) -------
    def _pw(self, cols: int) -> int:
        return min(cols, 128 // self.esize)

    def a_hi(self) -> int:
        """The constant bits (offsets, swizzle) of A's descriptors."""
        return desc_hi(16, 8 * self._pw(self.K) * self.esize, self._pw(self.K) * self.esize)

    def b_hi(self) -> int:
        """The constant bits of B's descriptors (K-major when transposed, else MN-major)."""
        if self.b_transposed:
            pw = self._pw(self.K)
            return desc_hi(16, 8 * pw * self.esize, pw * self.esize)
        pw = self._pw(self.N)
        return desc_hi(self.K * pw * self.esize, 8 * pw * self.esize, pw * self.esize)

    def a_group_offset(self) -> int:
        """Elements from A's start to warpgroup 1's first row (warpgroup ``g``: ``g`` times)."""
        return self.MI * 64 * self._pw(self.K)

    def a_step(self, mi: int, kk: int) -> int:
        """Bytes from a warpgroup's A start to 64-row block ``mi``, k step ``kk`` (of
        ``mk``: 16, or 32 for float8; 32 bytes either way)."""
        pw = self._pw(self.K)
        k = self.mk * kk
        return ((k // pw) * self.M * pw + (k % pw) + mi * 64 * pw) * self.esize

    def b_step(self, kk: int) -> int:
        """Bytes from B's start to k step ``kk``."""
        k = self.mk * kk
        if self.b_transposed:
            pw = self._pw(self.K)
            return ((k // pw) * self.N * pw + (k % pw)) * self.esize
        return k * self._pw(self.N) * self.esize

    def intrinsic(self, n: int | None = None) -> str:
        """The ``ptx_text.ASM`` name of this plan's wgmma (``n`` columns: N by default)."""
        return f"wgmma_{self.kind}_n{n or self.N}{'' if self.b_transposed else '_t'}"


def desc_hi(lbo: int, sbo: int, row_bytes: int) -> int:
    """A descriptor's bits above the start address: leading (bits 16-29) and stride (32-45)
    byte offsets in 16-byte units, base offset 0 (49-51: tiles start on a swizzle atom),
    the swizzle mode of a ``row_bytes``-wide panel (62-63)."""
    return ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (SWIZZLE_CODE[row_bytes] << 62)


def plan(op, T: int, reg_cap: int = 255) -> WGPlan | None:
    """The wgmma plan of an ``Mma`` at ``T`` threads, or None where it does not apply:
    float16/bfloat16/float8 (e4m3, e5m2) operands of one dtype into float32, 2-D, whole
    warpgroups, M a multiple of 64 per warpgroup, 16 <= N <= 256, K a multiple of the
    instruction's k (16; 32 for float8), at most ``MAX_ACC_REGS`` accumulator
    registers per thread and ``EXTRA_REGS`` more within ``reg_cap``, the registers per thread
    the kernel's launch bound allows (else ``tensorcore.plan``'s mma.sync)."""
    xd, yd, ad = op.x.type.dtype, op.y.type.dtype, op.acc.type.dtype
    kind = WG_KIND.get(xd)
    if kind is None or yd is not xd or ad is not KIND_ACC[kind] or len(op.x.type.shape) != 2:
        return None
    M, K = op.x.type.shape
    N = op.y.type.shape[-1]
    if T % WG_THREADS or K % KIND_K[kind] or not 16 <= N <= 256 or N % 16:
        return None
    G = T // WG_THREADS
    if M % (64 * G):
        return None
    p = WGPlan(M, N, K, T, 4 * G, 1, kind, GM=G)
    ok = p.acc_regs <= MAX_ACC_REGS and p.regs_needed + EXTRA_REGS <= reg_cap
    return p if ok else None


def register_cap(T: int, min_blocks: int | None) -> int:
    """Registers per thread ptxas may use under ``launch_bounds(T, min_blocks)``: 65536
    shared by ``min_blocks`` blocks, in its allocation unit of 8, at most 255."""
    if not min_blocks:
        return 255
    return min(255, 65536 // (T * min_blocks) // 8 * 8)

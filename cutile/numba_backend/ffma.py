"""The FFMA plan of a float32 ``Mma`` (CUDA cores, no tensor cores): thread grid, accumulator
layout, swizzled staging and the vector shared-memory reads (pure Python: the CPU tests check
the indices; ``lower/matmul_ffma.py`` emits the code, ``lower/matmul_tc.py``'s staging and
K-loop pipeline are shared with the tensor-core path).

Why (issue 12): the seeds' schedule (``lower/matmul.py``) reads one scalar of A and one of B
per row and column per k (16 ``LDS.32`` per 64 FFMA at 8x8 per thread, as many shared-memory
wavefronts as FFMA issue cycles) and stages through registers with no overlap of the next K
tile's loads with this one's FMAs.  Here:

- A (``M x K``) and B (``K x N``) are staged row-major with the 16-byte chunks of each row
  XOR-swizzled (``tensorcore.swizzle`` with 4 float32 to a chunk), so ``cp.async`` can copy
  them as they lie (pipelined in stages where the operands allow, ``MmaPlanner.pipelined``)
  and a transposing read is not needed;
- thread ``(ty, tx)`` of a ``TY x TX`` grid holds rows ``ty + i*TY`` (cyclic) and columns
  ``4*tx + (j & 3) + 4*TX*(j >> 2)`` (groups of 4 adjacent columns);
- per ``KV`` k steps it reads each of its rows' ``KV`` consecutive A values with one vector
  load (a swizzled chunk is 16 contiguous bytes), and per k each group of 4 B columns with one
  ``ld.shared.v4``: at 128x128 and 256 threads 4 ``LDS.128`` per 64 FFMA instead of 16 ``LDS``.

The arithmetic is the seeds' exactly: ``acc = fmaf(a_k, b_k, acc)`` per element, k in order
from the incoming accumulator, so results are bit-identical to the scalar schedule.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import dtypes as dt
from . import layout as L
from .tensorcore import swizzle, swizzle_params

EPC = 4          # float32 elements per 16-byte chunk (cp.async unit, swizzle unit)
GROUP = 4        # adjacent accumulator columns per thread read by one B vector load
# Statements per unrolled k-loop body of an mma's products (the whole k loop when it fits):
# Numba's compile time grows quadratically with the size of a basic block; NVVM keeps the
# accumulators in registers either way.  Both FFMA schedules (here and lower/matmul.py).
UNROLL_BUDGET = 400


@dataclass(frozen=True)
class FFMAPlan:
    M: int
    N: int
    K: int
    T: int
    TY: int
    TX: int
    KV: int = 2              # k steps per A vector load (2: ld.shared.v2, 4: .v4)
    kind: str = "f32"        # shared-memory element type of the staging (matmul_tc)
    bt: bool = False         # B is never staged transposed here

    epc = EPC
    esize = 4

    @property
    def RM(self) -> int:
        return self.M // self.TY

    @property
    def RN(self) -> int:
        return self.N // self.TX

    def describe(self) -> str:
        return (f"FFMA {self.M}x{self.N}x{self.K}: {self.TY}x{self.TX} threads, "
                f"{self.RM}x{self.RN} per thread, A by {self.KV}-wide and B by 4-wide "
                "shared loads")

    def layout(self) -> L.Layout:
        """Rows ``ty + i*TY``, columns ``4*tx + (j & 3) + 4*TX*(j >> 2)``; register
        ``i*RN + j``."""
        ltx, lty = L.log2(self.TX), L.log2(self.TY)
        rn, rm = L.log2(self.RN), L.log2(self.RM)
        col = ([("r", 0), ("r", 1)] + [("t", i) for i in range(ltx)]
               + [("r", 2 + i) for i in range(rn - 2)])
        row = [("t", ltx + i) for i in range(lty)] + [("r", rn + i) for i in range(rm)]
        return L.Layout((self.M, self.N), self.T, (tuple(row), tuple(col)))

    # -- indices into the swizzled buffers ----------------------------------------------------
    def prefix(self) -> str:
        return f"_ff{self.M}x{self.N}x{self.K}_"

    def hoisted(self, p: str) -> dict[str, str]:
        """Per-thread bases: A row ``ty`` at k 0, B k 0 at column ``4*tx``."""
        ltx = L.log2(self.TX)
        ty = f"((tid >> {ltx}) & {self.TY - 1})" if self.TY > 1 else "0"
        tx = f"(tid & {self.TX - 1})" if self.TX > 1 else "0"
        sh, mask = swizzle_params(self.K, EPC)
        a = f"({ty} << {L.log2(self.K)})"
        if mask:
            a = f"({a} ^ ((({ty} >> {sh}) & {mask}) << 2))"
        return {f"{p}a": a, f"{p}b": f"({tx} << 2)"}

    def a_mask(self) -> int:
        """Bits the per-thread A base may have set."""
        return _bits_of(int(swizzle(t, 0, self.K, EPC)) for t in range(self.TY))

    def b_mask(self) -> int:
        return _bits_of(4 * t for t in range(self.TX))

    def a_const(self, i: int, k: int) -> int:
        """The register-row / k part of A's index: ``swizzle(ty + i*TY, k)`` is
        ``a_base ^ a_const(i, k)`` (the swizzle is linear over GF(2) and ``ty``, ``i*TY`` use
        disjoint bits)."""
        return int(swizzle(i * self.TY, k, self.K, EPC))

    def b_const(self, k: int, grp: int) -> int:
        """``swizzle(k, 4*tx + 4*TX*grp) == b_base ^ b_const(k, grp)``."""
        return int(swizzle(k, 4 * self.TX * grp, self.N, EPC))

    def b_swz(self) -> tuple[int, int]:
        """(shift, mask) of B's chunk swizzle (a chunk of row k moves by
        ``((k >> shift) & mask) << 2`` elements)."""
        return swizzle_params(self.N, EPC)


def _bits_of(values) -> int:
    m = 0
    for v in values:
        m |= int(v)
    return m


def join(var: str, var_mask: int, const: int) -> str:
    """``var ^ const`` written as an XOR of the bits ``var`` may have and an add of the rest
    (equal, since the added bits are clear in ``var ^ (const & var_mask)``): the add folds into
    the shared load's immediate offset."""
    lo, hi = const & var_mask, const & ~var_mask
    e = f"({var} ^ {lo})" if lo else var
    return f"{e} + {hi}" if hi else e


def plan(op, T: int) -> FFMAPlan | None:
    """The FFMA plan of a 2-D float32 x float32 -> float32 ``Mma`` at ``T`` threads, or None
    (other dtypes, batched, tiles too small to give every thread a row and 4 columns, or a
    K that is not a multiple of 4: the seeds' schedule then)."""
    xd, yd, ad = op.x.type.dtype, op.y.type.dtype, op.acc.type.dtype
    if not (xd is yd is ad is dt.float32) or len(op.x.type.shape) != 2:
        return None
    M, K = op.x.type.shape
    N = op.y.type.shape[-1]
    if K % EPC or N % GROUP:
        return None
    # grow the thread grid alternately along the column groups and the rows
    tx = ty = 1
    while tx * ty < T:
        if tx <= ty and tx < N // GROUP:
            tx *= 2
        elif ty < M:
            ty *= 2
        elif tx < N // GROUP:
            tx *= 2
        else:
            return None
    return FFMAPlan(M, N, K, T, ty, tx)

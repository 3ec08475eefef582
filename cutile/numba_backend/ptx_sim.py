"""Simulator models of the inline-PTX intrinsics of ``ptx.py`` (tests only).

Numba's CUDA simulator runs a block's threads as Python threads and no PTX, so the tensor-core
path is normally never chosen there.  With ``CUTILE_NUMBA_TENSOR_CORES=sim`` it is, and these
models stand in for the instructions, so the generated tensor-core kernels (staging, swizzle,
``ldmatrix`` addresses, the accumulator's fragment layout across the K loop, ``cp.async``
bounds and strides) run end to end against the interpreter on a CPU.  ``ldmatrix`` and
``mma.sync`` are warp-collective: each lane posts its operands, the warp meets at a barrier,
every lane computes its result from all 32 posts (the PTX ISA's fragment maps), and a second
barrier frees the slots.  The mma model adds in float64 and rounds to float32 once (within the
tensor-core R-MM-7 bound; the hardware truncates inside a step).
"""

from __future__ import annotations

import threading

import numpy as np

_lock = threading.Lock()
_warps: dict = {}


def _lane_and_warp():
    th = threading.current_thread()
    tid = th.thread_id
    return tid & 31, (tuple(th.blockIdx), tid >> 5)


def _exchange(post):
    """All 32 lanes' ``post`` values, in lane order (a warp-wide rendezvous)."""
    lane, key = _lane_and_warp()
    with _lock:
        ent = _warps.get(key)
        if ent is None:
            ent = _warps[key] = (threading.Barrier(32), [None] * 32)
    bar, slots = ent
    slots[lane] = post
    bar.wait()
    got = list(slots)
    bar.wait()
    return lane, got


def _nd(a) -> np.ndarray:
    """The NumPy array behind a simulator array argument."""
    while not isinstance(a, np.ndarray):
        a = a.__dict__["_item"] if "_item" in a.__dict__ else a._ary
    return a


def _bits16(buf, i) -> np.ndarray:
    """The 16 bytes at element ``i`` of a shared buffer, as 8 16-bit values."""
    flat = _nd(buf).reshape(-1)
    return flat[i:i + 16 // flat.itemsize].view(np.uint16).astype(np.uint32)


def _ldsm(n: int, trans: bool):
    def ld(buf, idx):
        lane, posts = _exchange(int(idx))
        g, t = lane >> 2, lane & 3
        out = []
        for m in range(n):
            rows = [_bits16(buf, posts[8 * m + r]) for r in range(8)]
            mat = np.array(rows)
            if trans:
                mat = mat.T
            lo, hi = mat[g, 2 * t], mat[g, 2 * t + 1]
            out.append(np.uint32(lo | (hi << 16)))
        return tuple(out)
    return ld


def _half(bits: int, kind: str) -> float:
    if kind == "bf16":
        return float(np.array([bits << 16], np.uint32).view(np.float32)[0])
    return float(np.array([bits], np.uint16).view(np.float16)[0])


def _mma(kind: str):
    def mma(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
        lane, posts = _exchange(((int(a0), int(a1), int(a2), int(a3)), (int(b0), int(b1)),
                                 (float(c0), float(c1), float(c2), float(c3))))
        A = np.zeros((16, 16))
        B = np.zeros((16, 8))
        C = np.zeros((16, 8))
        for ln, (a, b, c) in enumerate(posts):
            g, t = ln >> 2, ln & 3
            for i in range(4):
                r, k = g + 8 * (i & 1), 2 * t + 8 * (i >> 1)
                A[r, k], A[r, k + 1] = _half(a[i] & 0xFFFF, kind), _half(a[i] >> 16, kind)
            for i in range(2):
                k = 2 * t + 8 * i
                B[k, g], B[k + 1, g] = _half(b[i] & 0xFFFF, kind), _half(b[i] >> 16, kind)
            for i in range(4):
                C[g + 8 * (i >> 1), 2 * t + (i & 1)] = c[i]
        D = A @ B + C
        g, t = lane >> 2, lane & 3
        return tuple(np.float32(D[g + 8 * (i >> 1), 2 * t + (i & 1)]) for i in range(4))
    return mma


def _mma_tf32(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
    """m16n8k8 tfloat32: A[g + 8 (i & 1), t + 4 (i >> 1)] in a_i, B[t + 4 i, g] in b_i."""
    lane, posts = _exchange(((int(a0), int(a1), int(a2), int(a3)), (float(b0), float(b1)),
                             (float(c0), float(c1), float(c2), float(c3))))
    A, B, C = np.zeros((16, 8)), np.zeros((8, 8)), np.zeros((16, 8))
    for ln, (a, b, c) in enumerate(posts):
        g, t = ln >> 2, ln & 3
        for i in range(4):
            A[g + 8 * (i & 1), t + 4 * (i >> 1)] = np.array([a[i]], np.uint32).view(
                np.float32)[0]
        for i in range(2):
            B[t + 4 * i, g] = b[i]
        for i in range(4):
            C[g + 8 * (i >> 1), 2 * t + (i & 1)] = c[i]
    D = A @ B + C
    g, t = lane >> 2, lane & 3
    return tuple(np.float32(D[g + 8 * (i >> 1), 2 * t + (i & 1)]) for i in range(4))


def _mma_int(kind: str):
    """m16n8k32 int8/uint8: a_i holds A[g + 8 (i & 1), 4t + 16 (i >> 1) + 0..3], b_i holds
    B[4t + 16 i + 0..3, g] (byte 0 lowest), int32 C/D wrapping."""
    et = np.int8 if kind == "s8" else np.uint8

    def mma(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
        lane, posts = _exchange(((int(a0), int(a1), int(a2), int(a3)), (int(b0), int(b1)),
                                 (int(c0), int(c1), int(c2), int(c3))))
        A, B, C = (np.zeros(s, np.int64) for s in ((16, 32), (32, 8), (16, 8)))

        def four(u):
            return np.array([u], np.uint32).view(et).astype(np.int64)

        for ln, (a, b, c) in enumerate(posts):
            g, t = ln >> 2, ln & 3
            for i in range(4):
                A[g + 8 * (i & 1), 4 * t + 16 * (i >> 1):4 * t + 16 * (i >> 1) + 4] = four(a[i])
            for i in range(2):
                B[4 * t + 16 * i:4 * t + 16 * i + 4, g] = four(b[i])
            for i in range(4):
                C[g + 8 * (i >> 1), 2 * t + (i & 1)] = c[i]
        D = (A @ B + C).astype(np.int32)                  # wraps modulo 2**32
        g, t = lane >> 2, lane & 3
        return tuple(np.int32(D[g + 8 * (i >> 1), 2 * t + (i & 1)]) for i in range(4))
    return mma


def cp_async16(buf, idx, src, off, nbytes):
    dst = _nd(buf).reshape(-1)
    n = int(nbytes) // dst.itemsize
    assert (int(idx) * dst.itemsize) % 16 == 0, "cp.async destination not 16-byte aligned"
    dst[idx:idx + 16 // dst.itemsize] = 0
    if n:
        a = _nd(src)
        flat = np.lib.stride_tricks.as_strided(a, shape=(int(off) + n,),
                                               strides=(a.itemsize,))
        dst[idx:idx + n] = flat[int(off):int(off) + n].view(dst.dtype)


def _lds(n: int):
    def lds(buf, idx):
        flat = _nd(buf).reshape(-1)
        assert int(idx) % n == 0, "vector shared load not aligned"   # faults on a GPU
        return tuple(flat[int(idx):int(idx) + n])
    return lds


def cp_async_wait_all():
    pass


def cp_async_commit():
    pass


def addr_of(arr):
    return np.uint64(_nd(arr).__array_interface__["data"][0])


SIM_INTRINSICS = {"mma_f16": _mma("f16"), "mma_bf16": _mma("bf16"), "mma_tf32": _mma_tf32,
                  "mma_s8": _mma_int("s8"), "mma_u8": _mma_int("u8"),
                  "cp_async16": cp_async16, "cp_async_wait_all": cp_async_wait_all,
                  "addr_of": addr_of, "cp_async_commit": cp_async_commit,
                  "lds_v2": _lds(2), "lds_v4": _lds(4),
                  **{f"cp_async_wait_group{n}": cp_async_wait_all for n in range(3)}}
for _p in ("ldsm", "ldsm32"):
    SIM_INTRINSICS.update({f"{_p}_x4": _ldsm(4, False), f"{_p}_x4_t": _ldsm(4, True),
                           f"{_p}_x2": _ldsm(2, False),
                           f"{_p}_x2_t": _ldsm(2, True)})

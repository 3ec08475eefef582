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

import ml_dtypes
import numpy as np

from .ptx_text import WGMMA_8BIT, WGMMA_COUNTS, WGMMA_NS

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


def host_array(a) -> np.ndarray:
    """The NumPy array behind a simulator array argument."""
    while not isinstance(a, np.ndarray):
        a = a.__dict__["_item"] if "_item" in a.__dict__ else a._ary
    return a


def _bits16(buf, i) -> np.ndarray:
    """The 16 bytes at element ``i`` of a shared buffer, as 8 16-bit values."""
    flat = host_array(buf).reshape(-1)
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
    dst = host_array(buf).reshape(-1)
    n = int(nbytes) // dst.itemsize
    assert (int(idx) * dst.itemsize) % 16 == 0, "cp.async destination not 16-byte aligned"
    dst[idx:idx + 16 // dst.itemsize] = 0
    if n:
        a = host_array(src)
        flat = np.lib.stride_tricks.as_strided(a, shape=(int(off) + n,),
                                               strides=(a.itemsize,))
        dst[idx:idx + n] = flat[int(off):int(off) + n].view(dst.dtype)


def _lds(n: int):
    def lds(buf, idx):
        flat = host_array(buf).reshape(-1)
        assert int(idx) % n == 0, "vector shared load not aligned"   # faults on a GPU
        return tuple(flat[int(idx):int(idx) + n])
    return lds


def cp_async_wait_all():
    pass


def cp_async_commit():
    pass


def addr_of(arr):
    return np.uint64(host_array(arr).__array_interface__["data"][0])


# -- Hopper's wgmma (wgmma.py), with shared memory read through descriptors ------------------
#
# A descriptor holds an 18-bit shared-window address, so ``smem_addr32`` gives each shared
# array of a block (its root allocation: the dynamic arrays are views of one) a place in a
# simulated 256 KiB window, 1024-byte aligned, and the wgmma model reads the bytes back from
# there by the hardware's rules: rows of a K-major operand 8 to a core-matrix group (stride
# byte offset between groups), an MN-major operand's 64-column panels at the leading byte
# offset, then the swizzle applied to the byte address bits [4:4+s) ^= [7:7+s).

WINDOW = 1 << 18
_smem_lock = threading.Lock()
_smem: dict = {}            # blockIdx -> [(root array, window base, bytes)]
_smem_launch = None         # the simulator's block manager of the launch _smem is about
# racecheck's hook: called with (host address, length) of each range a wgmma reads
READ_HOOK = None


def _root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def smem_addr32(buf, idx):
    """The simulated 32-bit shared-window address of ``buf[idx]``: each block's shared
    allocations (told apart by their host memory: the simulator's dynamic arrays are new
    array objects over one buffer) get 1024-byte aligned places in the window, afresh for
    every launch."""
    global _smem_launch
    a = host_array(buf)
    root = _root(a)
    ptr = root.__array_interface__["data"][0]
    th = threading.current_thread()
    blk = tuple(th.blockIdx)
    with _smem_lock:
        if getattr(th, "_manager", None) is not _smem_launch:   # a new launch: a new window
            _smem.clear()
            _smem_launch = getattr(th, "_manager", None)
        ents = _smem.setdefault(blk, [])
        base = next((b for held, b, _ in ents if held.__array_interface__["data"][0] == ptr),
                    None)
        if base is None:
            end = max((b + n for _, b, n in ents), default=0)
            base = -(-end // 1024) * 1024
            assert base + root.nbytes <= WINDOW, "shared memory beyond the 256 KiB window"
            ents.append((root, base, root.nbytes))
    off = a.__array_interface__["data"][0] - ptr
    return np.uint32(base + off + int(idx) * a.itemsize)


def window_bytes(addr: int):
    """(the block's shared bytes holding window address ``addr``, that address's offset in
    them, the array holding them)."""
    blk = tuple(threading.current_thread().blockIdx)
    with _smem_lock:
        ents = list(_smem.get(blk, []))
    for root, base, n in ents:
        if base <= addr < base + n:
            return root.reshape(-1).view(np.uint8), addr - base, root
    raise AssertionError(f"wgmma descriptor address {addr:#x} is in no shared array")


_SWZ = {1: (128, 7), 2: (64, 3), 3: (32, 1)}     # mode -> (row bytes, swizzle mask)


_F8 = dict(zip(WGMMA_8BIT, ("float8_e4m3fn", "float8_e5m2")))  # 1-byte kinds: ml_dtypes names


def _operand(desc: int, rows: int, cols: int, mn_major: bool, kind: str,
             log: bool = False) -> np.ndarray:
    """The ``rows`` x ``cols`` float64 matrix a descriptor addresses: K-major (``rows`` of
    ``cols`` k values each: 32 bytes, 16 k of 16-bit or 32 of float8) or MN-major (``rows``
    = 16 k rows of ``cols`` n values, 16-bit only)."""
    es = 1 if kind in _F8 else 2
    addr = (desc & 0x3FFF) << 4
    lbo, sbo, mode = ((desc >> 16) & 0x3FFF) << 4, ((desc >> 32) & 0x3FFF) << 4, desc >> 62
    assert (desc >> 49) & 7 == 0, "descriptor base offset"
    rb, m = _SWZ[int(mode)]
    r = np.arange(rows)[:, None]
    c = np.arange(cols)[None, :]
    if mn_major:                  # r: k (rows of 8 to a group), c: n (panels of rb / 2)
        assert es == 2, "8-bit wgmma operands are K-major"
        pw = rb // 2
        rel = (c // pw) * lbo + (r // 8) * sbo + (r % 8) * rb + (c % pw) * 2
    else:                         # r: m or n, c: k within the row
        rel = (r // 8) * sbo + (r % 8) * rb + c * es
    raw, off0, root = window_bytes(int(addr))
    byte = addr + rel                                   # absolute window addresses
    byte = byte ^ (((byte >> 7) & m) << 4)
    at = byte - addr + off0
    assert at.min() >= 0 and at.max() + es <= raw.size, "wgmma operand beyond its buffer"
    if log and READ_HOOK is not None:
        base = root.__array_interface__["data"][0]
        for b in np.unique(at // es * es):
            READ_HOOK(base + int(b), es)
    if es == 1:
        return raw[at].view(getattr(ml_dtypes, _F8[kind])).astype(np.float64)
    bits = raw[at].astype(np.uint32) | (raw[at + 1].astype(np.uint32) << 8)
    if kind == "bf16":
        return (bits << 16).astype(np.uint32).view(np.float32).astype(np.float64)
    return bits.astype(np.uint16).view(np.float16).astype(np.float64)


def _wg_exchange(post):
    """All 128 warpgroup threads' ``post`` values, in thread order."""
    th = threading.current_thread()
    tid = th.thread_id
    key = ("wg", tuple(th.blockIdx), tid >> 7)
    with _lock:
        ent = _warps.get(key)
        if ent is None:
            ent = _warps[key] = (threading.Barrier(128), [None] * 128)
    bar, slots = ent
    slots[tid & 127] = post
    bar.wait()
    got = list(slots)
    bar.wait()
    return tid & 127, got


def _acc_place(t: int, j: int) -> tuple[int, int]:
    """(row, column) of register ``j`` of warpgroup thread ``t`` in the 64 x N result."""
    return (16 * (t // 32) + (t % 32) // 4 + 8 * ((j % 4) // 2),
            8 * (j // 4) + 2 * (t % 4) + j % 2)


def _wgmma(kind: str, n: int, trans_b: bool):
    """m64nNk16 (float8: k32) float32 += A * B from descriptors (B MN-major when ``trans_b``): the
    warpgroup meets, each thread computes the product from the shared bytes and all
    accumulators (float64 sums, rounded once, as the mma.sync model), thread 0 reports the
    bytes read to racecheck."""
    def wgmma(da, db, scale, *acc):
        t, posts = _wg_exchange((int(da), int(db), int(scale), [float(x) for x in acc]))
        d_a, d_b, sc = posts[0][:3]
        assert all(p[:3] == (d_a, d_b, sc) for p in posts), "descriptors differ in a warpgroup"
        log = t == 0
        kd = 32 if kind in _F8 else 16
        A = _operand(d_a, 64, kd, False, kind, log)
        B = _operand(d_b, kd, n, True, kind, log) if trans_b else \
            _operand(d_b, n, kd, False, kind, log).T
        C = np.zeros((64, n))
        for tt, p in enumerate(posts):
            for j, v in enumerate(p[3]):
                C[_acc_place(tt, j)] = v
        D = A @ B + (C if sc else 0.0)
        return tuple(np.float32(D[_acc_place(t, j)]) for j in range(n // 2))
    return wgmma


def _identity(*acc):
    return acc


def _nothing(*_):
    return None


SIM_INTRINSICS = {"mma_f16": _mma("f16"), "mma_bf16": _mma("bf16"), "mma_tf32": _mma_tf32,
                  "mma_s8": _mma_int("s8"), "mma_u8": _mma_int("u8"),
                  "cp_async16": cp_async16, "cp_async_wait_all": cp_async_wait_all,
                  "addr_of": addr_of, "cp_async_commit": cp_async_commit,
                  "lds_v2": _lds(2), "lds_v4": _lds(4),
                  **{f"cp_async_wait_group{n}": cp_async_wait_all for n in range(3)}}
for _k in ("f16", "bf16") + WGMMA_8BIT:
    for _n in WGMMA_NS:
        for _t in (False, True) if _k not in WGMMA_8BIT else (False,):
            SIM_INTRINSICS[f"wgmma_{_k}_n{_n}{'_t' if _t else ''}"] = _wgmma(_k, _n, _t)
for _c in WGMMA_COUNTS:
    SIM_INTRINSICS.update({f"wgmma_fence{_c}": _identity, f"wgmma_wait{_c}": _identity,
                           f"wgmma_wait1_{_c}": _identity})
SIM_INTRINSICS.update({"wgmma_commit": _nothing, "fence_proxy_async": _nothing,
                       "smem_addr32": smem_addr32,
                       "selp_f32": lambda x, y, c: np.float32(x if c else y),
                       "selp_f64": lambda x, y, c: np.float64(x if c else y)})
for _p in ("ldsm", "ldsm32"):
    SIM_INTRINSICS.update({f"{_p}_x4": _ldsm(4, False), f"{_p}_x4_t": _ldsm(4, True),
                           f"{_p}_x2": _ldsm(2, False),
                           f"{_p}_x2_t": _ldsm(2, True)})

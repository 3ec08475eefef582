"""The wgmma probe's operand-layout part (``wgmma_probe.py --parts layouts``, issue 24): the
backend's own shared-memory images and descriptors for A and B of any width, run through
wgmma and checked exactly against NumPy.
"""

from __future__ import annotations

import os
import sys

import numpy as np
from hopper_layout import fragments_to_matrix
from numba import cuda, types, uint16, uint32, uint64
from probe_device import NS, PIN, WGMMA, WGMMA_T, ZEROS, aligned_base
from probe_host import guarded, note, prepare
from probe_ptx import acc_store, fence_proxy_async, wgmma_commit, wgmma_fence, wgmma_wait0

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def make_layout_kernels(n: int):
    """Operand layouts of any width as the backend stages them (``tensorcore.swizzle``):
    the host builds both shared-memory images and every k16 step's descriptor offsets, the
    kernel copies the images in verbatim (1024-byte aligned) and runs the wgmmas."""
    mma_k, mma_t, pin, zeros = WGMMA.get(n), WGMMA_T[n], PIN[n], ZEROS[n]

    def make(mma):
        def layout(img, nbytes_a, da, db, steps, out):
            buf = cuda.shared.array(0, uint16)
            tid = cuda.threadIdx.x
            addr, off = aligned_base(buf)
            for i in range(tid, img.shape[0], 128):
                buf[off + i] = img[i]
            fence_proxy_async()
            cuda.syncthreads()
            acc = zeros()
            wgmma_fence()
            for s in range(steps.shape[0]):
                a = da + uint64((addr + uint32(steps[s, 0])) >> uint32(4))
                b = db + uint64((addr + uint32(nbytes_a) + uint32(steps[s, 1])) >> uint32(4))
                acc = mma(acc, a, b)
            wgmma_commit()
            wgmma_wait0()
            acc = pin(acc)
            acc_store(out, tid * (n // 2), acc)
        return layout

    sig = (types.Array(types.uint16, 1, "C"), types.int32, types.uint64, types.uint64,
           types.Array(types.int32, 2, "C"), types.Array(types.float32, 1, "C"))
    out = {f"layout_t_n{n}": (make(mma_t), sig)}
    if mma_k is not None:
        out[f"layout_k_n{n}"] = (make(mma_k), sig)
    return out


def probe_layouts(rng):
    """The backend's own wgmma operand layouts (``cutile/numba_backend``: ``tensorcore.swizzle``
    with ``rows``, ``wgmma.WGPlan``'s descriptors and k16 steps) for every (K, N) below: A
    (64 x K, K-major) and B (K x N MN-major with the transposed flag, and N x K K-major,
    ``bt``), exact against NumPy?  At K=16 the MN-major case also runs with the other
    assignment of (panel stride, 8-row group stride) to (LBO, SBO), to show which one the
    hardware reads."""
    import dataclasses

    sys.path.insert(0, ROOT)
    from cutile.numba_backend.tensorcore import swizzle
    from cutile.numba_backend.wgmma import WGPlan, desc_hi

    def image(m, rows, cols):
        r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
        img = np.zeros(rows * cols, np.uint16)
        img[swizzle(r, c, cols, 8, rows)] = m.astype(np.float16).view(np.uint16)
        return img

    cases = [(16, 16), (16, 32), (16, 64), (16, 128), (32, 64), (32, 128), (64, 32),
             (64, 128), (128, 64), (128, 128), (256, 32)]
    for K, n in cases:
        @guarded(f"layout K={K} N={n}")
        def one(K=K, n=n):
            a = rng.integers(-3, 4, (64, K)).astype(np.float32)
            b = rng.integers(-3, 4, (K, n)).astype(np.float32)
            ref = a @ b
            plan = WGPlan(64, n, K, 128, 4, 1, "f16", GM=1)
            variants = [("B MN-major", f"layout_t_n{n}", image(b, K, n), plan.b_hi(), plan)]
            if K == 16:         # the swapped assignment (it reads far out of the tile beyond)
                pw = min(n, 64)
                variants.append(("B MN-major (swapped LBO/SBO)", f"layout_t_n{n}",
                                 image(b, K, n), desc_hi(8 * pw * 2, K * pw * 2, pw * 2),
                                 plan))
            if n in NS:
                pt = dataclasses.replace(plan, bt=True)
                variants.append(("B^T K-major", f"layout_k_n{n}", image(b.T, n, K), pt.b_hi(),
                                 pt))
            img_a = image(a, 64, K)
            for label, kname, img_b, bhi, p in variants:
                img = np.concatenate([img_a, img_b])
                smem = img.size * 2 + 1024
                disp, _ = prepare(kname, smem)
                steps = np.array([[p.a_step(0, kk), p.b_step(kk)] for kk in range(K // 16)],
                                 dtype=np.int32)
                out = cuda.device_array(128 * n // 2, np.float32)
                disp[1, 128, 0, smem](cuda.to_device(img), np.int32(img_a.size * 2),
                                      np.uint64(p.a_hi()), np.uint64(bhi),
                                      cuda.to_device(steps), out)
                got = fragments_to_matrix(out.copy_to_host(), n)
                bad = int(np.count_nonzero(got != ref))
                note(f"layout K={K} N={n}: A K-major sw{2 * min(K, 64)}, {label}",
                     "exact" if bad == 0 else f"{bad} of {got.size} wrong")
        one()

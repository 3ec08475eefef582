"""What the kernel will see of a launch argument, asked before the launch marshals it.

The launch facts (``fulltile.py``'s full tiles, ``tma.py``'s TMA-ready arrays) are decided
from the caller's arguments, before ``launch.marshal`` copies host arrays to the device; a
host array then travels as a C-contiguous copy in a fresh (256-byte aligned) allocation.
"""

from __future__ import annotations


def launch_layout(leaf) -> tuple:
    """(shape, byte strides, data address) of the array the kernel will see: a CUDA array's
    own, or, for a host array, its C-ordered device copy (allocations are 256-byte aligned)."""
    cai = getattr(leaf, "__cuda_array_interface__", None)
    shape = tuple(int(n) for n in leaf.shape)
    item = leaf.dtype.itemsize
    if cai is not None:
        st = cai.get("strides")
        addr = int(cai["data"][0])
    else:
        st, addr = None, 0
    if st is None:                                   # C-contiguous
        st, acc = [], item
        for n in reversed(shape):
            st.insert(0, acc)
            acc *= max(n, 1)
    return shape, tuple(int(s) for s in st), addr, item

"""Shared-memory planner: one buffer per exchange site, or one per dtype when that is too big.

Every op that moves data between threads asks for buffers by a site key (the op and a slot
number), a dtype and an element count.  In the default *private* mode each site gets its own
``cuda.shared.array``, so exchanges of different ops never wait for each other (no
write-after-read barrier between them).  When the private total exceeds the soft budget the
generator runs again in *shared* mode, where all sites with the same dtype and slot share one
buffer sized for the largest of them (the barrier tracker then sees the reuse and inserts the
write-after-read barriers it needs).  The final total is checked against the device limit.

Up to 48 KiB per block (the static limit of every CUDA GPU) the buffers are static
``cuda.shared.array``s.  Above it the plan is *dynamic*: every buffer is a slice, at a 16-byte
aligned offset, of the kernel's dynamic shared memory (``cuda.shared.array(0, dtype)``: all such
arrays alias one allocation), whose size the launcher passes with the launch after opting the
compiled function in (``MAX_DYNAMIC_SHARED_SIZE_BYTES``), up to the device's
``MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`` (227 KiB on an H100).
"""

from __future__ import annotations

from ..errors import TileUnsupportedFeatureError

# Above this many bytes per block in private mode, share buffers (keeps occupancy up).
SOFT_BUDGET = 16 * 1024
# Static shared memory per block (cuda.shared.array) on every architecture.
STATIC_LIMIT = 48 * 1024
# Dynamic shared memory per block after the opt-in on an H100 (the simulator's limit).
H100_OPTIN_LIMIT = 232448
ALIGN = 16

_ITEMSIZE = {"b1": 1, "u8": 1, "i8": 1, "u16": 2, "i16": 2, "f16": 2, "u32": 4, "i32": 4,
             "f32": 4, "u64": 8, "i64": 8, "f64": 8}


class SmemPlan:
    def __init__(self, shared: bool = False, aligned: bool = False):
        self.shared = shared
        self.aligned = aligned                   # may declare alignment= (not the simulator)
        self.align16: set[str] = set()           # buffers read 16 bytes at a time (ldmatrix)
        self.buffers: dict[str, list] = {}      # name -> [cast, nelems]
        self.sites: dict = {}

    def buffer(self, site, slot: int, cast: str, nelems: int, align16: bool = False) -> str:
        """Name of the buffer for ``(site, slot)``; ``cast`` is the element type's cast name;
        ``align16``: the buffer must start at a 16-byte boundary."""
        if cast == "b1":
            cast = "u8"                          # bools travel as bytes
        key = (site, slot)
        if self.shared:
            name = f"sm_{cast}_{slot}"
        else:
            name = self.sites.get(key)
            if name is None:
                name = f"sm{len(self.sites)}"
        self.sites[key] = name
        entry = self.buffers.setdefault(name, [cast, 0])
        entry[1] = max(entry[1], int(nelems))
        if align16:
            self.align16.add(name)
        return name

    @property
    def total_bytes(self) -> int:
        if self.dynamic:
            return self.dynamic_bytes
        return sum(_ITEMSIZE[c] * n for c, n in self.buffers.values())

    @property
    def dynamic(self) -> bool:
        """True when the buffers exceed the static limit and live in dynamic shared memory."""
        return sum(_ITEMSIZE[c] * n for c, n in self.buffers.values()) > STATIC_LIMIT

    def offsets(self) -> dict[str, int]:
        """Byte offset of every buffer in the dynamic allocation (16-byte aligned)."""
        out, pos = {}, 0
        for name, (cast, n) in self.buffers.items():
            pos = -(-pos // ALIGN) * ALIGN
            out[name] = pos
            pos += _ITEMSIZE[cast] * n
        return out

    @property
    def dynamic_bytes(self) -> int:
        """Bytes of dynamic shared memory the launch must pass (0 for a static plan)."""
        if not self.dynamic:
            return 0
        offs = self.offsets()
        return max((offs[name] + _ITEMSIZE[c] * n for name, (c, n) in self.buffers.items()),
                   default=0)

    @property
    def static_bytes(self) -> int:
        return 0 if self.dynamic else self.total_bytes

    def declarations(self) -> list[str]:
        if not self.dynamic:
            out = []
            for name, (cast, n) in self.buffers.items():
                al = ", alignment=16" if self.aligned and name in self.align16 else ""
                out.append(f"{name} = cuda.shared.array({n}, {cast}{al})")
            return out
        offs = self.offsets()
        al = ", alignment=16" if self.aligned else ""
        out = [f"_dyn_{cast} = cuda.shared.array(0, dyn_{cast}{al})"
               for cast in dict.fromkeys(c for c, _ in self.buffers.values())]
        for name, (cast, n) in self.buffers.items():
            lo = offs[name] // _ITEMSIZE[cast]
            out.append(f"{name} = _dyn_{cast}[{lo}:{lo + n}]")
        return out

    def check(self, limit: int, kernel_name: str) -> None:
        """Raise when the plan exceeds ``limit`` (the device's opt-in per-block maximum)."""
        if self.total_bytes > limit:
            detail = ", ".join(f"{name}: {n} x {cast}" for name, (cast, n) in
                               self.buffers.items())
            raise TileUnsupportedFeatureError(
                f"kernel {kernel_name!r} needs {self.total_bytes} bytes of shared memory per "
                f"block on the numba backend ({detail}), more than the device's limit of "
                f"{limit} bytes per block (dynamic shared memory included); use smaller tiles")

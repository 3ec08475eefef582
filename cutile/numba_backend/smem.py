"""Shared-memory planner: one buffer per exchange site, or one per dtype when that is too big.

Every op that moves data between threads asks for buffers by a site key (the op and a slot
number), a dtype and an element count.  In the default *private* mode each site gets its own
``cuda.shared.array``, so exchanges of different ops never wait for each other (no
write-after-read barrier between them).  When the private total exceeds the soft budget the
generator runs again in *shared* mode, where all sites with the same dtype and slot share one
buffer sized for the largest of them (the barrier tracker then sees the reuse and inserts the
write-after-read barriers it needs).  The final total is checked against the device limit
(static shared memory: 48 KiB per block on every CUDA GPU).
"""

from __future__ import annotations

from ..errors import TileUnsupportedFeatureError

# Above this many bytes per block in private mode, share buffers (keeps occupancy up).
SOFT_BUDGET = 16 * 1024
# Static shared memory per block (cuda.shared.array) on every architecture.
STATIC_LIMIT = 48 * 1024

_ITEMSIZE = {"b1": 1, "u8": 1, "i8": 1, "u16": 2, "i16": 2, "f16": 2, "u32": 4, "i32": 4,
             "f32": 4, "u64": 8, "i64": 8, "f64": 8}


class SmemPlan:
    def __init__(self, shared: bool = False):
        self.shared = shared
        self.buffers: dict[str, list] = {}      # name -> [cast, nelems]
        self.sites: dict = {}

    def buffer(self, site, slot: int, cast: str, nelems: int) -> str:
        """Name of the buffer for ``(site, slot)``; ``cast`` is the element type's cast name."""
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
        return name

    @property
    def total_bytes(self) -> int:
        return sum(_ITEMSIZE[c] * n for c, n in self.buffers.values())

    def declarations(self) -> list[str]:
        return [f"{name} = cuda.shared.array({n}, {cast})"
                for name, (cast, n) in self.buffers.items()]

    def check(self, limit: int, kernel_name: str) -> None:
        if self.total_bytes > limit:
            detail = ", ".join(f"{name}: {n} x {cast}" for name, (cast, n) in
                               self.buffers.items())
            raise TileUnsupportedFeatureError(
                f"kernel {kernel_name!r} needs {self.total_bytes} bytes of shared memory per "
                f"block on the numba backend ({detail}), more than the device limit of "
                f"{limit} bytes; use smaller tiles")

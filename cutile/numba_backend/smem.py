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

A tile too large for that (a reduction of a 512 x 128 float16 tile exchanges 2 x 128 KiB, a
256 x 256 float32 transpose stages 256 KiB) still runs: ``fit`` moves buffers, largest first,
into a *global workspace* until the rest fits.  The launcher allocates it per launch, one row
of ``per_block`` elements per CUDA block and element type (``gs_<cast>``, extra kernel
parameters after the kernel's own), and the kernel takes its block's row
(``linear block index``) and slices the buffers out of it; every access is then the same
``buf[index]`` as in shared memory, inside the buffer by construction, and the same barriers
order it (``syncthreads`` also orders global memory within a block).  Only buffers read by
``ldmatrix``/``cp.async``/vector shared loads (``align16``: tensor-core and FFMA staging) must
stay in shared memory; when those alone exceed the limit the GPU cannot run the kernel, and
``check`` says so, naming them.

Hopper's wgmma reads its operands through descriptors of swizzled layouts whose swizzle is
applied to shared-memory *address* bits, so their buffers (``align1024``) start on a
1024-byte boundary: static ones by the declaration's alignment, dynamic ones at 1024-byte
offsets from a base the kernel rounds up at run time (``_dyn_pad``: the dynamic allocation
is only guaranteed 16-byte alignment, so 1024 bytes of slack are allocated with it).
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
WG_ALIGN = 1024     # wgmma operand buffers (the 128-byte swizzle atom)

_ITEMSIZE = {"b1": 1, "u8": 1, "i8": 1, "u16": 2, "i16": 2, "f16": 2, "u32": 4, "i32": 4,
             "f32": 4, "u64": 8, "i64": 8, "f64": 8}


def smem_itemsize(cast: str) -> int:
    """Bytes of one element of a buffer of ``cast`` (bools: one byte)."""
    return _ITEMSIZE[cast]


# NumPy dtype of a workspace row per cast name (bools travel as bytes)
NP_DTYPE = {"u8": "uint8", "i8": "int8", "u16": "uint16", "i16": "int16", "f16": "float16",
            "u32": "uint32", "i32": "int32", "f32": "float32", "u64": "uint64", "i64": "int64",
            "f64": "float64"}
# The linear CUDA block index: the row of the global workspace a block uses
_BLOCK_ROW = ("i32(cuda.blockIdx.x) + i32(cuda.gridDim.x) * (i32(cuda.blockIdx.y) + "
              "i32(cuda.gridDim.y) * i32(cuda.blockIdx.z))")


class SmemPlan:
    def __init__(self, shared: bool = False, aligned: bool = False):
        self.shared = shared
        self.aligned = aligned                   # may declare alignment= (not the simulator)
        self.align16: set[str] = set()           # buffers read 16 bytes at a time (ldmatrix)
        self.align1024: set[str] = set()         # wgmma operands (descriptor-addressed)
        self.buffers: dict[str, list] = {}      # name -> [cast, nelems]
        self.scratch: dict[str, list] = {}      # buffers moved to the global workspace (fit)
        self.sites: dict = {}
        self.retired: list[str] = []             # dead buffers a later site may take (retire)
        self.views: dict[str, str] = {}          # view -> the buffer whose bytes it reuses

    def buffer(self, site, slot: int, cast: str, nelems: int, align16: bool = False,
               align1024: bool = False) -> str:
        """Name of the buffer for ``(site, slot)``; ``cast`` is the element type's cast name;
        ``align16``: the buffer must start at a 16-byte boundary; ``align1024``: at a
        1024-byte one (wgmma operands)."""
        if cast == "b1":
            cast = "u8"                          # bools travel as bytes
        key = (site, slot)
        if self.shared:
            name = f"sm_{cast}_{slot}"
        else:
            name = self.sites.get(key)
            if name is None:
                name = self._take_retired(cast, nelems) or f"sm{len(self.sites)}"
        self.sites[key] = name
        entry = self.buffers.setdefault(name, [cast, 0])
        entry[1] = max(entry[1], int(nelems))
        if align16 or align1024:
            self.align16.add(name)
        if align1024:
            self.align1024.add(name)
        return name

    def view(self, target: str, site, cast: str, nelems: int) -> str:
        """A buffer of ``cast`` over the bytes of ``target`` (a dead one: the caller orders
        the new writes after its last reads), for a site whose element type differs (a TMA
        store epilogue's float32 tile in a float16 ring).  Only a dynamic plan shares the
        bytes; a static one declares the view as a buffer of its own (Numba's static shared
        arrays cannot be reinterpreted), which its size counts."""
        assert target in self.align16, "a view of a buffer fit() may move"
        name = f"sm{len(self.sites)}"
        self.sites[(site, 0)] = name
        self.buffers[name] = [cast, int(nelems)]
        self.views[name] = target
        self.align16.add(name)
        if target in self.align1024:
            self.align1024.add(name)
        return name

    def retire(self, names) -> None:
        """``names`` are dead from here to the kernel's end (a top-level pipelined K loop's
        staging after its last copies landed): a later site of the same element type that
        fits takes one instead of a buffer of its own (the batched matmul's epilogue exchange
        reuses A's staging: 32 KiB less, a block more per SM).  The barrier tracker orders
        the new writes after the old reads, as for any shared buffer."""
        self.retired += [n for n in names if n not in self.retired]

    def can_take(self, cast: str, nelems: int) -> bool:
        """Whether a new site of ``cast`` and ``nelems`` would take a retired buffer."""
        return not self.shared and any(self.buffers[n][0] == cast and self.buffers[n][1] >=
                                       nelems for n in self.retired)

    def _take_retired(self, cast: str, nelems: int) -> str | None:
        for name in self.retired:
            c, n = self.buffers[name]
            if c == cast and n >= nelems:
                self.retired.remove(name)
                return name
        return None

    @property
    def total_bytes(self) -> int:
        if self.dynamic:
            return self.dynamic_bytes
        return self._static_sum()

    def _static_sum(self) -> int:
        """Bytes of the static buffers, each ``align1024`` one counted with the padding its
        alignment may cost."""
        return sum(_ITEMSIZE[c] * n + (WG_ALIGN - ALIGN if name in self.align1024 else 0)
                   for name, (c, n) in self.buffers.items())

    @property
    def dynamic(self) -> bool:
        """True when the buffers exceed the static limit and live in dynamic shared memory."""
        return self._static_sum() > STATIC_LIMIT

    def offsets(self) -> dict[str, int]:
        """Byte offset of every buffer in the dynamic allocation (16-byte aligned, 1024 for
        ``align1024`` buffers, from the run-time aligned base)."""
        out, pos = {}, 0
        for name, (cast, n) in self.buffers.items():
            if name in self.views:
                continue
            al = WG_ALIGN if name in self.align1024 else ALIGN
            pos = -(-pos // al) * al
            out[name] = pos
            pos += _ITEMSIZE[cast] * n
        for name, target in self.views.items():       # a view starts where its buffer does
            c, n = self.buffers[name]
            tc, tn = self.buffers[target]
            assert _ITEMSIZE[c] * n <= _ITEMSIZE[tc] * tn, (name, target)
            out[name] = out[target]
        return out

    @property
    def dynamic_bytes(self) -> int:
        """Bytes of dynamic shared memory the launch must pass (0 for a static plan)."""
        if not self.dynamic:
            return 0
        offs = self.offsets()
        slack = WG_ALIGN if self.align1024 & set(self.buffers) else 0
        return slack + max((offs[name] + _ITEMSIZE[c] * n
                            for name, (c, n) in self.buffers.items()), default=0)

    @property
    def static_bytes(self) -> int:
        return 0 if self.dynamic else self.total_bytes

    def fit(self, limit: int) -> bool:
        """Move buffers that need not be in shared memory (not ``align16``), largest first, to
        the global workspace until the shared ones fit ``limit`` bytes; True when any moved.
        What still does not fit is ``check``'s error."""
        moved = False
        for name in sorted((n for n in self.buffers if n not in self.align16),
                           key=lambda n: -_ITEMSIZE[self.buffers[n][0]] * self.buffers[n][1]):
            if self.total_bytes <= limit:
                break
            self.scratch[name] = self.buffers.pop(name)
            moved = True
        return moved

    def scratch_rows(self) -> dict[str, tuple[int, dict[str, int]]]:
        """Per cast of the global workspace: (elements per block, element offset of each
        buffer in the block's row)."""
        out: dict[str, tuple[int, dict[str, int]]] = {}
        for name, (cast, n) in self.scratch.items():
            size, offs = out.get(cast, (0, {}))
            offs[name] = size
            out[cast] = (size + n, offs)
        return out

    @property
    def scratch_casts(self) -> tuple[str, ...]:
        """Element types of the workspace parameters ``gs_<cast>``, in parameter order."""
        return tuple(self.scratch_rows())

    @property
    def scratch_bytes(self) -> int:
        """Bytes of global workspace per block."""
        return sum(_ITEMSIZE[c] * n for c, n in self.scratch.values())

    def scratch_declarations(self) -> list[str]:
        """This block's row of each workspace array, and the buffers sliced from it."""
        if not self.scratch:
            return []
        out = [f"_gsrow = {_BLOCK_ROW}"]
        for cast, (_, offs) in self.scratch_rows().items():
            out.append(f"_gs_{cast} = gs_{cast}[_gsrow]")
            for name, lo in offs.items():
                out.append(f"{name} = _gs_{cast}[{lo}:{lo + self.scratch[name][1]}]")
        return out

    def declarations(self) -> list[str]:
        if not self.dynamic:
            out = []
            for name, (cast, n) in self.buffers.items():
                # (the simulator refuses alignment=; its wgmma model places every shared
                # array at a 1024-byte boundary of its window, ptx_sim.smem_addr32)
                al = ("" if not self.aligned else f", alignment={WG_ALIGN}"
                      if name in self.align1024 else
                      ", alignment=16" if name in self.align16 else "")
                out.append(f"{name} = cuda.shared.array({n}, {cast}{al})")
            return out
        offs = self.offsets()
        al = ", alignment=16" if self.aligned else ""
        casts = list(dict.fromkeys(c for c, _ in self.buffers.values()))
        out = [f"_dyn_{cast} = cuda.shared.array(0, dyn_{cast}{al})" for cast in casts]
        pad = bool(self.align1024 & set(self.buffers))
        if pad:     # bytes up to the next 1024-byte boundary of the dynamic allocation
            out.append(f"_dyn_pad = i64((u32({WG_ALIGN}) - (smem_addr32(_dyn_{casts[0]}, 0) & "
                       f"u32({WG_ALIGN - 1}))) & u32({WG_ALIGN - 1}))")
        for name, (cast, n) in self.buffers.items():
            lo = offs[name] // _ITEMSIZE[cast]
            if pad:
                sh = {1: "", 2: " >> 1", 4: " >> 2", 8: " >> 3"}[_ITEMSIZE[cast]]
                out.append(f"{name} = _dyn_{cast}[(_dyn_pad{sh}) + {lo}:"
                           f"(_dyn_pad{sh}) + {lo + n}]")
            else:
                out.append(f"{name} = _dyn_{cast}[{lo}:{lo + n}]")
        return out

    def check(self, limit: int, kernel_name: str) -> None:
        """Raise when the shared buffers exceed ``limit`` (the device's opt-in per-block
        maximum) after ``fit``: they are all operand staging of the tensor cores or of the
        FFMA schedule, which its instructions read from shared memory only."""
        if self.total_bytes > limit:
            detail = ", ".join(f"{name}: {n} x {cast}" for name, (cast, n) in
                               self.buffers.items())
            raise TileUnsupportedFeatureError(
                f"kernel {kernel_name!r} needs {self.total_bytes} bytes of shared memory per "
                f"block on the numba backend ({detail}: mma operand staging, which ldmatrix / "
                f"cp.async / vector loads read from shared memory only), more than the "
                f"device's limit of {limit} bytes per block (dynamic shared memory included); "
                f"use smaller mma tiles")

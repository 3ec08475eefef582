"""Compiled kernels of the Numba backend kept on disk (``cutile/cache.py`` is the store), so a
new process launches a kernel it has launched before without Numba's compiler: no typing,
lowering, NVVM or linking, only a ``cuLibraryLoadData`` of the stored cubin.

- Key of one compiled variant (``variant_key``): the generated source and its constant arrays
  (they encode the kernel's and its helpers' code after specialisation: argument kinds, dtypes,
  ranks, constant values, hints, thread count, mma mode), the Numba argument types (array
  layouts), a hash of the generator's own code (``backend_hash``: every module of this package,
  including the ``rt`` functions generated code calls, and ``cutile/dtypes.py``), the versions
  of Numba, numba-cuda, cuda-core, cuda-bindings and Python, the ``NUMBA_*`` environment, the
  device's compute capability and the driver version.
- Stored (``save``) on the first launch of a variant, once ``Packer.verify`` has checked our
  parameter packing against Numba's for it, so a loaded kernel is launched through the same
  checked packing (``launch._launch_gpu``); a variant of the direct path (``direct.py``:
  Numba's kernel ABI by construction) as soon as it is linked (``save_cubin``).  Kernels
  whose module needs Numba's own set-up on load (NRT globals, cooperative launch, debug error
  flags, a shared-memory carve-out) are not stored.
- Loaded (``load``) as a ``cuda.core`` ``ObjectCode`` and its kernel handle; an entry that does
  not load is discarded and the variant is compiled (and stored) again.
"""

from __future__ import annotations

import hashlib
import os
import sys

from .. import cache

_backend_hash: str | None = None


def backend_hash() -> str:
    """SHA-256 of the generator's own code (this package's modules and ``cutile/dtypes.py``)."""
    global _backend_hash
    if _backend_hash is None:
        here = os.path.dirname(os.path.abspath(__file__))
        files = []
        for root, dirs, names in os.walk(here):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            files += [os.path.join(root, n) for n in sorted(names) if n.endswith(".py")]
        files.append(os.path.join(os.path.dirname(here), "dtypes.py"))
        h = hashlib.sha256()
        for path in files:
            h.update(os.path.relpath(path, here).replace(os.sep, "/").encode() + b"\0")
            with open(path, "rb") as f:
                h.update(f.read() + b"\0")
        _backend_hash = h.hexdigest()
    return _backend_hash


def source_key(source: str, consts: dict, T: int, mma_acc: str) -> str:
    """Key of one generated kernel: its source, constant arrays, thread count and mma mode."""
    arrays = [(n, str(a.dtype), list(a.shape), hashlib.sha256(a.tobytes()).hexdigest())
              for n, a in sorted(consts.items())]
    return cache.key("numba-source", hashlib.sha256(source.encode()).hexdigest(), arrays, T,
                     mma_acc)


def toolchain() -> dict:
    """Versions and settings of everything below the generator that shapes the cubin."""
    import cuda.bindings
    import cuda.core
    import numba
    import numba_cuda
    env = {k: v for k, v in os.environ.items()
           if k.startswith("NUMBA_") and k != "NUMBA_CACHE_DIR"}
    return {"backend": backend_hash(), "numba": numba.__version__,
            "numba_cuda": numba_cuda.__version__, "cuda_core": cuda.core.__version__,
            "cuda_bindings": cuda.bindings.__version__, "python": list(sys.version_info[:2]),
            "env": env}


def current_target() -> dict:
    """The current device's compute capability and the driver version."""
    from numba import cuda
    from numba.cuda.cudadrv.driver import driver
    major, minor = cuda.get_current_device().compute_capability
    return {"arch": f"sm_{major}{minor}", "driver": list(driver.get_version())}


def variant_key(source_key_: str, argtypes: tuple, target: dict) -> str:
    """Key of one compiled variant of a generated kernel on ``target``."""
    return cache.key("numba-cubin", source_key_, [str(t) for t in argtypes], target,
                     toolchain())


def _cubin_bytes(code) -> bytes | None:
    """The bytes of a linked cubin (``ObjectCode.code``: in-memory bytes, or a file path)."""
    if isinstance(code, (str, os.PathLike)):
        with open(code, "rb") as f:
            return f.read()
    try:
        return bytes(memoryview(code))
    except TypeError:
        return None


def storable(kernel) -> bool:
    """Whether a compiled Numba kernel can be relaunched from its cubin alone."""
    lib = kernel._codelibrary
    return not (lib._setup_functions or lib._teardown_functions
                or getattr(kernel, "cooperative", True) or getattr(kernel, "debug", True)
                or getattr(kernel, "shared_memory_carveout", None) is not None)


def save(key: str, ck, kernel, target: dict) -> bool:
    """Store the cubin of a compiled (and launch-checked) Numba variant under ``key``."""
    try:
        if not storable(kernel):
            return False
        code = kernel._codelibrary.get_cubin()
        entry = getattr(kernel._codelibrary, "_entry_name", None) or kernel.entry_name
    except Exception as e:                  # private Numba pieces moved: just do not store
        cache.stats.note(f"save {ck.name}: {type(e).__name__}: {e}")
        return False
    return save_cubin(key, ck, code, entry, kernel.argument_types, target)


def save_cubin(key: str, ck, code, entry: str, argtypes, target: dict) -> bool:
    """Store a linked cubin (``ObjectCode`` or bytes) whose kernel is ``entry`` under ``key``:
    Numba's variants (``save``) and the direct path's (``direct.py``)."""
    cubin = _cubin_bytes(getattr(code, "code", code))
    if not cubin:
        cache.stats.note(f"save {ck.name}: no cubin bytes in {type(code)}")
        return False
    meta = {"kernel": ck.name, "target": target["arch"], "entry": entry,
            "threads": ck.block_threads, "shared_bytes": ck.smem_bytes,
            "argtypes": [str(t) for t in argtypes]}
    return cache.store(key, cubin, meta)


def load(key: str):
    """(ObjectCode, kernel handle) stored under ``key``, or None (missing, or did not load:
    the entry is deleted)."""
    entry = cache.load(key)
    if entry is None:
        return None
    try:
        from cuda.core import ObjectCode
        from numba.cuda.cudadrv import devices
        devices.get_context()               # Numba's context current, as for its own modules
        obj = ObjectCode.from_cubin(entry.payload, name=str(entry.meta.get("kernel", "")))
        return obj, obj.get_kernel(entry.meta["entry"])
    except Exception as e:
        cache.stats.hits -= 1                   # read, but not usable: a miss after all
        cache.stats.misses += 1
        cache.stats.corrupt += 1
        cache.stats.note(f"load {key[:16]}: {type(e).__name__}: {e}")
        cache.discard(key)
        return None

"""NVVM IR -> PTX with libNVVM through ``cuda.bindings.nvvm`` (no numba), libdevice linked.

The direct path's compile step: the module from ``emit.py`` is added to an NVVM program with
libdevice added lazily (only the functions the kernel calls are linked, as numba-cuda does;
not at all when it calls none of libdevice's ``__nv_`` functions),
and compiled for ``-arch=compute_XY`` at ``-opt=3`` (numba-cuda's options for a kernel
without fastmath or debug).
"""

from __future__ import annotations


def to_ptx(llvm_ir: str, libdevice: str | bytes, cc: tuple = (9, 0), opt: int = 3) -> str:
    """PTX of ``llvm_ir``; ``libdevice``: its bitcode or the path of the file.  A failure
    raises RuntimeError with NVVM's log."""
    return compile_ir(llvm_ir, libdevice, cc, opt).rstrip(b"\0").decode()


def to_ltoir(llvm_ir: str, libdevice: str | bytes, cc: tuple = (9, 0), opt: int = 3) -> bytes:
    """LTO-IR of ``llvm_ir`` (``-gen-lto``) for nvJitLink: what numba-cuda compiles a kernel
    to where nvJitLink is installed (its default), so that the link optimises it the same
    way (linking the PTX instead gave the float16 matmul 160 registers, not 124: 11 % slower
    on an H200)."""
    return compile_ir(llvm_ir, libdevice, cc, opt, ["-gen-lto"])


def compile_ir(llvm_ir: str, libdevice: str | bytes, cc: tuple, opt: int,
               extra: list | None = None) -> bytes:
    """libNVVM's output for ``llvm_ir`` with libdevice added lazily."""
    from cuda.bindings import nvvm
    prog = nvvm.create_program()
    try:
        data = llvm_ir.encode()
        nvvm.add_module_to_program(prog, data, len(data), "cutile")
        if "__nv_" in llvm_ir:          # a kernel calling no libdevice function: ~7 ms less
            if isinstance(libdevice, bytes):
                lib = libdevice
            else:
                with open(libdevice, "rb") as f:
                    lib = f.read()
            nvvm.lazy_add_module_to_program(prog, lib, len(lib), "libdevice")
        # (9, 0, "a"): the arch-specific target sm_90a (wgmma), as numba-cuda spells it
        opts = [f"-arch=compute_{''.join(map(str, cc))}", f"-opt={opt}", *(extra or ())]
        try:
            nvvm.compile_program(prog, len(opts), opts)
        except nvvm.nvvmError as e:
            size = nvvm.get_program_log_size(prog)
            log = bytearray(size)
            nvvm.get_program_log(prog, log)
            raise RuntimeError(f"NVVM: {e}: {bytes(log).decode(errors='replace')}") from None
        size = nvvm.get_compiled_result_size(prog)
        buf = bytearray(size)
        nvvm.get_compiled_result(prog, buf)
        return bytes(buf)
    finally:
        nvvm.destroy_program(prog)

"""``cu_printf(fmt, args)``: the device ``printf`` behind ``ct.printf``/``ct.print``, and
``to_sys_stdout``, which brings a GPU launch's printed text to where the interpreter's goes.

On a GPU ``cu_printf`` is a Numba intrinsic calling CUDA's ``vprintf`` with the literal C format
string and a tuple of 64-bit integers and doubles (at most 32 per call, CUDA's limit).  Under
the simulator the kernel is plain Python: the same format is rendered on the host by
``cutile.printf_fmt`` (the interpreter's formatter) and written to ``sys.stdout``.

Device ``printf`` text waits in a buffer on the device.  The driver writes it to the process's
C ``stdout`` (file descriptor 1, through C stdio's own buffer) only at its next
synchronisation point: a stream/context synchronise, a blocking copy, or the start of the
next kernel launch; never at process exit.  A Numba launch does not synchronise (numba-cuda's
own print tests call ``cuda.synchronize()``), so a printing kernel whose launch copied nothing
back lost its text or showed it one launch late, and even synchronised text went to fd 1,
which ``sys.stdout`` need not be (pytest's ``capsys``, Jupyter).  ``to_sys_stdout`` therefore
points fd 1 at a temporary file around the launch, synchronises, flushes C stdio, restores
fd 1 and writes the text to ``sys.stdout``: all of it, in launch order, before ``ct.launch``
returns, as the interpreter does.  Printing launches run one at a time (fd 1 is the
process's); anything else written to fd 1 meanwhile comes out through ``sys.stdout`` too.
"""

from __future__ import annotations

import ctypes
import os
import sys
import tempfile
import threading
from contextlib import contextmanager

import numpy as np

from .. import dtypes as dt
from .. import printf_fmt as pf

MAX_ARGS = 32          # CUDA printf accepts at most 32 arguments besides the format


def sim_printf(fmt, args=()):
    values = list(args)
    dtypes = [dt.from_numpy(np.asarray(v).dtype) for v in values]
    sys.stdout.write(pf.render(pf.parse(fmt), [np.asarray(v) for v in values], dtypes))


def make_device_printf():
    """The ``vprintf`` intrinsic (GPU only)."""
    from llvmlite import ir
    from numba.cuda import cgutils, nvvmutils, types
    from numba.cuda.extending import intrinsic

    voidptr = ir.PointerType(ir.IntType(8))

    @intrinsic
    def cu_printf(typingctx, fmt, args):
        if not isinstance(fmt, types.StringLiteral) or not isinstance(args, types.BaseTuple):
            return None
        text = fmt.literal_value
        n = len(args)

        def codegen(context, builder, sig, llargs):
            fmt_ptr = context.insert_string_const_addrspace(builder, text)
            vals = [builder.extract_value(llargs[1], i) for i in range(n)]
            if vals:
                struct = cgutils.make_anonymous_struct(builder, vals)
                buf = builder.bitcast(cgutils.alloca_once_value(builder, struct), voidptr)
            else:
                buf = ir.Constant(voidptr, None)
            builder.call(nvvmutils.declare_vprint(builder.module), (fmt_ptr, buf))
            return context.get_dummy_value()

        return types.void(fmt, args), codegen

    return cu_printf


_device: object | None = None


def cu_printf(simulator: bool):
    global _device
    if simulator:
        return sim_printf
    if _device is None:
        _device = make_device_printf()
    return _device


# -- the host side of a GPU launch that prints -----------------------------------------------
_fd_lock = threading.Lock()
_libc = None


def _flush_c_stdio() -> None:
    """``fflush(NULL)``: C stdio's buffered output (where the driver's printf text sits)."""
    global _libc
    try:
        if _libc is None:
            _libc = ctypes.CDLL("ucrtbase" if sys.platform == "win32" else None)
        _libc.fflush(None)
    except (OSError, AttributeError):
        pass


def _flush_python() -> None:
    if sys.stdout is not None:
        sys.stdout.flush()


@contextmanager
def to_sys_stdout(synchronize):
    """Around the GPU launch of a kernel that prints: after the body, ``synchronize()`` (the
    launch's stream) and move everything the device printed from fd 1 to ``sys.stdout``."""
    with _fd_lock:
        _flush_python()                 # earlier host text first, to its own destination
        _flush_c_stdio()
        try:
            tmp = tempfile.TemporaryFile()
        except OSError:
            tmp = None
        saved = None
        if tmp is not None:
            try:
                saved = os.dup(1)
                os.dup2(tmp.fileno(), 1)
            except OSError:             # no fd 1 to redirect: the text goes to C stdout
                if saved is not None:
                    os.close(saved)
                saved = None
        try:
            yield
            synchronize()               # the driver writes the printf buffer out here
        finally:
            _flush_c_stdio()
            text = b""
            if saved is not None:
                os.dup2(saved, 1)
                os.close(saved)
                tmp.seek(0)
                text = tmp.read()
            if tmp is not None:
                tmp.close()
            if text:
                out = text.decode("utf-8", errors="replace")
                if sys.stdout is not None:
                    sys.stdout.write(out)
                    sys.stdout.flush()
                else:                   # no sys.stdout (pythonw): fd 1 after all
                    os.write(1, text)

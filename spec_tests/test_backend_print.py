"""Where a GPU launch's printed text goes (R-PRINT-5; cutile/numba_backend/printf_rt.py).

The device's ``printf`` text reaches the process's C stdout only at a synchronisation point,
through C stdio's buffer; ``ct.launch`` of a kernel that prints must have put all of it on
``sys.stdout``, where the interpreter writes, before it returns.  Without a GPU the device is
modelled: its printf buffer is a list that the stream's ``synchronize`` writes out with C's
``printf`` (as the driver does).  The last tests need a real GPU.
"""

from __future__ import annotations

import ctypes
import os

import numpy as np
import pytest

import cutile as ct
from cutile.executors import backend, gpu_usable

_libc = ctypes.CDLL(None)


class _Device:
    """A device printf buffer and a stream whose ``synchronize`` writes it to C stdout."""

    def __init__(self):
        self.fifo: list[bytes] = []

    def synchronize(self):
        for text in self.fifo:
            _libc.printf(b"%s", text)
        self.fifo.clear()


def test_to_sys_stdout_moves_c_stdout_and_fd1_text_in_order(capsys):
    from cutile.numba_backend.printf_rt import to_sys_stdout
    dev = _Device()
    print("host 1")
    with to_sys_stdout(dev.synchronize):
        dev.fifo.append(b"device a\n")
        os.write(1, b"fd 1\n")                 # written straight to the descriptor
        dev.fifo.append(b"device b\n")
    print("host 2")
    assert capsys.readouterr().out == "host 1\nfd 1\ndevice a\ndevice b\nhost 2\n"


@ct.kernel
def _says(n):
    ct.printf("n=%d\n", n)
    print("twice", n * 2)


@ct.kernel
def _silent(x):
    ct.store(x, (0,), ct.load(x, (0,), (4,)) + 1)


def test_gpu_launch_that_prints_returns_after_its_text(monkeypatch, capsys):
    """``numba_backend.run`` on a modelled GPU: the kernel's text is on sys.stdout, between
    the host's lines, when the launch returns (before: in the device buffer until some later
    synchronisation, never if none came)."""
    from cutile.numba_backend import launch as L
    from cutile.numba_backend import rt
    from cutile.numba_backend.compile import compile_kernel
    ir = _says.compile(_says.specialize((np.int32(7),)))
    ck = compile_kernel(ir, 32)
    assert ck.prints
    dev = _Device()

    def fake_launch(ck_, grid3, args, st, core):
        st.fifo.append(b"n=%d\ntwice %d\n" % (args[0], 2 * args[0]))

    monkeypatch.setattr(rt, "simulator", lambda: False)
    monkeypatch.setattr(L, "compile_kernel", lambda *a, **k: ck)
    monkeypatch.setattr(L, "resolve_stream", lambda stream: (dev, None))
    monkeypatch.setattr(L, "_launch_gpu", fake_launch)
    print("before")
    L.run(ir, (1, 1, 1), [np.int32(7)])
    print("between")
    L.run(ir, (1, 1, 1), [np.int32(8)])
    assert capsys.readouterr().out == "before\nn=7\ntwice 14\nbetween\nn=8\ntwice 16\n"


def test_only_kernels_that_print_are_marked():
    from cutile.numba_backend.compile import compile_kernel
    x = np.zeros(4, np.float32)
    assert not compile_kernel(_silent.compile(_silent.specialize((x,))), 32).prints


# -- a real GPU --------------------------------------------------------------------------------
gpu = pytest.mark.skipif(not gpu_usable(), reason="needs a CUDA GPU (device printf)")


@ct.kernel
def _tile_lines(x, T: ct.Constant[int]):
    t = ct.load(x, (0,), (T,))
    ct.printf("tile:%.5f\n", t)
    print(f"sum={ct.sum(t, None)}", t > 2, sep="|")


def _run_each(capture) -> list[str]:
    outs = []
    x = np.arange(8, dtype=np.float32)
    for be in ("interp", "numba"):
        with backend(be):
            print("before")
            ct.launch(None, (1,), _tile_lines, (x, 8))
            print("between")
            ct.launch(None, (1,), _says, (np.int32(3),))
            print("after")
        outs.append(capture.readouterr().out)
    return outs


@gpu
def test_gpu_print_text_matches_interpreter_capsys(capsys):
    interp, numba = _run_each(capsys)
    assert numba == interp and interp.count("\n") == 7


@gpu
def test_gpu_print_text_matches_interpreter_capfd(capfd):
    interp, numba = _run_each(capfd)
    assert numba == interp and interp.count("\n") == 7

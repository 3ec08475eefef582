"""``cutile.testing``'s third executor, NVIDIA's ``cuda.tile`` (cuda_tile.py), on the CPU:
its one-line availability, the forced-but-missing skip, the rebinding of a kernel function to
another module, the reverse switch (``import cuda.tile`` giving cutile) and the torch bit-view
transfers.  The launches on a GPU are tools/oracle/check_executor.py's."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import types

import ml_dtypes
import numpy as np
import pytest

import cutile as ct
import cutile as tl  # an alias the rebinding must catch too
from cutile.testing import cuda_tile, run_on
from cutile.testing.executors import available_executors

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = {**os.environ, "PYTHONPATH": ROOT, "CUTILE_PROGRESS": "0", "HYPOTHESIS_PROFILE": "ci"}


def _pytest(*args) -> list[str]:
    """A pytest command line with cutile's plugin (named where cutile is not installed)."""
    from importlib.metadata import distributions
    installed = any(e.group == "pytest11" and e.value == "cutile.testing.pytest_plugin"
                    for d in distributions() for e in d.entry_points)
    plugin = [] if installed else ["-p", "cutile.testing.pytest_plugin"]
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin, *args]


def _to_f32(t):
    return ct.astype(t, ct.float32)


@ct.kernel
def widen(x, y, T: ct.Constant[int]):
    b = ct.bid(0)
    ct.store(y, (b,), _to_f32(tl.load(x, (b,), (T,), padding_mode=ct.PaddingMode.ZERO)))


def test_missing_cuda_tile_is_one_line_and_left_out(monkeypatch):
    monkeypatch.setattr(cuda_tile, "_installed", lambda name: name != "cuda.tile")
    monkeypatch.delenv("CUTILE_TEST_EXECUTORS", raising=False)
    why = cuda_tile.unavailable()
    assert why.startswith("cuda.tile: skipped (NVIDIA's cuda.tile is not installed")
    assert "\n" not in why and "cuda.tile" not in available_executors()


def test_cuda_tile_without_torch_or_cupy_says_so(monkeypatch):
    monkeypatch.setattr(cuda_tile, "_installed", lambda name: name == "cuda.tile")
    assert cuda_tile.unavailable() == ("cuda.tile: skipped (neither torch nor CuPy is installed "
                                       "to move arrays to the GPU)")


def test_import_loads_none_of_the_optional_packages():
    code = ("import sys, cutile, cutile.testing; "
            "print([m for m in ('numba', 'torch', 'cupy', 'cuda', 'cuda.tile') "
            "if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, env=ENV, check=True).stdout.strip()
    assert out == "[]"


@pytest.mark.skipif(cuda_tile._installed("cuda.tile"), reason="cuda.tile is installed here")
def test_forced_cuda_tile_without_it_skips_with_the_reason(tmp_path):
    (tmp_path / "test_one.py").write_text("def test_x(cutile_executor):\n    pass\n")
    r = subprocess.run(_pytest("-rs", str(tmp_path)), capture_output=True, text=True, cwd=tmp_path,
                       env={**ENV, "CUTILE_TEST_EXECUTORS": "interp,cuda.tile"})
    assert "1 passed, 1 skipped" in r.stdout, r.stdout + r.stderr
    assert "cuda.tile: skipped (NVIDIA's cuda.tile is not installed" in r.stdout


def test_rebinding_points_the_function_and_its_helpers_at_the_other_module():
    stand = types.ModuleType("stand")             # stands for cuda.tile
    for name in dir(ct):
        if not name.startswith("__"):
            setattr(stand, name, getattr(ct, name))
    stand.PaddingMode = types.SimpleNamespace(ZERO="zero")
    made = []
    rebuilt = cuda_tile.rebind(widen, ct, stand,
                               lambda fn, o: made.append((fn, o)) or ct.kernel(fn, **o))
    fn, opts = made[0]
    g = fn.__globals__
    assert g["ct"] is stand and g["tl"] is stand and g["_to_f32"].__globals__["ct"] is stand
    assert fn.__code__ is widen.function.__code__          # the source cuda.tile reads
    assert widen.function.__globals__["ct"] is ct          # the original is untouched
    assert opts == widen.options and isinstance(rebuilt, ct.kernel)
    # cutile's own hints are rebuilt as the stand-in's (the same objects here: same module)
    assert fn.__annotations__["T"] == widen.function.__annotations__["T"]
    x = np.arange(10, dtype=np.float16)
    with pytest.raises(Exception, match="padding|zero|Padding"):  # noqa: B017 - the stand-in's
        run_on(rebuilt, (3,), (x, np.zeros(10, np.float32), 4))  # PaddingMode is not cutile's


def test_a_cutile_kernel_rebound_to_cutile_runs_the_same():
    x = np.arange(10, dtype=np.float16)
    k = cuda_tile.rebind(widen, ct, ct, lambda fn, o: ct.kernel(fn, **o))
    out = run_on(k, (3,), (x, np.zeros(10, np.float32), 4)).arrays["y"]
    assert np.array_equal(out, x.astype(np.float32))


def test_cuda_tile_import_gives_cutile_under_the_env_var(tmp_path):
    """A suite written with ``import cuda.tile as ct`` (and examples/test_cuda_tile_kernel.py,
    the docs' example) runs on cutile with CUTILE_AS_CUDA_TILE=1."""
    (tmp_path / "test_suite.py").write_text(textwrap.dedent("""
        import numpy as np
        import cuda.tile as ct
        from cuda.tile import compilation  # noqa: F401

        @ct.kernel
        def double(x, T: ct.Constant[int]):
            b = ct.bid(0)
            ct.store(x, (b,), ct.load(x, (b,), (T,)) * 2)

        def test_runs_on_cutile():
            assert ct.__name__ == "cutile"
            x = np.arange(8, dtype=np.int32)
            ct.launch(None, (2,), double, (x, 4))
            assert x.tolist() == [0, 2, 4, 6, 8, 10, 12, 14]
    """))
    example = os.path.join(ROOT, "examples", "test_cuda_tile_kernel.py")
    r = subprocess.run(_pytest(str(tmp_path / "test_suite.py"), example), capture_output=True,
                       text=True, cwd=ROOT, env={**ENV, "CUTILE_AS_CUDA_TILE": "1",
                                                 "CUTILE_BACKEND": "interp",
                                                 "CUTILE_TEST_EXECUTORS": "interp"})
    assert "3 passed" in r.stdout, r.stdout + r.stderr


def test_torch_bit_view_transfers_round_trip():
    torch = pytest.importorskip("torch", reason="needs torch (PYTHONPATH=/tmp/torchpkg has a "
                                "CPU build here; CI has none)")
    dev = cuda_tile.Device("torch")
    for dtype, tdtype in ((ml_dtypes.bfloat16, torch.bfloat16),
                          (ml_dtypes.float8_e4m3fn, torch.float8_e4m3fn),
                          (np.float16, torch.float16), (np.bool_, torch.bool)):
        a = np.array([0.0, -0.0, 1.5, -3.0, np.nan], np.float32).astype(dtype)
        t = dev.tensor(a)
        assert t.dtype == tdtype
        back = dev.numpy(t, a.dtype)
        assert back.dtype == a.dtype
        assert np.array_equal(back.view(np.uint8), a.view(np.uint8))

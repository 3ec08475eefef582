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
import typing

import ml_dtypes
import numpy as np
import pytest

import cutile as ct
import cutile as tl  # an alias the rebinding must catch too
from cutile.testing import (
    ExecutorMismatch,
    assert_executors_agree,
    assert_matches,
    cuda_tile,
    run_on,
)
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


def test_naming_a_missing_cuda_tile_skips_the_test_or_raises_saying_why(monkeypatch):
    monkeypatch.setattr(cuda_tile, "_installed", lambda name: name != "cuda.tile")
    args = (np.zeros(4, np.int32), np.zeros(4, np.float32), 4)
    with pytest.raises(pytest.skip.Exception, match="cuda.tile is not installed"):
        assert_executors_agree(widen, (1,), args, executors=("interp", "cuda.tile"))
    monkeypatch.delenv("PYTEST_CURRENT_TEST")                 # a script, not a test
    with pytest.raises(RuntimeError, match="cuda.tile is not installed"):
        run_on(widen, (1,), args, "cuda.tile")


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
    # the same suite switched by its conftest.py's one line instead of the variable
    (tmp_path / "conftest.py").write_text(
        "import cutile.testing; cutile.testing.pose_as_cuda_tile()\n")
    r = subprocess.run(_pytest(str(tmp_path / "test_suite.py")), capture_output=True,
                       text=True, cwd=tmp_path, env={**ENV, "CUTILE_BACKEND": "interp"})
    assert "1 passed" in r.stdout, r.stdout + r.stderr


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


# --- the executor's plumbing on the CPU: a stand-in cuda.tile in sys.modules ------------------

class _HostDevice(cuda_tile.Device):
    """Device memory stood in for by separate host copies (no torch, no GPU)."""

    def __init__(self):
        self.lib, self.mod = "numpy", np

    def to_device(self, a):
        return np.array(a, copy=True)

    def to_host(self, d, dtype):
        return np.array(d, dtype=dtype)

    def stream(self):
        return "stream"

    def synchronize(self):
        pass


def _install(monkeypatch, stand):
    """``import cuda.tile`` gives ``stand`` until the test ends."""
    parent = types.ModuleType("cuda")
    parent.__path__ = []
    parent.tile = stand
    monkeypatch.setitem(sys.modules, "cuda", parent)
    monkeypatch.setitem(sys.modules, "cuda.tile", stand)


@pytest.fixture
def cutile_as_the_gpu(monkeypatch):
    """cuda.tile stood in for by cutile's objects with a recording ``launch`` that may corrupt
    its outputs afterwards (a cuTile bug); arrays go "to the device" as host copies."""
    stand = types.ModuleType("cuda.tile")
    vars(stand).update({n: v for n, v in vars(ct).items() if not n.startswith("__")})
    stand.calls, stand.corrupt = [], None

    def launch(stream, grid, kernel, args):
        stand.calls.append((stream, grid, kernel, args))
        ct.launch(None, grid, kernel, args)
        if stand.corrupt:
            stand.corrupt(args)

    stand.launch = launch
    _install(monkeypatch, stand)
    monkeypatch.setattr(cuda_tile, "Device", _HostDevice)
    monkeypatch.setattr(cuda_tile, "unavailable", lambda: None)
    monkeypatch.setattr(scale, "_as_cuda_tile", None, raising=False)   # no cached rebuild
    return stand


@ct.kernel
def scale(x, out, alpha, T: ct.Constant[int]):
    i, j = ct.bid(0), ct.bid(1)
    t = ct.load(x, (i, j), (T, T), padding_mode=ct.PaddingMode.ZERO)
    ct.store(out, (i, j), t * alpha)


def _scale_args():
    x = np.arange(6 * 10, dtype=np.float32).reshape(6, 10) - 7
    return (x, np.zeros((6, 10), np.float32), np.float32(1.5), 4), (2, 3)


def test_cuda_tile_executor_launches_the_rebuilt_kernel_on_aligned_views(cutile_as_the_gpu):
    args, grid = _scale_args()
    out = assert_executors_agree(scale, grid, args, executors=("interp", "cuda.tile"))["out"]
    assert np.array_equal(out, args[0] * np.float32(1.5))
    [(stream, g, kernel, call)] = cutile_as_the_gpu.calls
    assert stream == "stream" and g == (2, 3)
    assert kernel is not scale and kernel.function.__globals__["ct"] is cutile_as_the_gpu
    assert type(call[2]) is float and type(call[3]) is int     # no NumPy scalar reaches it
    for view in call[:2]:                    # guard band of 16 bytes: the base stays aligned
        assert view.shape == (6, 10) and (view.ctypes.data - view.base.ctypes.data) % 16 == 0
    assert not np.isnan(call[1]).any()       # out went poisoned (NaN), came back written


def test_a_cuda_tile_disagreement_names_element_values_and_the_writing_block(cutile_as_the_gpu):
    def bug(args):                             # "cuTile" gets one element wrong
        args[1][4, 9] += 1
    cutile_as_the_gpu.corrupt = bug
    args, grid = _scale_args()
    with pytest.raises(ExecutorMismatch) as e:
        assert_executors_agree(scale, grid, args, executors=("interp", "cuda.tile"))
    [m] = e.value.mismatches
    assert (m.array, m.index, m.block) == ("out", (4, 9), (1, 2, 0))
    assert m.expected == np.float32(63) and m.actual == np.float32(64)     # x[4, 9] = 42
    assert "interp vs cuda.tile" in str(e.value) and "0x427c0000" in str(e.value)
    with pytest.raises(ExecutorMismatch) as e:   # cuTile first: the block is still named
        assert_executors_agree(scale, grid, args, executors=("cuda.tile", "interp"))
    assert [(m.index, m.block) for m in e.value.mismatches] == [((4, 9), (1, 2, 0))]


def test_assert_matches_on_cuda_tile_asks_the_interpreter_for_the_block(cutile_as_the_gpu):
    def bug(args):
        args[1][0, 0] = 0
    cutile_as_the_gpu.corrupt = bug
    args, grid = _scale_args()
    with pytest.raises(ExecutorMismatch) as e:
        assert_matches(scale, grid, args, lambda x, out, a, t: x * a, executor="cuda.tile")
    [m] = e.value.mismatches
    assert (m.index, m.block, m.actual) == ((0, 0), (0, 0, 0), 0)


def test_cuda_tile_gets_no_half_precision_scalar():
    with pytest.raises(TypeError, match="no float16 scalar"):
        cuda_tile.scalar(np.float16(1))
    assert type(cuda_tile.scalar(np.float64(0.1))) is float and cuda_tile.scalar(None) is None
    assert [cuda_tile.guard_for(d, 2) for d in ("f4", "f2", "f8", "i1", "?")] == [4, 8, 2, 16, 16]


# --- the reverse: a kernel written against cuda.tile, run on the interpreter -----------------

def _stand_in_cuda_tile():
    """A cuda.tile look-alike whose every object is its own (not cutile's): its functions fail
    if called, so a kernel only runs on the interpreter if its globals were rebound."""
    import dataclasses
    stand = types.ModuleType("cuda.tile")

    def refuse(*a, **k):
        raise AssertionError("the stand-in cuda.tile was called: the kernel was not rebound")

    for name in ("bid", "load", "store", "launch", "astype"):
        setattr(stand, name, types.FunctionType(refuse.__code__, {}, name))

    class ConstantAnnotation:
        __module__ = "cuda.tile._annotations"

    class Constant:
        def __class_getitem__(cls, t):
            return typing.Annotated[t, ConstantAnnotation()]

    @dataclasses.dataclass
    class CompilerOptions:
        num_ctas: object = None
        occupancy: object = None
        opt_level: object = 3
        num_worker_warps: object = None

    class kernel:  # noqa: N801 - cuda.tile's spelling
        __module__ = "cuda.tile._execution"

        def __new__(cls, fn=None, **options):
            if fn is None:
                return lambda f: cls(f, **options)
            return super().__new__(cls)

        def __init__(self, fn, **options):
            self._pyfunc, self._compiler_options = fn, CompilerOptions(**options)

    stand.Constant, stand.ConstantAnnotation, stand.kernel = Constant, ConstantAnnotation, kernel
    stand.PaddingMode = types.SimpleNamespace(ZERO=object())
    return stand


def test_a_cuda_tile_kernel_object_runs_on_the_interpreter(monkeypatch, tmp_path):
    stand = _stand_in_cuda_tile()
    _install(monkeypatch, stand)
    (tmp_path / "users_kernels.py").write_text(textwrap.dedent("""
        import cuda.tile as ct
        from cuda.tile import bid

        @ct.kernel(occupancy=2)
        def double(x, T: ct.Constant[int]):
            b = bid(0)
            ct.store(x, (b,), ct.load(x, (b,), (T,), padding_mode=ct.PaddingMode.ZERO) * 2)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "users_kernels", raising=False)
    import users_kernels as mod
    assert cuda_tile.is_cuda_tile_kernel(mod.double)
    x = np.arange(10, dtype=np.int32)
    out = run_on(mod.double, (3,), (x, 4)).arrays["x"]
    assert out.tolist() == (x * 2).tolist()
    k = cuda_tile.to_cutile(mod.double)
    assert k.function.__code__ is mod.double._pyfunc.__code__ and k.options["occupancy"] == 2
    assert k.function.__globals__["ct"] is ct and k.function.__globals__["bid"] is ct.bid
    hint = typing.get_type_hints(k.function, include_extras=True)["T"]
    assert hint.__origin__ is int and type(hint.__metadata__[0]) is ct.ConstantAnnotation
    assert mod.double._pyfunc.__globals__["ct"] is stand          # the user's module untouched


@ct.kernel
def wide_index(x: typing.Annotated[ct.Array, ct.ArrayAnnotation(index_dtype=ct.int64)],
               T: ct.Constant[int]):
    ct.store(x, (0,), ct.load(x, (0,), (T,)))


def test_array_annotations_are_rebuilt_as_the_other_modules():
    stand = types.ModuleType("stand")

    class ArrayAnnotation:
        def __init__(self, **kw):
            self.kw = kw

    stand.ArrayAnnotation, stand.Array, stand.int64 = ArrayAnnotation, type("Array", (), {}), 7
    stand.Constant = ct.Constant
    # this file's hints are strings: evaluated later, in the rebound globals
    hint = typing.get_type_hints(cuda_tile.rebind(wide_index, ct, stand, lambda fn, o: fn),
                                 include_extras=True)["x"]
    assert hint.__origin__ is stand.Array
    assert type(hint.__metadata__[0]) is ArrayAnnotation
    assert hint.__metadata__[0].kw == {"index_dtype": stand.int64}
    # hints evaluated at definition (no `from __future__ import annotations`): rebuilt
    anns = wide_index.function.__annotations__
    saved = dict(anns)
    anns["x"] = typing.get_type_hints(wide_index.function, include_extras=True)["x"]
    try:
        hint = cuda_tile.rebind(wide_index, ct, stand, lambda fn, o: fn).__annotations__["x"]
    finally:
        anns.update(saved)
    assert hint.__origin__ is stand.Array
    [meta] = hint.__metadata__
    assert type(meta) is ArrayAnnotation and meta.kw["index_dtype"] is stand.int64
    assert meta.kw["static_shape_dims"] == ()


def test_by_target_options_are_rebuilt_as_the_other_modules():
    stand = types.ModuleType("stand")
    stand.ByTarget = lambda **kw: ("stand ByTarget", kw)
    k = widen.replace_hints(num_ctas=ct.ByTarget(sm_100=2, default=1), occupancy=2)
    opts = cuda_tile.rebind(k, ct, stand, lambda fn, o: o)
    assert opts["num_ctas"] == ("stand ByTarget", {"sm_100": 2, "default": 1})
    assert opts["occupancy"] == 2

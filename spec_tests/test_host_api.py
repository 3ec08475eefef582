"""Host API of 1.7 on cutile (§24, §25): dtype objects, argument kinds (PyTorch tensors of
every dtype, CUDA-array-interface objects such as CuPy arrays), launch checks (stream type,
read-only arrays), ``kernel.replace_hints``, ``ct.compiler_timeout``, ``ct.tune`` and
``ct.compilation``.  Tests needing PyTorch skip without it (CI has no torch)."""

from __future__ import annotations

import copy
import importlib.util
import io
import math
import pickle

import ml_dtypes
import numpy as np
import pytest

import cutile as ct
from cutile.compilation import (
    ArrayConstraint,
    ConstantConstraint,
    KernelSignature,
    ListConstraint,
    ScalarConstraint,
    TupleConstraint,
    demangle_kernel_name,
    export_kernel,
)
from cutile.device_arrays import describe
from cutile.executors import backend

HAVE_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="PyTorch is not installed (the CPU "
                                                        "wheel is enough: pip install torch)")


@ct.kernel
def copy8(a, b):
    ct.store(b, (0,), ct.load(a, (0,), (8,)))


@ct.kernel
def vadd(a, b, c, T: ct.Constant[int]):
    i = ct.bid(0)
    ct.store(c, (i,), ct.load(a, (i,), (T,)) + ct.load(b, (i,), (T,)))


# -- DType (1.7's DType class) ------------------------------------------------------------
ALL = [ct.bool_, ct.uint8, ct.uint16, ct.uint32, ct.uint64, ct.int8, ct.int16, ct.int32,
       ct.int64, ct.float16, ct.float32, ct.float64, ct.bfloat16, ct.tfloat32,
       ct.float8_e4m3fn, ct.float8_e5m2, ct.float8_e8m0fnu, ct.float8_e5m3fnu,
       ct.float4_e2m1fn]
BITS = [8, 8, 16, 32, 64, 8, 16, 32, 64, 16, 32, 64, 16, 32, 8, 8, 8, 8, 4]


@pytest.mark.parametrize("d, bits", list(zip(ALL, BITS)), ids=[d.name for d in ALL])
def test_dtype_attributes(d, bits):
    """R-DTYPE-1/2: name, __name__, bitwidth, str/repr, hash by name, copies are the same."""
    assert d.__name__ == d.name == str(d)
    assert repr(d) == f"<DType '{d.name}'>"
    assert d.bitwidth == bits
    assert hash(d) == hash(d.name)
    assert pickle.loads(pickle.dumps(d)) is d and copy.deepcopy(d) is d
    assert isinstance(d, ct.DType)


def test_dtype_equality_is_by_dtype_only():
    """1.7: a DType equals a DType of the same name, never a NumPy dtype or a string."""
    assert ct.float32 == ct.float32 and ct.float32 != ct.float64
    assert ct.float32 != np.float32 and ct.float32 != np.dtype("float32")
    assert not (np.dtype("float32") == ct.float32)
    assert ct.int8 != "int8" and ct.int8 is not None
    assert {ct.int32: 1, ct.int64: 2}[ct.int64] == 2
    assert ct.DType.__name__ == "DType"


def test_dtype_name_in_tile_code():
    """``a.dtype.__name__`` and ``a.dtype.bitwidth`` are compile-time constants in a kernel."""
    @ct.kernel
    def k(a, b):
        t = ct.load(a, (0,), (4,))
        if a.dtype.__name__ == "float32":
            t = t + a.dtype.bitwidth
        ct.store(b, (0,), t)

    a = np.arange(4, dtype=np.float32)
    b = np.zeros(4, np.float32)
    ct.launch(None, (1,), k, (a, b))
    np.testing.assert_array_equal(b, a + 32)


# -- PyTorch tensors ---------------------------------------------------------------------
TORCH_DTYPES = ["float32", "float16", "bfloat16", "float64", "int8", "int16", "int32",
                "int64", "uint8", "uint16", "uint32", "uint64", "bool", "float8_e4m3fn",
                "float8_e5m2", "float8_e8m0fnu"]


def _same_bits(x, y) -> bool:
    import torch
    w = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[x.element_size()]
    return torch.equal(x.contiguous().view(w), y.contiguous().view(w))


@needs_torch
@pytest.mark.parametrize("name", TORCH_DTYPES)
def test_torch_cpu_tensor_every_dtype(name):
    """R-LAUNCH-3: a CPU tensor of every cuTile dtype is a zero-copy argument; the kernel's
    stores land in the caller's tensor (bfloat16/float8 via a same-width integer view)."""
    import torch
    d = getattr(torch, name)
    src = (torch.arange(8) % 4 + 1).to(d)
    dst = torch.zeros(8, dtype=d)
    ct.launch(None, (1,), copy8, (src, dst))
    assert _same_bits(src, dst)


@needs_torch
def test_torch_requires_grad_and_strided_views():
    """Tensors that require grad are read through ``detach`` (same storage); a strided view
    is written through, leaving the rest of its buffer alone."""
    import torch
    x = torch.arange(8, dtype=torch.float32, requires_grad=True)
    base = torch.full((16,), -1.0)
    y = base[::2]
    ct.launch(None, (1,), copy8, (x, y))
    assert torch.equal(base[::2], x.detach()) and torch.equal(base[1::2], torch.full((8,), -1.))


@needs_torch
def test_torch_bfloat16_arithmetic_matches_numpy():
    """A bfloat16 tensor computes as ml_dtypes' bfloat16 does (expected from NumPy)."""
    import torch
    a = torch.tensor([1.5, -2.25, 3.0, 0.1, 7.0, 8.5, -0.5, 2.0], dtype=torch.bfloat16)
    b = torch.tensor([0.5, 1.0, -1.0, 0.2, 1.0, 0.5, 0.25, 2.0], dtype=torch.bfloat16)
    c = torch.zeros(8, dtype=torch.bfloat16)
    ct.launch(None, (2,), vadd, (a, b, c, 4))
    an = a.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    bn = b.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    want = (an + bn).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(c.view(torch.int16).numpy(), want.view(np.int16))


@needs_torch
def test_torch_unsupported_dtype_and_device():
    import torch
    with pytest.raises(TypeError, match="complex64|not supported"):
        ct.launch(None, (1,), copy8, (torch.zeros(8, dtype=torch.complex64),
                                      torch.zeros(8, dtype=torch.complex64)))
    with pytest.raises(TypeError, match="device meta"):
        ct.launch(None, (1,), copy8, (torch.zeros(8, device="meta"),
                                      torch.zeros(8, device="meta")))


# -- CUDA array interface (CuPy, PyTorch CUDA tensors) ------------------------------------
class FakeCupy:
    """What a CuPy array shows cutile: ``__cuda_array_interface__`` (v3)."""

    def __init__(self, shape, typestr, ptr=0x7000_0000, strides=None, readonly=False):
        self.__cuda_array_interface__ = {"version": 3, "shape": shape, "typestr": typestr,
                                         "strides": strides, "data": (ptr, readonly)}


def test_cuda_array_interface_is_described_without_copy():
    """CuPy arrays: pointer, shape, byte strides (C order when absent) and dtype are read
    once; the object is kept, never copied (R-LAUNCH-3)."""
    x = FakeCupy((3, 4), "<f2")
    r = describe(x)
    assert (r.obj, r.ptr, r.shape, r.strides, r.dtype) == (x, 0x7000_0000, (3, 4), (8, 2),
                                                           np.dtype(np.float16))
    spec = vadd.specialize((FakeCupy((8,), "<f4"), FakeCupy((8,), "<f4"), FakeCupy((8,), "<f4"),
                            4))
    assert [p.dtype for p in spec.params[:3]] == [ct.float32] * 3
    assert all(leaf.ptr == 0x7000_0000 for leaf in spec.leaves)


def test_read_only_device_array_written_is_refused():
    """A read-only CUDA array the kernel stores to: ValueError naming the argument, at launch,
    before any executor runs (so no GPU is needed to see it)."""
    a, b = FakeCupy((8,), "<f4"), FakeCupy((8,), "<f4", readonly=True)
    with pytest.raises(ValueError, match="'c' of vadd is a read-only array"):
        ct.launch(None, (2,), vadd, (a, a, b, 4))


# -- launch checks -------------------------------------------------------------------------
def test_read_only_numpy_array_written_is_refused():
    """R-ERR-2: storing to a read-only NumPy array is a launch-time ValueError naming the
    argument and the line that stores to it; nothing runs (the inputs stay untouched)."""
    a = np.arange(8, dtype=np.float32)
    out = np.zeros(8, np.float32)
    out.flags.writeable = False
    with pytest.raises(ValueError, match=r"'c' of vadd is a read-only array .*written at "
                                         r".*test_host_api.py:\d+"):
        ct.launch(None, (2,), vadd, (a, a, out, 4))
    assert not out.any()
    a.flags.writeable = False                     # read-only inputs are fine
    c = np.zeros(8, np.float32)
    ct.launch(None, (2,), vadd, (a, a, c, 4))
    np.testing.assert_array_equal(c, a + a)


def test_read_only_check_follows_views_and_tuples():
    """The written parameter is found through ``a.slice`` views and inside tuples; only it
    must be writeable."""
    @ct.kernel
    def k(pair, src):
        out = pair[1].slice(0, 2, 6)
        ct.store(out, (0,), ct.load(src, (0,), (4,)))

    src = np.arange(4, dtype=np.float32)
    keep, out = np.zeros(8, np.float32), np.zeros(8, np.float32)
    keep.flags.writeable = False
    src.flags.writeable = False
    ct.launch(None, (1,), k, ((keep, out), src))
    np.testing.assert_array_equal(out[2:6], src)
    with pytest.raises(ValueError, match="'pair' of k is a read-only array"):
        ct.launch(None, (1,), k, ((out, keep), src))


@pytest.mark.parametrize("stream", ["abc", 1.5, object(), True, [0]])
def test_stream_of_wrong_type(stream):
    """R-LAUNCH-1: the stream is None, an int handle or a stream object; anything else is a
    TypeError at launch, on the interpreter as well."""
    a = np.zeros(8, np.float32)
    with pytest.raises(TypeError, match="stream must be None, a CUstream handle"):
        ct.launch(stream, (1,), copy8, (a, a.copy()))


def test_stream_objects_accepted():
    class TorchLike:
        cuda_stream = 0

    class CupyLike:
        ptr = 0

    class CoreLike:
        def __cuda_stream__(self):
            return (0, 0)

    a = np.arange(8, dtype=np.float32)
    for s in (None, 0, np.int64(0), TorchLike(), CupyLike(), CoreLike()):
        b = np.zeros(8, np.float32)
        ct.launch(s, (1,), copy8, (a, b))
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="non-negative"):
        ct.launch(-1, (1,), copy8, (a, a.copy()))


# -- replace_hints, compiler_timeout -------------------------------------------------------
def test_replace_hints():
    """R-KERN-3: a new kernel with updated, validated hints and its own cache."""
    k2 = vadd.replace_hints(occupancy=2, num_ctas=ct.ByTarget(sm_100=2))
    assert k2 is not vadd and k2.options["occupancy"] == 2 and vadd.options["occupancy"] is None
    assert k2._cache is not vadd._cache
    a = np.arange(8, dtype=np.float32)
    c = np.zeros(8, np.float32)
    ct.launch(None, (2,), k2, (a, a, c, 4))
    np.testing.assert_array_equal(c, a + a)
    with pytest.raises(ValueError, match="occupancy should be"):
        vadd.replace_hints(occupancy=99)
    with pytest.raises(TypeError, match="unexpected hint 'bogus'"):
        vadd.replace_hints(bogus=1)


def _big_kernel(n_stmts: int):
    src = "def big(a, b):\n    t = ct.load(a, (0,), (4,))\n"
    src += "".join("    t = t + 1.0\n" for _ in range(n_stmts))
    src += "    ct.store(b, (0,), t)\n"
    ns = {"ct": ct}
    import linecache
    linecache.cache["<big-kernel>"] = (len(src), None, src.splitlines(True), "<big-kernel>")
    exec(compile(src, "<big-kernel>", "exec"), ns)
    return ct.kernel(ns["big"])


def test_compiler_timeout():
    """§25: a compile longer than ``ct.compiler_timeout`` raises TileCompilerTimeoutError (a
    TileInternalError); a generous limit compiles; the limit leaves with the block."""
    a = np.zeros(4, np.float32)
    k = _big_kernel(3000)
    with ct.compiler_timeout(0.001), pytest.raises(ct.TileCompilerTimeoutError,
                                                   match="compiler timeout of 0.001 s"):
        ct.launch(None, (1,), k, (a, a.copy()))
    assert issubclass(ct.TileCompilerTimeoutError, ct.TileInternalError)
    k = _big_kernel(3)
    b = np.zeros(4, np.float32)
    with ct.compiler_timeout(60):
        ct.launch(None, (1,), k, (a, b))
    np.testing.assert_array_equal(b, np.full(4, 3, np.float32))
    with pytest.raises(ValueError, match="positive"):
        with ct.compiler_timeout(0):
            pass


def test_compiler_timeout_env(monkeypatch):
    monkeypatch.setenv("CUDA_TILE_COMPILER_TIMEOUT_SEC", "0.001")
    a = np.zeros(4, np.float32)
    with pytest.raises(ct.TileCompilerTimeoutError):
        ct.launch(None, (1,), _big_kernel(3000), (a, a.copy()))


# -- ct.tune --------------------------------------------------------------------------------
@pytest.fixture
def fast_tune(monkeypatch):
    from cutile.tune import _tune
    monkeypatch.setattr(_tune, "_MAX_REPEATS", 10)
    monkeypatch.setattr(_tune, "_MAX_MEASURE_TIME_US", 200_000)
    monkeypatch.setattr(_tune, "_WARM_UP_REPEATS", 1)
    return _tune


def test_tune_exhaustive_search(fast_tune, capsys):
    """``ct.tune.exhaustive_search`` times real launches of every config; failures (a tile
    that is not a power of two) are recorded, not raised; the result prints a summary."""
    n = 64
    a = np.arange(n, dtype=np.float32)
    outs = []

    def args(cfg):
        outs.append(np.zeros(n, np.float32))
        return (a, a, outs[-1], cfg["tile"])

    space = [{"tile": 8}, {"tile": 16}, {"tile": 12}, {"tile": 32}]
    res = ct.tune.exhaustive_search(space, None, lambda c: (n // c["tile"],), vadd, args,
                                    lambda c: {"occupancy": 1})
    assert isinstance(res, ct.tune.TuningResult)
    assert [m.config["tile"] for m in res.successes] == [8, 16, 32]
    assert all(isinstance(m, ct.tune.Measurement) and m.mean_us > 0 and m.num_samples >= 5
               and m.error_margin_us >= 0 for m in res.successes)
    assert res.best is min(res.successes, key=lambda m: m.mean_us)
    ((cfg, exc, msg),) = res.failures
    assert cfg == {"tile": 12} and exc is ct.TileTypeError and "power of two" in msg
    for o in outs[:1] + outs[-1:]:
        np.testing.assert_array_equal(o, a + a)      # the timed launches really ran
    out = capsys.readouterr().out
    assert "3 succeeded, 1 failed" in out and "*" in out


def test_tune_kernel_factory_and_errors(fast_tune):
    a = np.arange(8, dtype=np.float32)
    res = ct.tune.exhaustive_search([4, 8], None, lambda t: (8 // t,), lambda t: vadd,
                                    lambda t: (a, a, np.zeros(8, np.float32), t), quiet=True)
    assert {m.config for m in res.successes} == {4, 8}
    with pytest.raises(ValueError, match="Search space is empty"):
        ct.tune.exhaustive_search([], None, None, vadd, None)
    with pytest.raises(ValueError, match="No valid config found"):
        ct.tune.exhaustive_search([3], None, lambda t: (1,), vadd,
                                  lambda t: (a, a, a.copy(), t), quiet=True)


def test_tune_single_run_timeout(fast_tune):
    """A configuration whose launch exceeds ``single_run_timeout_sec`` is a failure."""
    @ct.kernel
    def spin(a, n: int):
        i = 0
        while i < n:
            i = i + 1
        ct.store(a, (0,), ct.full((1,), i, ct.int32))

    a = np.zeros(1, np.int32)
    with backend("interp"):                       # the interpreter stops the launch itself
        res = ct.tune.exhaustive_search([10, 1 << 30], None, lambda n: (1,), spin,
                                        lambda n: (a, n), quiet=True,
                                        single_run_timeout_sec=0.5)
    assert [m.config for m in res.successes] == [10]
    ((cfg, exc, msg),) = res.failures
    assert cfg == 1 << 30 and "wall-clock limit" in msg


# -- ct.compilation -------------------------------------------------------------------------
def test_signature_from_kernel_args_and_round_trip():
    a = np.zeros(8, np.float32)
    sig = KernelSignature.from_kernel_args(vadd, (a, a, a, 4))
    assert sig.parameters == (ArrayConstraint(ct.float32, 1),) * 3 + (ConstantConstraint(4),)
    assert sig.symbol == "vadd_Kc1_A1f32_A1f32_A1f32_I4"
    name, back = demangle_kernel_name(sig.symbol)
    assert name == "vadd" and back.parameters == sig.parameters

    @ct.kernel
    def mixed(x: ct.IndexedWithInt64, t, s: float, flag: ct.Constant[bool]):
        pass

    sig = KernelSignature.from_kernel_args(
        mixed, (np.zeros((2, 2), ml_dtypes.bfloat16), (np.zeros(3, np.int8), 5), 1.0, True))
    assert sig.parameters == (
        ArrayConstraint(ct.bfloat16, 2, index_dtype=ct.int64),
        TupleConstraint([ArrayConstraint(ct.int8, 1), ScalarConstraint(ct.int32)]),
        ScalarConstraint(ct.float32), ConstantConstraint(True))
    assert demangle_kernel_name(sig.symbol)[1].parameters == sig.parameters


def test_mangling_round_trips_every_constraint():
    arr = ArrayConstraint(ct.float8_e5m2, 2, index_dtype=ct.int64, alias_groups=("group0",),
                          stride_constant=(None, 1), shape_divisible_by=(16, 8),
                          stride_lower_bound_incl=0, base_addr_divisible_by=16,
                          may_alias_internally=True)
    lst = ListConstraint(ArrayConstraint(ct.float16, 1, alias_groups=("group0",)),
                         alias_groups=("group1",), elements_may_alias=True)
    params = [arr, lst, ScalarConstraint(ct.uint64), -5, True, math.nan, 2.5, ct.float32,
              (1, (2.0, ScalarConstraint(ct.bool_)))]
    sig = KernelSignature(params).with_mangled_symbol("my_K_kernel")
    name, back = demangle_kernel_name(sig.symbol)
    assert name == "my_K_kernel" and back.parameters == sig.parameters
    assert ConstantConstraint(1) != ConstantConstraint(True) != ConstantConstraint(1.0)
    with pytest.raises(ValueError, match="not a mangled kernel name"):
        demangle_kernel_name("plain")
    with pytest.raises(ValueError, match="Invalid mangled name"):
        demangle_kernel_name("f_Kc1_Q")


def test_constraint_validation():
    with pytest.raises(ValueError, match="index_dtype"):
        ArrayConstraint(ct.float32, 1, index_dtype=ct.int16)
    with pytest.raises(ValueError, match="doesn't match ndim"):
        ArrayConstraint(ct.float32, 2, stride_constant=(1,))
    with pytest.raises(TypeError, match="Expected a DType"):
        ScalarConstraint(np.float32)
    with pytest.raises(TypeError, match="ArrayConstraint element"):
        ListConstraint(ScalarConstraint(ct.int32))
    with pytest.raises(TypeError, match="parameter constraint"):
        KernelSignature(["x"])


def test_export_kernel_is_unsupported():
    """cubin / Tile IR bytecode need NVIDIA's compiler: TileUnsupportedFeatureError."""
    sig = KernelSignature.from_kernel_args(vadd, (np.zeros(8, np.float32),) * 3 + (4,))
    for fmt in ("cubin", "tileir_bytecode"):
        with pytest.raises(ct.TileUnsupportedFeatureError, match="cannot export NVIDIA"):
            export_kernel(vadd, [sig], io.BytesIO(), gpu_code="sm_100", output_format=fmt)
    assert ct.compilation.KernelSignature is KernelSignature


class FakeJax:
    """A CUDA array that offers only DLPack (as JAX arrays do)."""

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, **kwargs):
        raise BufferError("no device here")


def test_cuda_dlpack_only_array_is_routed_through_a_dlpack_reader(monkeypatch):
    """A DLPack-only CUDA array is read through PyTorch's or CuPy's ``from_dlpack``; without
    either it is a TypeError saying what is missing (no GPU here: the export itself fails)."""
    import builtins
    real_import = builtins.__import__

    def no_readers(name, *args, **kwargs):
        if name in ("torch", "cupy"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    a = np.zeros(8, np.float32)
    if HAVE_TORCH:
        with pytest.raises(TypeError, match="CUDA DLPack export cannot be read"):
            ct.launch(None, (1,), copy8, (FakeJax(), a))
    monkeypatch.setattr(builtins, "__import__", no_readers)
    monkeypatch.setattr("importlib.import_module", lambda name: no_readers(name))
    with pytest.raises(TypeError, match="needs PyTorch or CuPy"):
        ct.launch(None, (1,), copy8, (FakeJax(), a))
    assert describe(object()) is None

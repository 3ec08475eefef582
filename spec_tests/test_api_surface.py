"""§28: every name of ``cuda.tile`` 1.7's ``__all__`` (the spec's feature checklist, 152
entries) is importable from ``cutile`` under the same spelling, and the attributes and methods
of 1.7's ``Tile``, ``Array``, ``TiledView`` and ``RawArrayMemory`` work in tile code (R-TILE-4,
§7, R-VIEW-3, R-PY-3) on the executor under test."""

from __future__ import annotations

import numpy as np
import pytest

import cutile as ct

NAMES_1_7 = """
launch ByTarget MemoryOrder MemoryScope PaddingMode RoundingMode DType bfloat16 bool_
float4_e2m1fn float8_e4m3fn float8_e5m2 float8_e8m0fnu float8_e5m3fnu float16 float32
float64 int8 int16 int32 int64 tfloat32 uint8 uint16 uint32 uint64
TileCompilerExecutionError TileCompilerTimeoutError TileError TileInternalError
TileRecursionError TileStaticAssertionError TileStaticEvalError TileSyntaxError
TileTypeError TileUnsupportedFeatureError TileValueError Array ArrayAnnotation Constant
ConstantAnnotation IndexedWithInt64 ListAnnotation Scalar ScalarInt64 Slice Tile TiledView
abs add arange argmax argmin assert_ assume_divisible_by astile astype atan2 atomic_add
atomic_and atomic_cas atomic_max atomic_min atomic_or atomic_xchg atomic_xor bitwise_and
bitwise_lshift bitwise_not bitwise_or bitwise_rshift bitwise_xor bid bitcast broadcast_to
cat cdiv ceil cos cosh cumprod cumsum divmod ensure_constant equal exp exp2 expand_dims
extract floor floordiv full gather greater greater_equal insert less less_equal load
load_advanced_indexing log log2 matmul max maximum min minimum mma mma_scaled mod mul
negative isnan not_equal num_blocks num_tiles ones pack_to_bytes permute pow printf print
prod reduce reshape rsqrt scan scatter sin sinh sqrt static_assert static_eval static_iter
store store_advanced_indexing sub sum tan tanh transpose truediv unpack_from_bytes where
zeros grid_dependency_control_wait grid_dependency_control_launch_dependents
compiler_timeout tune function kernel compilation
""".split()


def test_every_1_7_name_is_exported():
    assert len(NAMES_1_7) == len(set(NAMES_1_7)) == 152
    assert [n for n in NAMES_1_7 if not hasattr(ct, n)] == []
    assert [n for n in NAMES_1_7 if n not in ct.__all__] == []
    ns: dict = {}
    exec("from cutile import *", ns)                    # the star import gives them all
    assert [n for n in NAMES_1_7 if n not in ns] == []


def test_method_tables_hold_1_7_methods():
    """The methods 1.7's stubs declare (dunders are checked by running them below)."""
    from cutile.api import atomic, methods
    assert set(methods.TILE_METHODS) >= {"item", "extract", "insert", "reshape", "permute",
                                         "transpose", "astype"}
    assert set(methods.ARRAY_METHODS) >= {"slice", "tiled_view", "get_raw_memory"}
    assert set(methods.VIEW_METHODS) >= {"load", "store", "num_tiles"} | {
        f"atomic_store_{k}" for k in ("add", "max", "min", "and", "or", "xor")}
    assert set(atomic.RAW_METHODS) == {"load_offset", "store_offset"} | {
        f"atomic_{k}_offset" for k in ("cas", "xchg", "add", "max", "min", "and", "or", "xor")}
    assert callable(ct.Array.from_foreign)


@ct.kernel
def tile_dunders(x, out):
    t = ct.load(x, (0,), (4,))
    s = (1 + t) - (2 - t) + 3 * t * 1 + 7 // (t + 1) + 7 % (t + 1) + (t // 2) % 3
    s = s + (t & 1) + (1 & t) + (t | 2) + (2 | t) + (t ^ 3) + (3 ^ t)
    s = s + (t << 1) + (1 << t) + (t >> 1) + (16 >> t) + ~t + -t
    q, r = divmod(t, 3)
    q2, r2 = divmod(9, t + 1)
    c = ((t >= 1) & (t > 1)) | ((t <= 2) & (t < 3)) | (t == 2) | (t != 1) | (1 <= t)
    f = t.astype(ct.float32)
    g = f / 2 + 2 / (f + 1) + f ** 2
    ct.store(out, (0,), s + q + r + q2 + r2 + ct.where(c, 100, 0) + g.astype(ct.int32))


def test_tile_operators_R_PY_3():
    x = np.arange(4, dtype=np.int32)
    out = np.zeros(4, np.int32)
    ct.launch(None, (1,), tile_dunders, (x, out))
    t = x.astype(np.int64)
    s = (1 + t) - (2 - t) + 3 * t + 7 // (t + 1) + 7 % (t + 1) + (t // 2) % 3
    s = s + (t & 1) * 2 + (t | 2) * 2 + (t ^ 3) * 2
    s = s + (t << 1) + (1 << t) + (t >> 1) + (16 >> t) + ~t - t
    c = ((t >= 1) & (t > 1)) | ((t <= 2) & (t < 3)) | (t == 2) | (t != 1) | (1 <= t)
    f = t.astype(np.float32)
    g = f / np.float32(2) + np.float32(2) / (f + 1) + f * f
    want = s + t // 3 + t % 3 + 9 // (t + 1) + 9 % (t + 1) + np.where(c, 100, 0) + \
        g.astype(np.int32)
    np.testing.assert_array_equal(out, want)


@ct.kernel
def matrix_ops(a, out):
    x = ct.load(a, (0, 0), (4, 4))
    v = ct.load(a, (0, 0), (1, 4)).reshape((4,))
    y = x @ x + v[None, :] + v[:, None]
    k = ct.full((1,), 2, dtype=ct.int32).item()
    acc = ct.zeros((4, 4), ct.float32)
    for i in range(k):                                  # a 0-D tile as range bound
        acc = acc + i
    z = y.permute((1, 0)).transpose().transpose(0, 1).reshape((16,)).reshape((4, 4))
    z = z.insert((0, 0), z.extract((1, 0), (2, 4)))       # indices count cells
    ct.store(out, (0, 0), z + acc + x.ndim + x.shape[0])


def test_tile_methods_R_TILE_4():
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    out = np.zeros((4, 4), np.float32)
    ct.launch(None, (1,), matrix_ops, (a, out))
    y = a @ a + a[0][None, :] + a[0][:, None]
    z = y.T.copy()                                      # permute, transpose(), transpose(0, 1)
    z[0:2] = z[2:4]
    np.testing.assert_allclose(out, z + 1 + 2 + 4, rtol=1e-6)


@ct.kernel
def array_view_raw(a, out):
    s = a.slice(axis=0, start=1, stop=3)
    n = a.ndim + a.shape[0] + a.strides[0] + s.shape[0]
    tv = a.tiled_view((2, 4), padding_mode=ct.PaddingMode.ZERO, traversal_steps=(1, 4))
    x = tv.load((1, 0), check_bounds=True, latency=2, allow_tma=False)
    m = tv.num_tiles(0) + tv.tile_shape[0] + tv.traversal_steps[0]
    r = a.get_raw_memory()
    o = ct.arange(4, dtype=ct.int32)
    y = r.load_offset(o + 4, mask=o < 3, padding_value=-1, latency=2)
    ct.store(out, (0, 0), x)
    ct.store(out, (2, 0), ct.full((1, 4), m + n, ct.int32) + y.reshape((1, 4)))


def test_array_view_raw_members_R_VIEW_3():
    a = np.arange(16, dtype=np.int32).reshape(4, 4)
    out = np.zeros((3, 4), np.int32)
    ct.launch(None, (1,), array_view_raw, (a, out))
    np.testing.assert_array_equal(out[:2], a[1:3])
    # m = num_tiles(0) (R-VIEW-4: cdiv(4 rows, step 1) = 4) + 2 + 1; n = 2 + 4 + 4 + 2
    np.testing.assert_array_equal(out[2], 7 + 12 + np.array([4, 5, 6, -1]))


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_view_atomic_methods_R_VIEW_7(dtype):
    @ct.kernel
    def k(x):
        tv = x.tiled_view(4)
        u = ct.full((4,), 6, dtype=x.dtype)
        tv.atomic_store_add(0, u)            # 7
        tv.atomic_store_max(0, ct.full((4,), 9, dtype=x.dtype))
        tv.atomic_store_min(0, ct.full((4,), 8, dtype=x.dtype))
        tv.atomic_store_and(0, ct.full((4,), 12, dtype=x.dtype))
        tv.atomic_store_or(0, ct.full((4,), 1, dtype=x.dtype))
        tv.atomic_store_xor(0, ct.full((4,), 3, dtype=x.dtype))
    x = np.ones(4, dtype)
    ct.launch(None, (1,), k, (x,))
    np.testing.assert_array_equal(x, np.full(4, ((8 & 12) | 1) ^ 3, dtype))


def test_private_paths_kernels_import_from():
    """Kernels copied from TileGym import the enums from 1.7's private modules, and export
    code names the calling convention ``cutile_python_v1()``: the same objects here."""
    from cutile import compilation
    from cutile._memory_model import MemoryOrder, MemoryScope
    from cutile._numeric_semantics import PaddingMode, RoundingMode
    assert (RoundingMode, PaddingMode, MemoryOrder, MemoryScope) == (
        ct.RoundingMode, ct.PaddingMode, ct.MemoryOrder, ct.MemoryScope)
    from cutile._datatype import float4_e2m1fn
    from cutile._stub import pack_to_bytes
    assert (float4_e2m1fn, pack_to_bytes) == (ct.float4_e2m1fn, ct.pack_to_bytes)
    with pytest.raises(ImportError):
        from cutile._stub import no_such_function  # noqa: F401
    cc = compilation.CallingConvention.cutile_python_v1()
    assert (cc.name, cc.code) == ("cutile_python_v1", "c1")
    assert cc == compilation.CallingConvention.from_code("c1")


# -- type hints and help text of the public API (issue 23) --------------------------------------
def test_public_api_carries_type_hints_and_py_typed():
    import inspect
    import os

    import cutile.debug as dbg
    import cutile.testing as tst
    from cutile import executors
    pkg = os.path.dirname(ct.__file__)
    assert os.path.exists(os.path.join(pkg, "py.typed"))                  # PEP 561 marker
    with open(os.path.join(os.path.dirname(pkg), "pyproject.toml")) as f:
        assert 'cutile = ["py.typed"]' in f.read()                        # ... installed
    api = [ct.launch, ct.kernel.__init__, ct.function, ct.set_backend, executors.backend,
           executors.inspect, dbg.launch, dbg.break_in, dbg.trace, dbg.access_map, tst.run_on,
           tst.assert_matches, tst.assert_executors_agree, tst.available_executors, ct.load,
           ct.store, ct.bid, ct.num_blocks, ct.cdiv]
    for fn in api:
        sig = inspect.signature(fn)
        bare = [p.name for p in sig.parameters.values()
                if p.annotation is p.empty and p.name != "self"]
        assert not bare and sig.return_annotation is not sig.empty, (fn, bare)


def test_help_of_an_op_shows_the_call_and_explains_the_parameters():
    import pydoc
    text = pydoc.render_doc(ct.load, renderer=pydoc.plaintext)
    assert "ct.load(array, /, index, shape, *, order='C', " \
           "padding_mode=ct.PaddingMode.UNDETERMINED, check_bounds=True" in text
    for word in ("index", "shape", "padding_mode", "order", "check_bounds", "memory_order",
                 "Returns a tile", ">>> "):
        assert word in text
    assert "R-LOAD-1..7 in docs/language.md" in text        # the rule ids say where they live
    assert len(text.splitlines()) >= 25
    assert ct.sum.__doc__.startswith("ct.sum(x, /, axis=None, *, keepdims=False")

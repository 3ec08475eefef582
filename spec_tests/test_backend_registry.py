"""Completeness of the Numba backend: the op table, the interpreter's rules and the backend's
lowerings have the same keys (minus an explicit allow-list), and every known gap is listed
here with its reason and raises TileUnsupportedFeatureError naming the op/dtype and backend."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import types

import numpy as np
import pytest

import cutile as ct
from cutile.errors import TileUnsupportedFeatureError
from cutile.interp.rules import RULES
from cutile.ir.core import OPS, KernelIR, Op, Region

# IR ops that neither executor has a table entry for: the region terminators
# (``@opdef(terminator=...)``), run by the owner of their region (For/Loop/If, or the kernel's
# region emission for ``return``) from the op's declared exit kind.
STRUCTURAL = {name for name, c in OPS.items() if c.is_terminator}

# Ops the interpreter runs and the Numba backend cannot lower at all (none today).
BACKEND_MISSING_OPS: dict[str, str] = {}

# Parts of supported ops the Numba backend rejects with TileUnsupportedFeatureError.
BACKEND_FEATURE_GAPS = {
    "rounding_mode on float16/bfloat16 arithmetic, and RM/RP/RA conversions into bfloat16": (
        "libdevice has directed float32/float64 operations only (RZ into bfloat16/float16/"
        "tfloat32, RZ/RM/RP/RA into float16 and RA into tfloat32 are supported)"),
    "rounding_mode RA on arithmetic": "no libdevice round-to-nearest-away operations",
    "bfloat16 atomic_add below sm_90, float16 atomic_add below sm_70 (also "
    "TiledView.atomic_store_add and atomic_add_offset)": (
        "they are the PTX instructions atom.add.noftz.bf16 / .f16 (numba_backend/atom16.py), "
        "which older GPUs lack; cuda.tile 1.7 also needs sm_90 for bfloat16 (R-ATOM-4)"),
    "Array.foreign_pointer of a NumPy view with negative strides or of a non-contiguous "
    "buffer": (
        "such an argument cannot travel to the device with its own strides (other strided NumPy "
        "views do: numba_backend/pointer_rt.py copies their whole buffer); refused at launch"),
    "RawArrayMemory of an array whose strides are not decreasing along the axes": (
        "offsets are decoded into an index with the strides in axis order (checked at launch)"),
    "mma_scaled (R-MM-6)": (
        "block-scaled MMA needs an sm_100+ GPU (the H100 has none) and there is no software "
        "lowering; the lowering raises TileUnsupportedFeatureError naming the op"),
    "undefined-behaviour detection (R-UB-*)": (
        "the backend assumes well-defined programs; it still never writes outside an array"),
}


def _lowerings():
    from cutile.numba_backend.lower import load_lowerings
    return load_lowerings()


def test_tables_have_the_same_keys():
    ops = {c.__name__ for c in OPS.values()}
    rules = {c.__name__ for c in RULES}
    lows = {c.__name__ for c in _lowerings()}
    assert ops - set(STRUCTURAL) == rules, "interpreter rules differ from the op table"
    assert ops - set(STRUCTURAL) - set(BACKEND_MISSING_OPS) == lows, (
        "numba lowerings differ from the op table; list a gap in BACKEND_MISSING_OPS with its "
        "reason or add the lowering")
    assert STRUCTURAL == {"Yield", "Continue", "Break", "Return"}


def test_every_gap_has_a_reason():
    for table in (BACKEND_MISSING_OPS, BACKEND_FEATURE_GAPS):
        for k, reason in table.items():
            assert isinstance(reason, str) and len(reason) > 10, k


@dataclasses.dataclass(eq=False)
class _NotLowered(Op):
    """An op class with no lowering (not registered in OPS)."""


def test_missing_lowering_names_op_and_backend():
    from cutile.numba_backend.codegen import Gen
    body = Region()
    op = _NotLowered()
    op.results = []
    body.ops.append(op)
    ir = KernelIR("k", [], [], body)
    with pytest.raises(TileUnsupportedFeatureError, match=r"op _NotLowered .*numba backend"):
        Gen(ir, 32).generate()


@ct.kernel
def _copy(a, b):
    ct.store(b, (0,), ct.load(a, (0,), (4,)))


def test_unsupported_dtype_names_dtype_and_backend():
    from cutile.numba_backend import exprs
    # every cuda.tile dtype is supported now (float8_e5m3fnu was the last gap): a stand-in
    fake = types.SimpleNamespace(name="float6_e3m2fn", is_foreign_pointer=False)
    with pytest.raises(TileUnsupportedFeatureError, match=r"float6_e3m2fn.*numba backend"):
        exprs.check_dtype(fake, "array parameter 'a'")


def test_float8_float4_copy_generates():
    # formerly a gap: restricted floats travel as bytes, live in float32 registers
    import ml_dtypes

    from cutile.numba_backend.codegen import Gen
    for d in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.float4_e2m1fn,
              ml_dtypes.float8_e8m0fnu):
        a = np.zeros(4, d)
        ir = _copy.compile(_copy.specialize((a, a.copy())))
        src = Gen(ir, 32).generate()
        assert "MFDEC_" in src and ("mf_bits" in src or "mf_e8m0_bits" in src)


@ct.kernel
def _rounded(a, b):
    x = ct.load(a, (0,), (4,))
    ct.store(b, (0,), ct.add(x, x, rounding_mode=ct.RoundingMode.RZ))


def test_unsupported_rounding_mode_names_op():
    from cutile.numba_backend.codegen import Gen
    a = np.zeros(4, np.float16)
    ir = _rounded.compile(_rounded.specialize((a, a.copy())))
    with pytest.raises(TileUnsupportedFeatureError,
                       match=r"Binary\(add\).*RZ.*float16.*numba backend"):
        Gen(ir, 32).generate()


def test_import_cutile_does_not_import_numba():
    code = ("import sys; import cutile; "
            "print(sorted(m for m in sys.modules if m == 'numba' or m.startswith('numba.')))")
    env = {k: v for k, v in os.environ.items() if k != "CUTILE_BACKEND"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_NUMPY_25 = """
import numpy as np
del np.row_stack                   # what NumPy 2.5 removed
import cutile as ct
from cutile.errors import TileUnsupportedFeatureError
from cutile.numba_backend.compile import compile_kernel

@ct.kernel
def k(a):
    ct.store(a, (0,), ct.load(a, (0,), (4,)) + 1)

a = np.zeros(4, np.float32)
try:
    compile_kernel(k.compile(k.specialize((a,))), 32)
except TileUnsupportedFeatureError as e:
    print(e)
"""


def test_numpy_without_row_stack_gives_an_install_hint(tmp_path):
    """numba-cuda <= 0.30.4 loads a module using np.row_stack at its first GPU compile; under
    NumPy 2.5 the backend refuses with what to install (compat.py), not Numba's
    AttributeError.  A fresh process: the failed import must not touch this one's Numba."""
    env = {k: v for k, v in os.environ.items() if k != "CUTILE_BACKEND"}
    env["NUMBA_ENABLE_CUDASIM"] = "0"
    probe = tmp_path / "probe.py"           # a file: the frontend reads the kernel's source
    probe.write_text(_NUMPY_25)
    out = subprocess.run([sys.executable, str(probe)], capture_output=True, text=True,
                         env=env | {"PYTHONPATH": _ROOT}, cwd=_ROOT)
    assert out.returncode == 0, out.stderr
    assert "row_stack" in out.stdout and "pip install 'numpy>=1.24,<2.5'" in out.stdout, \
        out.stdout


@ct.kernel
def _atomic_add(a):
    ct.atomic_add(a, ct.arange(4, dtype=ct.int32), 1.0)


def test_atomic_gaps_name_op_dtype_and_backend():
    """float16/bfloat16 atomic add need sm_70/sm_90 (refused at launch on an older device,
    naming the op, dtype and backend)."""
    import ml_dtypes

    from cutile.numba_backend.codegen import Gen
    from cutile.numba_backend.device_limits import check_compute_capability
    for d, name, cc in ((np.float16, "float16", (7, 0)), (ml_dtypes.bfloat16, "bfloat16", (9, 0))):
        ir = _atomic_add.compile(_atomic_add.specialize((np.zeros(4, d),)))
        g = Gen(ir, 32)
        g.generate()
        assert [need for need, _, _ in g.min_cc] == [cc]
        check_compute_capability(g.min_cc, cc)                  # new enough: no error
        check_compute_capability(g.min_cc, None)                # simulator: no error
        with pytest.raises(TileUnsupportedFeatureError,
                           match=rf"atomic_add on {name} .*{cc[0]}\.{cc[1]}.*numba backend"):
            check_compute_capability(g.min_cc, (cc[0] - 1, 5))
    ir = _atomic_add.compile(_atomic_add.specialize((np.zeros(4, np.float32),)))
    g = Gen(ir, 32)
    g.generate()
    assert g.min_cc == []

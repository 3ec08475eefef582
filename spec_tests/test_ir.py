"""The typed IR: op table vs executor tables, the printer, and the FMA pass (R-FMA-1/2)."""

from __future__ import annotations

import numpy as np

import cutile as ct
from cutile.interp.rules import RULES
from cutile.ir.core import OPS, walk
from cutile.ir.printer import format_kernel
from cutile.launch_args import classify_args

# Terminators (``@opdef(terminator=...)``) are interpreted by the region loop, not by a rule.
TERMINATORS = {name for name, c in OPS.items() if c.is_terminator}


def test_every_op_has_an_interpreter_rule():
    ruled = {cls.__name__ for cls in RULES}
    missing = set(OPS) - ruled - TERMINATORS
    assert not missing, f"ops without interpreter rule: {sorted(missing)}"


def ir_of(kernel, *args):
    return kernel.compile(classify_args(kernel, args))


@ct.kernel
def fused(a, b, c, out):
    x = ct.load(a, (0,), (4,))
    y = ct.load(b, (0,), (4,))
    z = ct.load(c, (0,), (4,))
    t = x * y
    ct.store(out, (0,), t + z)


@ct.kernel
def not_fused(a, out):
    x = ct.load(a, (0,), (4,))
    t = x * x
    ct.store(out, (0,), t + t)


@ct.kernel
def int_not_fused(a, out):
    x = ct.load(a, (0,), (4,))
    ct.store(out, (0,), x * x + x)


def op_names(ir):
    return [type(op).__name__ for op in walk(ir.body)]


def test_fma_fused_through_single_use_temporary():
    # R-FMA-1: x*y + z, also through a local used once
    f32 = np.zeros(4, np.float32)
    names = op_names(ir_of(fused, f32, f32, f32, f32))
    assert "Fma" in names and "Binary" not in names


def test_product_with_two_uses_not_fused():
    # R-FMA-1: t = x*x; t + t is not fused
    f32 = np.zeros(4, np.float32)
    assert "Fma" not in op_names(ir_of(not_fused, f32, f32))


def test_integer_multiply_add_not_fused():
    i32 = np.zeros(4, np.int32)
    assert "Fma" not in op_names(ir_of(int_not_fused, i32, i32))


def test_fused_result_is_single_rounded():
    # R-FMA-2: x*y + z with one rounding
    rng = np.random.default_rng(0)
    x = rng.standard_normal(4).astype(np.float32)
    y = rng.standard_normal(4).astype(np.float32)
    z = (-(x.astype(np.float64) * y)).astype(np.float32)
    out = np.zeros(4, np.float32)
    ct.launch(None, (1,), fused, (x, y, z, out))
    exact = (x.astype(np.float64) * y + z).astype(np.float32)   # product exact in f64
    np.testing.assert_array_equal(out, exact)


def test_printer_names_ops_and_types():
    f32 = np.zeros(4, np.float32)
    text = format_kernel(ir_of(fused, f32, f32, f32, f32))
    assert text.startswith("kernel fused(")
    assert "Load(" in text and "Fma(" in text and "tile<float32x4>" in text

"""The registry of compile-time implementations (``cutile/lang/registry.py``, issue 25): the
walker resolves Python's operators, builtins and ``ct`` ops through one table keyed by the
callable, which ``cutile/api`` fills on import.  So ``operator.lt(a, b)`` in tile code is
``a < b`` (R-PY-3), and every operator the walker can meet has an entry."""

from __future__ import annotations

import operator

import numpy as np

import cutile as ct
from cutile.lang import registry
from cutile.lang.registry import TileOp


def test_every_operator_node_has_an_entry():
    tables = (registry.BINARY_OPERATORS, registry.COMPARISONS, registry.UNARY_OPERATORS)
    missing = [fn.__name__ for t in tables for fn in t.values() if registry.lookup(fn) is None]
    assert missing == []
    assert registry.lookup(operator.contains) and registry.lookup(operator.getitem)


def test_every_public_op_is_registered_under_itself():
    ops = [getattr(ct, n) for n in ct.__all__ if isinstance(getattr(ct, n), TileOp)]
    assert len(ops) > 80
    assert [op.op_name for op in ops if registry.lookup(op) is None] == []


def test_builtins_and_dtypes_resolve():
    for fn in (len, range, abs, min, max, print, int, float, bool, tuple, divmod, ct.int16,
               np.float32):
        assert registry.lookup(fn) is not None, fn
    assert registry.lookup(lambda: None) is None


@ct.kernel
def operator_calls(x, out):
    t = ct.load(x, (0,), (4,))
    lt = operator.lt(t, 2).astype(ct.int32)          # as t < 2
    ne = operator.ne(t, 1).astype(ct.int32)          # as t != 1
    neg = operator.neg(t)                            # as -t
    inv = operator.invert(t)                         # as ~t
    first = operator.getitem((t, neg), 0)            # as (t, neg)[0]
    ct.store(out, (0,), lt * 1000 + ne * 100 + neg * 10 + inv + first)


def test_operator_functions_are_the_operators_R_PY_3():
    x = np.arange(4, dtype=np.int32)
    out = np.zeros(4, np.int32)
    ct.launch(None, (1,), operator_calls, (x, out))
    want = (x < 2) * 1000 + (x != 1) * 100 + (-x) * 10 + ~x + x
    assert out.tolist() == want.tolist()

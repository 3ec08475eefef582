"""Op facts are declared once, on the op (``@opdef(terminator=..., pure=..., reads=...,
writes=..., rearranges=...)``), and every executor asks the op (``ir.effects``) instead of
keeping a list of op names: the facts hold for the ops that must have them, and no module of
the package keeps such a list."""

from __future__ import annotations

import ast
import pathlib

import numpy as np
import pytest
from spec_executor import interp_only_ub

import cutile as ct
from cutile.interp import batch
from cutile.ir import effects
from cutile.ir.core import EXITS, OPS, walk
from cutile.launch_args import classify_args

PKG = pathlib.Path(ct.__file__).parent


def _with(fact: str) -> set[str]:
    return {name for name, c in OPS.items() if getattr(c, fact)}


def test_terminators_declare_how_they_leave_their_region():
    kinds = {name: c.exit_kind for name, c in OPS.items() if c.is_terminator}
    assert kinds == {"Yield": "yield", "Continue": "continue", "Break": "break",
                     "Return": "return"}
    assert set(kinds.values()) == set(EXITS)
    assert all(c.exit_kind is None for c in OPS.values() if not c.is_terminator)


@ct.kernel
def k_control(a, b, n: int):
    x = ct.load(a, (0,), (4,))
    for i in range(n):
        if i == 3:
            break
        if i == 1:
            continue
        x = x + 1.0
    j = 0
    while True:
        j = j + 1
        if j > n:
            break
    s = ct.reduce(x, 0, lambda u, v: u + v, 0.0)
    if n > 100:
        return
    ct.store(b, (0,), x + s)


def test_every_region_ends_in_a_terminator_and_only_there():
    """The ops that end a region (For/Loop/If bodies, combiner bodies, the kernel) are exactly
    the ones declared terminators."""
    f32 = np.zeros(4, np.float32)
    ir = k_control.compile(classify_args(k_control, (f32, f32, 5)))
    regions = [ir.body] + [r for op in walk(ir.body) for r in op.regions()]
    assert len(regions) > 6
    for r in regions:
        assert all(not op.is_terminator for op in r.ops[:-1])
        if r is not ir.body:            # the kernel body may fall off its end
            assert r.ops[-1].is_terminator, [type(o).__name__ for o in r.ops]
    seen = {type(op).__name__ for op in walk(ir.body) if op.is_terminator}
    assert seen == {"Yield", "Continue", "Break", "Return"}


def test_memory_facts():
    assert _with("writes") == {"Store", "Scatter", "AdvancedScatter", "AtomicRMW", "AtomicCAS",
                               "RawStore"}
    assert _with("reads") == {"Load", "Gather", "AdvancedGather", "RawLoad", "AtomicRMW",
                              "AtomicCAS"}
    for name in _with("reads") | _with("writes"):          # "through its array operand"
        assert "array" in OPS[name].__dataclass_fields__, name


def test_pure_ops_are_those_without_effects():
    effectful = set(OPS) - _with("pure")
    assert effectful == {"Store", "Scatter", "AdvancedScatter", "AtomicRMW", "AtomicCAS",
                         "RawLoad", "RawStore", "Print", "Assert", "Breakpoint", "Watch"}
    assert not _with("writes") & _with("pure")
    # the batched interpreter runs an effect whose order between blocks is observable per
    # block; only plain stores (whose cross-block conflicts are races, R-UB) run batched
    assert effectful - {"Store", "Scatter"} <= set(batch.FALLBACK)
    assert {"Store", "Scatter"} <= {c.__name__ for c in batch.BATCHED}


def test_rearranging_ops_move_their_operand_x():
    assert _with("rearranges") == {"Broadcast", "Reshape", "Permute"}
    for name in _with("rearranges"):
        assert "x" in OPS[name].__dataclass_fields__ and OPS[name].pure


@ct.kernel
def k_while_bitcast(a, b):
    x = ct.load(a, (0,), (4,))
    while True:  # a bitcast round trip changes nothing: the loop never ends
        x = ct.bitcast(ct.bitcast(x, ct.int32), ct.float32)
    ct.store(b, (0,), x)


def test_bitcast_loop_body_is_pure():
    """Bitcast (like Cat, Extract, Insert, scans) is declared pure: it was missing from the
    old name list, so such a loop body counted as having effects."""
    f32 = np.zeros(4, np.float32)
    ir = k_while_bitcast.compile(classify_args(k_while_bitcast, (f32, f32)))
    loop = next(op for op in walk(ir.body) if type(op).__name__ == "Loop")
    assert effects.region_is_pure(loop.body) and effects.is_pure(loop)
    assert not effects.writes_memory(loop)


@interp_only_ub
def test_bitcast_while_true_is_reported_at_once(monkeypatch):
    """R-EXEC-7: the repeat is found at the first iteration (not by the wall-clock watchdog)."""
    monkeypatch.setenv("CUTILE_INTERP_TIMEOUT", "20")
    f32 = np.ones(4, np.float32)
    with pytest.raises(ct.UndefinedBehaviorError, match="never terminates"):
        ct.launch(None, (1,), k_while_bitcast, (f32, f32.copy()))


# -- no module keeps a list of op names --------------------------------------------------------
# Name-keyed tables that are an executor's own business, not a fact about the op.
ALLOWED = {
    ("interp/batch/__init__.py", "FALLBACK"): (
        "why the batched interpreter has no rule for an op yet"),
    ("numba_backend/assign.py", "FLEXIBLE_OPS"): (
        "the backend's layout policy: tiles it recomputes where used instead of laying out"),
}


def _op_list(node: ast.AST) -> bool:
    """A literal collection of two or more op names (strings) or op classes (``ops.X``)."""
    if isinstance(node, ast.Dict):
        items = node.keys
    elif isinstance(node, (ast.Set, ast.Tuple, ast.List)):
        items = node.elts
    elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "frozenset" \
            and node.args:
        return _op_list(node.args[0])
    else:
        return False
    names = []
    for it in items:
        if isinstance(it, ast.Constant) and isinstance(it.value, str):
            names.append(it.value)
        elif isinstance(it, ast.Attribute) and getattr(it.value, "id", "") == "ops":
            names.append(it.attr)
        else:
            return False
    return len(names) >= 2 and all(n in OPS for n in names)


def test_no_module_keeps_a_list_of_op_names():
    found = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None \
                    and _op_list(node.value):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    name = getattr(t, "id", "")
                    if name != "__all__" and (rel, name) not in ALLOWED:
                        found.append(f"{rel}:{node.lineno} {name}")
    assert not found, f"declare the fact on the op (@opdef) instead: {found}"
    assert all(len(why) > 10 for why in ALLOWED.values())


def test_the_check_sees_a_list():
    assert _op_list(ast.parse('X = frozenset({"Store", "Scatter"})').body[0].value)
    assert _op_list(ast.parse("X = (ops.Broadcast, ops.Permute)").body[0].value)
    assert not _op_list(ast.parse('X = ("add", "sub")').body[0].value)

"""Type hints on the public ops (issue 23 item 8): an editor, ``help()`` or a type checker sees
each ``ct.<op>``'s parameters and result, because ``tile_op`` keeps ``impl``'s signature
(``TileOp[P, R]``) and every op function is annotated.  The hints must resolve at run time
(``typing.get_type_hints``), so no name they use may hide behind ``TYPE_CHECKING``."""

from __future__ import annotations

import inspect
import typing

import pytest

import cutile as ct
from cutile.lang.registry import TileOp

OPS = {n: getattr(ct, n) for n in ct.__all__ if isinstance(getattr(ct, n), TileOp)}


def test_there_are_ops_to_check():
    assert len(OPS) > 80
    assert "add" in OPS and "sum" in OPS and "load" in OPS


@pytest.mark.parametrize("name", sorted(OPS))
def test_every_parameter_and_the_result_is_annotated(name):
    sig = inspect.signature(OPS[name])
    missing = [p.name for p in sig.parameters.values() if p.annotation is p.empty]
    assert not missing, f"ct.{name}: parameters without a type hint: {missing}"
    assert sig.return_annotation is not sig.empty, f"ct.{name}: no return type hint"


@pytest.mark.parametrize("name", sorted(OPS))
def test_hints_resolve_at_run_time(name):
    hints = typing.get_type_hints(OPS[name])
    params = inspect.signature(OPS[name]).parameters
    assert set(hints) == set(params) | {"return"}


def test_signature_and_help_show_the_parameters():
    sig = inspect.signature(ct.add)
    assert list(sig.parameters)[:2] == ["x", "y"]
    assert sig.return_annotation is not sig.empty
    assert "axis" in ct.sum.__doc__.splitlines()[0]
    assert "axis" in str(inspect.signature(ct.sum))


def test_the_wrapper_keeps_its_run_time_behaviour():
    assert ct.cdiv(7, 2) == 4
    with pytest.raises(RuntimeError, match="device code"):
        ct.add(1, 2)

"""pytest plugin (registered by cutile's ``pytest11`` entry point): the ``cutile_executor``
fixture runs a test once per available executor and gives the executor's name.

It holds no state (session-scoped, so Hypothesis' ``@given`` tests may use it): pass the name
on, ``assert_matches(..., executor=cutile_executor)``, or launch inside
``with cutile.executors.backend(cutile_executor):``.

>>> def test_vec_add(cutile_executor):        # runs as [interp] and, where possible, [numba]
...     assert_matches(vec_add, grid, args, ref, executor=cutile_executor)
"""

from __future__ import annotations

import pytest


def pytest_generate_tests(metafunc):
    if "cutile_executor" in metafunc.fixturenames:
        from .executors import available_executors
        metafunc.parametrize("cutile_executor", available_executors(), indirect=True,
                             scope="session")


@pytest.fixture(scope="session")
def cutile_executor(request) -> str:
    """The executor name, "interp" or "numba" (see ``available_executors``)."""
    return getattr(request, "param", "interp")

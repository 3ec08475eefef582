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


def pytest_report_collectionfinish(config, start_path, items):
    """Under "collected N items": the executors the ``cutile_executor`` tests run on, and why
    Numba is left out, so a dropped ``[numba]`` variant does not go unnoticed.  Only for
    sessions that use the fixture (the plugin is installed for every pytest run)."""
    if any("cutile_executor" in getattr(item, "fixturenames", ()) for item in items):
        from .executors import describe
        return describe()
    return None


@pytest.fixture(scope="session")
def cutile_executor(request) -> str:
    """The executor name, "interp" or "numba" (see ``available_executors``)."""
    return getattr(request, "param", "interp")

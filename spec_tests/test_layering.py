"""Layering of ``cutile/`` (issue 25, "untie the layers"): imports only go down.

The Numba backend and the interpreter are two executors of one IR; what both need sits in the
semantics floor (``cutile/semantics/``), so the backend imports nothing from ``cutile/interp/``
and the floor imports neither executor.  Private names (``_name``) crossing modules are held
to a ratchet: the figure may go down, never up.  The scan is ``tools/imports.py``'s.
"""

from __future__ import annotations

import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Issue 25 brought this from 52 to 0: a name two modules need is public.
MAX_PRIVATE_CROSS_MODULE = 0


def _figures() -> dict:
    spec = importlib.util.spec_from_file_location("cutile_tools_imports",
                                                  os.path.join(ROOT, "tools", "imports.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod          # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod.figures()


FIGURES = _figures()


def _show(edges) -> str:
    return "\n".join(f"  {e.src}:{e.line} -> {e.dst} {', '.join(e.names)}" for e in edges)


# Issue 25: at most this many imports of cutile modules stay inside function bodies (171 when
# the issue was filed), each with its reason.
MAX_INNER_IMPORTS = 40


def test_no_import_circles():
    """Imports only go down: no two modules of ``cutile/`` reach each other, counting the
    imports inside functions (a circle hidden in a function still ties the layers)."""
    assert not FIGURES["circles"], "import circles (strongly connected modules):\n" + \
        "\n".join(f"  {len(c)} modules: {', '.join(c)}" for c in FIGURES["circles"])


def test_imports_inside_functions_are_few_and_say_why():
    inner = FIGURES["inner"]
    bare = [e for e in inner if not e.reason]
    assert not bare, ("imports inside functions without a '# lazy: <why>' comment (move them "
                      "to the top of the module, or say why they must wait):\n" + _show(bare))
    assert len(inner) <= MAX_INNER_IMPORTS, (
        f"{len(inner)} imports inside functions (at most {MAX_INNER_IMPORTS}):\n" + _show(inner))


def test_backend_imports_nothing_from_the_interpreter():
    back = FIGURES["backend_into_interp"]
    assert not back, "numba_backend imports from interp (move the fact to cutile/semantics/):\n" \
        + _show(back)


def test_semantics_floor_imports_neither_executor_nor_the_frontend():
    up = ("cutile.interp", "cutile.numba_backend", "cutile.frontend", "cutile.api",
          "cutile.kernel", "cutile.executors")
    bad = [e for e in FIGURES["edges"] if e.src.startswith("cutile.semantics")
           and e.dst.startswith(up)]
    assert not bad, "cutile/semantics/ imports a layer above it:\n" + _show(bad)


def _imports_from(src: str, dst: tuple) -> list:
    return [e for e in FIGURES["edges"] if e.src.startswith(src) and e.dst.startswith(dst)
            and not e.typing]


def test_language_floor_stands_below_the_ops_and_the_walker():
    """``cutile/lang`` (values, coercion, the registry keyed by callable) is the floor both
    ``api`` and ``frontend`` stand on: it imports neither, nor an executor; ``api`` registers
    its ops there and never names the walker; the walker never names an ``api`` module."""
    up = ("cutile.api", "cutile.frontend", "cutile.kernel", "cutile.executors", "cutile.interp",
          "cutile.numba_backend")
    bad = _imports_from("cutile.lang", up)
    bad += _imports_from("cutile.api", ("cutile.frontend", "cutile.kernel", "cutile.executors",
                                        "cutile.interp", "cutile.numba_backend"))
    bad += _imports_from("cutile.frontend", ("cutile.api",))
    assert not bad, "an import going up through the language floor:\n" + _show(bad)


def test_private_names_crossing_modules_do_not_grow():
    priv = FIGURES["private"]
    assert len(priv) <= MAX_PRIVATE_CROSS_MODULE, (
        f"{len(priv)} private names imported across modules (at most "
        f"{MAX_PRIVATE_CROSS_MODULE}, issue 25): make the name public or keep it in its "
        f"module:\n" + _show(priv))


def _sizes():
    spec = importlib.util.spec_from_file_location("cutile_tools_sizes",
                                                  os.path.join(ROOT, "tools", "sizes.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_no_module_over_600_lines_and_no_function_over_80():
    """Issue 25: sizes are earned; ``python3 tools/sizes.py`` lists what is over."""
    import pathlib
    sizes = _sizes()
    over = sizes.over(pathlib.Path(ROOT) / "cutile")
    assert not over, "\n".join(over)

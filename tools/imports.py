"""The import graph of ``cutile/``: circles between modules, imports inside function bodies,
private names imported across modules, and imports from ``numba_backend`` into ``interp``.

Every ``import``/``from … import`` of a cutile module is an edge, wherever it stands (module
level, inside a function, under ``if TYPE_CHECKING``: the last are listed apart and left out
of the circles, since they never run).  A circle is a strongly connected component of more than
one module.  An import that stays inside a function says why on its line, ``# lazy: <why>``
(an optional or heavy dependency such as numba, or ``import cutile``'s start-up time); imports
inside functions are counted per statement.

    python3 tools/imports.py            # summary and every circle
    python3 tools/imports.py --inner    # also list the imports inside functions
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
from collections import defaultdict
from dataclasses import dataclass, replace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass(frozen=True)
class Edge:
    src: str            # importing module
    dst: str            # imported module
    line: int
    inner: bool         # inside a function body
    typing: bool        # under ``if TYPE_CHECKING``
    names: tuple        # names imported (``from x import a, b``)
    reason: str = ""    # an import inside a function: the ``# lazy: why`` comment on its line


def module_name(path: str) -> str:
    rel = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
    return rel[: -len(".__init__")] if rel.endswith(".__init__") else rel


def modules(pkg: str = "cutile") -> dict[str, str]:
    out = {}
    for dirpath, _, files in os.walk(os.path.join(ROOT, pkg)):
        for f in files:
            if f.endswith(".py"):
                p = os.path.join(dirpath, f)
                out[module_name(p)] = p
    return out


def _resolve(mod: str, is_pkg: bool, level: int, target: str | None) -> str:
    if level == 0:
        return target or ""
    base = mod.split(".")
    base = base if is_pkg else base[:-1]
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join(base + ([target] if target else []))


def edges(mods: dict[str, str]) -> list[Edge]:
    out = []
    for mod, path in mods.items():
        text = open(path).read()
        is_pkg = path.endswith("__init__.py")
        found: list[Edge] = []
        _visit(ast.parse(text, path), mod, is_pkg, mods, found, inner=False, typing=False)
        lines = text.splitlines()
        out += [replace(e, reason=_lazy_reason(lines[e.line - 1])) if e.inner else e
                for e in found]
    return out


def _lazy_reason(line: str) -> str:
    """The reason an import stays inside a function: ``# lazy: <why>`` on its (first) line."""
    _, mark, why = line.partition("# lazy:")
    return why.strip() if mark else ""


def inner_statements(es: list[Edge]) -> list[Edge]:
    """Imports of cutile modules inside function bodies, one per import statement (the first
    edge of each ``import``/``from ... import`` line)."""
    seen, out = set(), []
    for e in es:
        if e.inner and not e.typing and (e.src, e.line) not in seen:
            seen.add((e.src, e.line))
            out.append(e)
    return out


def _visit(node, mod, is_pkg, mods, out, inner, typing):
    for child in ast.iter_child_nodes(node):
        c_inner = inner or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        c_typing = typing or (isinstance(child, ast.If) and "TYPE_CHECKING" in ast.dump(child.test))
        if isinstance(child, ast.Import):
            for a in child.names:
                if a.name.split(".")[0] == "cutile":
                    out.append(Edge(mod, _known(a.name, mods), child.lineno, inner, typing, ()))
        elif isinstance(child, ast.ImportFrom):
            target = _resolve(mod, is_pkg, child.level, child.module)
            if target.split(".")[0] != "cutile":
                continue
            for a in child.names:
                sub = f"{target}.{a.name}"
                dst = sub if sub in mods else _known(target, mods)
                names = () if sub in mods else (a.name,)
                out.append(Edge(mod, dst, child.lineno, inner, typing, names))
        _visit(child, mod, is_pkg, mods, out, c_inner, c_typing)


def _known(name: str, mods) -> str:
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name


def circles(es: list[Edge]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    graph = defaultdict(set)
    for e in es:
        if not e.typing and e.src != e.dst and e.dst:
            graph[e.src].add(e.dst)
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in list(graph):
        if v not in index:
            strong(v)
    return out


def private_imports(es: list[Edge]) -> list[Edge]:
    """``from m import _name`` of a private name of another module (dunders excluded)."""
    return [e for e in es if any(n.startswith("_") and not n.startswith("__") for n in e.names)
            and e.src != e.dst]


def backend_into_interp(es: list[Edge]) -> list[Edge]:
    return [e for e in es if e.src.startswith("cutile.numba_backend")
            and e.dst.startswith("cutile.interp")]


def figures() -> dict:
    """The scan's figures: ``modules`` (count), ``edges``, ``circles``, ``inner`` (import
    statements inside functions, each with its ``# lazy:`` reason or none), ``private`` (private names across modules), ``backend_into_interp``
    (the last four lists); spec_tests/test_layering.py holds the line on them."""
    mods = modules()
    es = edges(mods)
    return {"modules": len(mods), "edges": es, "circles": circles(es),
            "inner": inner_statements(es),
            "private": private_imports(es), "backend_into_interp": backend_into_interp(es)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inner", action="store_true", help="list imports inside functions")
    args = ap.parse_args()
    f = figures()
    es, cs, inner, priv, back = (f["edges"], f["circles"], f["inner"], f["private"],
                                 f["backend_into_interp"])
    print(f"modules: {f['modules']}, cutile imports: {len(es)}")
    print(f"circles: {len(cs)}")
    for c in cs:
        print(f"  {len(c)} modules: {', '.join(c)}")
    unreasoned = [e for e in inner if not e.reason]
    print(f"imports inside functions: {len(inner)} ({len(unreasoned)} without a '# lazy:' "
          f"reason)")
    if args.inner:
        for e in inner:
            print(f"  {e.src}:{e.line} -> {e.dst}" + (f"  [lazy: {e.reason}]" if e.reason
                                                       else ""))
    print(f"private names imported across modules: {len(priv)}")
    for e in priv:
        print(f"  {e.src}:{e.line} -> {e.dst} {', '.join(e.names)}")
    print(f"numba_backend -> interp imports: {len(back)}")
    for e in back:
        print(f"  {e.src}:{e.line} -> {e.dst} {', '.join(e.names)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

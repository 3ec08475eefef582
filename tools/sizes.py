"""Module and function sizes in ``cutile/`` against issue 25's limits (600 lines a module,
80 lines a function, decorators and docstring included): lists what is over, exits 1 if any.

    python3 tools/sizes.py [root]        # default root: cutile
"""

from __future__ import annotations

import ast
import pathlib
import sys

MAX_MODULE, MAX_FUNCTION = 600, 80


def over(root: pathlib.Path) -> list[str]:
    out = []
    for p in sorted(root.rglob("*.py")):
        text = p.read_text()
        n = len(text.splitlines())
        if n > MAX_MODULE:
            out.append(f"{n:5d}  module    {p}")

        _functions(ast.parse(text), p, "", out)
    return out


def _functions(node, p: pathlib.Path, prefix: str, out: list[str]) -> None:
    for f in ast.iter_child_nodes(node):
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = min([f.lineno] + [d.lineno for d in f.decorator_list])
            size = f.end_lineno - start + 1
            if size > MAX_FUNCTION:
                out.append(f"{size:5d}  function  {p}:{f.lineno} {prefix}{f.name}")
            _functions(f, p, f"{prefix}{f.name}.", out)
        elif isinstance(f, ast.ClassDef):
            _functions(f, p, f"{prefix}{f.name}.", out)


def main() -> int:
    rows = over(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "cutile"))
    print("\n".join(rows) if rows else "every module <= 600 lines, every function <= 80")
    return 1 if rows else 0


if __name__ == "__main__":
    sys.exit(main())

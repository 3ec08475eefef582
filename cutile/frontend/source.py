"""Parsing a Python function's source into an AST with the file's own line and column numbers,
and what the function sees around its body: its parameters, closure cells and globals as
compile-time values (R-PY-8)."""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import dtypes as dt
from ..errors import Loc, TileSyntaxError, TileTypeError
from ..lang.values import Const, FVal, TupleV


@dataclass(frozen=True)
class SourceInfo:
    filename: str
    col_shift: int      # columns removed by dedent
    func_name: str

    def loc(self, node: ast.AST, caller: Loc | None = None) -> Loc:
        line = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0) + self.col_shift
        end = getattr(node, "end_col_offset", None)
        end_line = getattr(node, "end_lineno", line)
        end_col = end + self.col_shift if end is not None and end_line == line else None
        return Loc(self.filename, line, col, end_col, self.func_name, caller)


@functools.cache
def _parse(func) -> tuple[ast.FunctionDef, SourceInfo]:
    try:
        # Through the code object: inspect would follow ``__wrapped__`` of a functools.wraps
        # wrapper to the wrapped function, whose code is not what runs (R-PY-6).
        code = getattr(func, "__code__", func)
        lines, first = inspect.getsourcelines(code)
        filename = inspect.getsourcefile(code) or "<unknown>"
    except (OSError, TypeError) as e:
        raise TileSyntaxError(f"Cannot read the source of {func.__qualname__}: {e}; a kernel "
                              f"is compiled from its source text, which Python keeps only for "
                              f"files and notebook cells, not for code typed into the "
                              f"interactive prompt or piped on stdin: define the kernel in a "
                              f"file or a notebook cell") from None
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    shift = _indent(text) - _indent(dedented)
    try:
        tree = ast.parse(dedented)
    except SyntaxError:
        # A lambda in the middle of an expression: its source lines may not parse alone.
        tree = ast.parse("(\n" + dedented + "\n)") if func.__name__ == "<lambda>" else None
        if tree is None:
            raise
        first -= 1
    ast.increment_lineno(tree, first - 1)
    if func.__name__ == "<lambda>":
        return _find_lambda(tree, func, shift), SourceInfo(filename, shift, func.__name__)
    node = tree.body[0]
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        raise TileSyntaxError(f"Cannot find the definition of {func.__qualname__} in its source")
    return node, SourceInfo(filename, shift, func.__name__)


def _find_lambda(tree: ast.AST, func, shift: int) -> ast.Lambda:
    """The lambda node of ``func`` among those on its first line: matched by the position of
    its body's first instruction, else by its parameters."""
    line = func.__code__.co_firstlineno
    found = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda) and n.lineno == line]
    if len(found) > 1:
        pos = [p for p in func.__code__.co_positions() if p[2]]
        if pos:
            ln, _, col, _ = pos[0]

            def contains(n):
                b = n.body
                return (b.lineno, b.col_offset + shift) <= (ln, col) <= (
                    b.end_lineno, b.end_col_offset + shift)
            found = [n for n in found if contains(n)]
    if len(found) > 1:
        params = list(func.__code__.co_varnames[:func.__code__.co_argcount])
        found = [n for n in found if [a.arg for a in n.args.args] == params]
    if len(found) != 1:
        raise TileSyntaxError(f"Cannot locate the source of a lambda on line {line}; define "
                              "the helper with def")
    return found[0]


def _indent(text: str) -> int:
    for line in text.splitlines():
        if line.strip():
            return len(line) - len(line.lstrip())
    return 0


def parse_function(func) -> tuple[ast.FunctionDef, SourceInfo]:
    """The ``def`` node of ``func`` (line numbers as in its file) and where it came from."""
    return _parse(func)


def closure_values(func) -> dict:
    """The values of ``func``'s closure cells by name (unset cells are left out)."""
    out = {}
    for name, cell in zip(func.__code__.co_freevars, func.__closure__ or ()):
        try:
            out[name] = cell.cell_contents
        except ValueError:
            pass
    return out


def assigned_names(stmts: list[ast.stmt]) -> set[str]:
    """Names bound anywhere in ``stmts`` (not inside nested functions or lambdas, nor a
    comprehension's own variables: as in Python they live in the comprehension's scope, only a
    walrus inside one binds in the function)."""
    out: set[str] = set()

    class V(ast.NodeVisitor):
        def visit_Name(self, node):
            if isinstance(node.ctx, ast.Store):
                out.add(node.id)

        def visit_FunctionDef(self, node):
            out.add(node.name)

        def visit_Lambda(self, node):
            pass

        def visit_GeneratorExp(self, node):
            out.update(n.target.id for n in ast.walk(node) if isinstance(n, ast.NamedExpr))

        visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp

    for s in stmts:
        V().visit(s)
    return out


def all_args(a: ast.arguments):
    out = list(a.posonlyargs) + list(a.args) + list(a.kwonlyargs)
    if a.vararg:
        out.append(a.vararg)
    if a.kwarg:
        out.append(a.kwarg)
    return out


def global_value(obj: Any) -> FVal:
    """A module global or closure cell as a compile-time value (R-PY-8)."""
    if isinstance(obj, FVal):
        return obj
    if isinstance(obj, np.generic):
        d = dt.from_numpy(obj.dtype)
        if d is not None:
            return Const(obj.item(), d)
    if isinstance(obj, tuple):
        return TupleV(tuple(global_value(i) for i in obj))
    if isinstance(obj, np.ndarray) or hasattr(obj, "__cuda_array_interface__") or (
            hasattr(obj, "__dlpack__") and not isinstance(obj, type)):
        mod = type(obj).__module__.split(".")[0]
        raise TileTypeError(
            f"Cannot create constant from value of type {mod}.{type(obj).__name__}")
    return Const(obj)

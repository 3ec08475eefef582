"""Readable text form of the IR, for dumps (``CUTILE_DUMP_IR=1``) and golden tests."""

from __future__ import annotations

from .core import KernelIR, Op, Region, Value


class _Names:
    def __init__(self):
        self.names: dict[int, str] = {}

    def __call__(self, v: Value) -> str:
        n = self.names.get(id(v))
        if n is None:
            n = f"%{len(self.names)}"
            self.names[id(v)] = n
        return n


def _fmt_attr(v) -> str:
    if hasattr(v, "name") and not isinstance(v, str):
        return str(v.name)
    return repr(v)


def _op_lines(op: Op, name: _Names, indent: str) -> list[str]:
    res = ", ".join(name(r) for r in op.results)
    operands = ", ".join(name(o) for o in op.operands())
    attrs = ", ".join(f"{k}={_fmt_attr(v)}" for k, v in op.attrs().items()
                      if k not in ("result_types",) and v is not None and v is not False)
    types = ", ".join(str(r.type) for r in op.results)
    head = f"{indent}{res + ' = ' if res else ''}{type(op).__name__}({operands})"
    if attrs:
        head += f" {{{attrs}}}"
    if types:
        head += f" : {types}"
    lines = [head]
    for r in op.regions():
        lines.extend(_region_lines(r, name, indent + "  "))
    return lines


def _region_lines(region: Region, name: _Names, indent: str) -> list[str]:
    args = ", ".join(f"{name(a)}: {a.type}" for a in region.args)
    lines = [f"{indent}^({args}):"]
    for op in region.ops:
        lines.extend(_op_lines(op, name, indent + "  "))
    return lines


def format_kernel(k: KernelIR) -> str:
    name = _Names()
    params = ", ".join(f"{name(p)} {p.hint}: {p.type}" for p in k.params)
    lines = [f"kernel {k.name}({params})"]
    for op in k.body.ops:
        lines.extend(_op_lines(op, name, "  "))
    return "\n".join(lines)

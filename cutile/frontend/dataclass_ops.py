"""Dataclass values in tile code (R-PY-10, cuda.tile 1.7): making them (the generated
``__init__``, ``dataclasses.replace``, a global instance as a value), user-defined binary
dunders (``__add__``/``__radd__``, ...), the comparisons ``dataclass`` generates (``eq``,
``order``) or user ones, ``obj[i] = v`` through ``__setitem__`` and ``len(obj)``.

The user's methods are inlined like any helper; the generated comparisons compare the fields
in order, as Python compares tuples, folding where the fields are constants.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import operator
import types

from ..errors import TileTypeError
from ..lang import coerce, registry
from ..lang.coerce import value_dtype
from ..lang.values import Const, ContextV, DataclassV, FVal, TileV, describe, type_str
from .source import global_value

_BINARY = {"Add": ("+", "add"), "Sub": ("-", "sub"), "Mult": ("*", "mul"),
           "MatMult": ("@", "matmul"), "Div": ("/", "truediv"),
           "FloorDiv": ("//", "floordiv"), "Mod": ("%", "mod"), "Pow": ("**", "pow"),
           "LShift": ("<<", "lshift"), "RShift": (">>", "rshift"), "BitAnd": ("&", "and"),
           "BitXor": ("^", "xor"), "BitOr": ("|", "or"), "divmod": ("divmod", "divmod")}
_COMPARE = {"Eq": ("==", "eq"), "NotEq": ("!=", "ne"), "Lt": ("<", "lt"), "LtE": ("<=", "le"),
            "Gt": (">", "gt"), "GtE": (">=", "ge")}


def as_dataclass(v: FVal) -> DataclassV | None:
    """``v`` as a dataclass value (a global instance becomes one), else None."""
    if isinstance(v, DataclassV):
        return v
    if isinstance(v, Const) and dataclasses.is_dataclass(v.value) and \
            not isinstance(v.value, type):
        return from_instance(v.value)
    return None


def _find_method(cls, name: str):
    for base in cls.__mro__:
        if name in base.__dict__:
            return base.__dict__[name]
    return None


def _try_dunder(comp, obj: DataclassV, name: str, other: FVal, skip_object: bool = False):
    """``obj.name(other)`` inlined, or NotImplemented when there is no such method or it
    returns NotImplemented."""
    f = _find_method(obj.cls, name)
    if f is None or (skip_object and f is getattr(object, name, None)):
        return NotImplemented
    if not isinstance(f, types.FunctionType):
        raise TileTypeError(f"{obj.cls.__name__}.{name} must be a plain function to be used in "
                            "tile code")
    r = comp.inline_function(f, [obj, other], {}, None)
    if isinstance(r, Const) and r.value is NotImplemented:
        return NotImplemented
    return r


def _name(v: FVal) -> str:
    d = as_dataclass(v)
    return d.cls.__name__ if d is not None else describe(v)


def binop(comp, op: str, left: FVal, right: FVal) -> FVal | None:
    """``left <op> right`` when either side is a dataclass (None: neither is); an operand
    that is a ``@contextmanager`` call has no operators (1.7's words and type notation)."""
    lhs, rhs = as_dataclass(left), as_dataclass(right)
    if lhs is None and rhs is None:
        if isinstance(left, ContextV) or isinstance(right, ContextV):
            raise TileTypeError(f"Unsupported operand types for {_BINARY[op][0]}: "
                                f"{type_str(left)} and {type_str(right)}")
        return None
    symbol, base = _BINARY[op]
    if lhs is not None:
        r = _try_dunder(comp, lhs, f"__{base}__", rhs if rhs is not None else right)
        if r is not NotImplemented:
            return r
    if rhs is not None:
        r = _try_dunder(comp, rhs, f"__r{base}__", lhs if lhs is not None else left)
        if r is not NotImplemented:
            return r
    raise TileTypeError(f"Unsupported operand types for {symbol}: {_name(left)} and "
                        f"{_name(right)}")


def _has_generated(cls, name: str) -> bool:
    """Whether ``cls.name`` is the comparison ``@dataclass`` wrote (eq=True / order=True)."""
    if name == "__ne__":
        return cls.__ne__ is object.__ne__ and _has_generated(cls, "__eq__")
    params = cls.__dataclass_params__
    if not (params.eq if name == "__eq__" else params.order):
        return False
    code = getattr(getattr(cls, name), "__code__", None)
    qual = getattr(code, "co_qualname", "")
    return code is not None and (qual.startswith("__create_fn__.")
                                 or code.co_filename == "<string>")


def compare(comp, op: str, left: FVal, right: FVal) -> FVal | None:
    """``left <op> right`` for a dataclass on the left (None: it is not one)."""
    lhs = as_dataclass(left)
    if lhs is None or op not in _COMPARE:
        return None
    symbol, fn = _COMPARE[op]
    rhs = as_dataclass(right)
    if _has_generated(lhs.cls, f"__{fn}__"):
        if rhs is None or rhs.cls is not lhs.cls:
            if fn in ("eq", "ne"):
                return Const(fn == "ne")
            raise TileTypeError(f"Unsupported operand types for {symbol}: {_name(left)} and "
                                f"{_name(right)}")
        names = [f.name for f in dataclasses.fields(lhs.cls)]
        return _lexicographic(comp, op, [(lhs.fields[n], rhs.fields[n]) for n in names])
    via_eq = fn == "ne" and lhs.cls.__ne__ is object.__ne__
    r = _try_dunder(comp, lhs, "__eq__" if via_eq else f"__{fn}__",
                    rhs if rhs is not None else right, skip_object=True)
    if r is NotImplemented:        # no identity fallback: values have no addresses
        raise TileTypeError(f"Unsupported operand types for {symbol}: {_name(left)} and "
                            f"{_name(right)}")
    return _not(comp, r) if via_eq else r


def _not(comp, v: FVal) -> FVal:
    return registry.call(operator.not_, v)


def _compare_one(comp, op: str, a: FVal, b: FVal) -> FVal:
    r = compare(comp, op, a, b)
    if r is not None:
        return r
    return registry.call(registry.COMPARISONS[getattr(ast, op)], a, b)


def _lexicographic(comp, op: str, pairs: list) -> FVal:
    """Python's tuple comparison over field pairs: the first unequal pair decides."""
    if not pairs:
        return Const(op in ("Eq", "LtE", "GtE"))
    a, b = pairs[0]
    for v in (a, b):
        if isinstance(v, TileV) and v.shape != ():
            raise TileTypeError("Dataclass comparison is not supported for non-scalar fields")
    same = _compare_one(comp, "Eq", a, b)
    if isinstance(same, Const) and same.value:
        return _lexicographic(comp, op, pairs[1:])
    differ = Const(op == "NotEq") if op in ("Eq", "NotEq") else _compare_one(comp, op, a, b)
    if isinstance(same, Const):
        return differ
    return registry.call(registry.op_named("where"), same, _lexicographic(comp, op, pairs[1:]),
                         differ)


def setitem(comp, obj: FVal, idx: FVal, value: FVal) -> bool:
    """``obj[idx] = value`` through the dataclass's ``__setitem__`` (False: not a dataclass)."""
    d = as_dataclass(obj)
    if d is None:
        return False
    f = _find_method(d.cls, "__setitem__")
    if not isinstance(f, types.FunctionType):
        raise TileTypeError(f"{d.cls.__name__} does not support item assignment")
    comp.inline_function(f, [d, idx, value], {}, None)
    return True


def length(comp, obj: FVal) -> FVal | None:
    """``len(obj)`` through ``__len__`` (None: not a dataclass)."""
    d = as_dataclass(obj)
    if d is None:
        return None
    f = _find_method(d.cls, "__len__")
    if not isinstance(f, types.FunctionType):
        raise TileTypeError(f"'{d.cls.__qualname__}' object has no len()")
    r = comp.inline_function(f, [d], {}, None)
    ok = (isinstance(r, Const) and isinstance(r.value, int) and not isinstance(r.value, bool)) \
        or (isinstance(r, TileV) and r.shape == () and value_dtype(r).is_integral
            and not value_dtype(r).is_bool)
    if not ok:
        raise TileTypeError(f"__len__() must return an integer, got {describe(r)}")
    return r


# -- construction (R-PY-10) -------------------------------------------------------------------
def _generated_init(cls) -> bool:
    """Whether ``cls.__init__`` is the one ``@dataclass`` wrote (compiled from generated text,
    so its code has no source file), not the user's own."""
    init = cls.__dict__.get("__init__")
    return bool(cls.__dataclass_params__.init and init is not None and
                getattr(getattr(init, "__code__", None), "co_filename", "") == "<string>")


def _check_dataclass(cls) -> None:
    if not cls.__dataclass_params__.frozen:
        raise TileTypeError(f"Only frozen dataclasses are supported in tile code; declare "
                            f"{cls.__name__} with @dataclass(frozen=True)")
    if "__dataclass_params__" not in cls.__dict__:
        raise TileTypeError(f"Non-dataclass subclasses of a dataclass are not supported "
                            f"({cls.__name__}: decorate it with @dataclass(frozen=True))")
    if not _generated_init(cls):
        raise TileTypeError(f"Dataclass instance creation is only supported for dataclasses "
                            f"with a default generated __init__() method ({cls.__name__} "
                            f"defines its own, or has init=False)")
    if cls.__new__ is not object.__new__:
        raise TileTypeError(f"Dataclasses with custom __new__ are not supported "
                            f"({cls.__name__})")
    for f in dataclasses.fields(cls):
        if f.default_factory is not dataclasses.MISSING:
            raise TileTypeError(f"Dataclasses with default_factory fields are not supported "
                                f"in tile code (field {f.name!r} of {cls.__name__})")
        if not f.init:
            raise TileTypeError(f"Dataclasses with init=False fields are not supported in "
                                f"tile code (field {f.name!r} of {cls.__name__})")


def make_dataclass(comp, cls, args, kwargs, node) -> DataclassV:
    _check_dataclass(cls)
    try:
        bound = inspect.signature(cls).bind(*args, **kwargs)
    except TypeError as e:
        raise TileTypeError(f"{cls.__name__}(): {e}") from None
    bound.apply_defaults()
    obj = DataclassV(cls, {k: coerce.fval(v) for k, v in bound.arguments.items()})
    post = getattr(cls, "__post_init__", None)
    if isinstance(post, types.FunctionType):
        comp.inline_function(post, [obj], {}, node)
    return obj


def replace(comp, args, kwargs, env) -> FVal:
    """``dataclasses.replace(obj, **changes)`` in tile code."""
    if len(args) != 1:
        raise TileTypeError("dataclasses.replace(obj, /, **changes)")
    obj = args[0]
    if isinstance(obj, Const) and dataclasses.is_dataclass(obj.value):
        obj = from_instance(obj.value)
    if not isinstance(obj, DataclassV):
        raise TileTypeError(f"dataclasses.replace() expects a dataclass instance, got "
                            f"{describe(obj)}")
    for k in kwargs:
        if k not in obj.fields:
            raise TileTypeError(f"Dataclass {obj.cls.__name__!r} has no such field {k!r}")
    return make_dataclass(comp, obj.cls, [], {**obj.fields, **kwargs}, None)


def from_instance(inst, convert=None) -> DataclassV:
    """A frozen dataclass instance (a global, a constant argument or a static_eval result,
    whose fields ``convert`` turns into values) as a value."""
    _check_dataclass(type(inst))
    convert = convert or global_value
    return DataclassV(type(inst), {f.name: convert(getattr(inst, f.name))
                                   for f in dataclasses.fields(inst)})

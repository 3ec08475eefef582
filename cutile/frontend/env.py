"""``Env``: the variables of one control-flow path of the function being compiled and how the
path ended.  Its own module, below the compiler and its parts (expressions, branches, loops,
``with``, comprehensions), since all of them make and copy paths."""

from __future__ import annotations

from ..lang.values import FVal

_DEAD = ("break", "continue", "return-op", "dead")   # terminations that leave the region


class Env:
    """Variables of one control-flow path and how the path ended (``term``)."""

    __slots__ = ("vars", "term", "ret")

    def __init__(self, vars: dict | None = None):
        self.vars: dict[str, FVal] = dict(vars or {})
        self.term: str | None = None     # None, "break", "continue", "return-op", "dead", "return"
        self.ret: FVal | None = None     # helper return value when term == "return"

    def copy(self) -> Env:
        return Env(self.vars)

    @property
    def live(self) -> bool:
        return self.term not in _DEAD

"""The semantics floor: facts both executors need, defined once.

The interpreter (``cutile/interp/``, the exact NumPy oracle) and the Numba backend
(``cutile/numba_backend/``) each run the typed IR; where they must agree on something that
is not an op rule, the fact lives here, below both, so that neither executor imports the
other.  Imports only go down: ``interp`` and ``numba_backend`` import ``semantics``, which
imports only ``ir``/``dtypes``/``errors`` and NumPy (never numba).

- ``buffers``: the buffer behind an array view (its root) and its byte extent; bit patterns.
- ``ub``: ``UB``, the marker exception for detected undefined behaviour.
- ``pointer``: the view ``Array.from_foreign`` denotes (foreign pointers, §7).
- ``matmul``: the K chunking of a float16 accumulator (R-MM-7).
- ``power``: ``pow`` with C99's special cases (NumPy's scalar-exponent shortcut differs).
"""

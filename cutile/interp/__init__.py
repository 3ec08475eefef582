"""The exact NumPy interpreter: the semantics oracle of cutile (runs every block of the grid).

Layers, each importing only those below it:

- ``machine.py``: the launch driver (``run_kernel``): block order, race tracker, watchdog,
  batches or one block at a time.  Nothing in the package imports it.
- ``batch/``: batched execution (many blocks at once, exactly as one by one): its frame and
  registry (``batch/frame.py``), batched rules, the memory journal, and the batch driver
  (``batch/__init__.py``).  Batched rules reuse the per-block rules where they can.
- ``rules/``: the per-block rules, one module per IR section (the sections of ``ir/ops/`` and
  ``numba_backend/lower/``); importing the package registers them all.
- the vocabulary: ``core.py`` (``PTile``, ``Frame``, the rule registry, ``Fallback``),
  ``undetermined.py`` (UNDETERMINED padding, R-UB-2), ``memory_model.py``, ``races.py``,
  ``access_map.py``, and the numerics (``numerics.py``, ``rounding.py``,
  ``matmul_numerics.py``).
"""

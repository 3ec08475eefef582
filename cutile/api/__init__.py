"""The ``ct`` operations: each module implements one section of the language on the value
model (``cutile/lang``) and registers what it implements in ``lang.registry`` when imported:
ops through ``tile_op``, Python's operators (``operators``), builtins (``pybuiltins``),
attributes and methods of tiles, arrays and views (``methods``).  Importing this package
registers them all, so that any compilation (which imports ``cutile`` first) finds them."""

from . import methods, operators, pybuiltins  # noqa: F401  (register on import)

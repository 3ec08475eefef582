"""``ct.tune``: pick the fastest configuration of a kernel by timing real launches.

``exhaustive_search`` (``_tune``) warms every configuration up, then times launches on the
selected executor (the interpreter, or the Numba backend on a GPU or the simulator), spending
samples on the configurations that can still be the fastest, and returns a ``TuningResult``
holding a ``Measurement`` per configuration that ran and ``(config, exception type, message)``
per configuration that failed.  ``_tune_utils`` times one launch, optionally under a limit.

>>> space = [{"tile": t} for t in (16, 32, 64)]
>>> res = ct.tune.exhaustive_search(space, None, lambda c: (ct.cdiv(n, c["tile"]),), vec_add,
...                                 lambda c: (a, b, out, c["tile"]), quiet=True)
>>> res.best.config, res.best.mean_us
"""

from ._tune import Measurement, TuningResult, exhaustive_search

__all__ = ["Measurement", "TuningResult", "exhaustive_search"]

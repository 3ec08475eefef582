"""Support code for running NVIDIA's cuTile test suite (``test/`` of NVIDIA/cutile-python)
unchanged against ``cutile``: the ``cuda.tile`` import shim, the CPU-mode torch mapping and
the pytest plugin that records per-test outcomes.  A tool, not part of the ``cutile`` package.
"""

"""Python subprocesses the suite starts (``test_concurrent_launch.py``, ``test_print.py``'s
capture script) import ``cuda.tile`` without our pytest plugin: the runner puts this folder on
``PYTHONPATH``, so every Python it starts installs the ``cuda.tile`` finder (and, in CPU mode,
the CUDA-to-host mapping) at startup.  Without ``NVSUITE_MODE`` set it does nothing but hand
over to the next ``sitecustomize`` on the path, if any."""

import importlib.util
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))


def _chain() -> None:
    """Run the ``sitecustomize`` this one shadows (an image's own), if there is one."""
    saved = list(sys.path)
    try:
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
        mod = sys.modules.pop("sitecustomize", None)
        spec = importlib.util.find_spec("sitecustomize")
        if spec is not None and spec.origin and os.path.dirname(spec.origin) != _here:
            other = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(other)
        if mod is not None:
            sys.modules["sitecustomize"] = mod
    except Exception:
        pass
    finally:
        sys.path[:] = saved


_chain()
if os.environ.get("NVSUITE_MODE"):
    try:
        from nvsuite import finder
        finder.install(bind=False)
        if os.environ["NVSUITE_MODE"] == "cpu":
            from nvsuite import cpu_mode
            cpu_mode.enable()
    except Exception as e:                                  # never break the interpreter
        print(f"nvsuite sitecustomize: {type(e).__name__}: {e}", file=sys.stderr)

"""The project's differential tests on top of ``cutile.testing`` (one harness for users and for
us): kernels from source text, the Hypothesis example budget per profile, and the checks of the
generated source.  ``run_both``/``assert_same`` keep the tests' calling convention.

Guard bands, poisoning and the comparison rules are ``cutile.testing``'s (docs/testing.md).
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import re
import sys
import tempfile

import numpy as np

from cutile.testing import GUARD, embed, poison, sentinel, ulp_distance  # noqa: F401
from cutile.testing.compare import disagreeing, first_mismatches
from cutile.testing.diff import run_on

_counter = itertools.count()
_tmpdir = tempfile.mkdtemp(prefix="cutile_diff_")


_PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
# (examples multiplier, shards) per profile: see ``examples`` and ``shards``
_SCALE = {"gpu": (5, 10), "deep": (32, 16)}.get(_PROFILE, (1, 1))


def examples(n: int) -> int:
    """Hypothesis examples per shard: ``n`` in CI; with HYPOTHESIS_PROFILE=gpu (deep) the
    test runs 5x (32x) as many examples in total, split over ``shards()``.  The gpu profile
    is sized to finish in one 10-minute device call with ``-n 16`` (about 6 minutes)."""
    scale, parts = _SCALE
    return max(1, n * scale // parts)


def shards() -> range:
    """Parametrisation that splits a Hypothesis test into independently seeded copies.

    Hypothesis runs one test's examples serially, and on a GPU every example is a Numba
    compile (about a second); split in shards, ``pytest -n 16`` (pytest-xdist) spreads the
    examples of the gpu/deep profiles over the cores.  One shard in CI.
    """
    return range(_SCALE[1])


def numba_ready() -> bool:
    """The Numba backend can run: Numba's CUDA simulator is active, or a GPU is usable."""
    if sim():
        return True
    from cutile.executors import gpu_usable
    return gpu_usable()


def sim() -> bool:
    """Whether numba.cuda is the simulator (asks Numba: the environment may be stale)."""
    from cutile.numba_backend.rt import simulator
    return simulator()


def kernel_from_source(src: str, name: str):
    """Define a kernel from source text (the frontend needs a real file for line numbers)."""
    path = os.path.join(_tmpdir, f"k{next(_counter)}_{name}.py")
    with open(path, "w") as f:
        f.write("import cutile as ct\nfrom cutile import Constant\n\n" + src)
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return getattr(mod, name)


def run_both(kernel, grid, args, *, threads=None, mma_acc=None, device=False):
    """(interpreter outputs, backend outputs): every top-level array argument after the launch
    (the callers poison outputs themselves).  Guard bands must be intact on both."""
    opts = dict(poison_outputs=False, threads=threads, mma_acc=mma_acc)
    ref = run_on(kernel, grid, tuple(args), "interp", **opts)
    got = run_on(kernel, grid, tuple(args), "numba", device=device, **opts)
    assert all(ref.guard_ok.values()), "interpreter wrote into a guard band (harness bug)"
    bad = [n for n, ok in got.guard_ok.items() if not ok]
    assert not bad, f"numba backend wrote outside array argument(s) {bad}"
    names = [n for n in ref.arrays if "[" not in n]        # top-level arrays, in order
    return [ref.arrays[n] for n in names], [got.arrays[n] for n in names]


def mma_f32_bound(a: np.ndarray, b: np.ndarray, TK: int, tensor_cores: bool,
                  mma_k: int = 16) -> np.ndarray:
    """R-MM-7 bound on |interpreter - backend| of a float32-accumulated ``a @ b`` computed in
    ``TK``-deep mma calls (docs/backend.md, "Tensor cores"), ``S = |a| @ |b|``:

    - FFMA path (k order, fused): ``(K + 2) * 2**-23 * S``;
    - tensor-core path (``mma.sync`` float16/bfloat16, GPU only): each 16-deep step adds 16
      exact products to the accumulator with truncating alignment, ``<= 18 * 2**-23 * S``, so
      ``(18 * n16 + K + 2) * 2**-23 * S`` with ``n16 = ceil(K / TK) * ceil(TK / 16)`` steps
      (zero-padded k included);
    - tfloat32 (``mma.sync.m16n8k8``, ``mma_k=8``): 8-deep steps, ``<= 10 * 2**-23 * S``
      each."""
    K = a.shape[-1]
    s = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    steps = -(-K // TK) * -(-TK // mma_k) if tensor_cores else 0
    return s * ((mma_k + 2) * steps + K + 2) * 2.0 ** -23


# Hopper's float8 wgmma keeps about 14 bits where it adds a k32 step's products to the
# accumulator (DeepSeek-V3 sec. 3.3.2); the backend promotes each mma call's sums into the
# float32 accumulator (wgmma.WGPlan.promotes), as the real cuTile does: on an H200
# (tools/gpu/fp8_mma.py) both gave the same bits, largest |C - exact| 475 * 2**-23 * S
# (~2**-14 S).  The stated bound keeps 32x margin over that and lies well inside R-MM-7's
# float8 tolerance (1e-2).
F8_WGMMA_REL = 2.0 ** -9


def mma_f8_wgmma_bound(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Bound on |interpreter - GPU| of a float8 ``a @ b`` into float32 on Hopper's wgmma:
    ``F8_WGMMA_REL * S``, ``S = |a| @ |b|`` (the interpreter's sum is exact up to float32)."""
    return (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))) * F8_WGMMA_REL


def assert_same(ref: np.ndarray, got: np.ndarray, *, ulps: int = 0, atol: float = 0.0,
                rtol: float = 0.0, signed_zero: bool = True, what: str = "") -> None:
    """``ref`` (interpreter) and ``got`` (backend) agree within the bound (cutile.testing)."""
    bad = disagreeing(ref, got, ulps=ulps, atol=atol, rtol=rtol, signed_zero=signed_zero)
    if bad.any():
        m = first_mismatches("out", ref, got, bad, 1)[0]
        raise AssertionError(f"{what}: {int(bad.sum())} of {ref.size} element(s) differ, first "
                             f"at {m.index}: interp {m.expected!r} vs numba {m.actual!r}")


def check_no_divergent_barrier(source: str) -> None:
    """No ``cuda.syncthreads()`` under an ``if`` whose condition depends on the thread."""
    stack: list[tuple[int, bool]] = []
    per_thread = re.compile(r"\btid\b|\bL\d+_w\b|\blead\b|\b0 <= ")
    for n, line in enumerate(source.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        ind = len(line) - len(line.lstrip())
        while stack and stack[-1][0] >= ind:
            stack.pop()
        if s.startswith(("if ", "elif ", "else:", "for ", "while ")):
            div = s.startswith(("if ", "elif ")) and bool(per_thread.search(s))
            if s.startswith("else:") and stack:
                div = False
            stack.append((ind, div or any(d for _, d in stack)))
        if s == "cuda.syncthreads()" and any(d for _, d in stack):
            raise AssertionError(f"barrier in divergent control flow at generated line {n}")

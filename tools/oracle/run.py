"""Run the oracle probes and the examples on one executor and save the results, or compare
two saved result files.

On the GPU machine, with the real cuTile importable (see ../shared/GPU.md):
    python3 tools/oracle/run.py --oracle $OUT/oracle.npz
Locally, on cutile's interpreter (or CUTILE_BACKEND=numba):
    python3 tools/oracle/run.py --local /tmp/local.npz
    python3 tools/oracle/run.py --compare oracle.npz /tmp/local.npz
`--only examples` (or probes, errors; comma-separated) runs a part: with CUTILE_BACKEND=numba
on the GPU every probe is a Numba compile, and all parts take more than five minutes there.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EXAMPLES = ["vector_add", "matmul", "softmax", "layer_norm", "transpose", "attention", "histogram",
            "splitk_matmul", "topk", "fft", "prefix_sum", "grouped_gemm", "static_helpers"]


def _oracle_launch():
    """``launch(stream, grid, kernel, args)`` on the real cuda.tile over host NumPy arrays
    (cutile.testing's cuda.tile executor moves them to the GPU and back)."""
    from cutile.testing import cuda_tile
    dev = cuda_tile.Device()

    def launch(stream, grid, kernel, args):
        cuda_tile.launch(grid, kernel, args, dev)

    return launch


def _arrays(args) -> list:
    """The NumPy arrays among launch arguments, lists and tuples of arrays included."""
    out = []
    for a in args:
        if isinstance(a, np.ndarray):
            out.append(a)
        elif isinstance(a, (list, tuple)):
            out += _arrays(a)
    return out


def collect(launch, parts=("probes", "examples", "errors")) -> dict:
    """Run the chosen parts (``--only``: on the GPU each probe is a Numba compile, and all of
    them together take more than five minutes there)."""
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    res = {}
    if "probes" in parts:
        import probes
        res.update(probes.run_all(lambda grid, k, args: launch(None, grid, k, args)))
    import importlib
    for name in EXAMPLES if "examples" in parts else ():
        mod = importlib.import_module(name)
        outs = {}

        def capture(stream, grid, kernel, args, _outs=outs, _mod=name):
            launch(stream, grid, kernel, args)
            _outs[f"example.{_mod}.{len(_outs)}"] = _arrays(args)[-1].copy()

        try:
            res[f"example.{name}.maxerr"] = np.array(mod.run(launch=capture))
        except Exception as e:  # noqa: BLE001
            res[f"example.{name}.ERROR"] = f"{type(e).__name__}: {str(e)[:300]}"
        res.update(outs)
    if "errors" in parts:
        res.update(error_classes(launch))
    return res


def save(res: dict, path: str) -> None:
    arrays = {k: (v if isinstance(v, np.ndarray) else np.array(str(v))) for k, v in res.items()}
    np.savez(path, **arrays)
    for k, v in res.items():
        if not isinstance(v, np.ndarray) or v.size <= 16:
            print(k, "=", v if not isinstance(v, np.ndarray) else v.tolist())


def compare(a_path: str, b_path: str) -> None:
    a, b = np.load(a_path, allow_pickle=False), np.load(b_path, allow_pickle=False)
    for k in sorted(set(a.files) | set(b.files)):
        if k not in a.files or k not in b.files:
            print(f"{k}: only in {'A' if k in a.files else 'B'}")
            continue
        x, y = a[k], b[k]
        if x.dtype.kind == "U" or y.dtype.kind == "U":
            if str(x) != str(y):
                print(f"{k}:\n   A: {x}\n   B: {y}")
            continue
        if x.shape != y.shape or x.dtype != y.dtype:
            print(f"{k}: shape/dtype {x.shape} {x.dtype} vs {y.shape} {y.dtype}")
            continue
        if x.dtype.kind == "f":
            same = np.array_equal(x, y, equal_nan=True)
            if not same:
                diff = np.abs(x.astype(np.float64) - y.astype(np.float64))
                diff = np.where(np.isnan(x) & np.isnan(y), 0, diff)
                rel = diff / np.maximum(np.abs(x.astype(np.float64)), 1e-30)
                print(f"{k}: {np.count_nonzero(diff)} / {x.size} differ, "
                      f"max abs {np.nanmax(diff):.3g}"
                      f", max rel {np.nanmax(rel):.3g}")
        elif not np.array_equal(x, y):
            print(f"{k}: DIFFER\n   A: {x.tolist() if x.size < 40 else x}\n"
                  f"   B: {y.tolist() if y.size < 40 else y}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--oracle")
    p.add_argument("--local")
    p.add_argument("--compare", nargs=2)
    p.add_argument("--only", help="comma-separated parts to run: probes,examples,errors")
    args = p.parse_args()
    parts = tuple(args.only.split(",")) if args.only else ("probes", "examples", "errors")
    if args.compare:
        compare(*args.compare)
        return
    if args.oracle:
        launch = _oracle_launch()              # imports cutile.testing while it is cutile
        import cuda.tile as ct
        sys.modules["cutile"] = ct             # the probes' `import cutile as ct`
        save(collect(launch, parts), args.oracle)
        return
    import cutile as ct
    save(collect(ct.launch, parts), args.local)



def error_classes(launch) -> dict:
    """Run the bad-input kernels of spec_tests/test_errors.py; record class and message."""
    sys.path.insert(0, os.path.join(ROOT, "spec_tests"))
    import test_errors
    out = {}
    for kernel, args, cls, fragment, marker in test_errors.CASES:
        try:
            launch(None, (1,), kernel, args)
            out[f"error.{marker}"] = "no error"
        except Exception as e:  # noqa: BLE001
            out[f"error.{marker}"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
    return out


if __name__ == "__main__":
    main()

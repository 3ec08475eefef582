"""A digest of the Numba backend's generated source for a fixed set of kernels, to show that a
refactor leaves the generated code byte-identical (issue 25: "behaviour unchanged").

The kernels: the benchmark kernels of ``benchmarks/gpu.py`` (vector add, softmax, float16 /
float32 / bfloat16 matmul, batched matmul, layer norm, attention) and the hand-written backend
kernels of ``spec_tests/backend_kernels.py``, each generated for a GPU (tensor cores on and
off) and for the simulator; then ``--programs N`` random programs of ``spec_tests/diff/progen``
(fixed seed), generated for a GPU.  Only source generation runs: no GPU, no Numba compile.

    python3 tools/source_digest.py --out /tmp/before.json        # on the old code
    python3 tools/source_digest.py --check /tmp/before.json      # on the new code: diffs
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "spec_tests"), os.path.join(ROOT, "benchmarks")]

import numpy as np  # noqa: E402


def _bench_cases():
    import ml_dtypes
    from gpu import make_kernels

    import cutile as ct
    k = make_kernels(ct)
    f16, bf16 = np.float16, ml_dtypes.bfloat16
    z = lambda shape, d=np.float32: np.zeros(shape, d)  # noqa: E731
    for name, args in _bench_args(z, f16, bf16):
        yield name, k[name.split(":")[0]], args


def _bench_args(z, f16, bf16):
    yield "vadd", (z(4096), z(4096), z(4096), 1024)
    yield "softmax", (z((64, 4096)), z((64, 4096)), 4096)
    for d, nm in ((f16, "f16"), (np.float32, "f32"), (bf16, "bf16")):
        yield f"matmul:{nm}", (z((256, 256), d), z((256, 256), d), z((256, 256)), 128, 128, 32)
    yield "bmm", (z((2, 256, 256), f16), z((2, 256, 256), f16), z((2, 256, 256), f16),
                  128, 128, 32)
    yield "layernorm", (z((64, 4096)), z(4096), z(4096), z((64, 4096)), 1e-5, 4096)
    q = z((8, 256, 64), f16)
    yield "attention", (q, q, q, q, 0.125, 64, 64, 64)


def _spec_cases():
    import backend_kernels as bk

    import cutile as ct
    f16 = np.float16
    z = lambda shape, d=np.float32: np.zeros(shape, d)  # noqa: E731
    yield "mm_kloop:f16", bk.mm_kloop, (z((256, 256), f16), z((256, 256), f16),
                                        z((256, 256)), 128, 128, 32, ct.float32)
    yield "mm_tf32_kloop", bk.mm_tf32_kloop, (z((128, 128)), z((128, 128)), z((128, 128)),
                                              64, 64, 16)


def _generate(kernel, args, T: int, tensor_cores: bool) -> str:
    from cutile.numba_backend.compile import generate
    ir = kernel.compile(kernel.specialize(tuple(args)))
    return generate(ir, T, "f32", tensor_cores=tensor_cores).source


def _programs(n: int, seed: int):
    from diff.harness import kernel_from_source
    from diff.progen import config_for, programs
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed
    out = []
    cfg = config_for("ci", simulator=False)

    @hseed(seed)
    @settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(programs(cfg))
    def run(prog):
        out.append((f"progen:{seed}:{len(out)}", prog))
    run()
    for name, prog in out:
        try:
            k = kernel_from_source(prog.source, "kern")
            yield name, k, prog.args()
        except Exception:  # noqa: BLE001 - an invalid program has no source to compare
            continue


def digests(n_programs: int, seed: int) -> dict:
    from cutile.numba_backend import rt
    real = rt.simulator
    res = {}
    cases = list(_bench_cases()) + list(_spec_cases())
    try:
        for sim in (False, True):
            rt.simulator = (lambda s=sim: s)
            for name, k, args in cases:
                for tc in ((True, False) if not sim else (False,)):
                    for T in (128, 256):
                        key = f"{name}|{'sim' if sim else 'gpu'}|tc={tc}|T={T}"
                        res[key] = _digest(k, args, T, tc)
        rt.simulator = lambda: False
        for name, k, args in _programs(n_programs, seed):
            res[f"{name}|gpu|T=128"] = _digest(k, args, 128, False)
    finally:
        rt.simulator = real
    return res


def _digest(k, args, T, tc) -> str:
    try:
        return hashlib.sha256(_generate(k, args, T, tc).encode()).hexdigest()[:16]
    except Exception as e:  # noqa: BLE001 - a refusal is part of the behaviour
        return "ERROR " + hashlib.sha256(f"{type(e).__name__}: {e}".encode()).hexdigest()[:16]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="write the digests here")
    ap.add_argument("--check", help="compare with digests written before")
    ap.add_argument("--programs", type=int, default=150)
    ap.add_argument("--seed", type=int, default=25)
    a = ap.parse_args(argv)
    res = digests(a.programs, a.seed)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=0, sort_keys=True)
    errors = sum(1 for v in res.values() if v.startswith("ERROR"))
    print(f"{len(res)} generated sources ({errors} refused)")
    if a.check:
        with open(a.check) as f:
            old = json.load(f)
        diff = sorted(k for k in old.keys() | res.keys() if old.get(k) != res.get(k))
        for k in diff[:40]:
            print(f"  differs: {k}: {old.get(k)} -> {res.get(k)}")
        print(f"{len(diff)} of {len(old)} differ")
        return 1 if diff else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())

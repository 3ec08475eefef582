"""Host time of one ``cutile.launch`` of the float16 matmul (``benchmarks/gpu.py``'s kernel) at
the given tiles against the kernel's own time: if the host takes longer than the GPU, a burst
of launches leaves the GPU idle between kernels and a throughput figure measures the host.

    source tools/gpu/setup.sh; python3 tools/gpu/launch_cost.py [TMxTNxTK ...]
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [HERE, os.path.join(ROOT, "benchmarks"), ROOT]


def main() -> int:
    from gpu import make_kernels
    from numba import cuda
    from probe_host import best_time

    import cutile
    S = 4096
    rng = np.random.default_rng(0)
    x = cuda.to_device(rng.integers(-2, 3, (S, S)).astype(np.float16))
    y = cuda.to_device(rng.integers(-2, 3, (S, S)).astype(np.float16))
    c = cuda.device_array((S, S), np.float32)

    @cuda.jit
    def nothing(a):
        pass

    nothing[1, 32](c)
    cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(200):
        nothing[1, 32](c)
    print(f"an empty Numba kernel: host {(time.perf_counter() - t0) / 200 * 1e6:.1f} us/launch "
          "(the platform's own cost)", flush=True)
    cuda.synchronize()
    for spec in sys.argv[1:] or ["128x256x64", "128x128x32"]:
        t = tuple(int(v) for v in spec.split("x"))
        mm = make_kernels(cutile)["matmul"]
        grid = (S // t[0], S // t[1])

        def launch(mm=mm, grid=grid, t=t):
            cutile.launch(0, grid, mm, (x, y, c) + t)

        launch()
        cuda.synchronize()
        n = 50
        t0 = time.perf_counter()
        for _ in range(n):          # one block: what the host costs with the GPU idle
            cutile.launch(0, (1, 1), mm, (x, y, c) + t)
        one = (time.perf_counter() - t0) / n
        cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            launch()
        host = (time.perf_counter() - t0) / n
        cuda.synchronize()
        gpu = best_time(launch, reps=5)
        print(f"{spec}: host {host * 1e6:7.1f} us/launch ({one * 1e6:.1f} of a 1-block grid), "
              f"burst {gpu * 1e6:7.1f} us/kernel = "
              f"{2 * S ** 3 / gpu / 1e12:5.0f} TFLOP/s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What ``print``/``printf`` write, on cutile or the real cuTile: the text a user sees.

    python3 tools/oracle/print_probe.py --module cuda.tile > oracle_print.txt   (GPU machine)
    python3 tools/oracle/print_probe.py --module cutile > local_print.txt

Each kernel runs in a child process whose stdout file descriptor is captured (device-side
printf writes to the process's C stdout, not to Python's ``sys.stdout``).  The lines of one
kernel are printed sorted (GPU blocks print in any order), under a ``== name`` header, so the
two files compare with ``diff``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

KERNELS = {
    "printf_tile": '''
@ct.kernel
def k(x, T: ct.Constant[int]):
    bid = ct.bid(0)
    t = ct.load(x, index=(bid,), shape=(T,))
    ct.printf("tile[%d]:%.5f\\n", bid, t)
args = lambda: (np.arange(8, dtype=np.float32), 4)
grid = (2,)
''',
    "printf_ints": '''
@ct.kernel
def k(x):
    t = ct.load(x, (0,), (4,))
    ct.printf("%d|%5d|%-4d|%x|%u\\n", t, t, t, t, t)
args = lambda: (np.array([-1, 0, 7, 300], np.int32),)
grid = (1,)
''',
    "print_fstring": '''
@ct.kernel
def k(x):
    bid = ct.bid(0)
    t = ct.load(x, (bid, 0), (2, 2))
    print(f"block {bid}: {t:6.2f}", f"sum = {ct.sum(t, None)}", sep=" | ")
    ct.print(t > 1, end="!\\n")
args = lambda: (np.array([[0.5, 1.5], [2.0, -3.0]], np.float32),)
grid = (1,)
''',
    "print_plain": '''
@ct.kernel
def k(x, y):
    a = ct.load(x, (0,), (4,))
    b = ct.load(y, (0,), (4,))
    print(a, b)
    print("shape", x.shape, 3, 2.5, True)
    ct.print(a + 1, b * 2, sep=",")
args = lambda: (np.array([1, -2, 3, 4], np.int32), np.array([0.25, 1e-7, 1e10, -0.0], np.float32))
grid = (1,)
''',
    "print_f16_bf16": '''
@ct.kernel
def k(x):
    a = ct.load(x, (0,), (4,))
    print(a, a.astype(ct.bfloat16))
args = lambda: (np.array([1.5, -2.25, 65504, 1e-3], np.float16),)
grid = (1,)
''',
}

CHILD = '''
import importlib.util, os, sys, tempfile
import numpy as np
mod, src = sys.argv[1], sys.argv[2]
path = os.path.join(tempfile.mkdtemp(), "probe_kernel.py")
with open(path, "w") as f:        # kernels are parsed from their source file
    f.write("import numpy as np\\nimport " + mod + " as ct\\n" + src)
spec = importlib.util.spec_from_file_location("probe_kernel", path)
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
if mod == "cuda.tile":
    import torch
    dev = tuple(torch.from_numpy(a).cuda() if isinstance(a, np.ndarray) else a for a in m.args())
    m.ct.launch(torch.cuda.current_stream(), m.grid, m.k, dev)
    torch.cuda.synchronize()
else:
    m.ct.launch(None, m.grid, m.k, m.args())
    if m.ct.__name__ == "cutile" and "numba" in sys.modules:
        from numba import cuda
        if cuda.is_available():
            cuda.synchronize()
sys.stdout.flush()
'''


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--module", default="cutile", choices=["cutile", "cuda.tile"])
    a = p.parse_args()
    for name, src in KERNELS.items():
        r = subprocess.run([sys.executable, "-c", CHILD, a.module, src], capture_output=True,
                           text=True, timeout=300)
        print(f"== {name} (exit {r.returncode})")
        for line in sorted(r.stdout.splitlines()):
            print(line)
        if r.returncode:
            print("   stderr:", r.stderr.strip().splitlines()[-1:] if r.stderr else "")


if __name__ == "__main__":
    main()

"""Draw the access maps shown in docs/debugging.md (needs matplotlib: ``pip install
'cutile[viz]'``): the examples' matmul and softmax on small ragged shapes.

    python3 tools/docs/access_maps.py            # writes docs/img/*.png, prints the text maps
"""

from __future__ import annotations

import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [ROOT, os.path.join(ROOT, "examples")]

from matmul import matmul_kernel  # noqa: E402
from softmax import softmax_kernel  # noqa: E402

import cutile as ct  # noqa: E402
import cutile.debug as dbg  # noqa: E402

IMG = os.path.join(ROOT, "docs", "img")


def main() -> None:
    os.makedirs(IMG, exist_ok=True)
    rng = np.random.default_rng(0)
    m, n, k = 100, 90, 70
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    maps = dbg.access_map(matmul_kernel, (ct.cdiv(m, 32), ct.cdiv(n, 32)),
                          (a, b, c, 32, 32, 16))
    print(maps["C"].render_text(max_side=48))
    print(maps["A"].render_text("read", max_side=48))
    maps["C"].render_png(os.path.join(IMG, "matmul_C_writes.png"))
    maps["A"].render_png(os.path.join(IMG, "matmul_A_reads.png"), "read")
    x = rng.standard_normal((12, 50)).astype(np.float32)
    out = np.zeros_like(x)
    smaps = dbg.access_map(softmax_kernel, (12,), (x, out, 64))
    print(smaps["out"].render_text())
    smaps["out"].render_png(os.path.join(IMG, "softmax_out_writes.png"))


if __name__ == "__main__":
    main()

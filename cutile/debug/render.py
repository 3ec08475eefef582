"""Drawing access maps: text (always) and PNG (with matplotlib: ``pip install cutile[viz]``),
in the style of the seeds' figures of tiles over a matrix: one colour per block, overlaps
between blocks' writes highlighted."""

from __future__ import annotations

import numpy as np

_GLYPHS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _grid2d(a: np.ndarray) -> np.ndarray:
    if a.ndim == 0:
        return a.reshape(1, 1)
    if a.ndim == 1:
        return a.reshape(1, -1)
    return a.reshape(-1, a.shape[-1])        # leading dimensions stacked as rows


def _pick(m, kind: str):
    if kind not in ("write", "read"):
        raise ValueError("kind must be 'write' or 'read'")
    return (m.writer, m.writes) if kind == "write" else (m.reader, m.reads)


def text(m, kind: str = "write", max_side: int = 64) -> str:
    """One character per element.  Writes: the block that wrote it (``0-9a-zA-Z`` by linear
    block number, cycling), ``.`` none, ``*`` several blocks (an overlap).  Reads: how many
    blocks read it (``1``-``9``, ``+`` for ten or more), ``.`` none."""
    who, count = _pick(m, kind)
    if kind == "read":
        return _text_counts(m, count, max_side)
    g = _grid2d(who)
    rows, cols = g.shape
    if rows > max_side or cols > max_side:
        # show a sample: every k-th element in each direction
        sr, sc = max(1, -(-rows // max_side)), max(1, -(-cols // max_side))
        g = g[::sr, ::sc]
        note = f" (sampled: every {sr} row(s), every {sc} column(s))"
    else:
        note = ""
    lines = [f"{m.name}: {kind}s by block, shape {tuple(who.shape)}{note}; "
             f". = none, * = several blocks"]
    for row in g:
        lines.append("".join("." if x == -1 else "*" if x == -2 else _GLYPHS[x % len(_GLYPHS)]
                             for x in row))
    legend = sorted({int(x) for x in np.unique(who) if x >= 0})[:len(_GLYPHS)]
    lines.append("blocks: " + ", ".join(f"{_GLYPHS[b % len(_GLYPHS)]}={m.block(b)}"
                                        for b in legend[:16])
                 + (" ..." if len(legend) > 16 else ""))
    if kind == "write" and m.overlaps.any():
        lines.append(f"{int(m.overlaps.sum())} element(s) written by several blocks")
    return "\n".join(lines)


def _text_counts(m, count: np.ndarray, max_side: int) -> str:
    g = _grid2d(count)
    sr, sc = max(1, -(-g.shape[0] // max_side)), max(1, -(-g.shape[1] // max_side))
    note = f" (sampled: every {sr} row(s), every {sc} column(s))" if sr > 1 or sc > 1 else ""
    lines = [f"{m.name}: number of blocks reading each element, shape {tuple(count.shape)}"
             f"{note}; . = none, + = ten or more"]
    for row in g[::sr, ::sc]:
        lines.append("".join("." if x == 0 else "+" if x >= 10 else str(int(x)) for x in row))
    return "\n".join(lines)


def png(m, path: str, kind: str = "write") -> str:
    """Save a picture of the map to ``path`` (needs matplotlib) and return ``path``."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.colors import ListedColormap
    except ImportError:
        raise ImportError("render_png needs matplotlib: pip install 'cutile[viz]' (or use "
                          "render_text())") from None
    who, count = _pick(m, kind)
    if kind == "read":
        return _png_counts(m, count, path, plt)
    g = _grid2d(who).astype(float)
    n_blocks = int(np.prod(m.grid))
    base = plt.get_cmap("tab20", 20)
    colours = [base(i % 20) for i in range(max(n_blocks, 1))]
    img = np.where(g >= 0, g, np.nan)
    fig, ax = plt.subplots(figsize=(min(12, 2 + g.shape[1] / 8), min(12, 2 + g.shape[0] / 8)))
    ax.imshow(img, cmap=ListedColormap(colours), vmin=-0.5, vmax=max(n_blocks, 1) - 0.5,
              interpolation="nearest")
    several = _grid2d(who) == -2
    if several.any():
        ys, xs = np.nonzero(several)
        ax.scatter(xs, ys, marker="x", c="black", s=12, label="several blocks")
        ax.legend(loc="upper right", fontsize=8)
    ax.set_title(f"{m.name}: {kind}s by block (grid {m.grid[:2] if m.grid[2] == 1 else m.grid})"
                 f"{'; x = several blocks' if several.any() else ''}")
    ax.set_xlabel("column")
    ax.set_ylabel("row")
    # block labels at the centre of each block's elements
    for b in np.unique(g[g >= 0]).astype(int)[:64]:
        ys, xs = np.nonzero(g == b)
        ax.text(xs.mean(), ys.mean(), str(m.block(b)[:2] if m.grid[2] == 1 else m.block(b)),
                ha="center", va="center", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _png_counts(m, count: np.ndarray, path: str, plt) -> str:
    g = _grid2d(count).astype(float)
    fig, ax = plt.subplots(figsize=(min(12, 2 + g.shape[1] / 8), min(12, 2 + g.shape[0] / 8)))
    im = ax.imshow(np.where(g > 0, g, np.nan), cmap="viridis", interpolation="nearest")
    fig.colorbar(im, ax=ax, label="blocks reading the element")
    ax.set_title(f"{m.name}: reads (grid {m.grid[:2] if m.grid[2] == 1 else m.grid})")
    ax.set_xlabel("column")
    ax.set_ylabel("row")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path

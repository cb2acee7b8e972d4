"""Draw the book's explanatory figures (chapter 0 and friends) as small, deterministic SVGs.

Run from the repository root:

    python docs/figures/make_figures.py

Every figure is written next to this script. The output is byte-for-byte reproducible: no
timestamps in the metadata, a fixed hash salt for SVG ids, text kept as text (small files that
use the page's font). The figures have an opaque white background so that they stay readable in
the book's dark mode.

The numbers drawn are hardware facts of the NVIDIA H200 (datasheet / device attributes) and two
values measured on our H200: 4.24 TB/s device-to-device copy and 51 TFLOP/s cuBLAS SGEMM.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402,F401
import numpy as np  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle  # noqa: E402

HERE = Path(__file__).resolve().parent

plt.rcParams.update({
    "svg.fonttype": "none",          # text stays text: small files, the page's font
    "svg.hashsalt": "gpulab",        # deterministic ids
    "font.family": "sans-serif",
    "font.size": 10,
    "figure.facecolor": "white",
    "axes.facecolor": "white",
    "savefig.facecolor": "white",
    "path.simplify": True,
})

# A small, colour-blind-friendly palette (Okabe–Ito).
BLUE, ORANGE, GREEN, RED, PURPLE, SKY, YELLOW, GREY = (
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#999999")
LIGHT = "#EEEEEE"
INK = "#222222"


def save(fig, name: str) -> Path:
    path = HERE / name
    fig.savefig(path, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight",
                pad_inches=0.05)
    plt.close(fig)
    return path


def box(ax, x, y, w, h, fc, ec=INK, lw=1.0, text=None, fs=9, tc=INK, round_=False, **kw):
    if round_:
        p = FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0,rounding_size=0.15", fc=fc, ec=ec, lw=lw)
    else:
        p = Rectangle((x, y), w, h, fc=fc, ec=ec, lw=lw)
    ax.add_patch(p)
    if text:
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=fs, color=tc, **kw)
    return p


def arrow(ax, x0, y0, x1, y1, color=INK, lw=1.0, style="-|>", ms=8, **kw):
    a = FancyArrowPatch((x0, y0), (x1, y1), arrowstyle=style, mutation_scale=ms, color=color, lw=lw,
                        shrinkA=0, shrinkB=0, **kw)
    ax.add_patch(a)
    return a


def grid_cells(ax, x0, y0, cols, rows, fc="#F4F4F4", ec="#DDDDDD", lw=0.3):
    """A cols x rows grid of unit cells as one background rectangle and two line sets (small SVG)."""
    ax.add_patch(Rectangle((x0, y0), cols, rows, fc=fc, ec="none"))
    ax.vlines(np.arange(x0, x0 + cols + 1), y0, y0 + rows, colors=ec, lw=lw)
    ax.hlines(np.arange(y0, y0 + rows + 1), x0, x0 + cols, colors=ec, lw=lw)


def blank(ax, xlim, ylim):
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_aspect("equal")
    ax.axis("off")


# ---------------------------------------------------------------------------------------------
def thread_hierarchy():
    """Grid -> blocks -> warps -> threads, each level zoomed out of the previous one."""
    fig, ax = plt.subplots(figsize=(9.1, 4.2))
    blank(ax, (0, 30), (1.0, 15.0))
    title_y = 14.3

    # The grid: 4 x 3 blocks.
    gx, bw, bh, gap = 0.3, 1.7, 1.5, 0.22
    ax.text(gx, title_y, "grid: 4 × 3 blocks", fontsize=10, weight="bold")
    for j in range(3):
        for i in range(4):
            x = gx + i * (bw + gap)
            y = 8.6 + (2 - j) * (bh + gap)
            box(ax, x, y, bw, bh, ORANGE if (i, j) == (1, 1) else "#FBE3B5", text=f"({i},{j})", fs=8.5)
    ax.text(gx, 7.9, "blockIdx = (x, y)\n\nblocks are independent:\nthey run in any order,\non any of the 132 SMs",
            fontsize=8.5, va="top", color="#444444")

    # The block: 4 warps of 32 threads (a 128-thread block).
    bx0 = 9.6
    ax.text(bx0, title_y, "block: 128 threads = 4 warps", fontsize=10, weight="bold")
    for w in range(4):
        y = 4.9 + (3 - w) * 2.15
        box(ax, bx0, y, 8.0, 1.7, SKY if w == 2 else "#D5ECF9", text=f"warp {w}: threads {32*w}–{32*w+31}",
            fs=8.5)
    ax.add_patch(Rectangle((bx0 - 0.15, 4.75), 8.3, 8.75, fc="none", ec=ORANGE, lw=1.5))
    ax.text(bx0, 4.3, "the threads of a block share its shared\nmemory and meet at cuda.syncthreads()",
            fontsize=8.5, va="top", color="#444444")
    hx, hy = gx + (bw + gap), 8.6 + (bh + gap)
    for (xa, ya), (xb, yb) in [((hx + bw, hy + bh), (bx0 - 0.15, 13.5)), ((hx + bw, hy), (bx0 - 0.15, 4.75))]:
        ax.plot([xa, xb], [ya, yb], color=GREY, lw=0.8, ls="--")

    # The warp: 32 lanes.
    wx0 = 20.6
    ax.text(wx0, title_y, "warp: 32 lanes", fontsize=10, weight="bold")
    lane, step = 0.8, 0.95
    top = 12.6
    for k in range(32):
        r, c = divmod(k, 8)
        x, y = wx0 + 0.15 + c * step, top - r * step
        box(ax, x, y, lane, lane, BLUE, ec="white", lw=0.5)
        ax.text(x + lane / 2, y + lane / 2, str(k), ha="center", va="center", fontsize=8.5, color="white")
    x1, y0 = wx0 + 0.15 + 8 * step, top - 3 * step - 0.1
    ax.add_patch(Rectangle((wx0, y0), x1 - wx0, top + lane + 0.1 - y0, fc="none", ec=SKY, lw=1.5))
    wy = 4.9 + 1 * 2.15
    for (xa, ya), (xb, yb) in [((bx0 + 8.0, wy + 1.7), (wx0, top + lane + 0.1)), ((bx0 + 8.0, wy), (wx0, y0))]:
        ax.plot([xa, xb], [ya, yb], color=GREY, lw=0.8, ls="--")
    ax.text(wx0, 9.3, "lane = threadIdx.x % 32: the 32 lanes\nexecute one instruction together (SIMT)\n\n"
            "a thread's global index:\ni = blockIdx.x · blockDim.x + threadIdx.x\n  = cuda.grid(1)",
            fontsize=8.5, va="top", color="#444444")
    return save(fig, "thread-hierarchy.svg")


# ---------------------------------------------------------------------------------------------
def memory_hierarchy():
    """The memory spaces: where they live, who sees them, how big and how far away."""
    fig, ax = plt.subplots(figsize=(9.1, 4.9))
    blank(ax, (0, 35), (0, 18))
    W = 19.2  # width of the SM / L2 / HBM column

    box(ax, 0.4, 7.2, W, 10.4, "#F6F6F6", ec=GREY, lw=1.2, round_=True)
    ax.text(0.8, 17.1, "one SM (the H200 has 132)", fontsize=10, weight="bold", va="top")
    for t in range(4):
        x = 0.9 + t * 2.35
        box(ax, x, 13.2, 2.05, 2.5, "white", ec=GREY)
        ax.text(x + 1.02, 15.1, f"t{t}" if t < 3 else "…", ha="center", fontsize=8.5)
        box(ax, x + 0.2, 13.4, 1.65, 1.35, GREEN, ec="white", text="regs", fs=8.5, tc="white")
    ax.text(10.4, 15.7, "registers: 64 K per SM,\n≤ 255/thread; ~1 cycle", fontsize=8.5, va="top")
    box(ax, 0.9, 10.2, 9.2, 2.4, BLUE, ec="white", text="shared memory (per block)", fs=9, tc="white")
    ax.text(10.4, 12.6, "shared + L1: 228 KiB/SM;\n≤ 227 KiB per block\n(48 KiB without opt-in);\n"
            "32 banks; ~20–30 cycles", fontsize=8.5, va="top")
    box(ax, 0.9, 7.7, 4.4, 2.0, SKY, ec="white", text="L1 cache", fs=8.5)
    box(ax, 5.7, 7.7, 4.4, 2.0, PURPLE, ec="white", text="constant\ncache", fs=8.5, tc="white")
    ax.text(10.4, 9.2, "constant cache: 1 address\nper cycle, broadcast", fontsize=8.5, va="top")

    box(ax, 0.4, 4.6, W, 1.8, "#BBBBBB", ec="white",
        text="L2 cache: 50 MB, shared by all SMs; ~200+ cycles", fs=8.5)
    box(ax, 0.4, 0.3, W, 3.7, "#FBE3B5", ec=GREY, lw=1.2)
    ax.text(0.4 + W / 2, 3.45, "HBM3e: 141 GB; ~500+ cycles; 4.24 TB/s measured",
            ha="center", fontsize=8.5, va="center")
    for i, (label, fc, tc) in enumerate([("global", ORANGE, INK), ("local\n(per-thread spills)", "#F3C97A", INK),
                                          ("constant\n(64 KiB)", PURPLE, "white")]):
        box(ax, 0.8 + i * 6.1, 0.6, 5.6, 2.1, fc, ec="white", text=label, fs=8.5, tc=tc)
    arrow(ax, 9.7, 7.6, 9.7, 6.45, style="<|-|>", color=GREY)
    arrow(ax, 9.7, 4.55, 9.7, 4.05, style="<|-|>", color=GREY)

    rows = [("space", "scope", "lifetime", None),
            ("registers", "one thread", "the thread", GREEN),
            ("local", "one thread", "the thread", "#F3C97A"),
            ("shared", "one block", "the block", BLUE),
            ("constant", "all threads, read-only", "set by the host", PURPLE),
            ("global", "all threads + host", "the allocation", ORANGE)]
    x0, y0 = 20.0, 16.6
    for r, (a, b, c, col) in enumerate(rows):
        y = y0 - r * 1.35
        weight = "bold" if r == 0 else "normal"
        if col:
            box(ax, x0, y - 0.35, 0.5, 0.7, col, ec="white")
        ax.text(x0 + 0.8, y, a, fontsize=8.5, va="center", weight=weight)
        ax.text(x0 + 4.0, y, b, fontsize=8.5, va="center", weight=weight)
        ax.text(x0 + 10.6, y, c, fontsize=8.5, va="center", weight=weight)
    arrow(ax, 20.3, 7.0, 20.3, 1.4, color=GREY, lw=1.0)
    ax.text(20.9, 7.0, "faster, smaller, more private", fontsize=8.5, va="top", color="#444444")
    ax.text(20.9, 1.4, "slower, larger, shared more widely", fontsize=8.5, va="bottom", color="#444444")
    ax.text(20.9, 4.2, "latencies: orders of magnitude,\nnot datasheet values", fontsize=8.5,
            va="center", color="#666666", style="italic")
    return save(fig, "memory-hierarchy.svg")


# ---------------------------------------------------------------------------------------------
def coalescing():
    """A warp reading a row of a row-major float32 matrix (one line) vs down a column (32 lines)."""
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 4.9))
    n = 32
    colors = plt.get_cmap("viridis")(np.linspace(0.05, 0.95, 32))
    for ax, strided in zip(axes, (False, True)):
        blank(ax, (-1, n + 1), (-5.0, n + 5.5))
        grid_cells(ax, 0, 0, n, n)
        for lane in range(32):
            r, c = (lane, 0) if strided else (0, lane)
            ax.add_patch(Rectangle((c, n - 1 - r), 1, 1, fc=colors[lane], ec="none"))
        # the cache lines touched
        if strided:
            for r in range(n):
                ax.add_patch(Rectangle((0, n - 1 - r), n, 1, fc="none", ec=RED, lw=0.6))
        else:
            ax.add_patch(Rectangle((0, n - 1), n, 1, fc="none", ec=GREEN, lw=1.6))
        # the warp above the matrix
        for lane in range(32):
            ax.add_patch(Rectangle((lane, n + 1.6), 1, 1, fc=colors[lane], ec="white", lw=0.3))
        ax.text(n / 2, n + 3.4, "lanes 0 … 31 of one warp", ha="center", fontsize=8.5)
        if strided:
            title = "strided: lane i reads A[i, k]"
            note = "32 lanes → 32 different lines: 32 sectors of 32 bytes\nfetched for 128 useful bytes, 1/8 of the bandwidth at best"
            tcol = RED
        else:
            title = "coalesced: lane i reads A[k, i]"
            note = "32 lanes → 32 consecutive floats = one 128-byte line\n(4 sectors of 32 bytes): every byte fetched is used"
            tcol = GREEN
        ax.text(n / 2, n + 5.2, title, ha="center", fontsize=10.5, weight="bold", color=tcol)
        ax.text(n / 2, -1.0, note, ha="center", va="top", fontsize=8.5)
    fig.text(0.5, 0.015, "a row-major float32 matrix: each row of 32 floats is one 128-byte line of memory",
             ha="center", fontsize=8.5, color="#444444")
    return save(fig, "coalescing.svg")


# ---------------------------------------------------------------------------------------------
def bank_conflicts():
    """32 banks: a warp reading a row, a column (32-way conflict), and a column of a padded tile."""
    fig, axes = plt.subplots(1, 3, figsize=(7.2, 4.6))
    colors = plt.get_cmap("viridis")(np.linspace(0.05, 0.95, 32))
    nb = 32
    cases = [
        ("row: tile[r][lane]", 32, lambda lane: lane, "32 lanes → 32 banks\n1 request", GREEN),
        ("column: tile[lane][c]", 32, lambda lane: lane * 32, "32 lanes → bank 0, 32 times\n32-way conflict: 32 requests", RED),
        ("padded: tile[32][33],\ntile[lane][c]", 33, lambda lane: lane * 33,
         "the padding word shifts each row\none bank: 32 banks, 1 request", GREEN),
    ]
    for ax, (title, width, word_of, note, tcol) in zip(axes, cases):
        rows = (32 * width + nb - 1) // nb
        blank(ax, (-0.5, nb + 0.5), (-10.5, 45.5))
        grid_cells(ax, 0, 0, nb, rows)
        for w in range(rows * nb):
            r, b = divmod(w, nb)
            if width == 33 and w % 33 == 32:
                ax.add_patch(Rectangle((b, rows - 1 - r), 1, 1, fc="#BBBBBB", ec="none"))
        hits = np.zeros(nb, int)
        for lane in range(32):
            w = word_of(lane)
            r, b = divmod(w, nb)
            hits[b] += 1
            ax.add_patch(Rectangle((b, rows - 1 - r), 1, 1, fc=colors[lane], ec="none"))
        for b in range(0, nb, 8):
            ax.text(b + 0.5, rows + 0.4, str(b), ha="center", fontsize=8.5, color="#666666")
        ax.text(nb / 2, rows + 2.6, "bank →", ha="center", fontsize=8.5, color="#666666")
        ax.text(nb / 2, 45.5, title, ha="center", va="top", fontsize=9, weight="bold", color=tcol)
        # requests per bank, as a bar strip under the grid
        hmax = 32
        for b in range(nb):
            h = 3.5 * hits[b] / hmax
            ax.add_patch(Rectangle((b + 0.1, -4.5), 0.8, max(h, 0.0), fc=tcol, ec="none"))
        ax.plot([0, nb], [-4.5, -4.5], color=GREY, lw=0.6)
        top_bank = int(np.argmax(hits))
        ax.text(top_bank + 0.5, -4.4 + 3.5 * hits[top_bank] / hmax, str(hits[top_bank]) if hits.max() > 1 else "1 each",
                ha="left" if hits.max() == 1 else "center", va="bottom", fontsize=8.5, color=tcol)
        ax.text(nb / 2, -5.2, note, ha="center", va="top", fontsize=8.5, linespacing=1.2)
    fig.text(0.5, 0.0, "shared memory as 32 banks of 4-byte words (word w lives in bank w mod 32); grey: padding\n"
             "words. Bars under each grid: the reads each bank serves", ha="center", fontsize=8.5, color="#444444")
    return save(fig, "bank-conflicts.svg")


# ---------------------------------------------------------------------------------------------
def constant_broadcast():
    """Constant memory: one address for the whole warp (broadcast) vs 32 addresses (serialized)."""
    fig, axes = plt.subplots(1, 2, figsize=(8.6, 3.9))
    colors = plt.get_cmap("viridis")(np.linspace(0.05, 0.95, 32))
    for ax, scattered in zip(axes, (False, True)):
        blank(ax, (-1, 33), (-8.0, 12.8))
        for lane in range(32):
            ax.add_patch(Rectangle((lane, 8), 1, 1, fc=colors[lane], ec="white", lw=0.3))
        ax.text(16, 9.3, "lanes 0 … 31 of one warp", ha="center", fontsize=8.5)
        for a in range(32):
            ax.add_patch(Rectangle((a, 1), 1, 1, fc="#E8D3E0", ec="white", lw=0.3))
        ax.text(16, 0.4, "constant memory (4-byte words)", ha="center", va="top", fontsize=8.5)
        for lane in range(32):
            target = lane if scattered else 12
            ax.plot([lane + 0.5, target + 0.5], [8, 2], color=colors[lane], lw=0.7)
        if not scattered:
            ax.add_patch(Rectangle((12, 1), 1, 1, fc=PURPLE, ec=INK, lw=0.8))
        # time: requests served one distinct address per cycle
        n = 32 if scattered else 1
        for i in range(n):
            ax.add_patch(Rectangle((i, -4.0), 0.9, 1.0, fc=RED if scattered else GREEN, ec="none"))
        ax.text(0, -2.3, "time: one distinct address per step", fontsize=8.5, color="#666666")
        arrow(ax, 0, -4.5, 32.5, -4.5, color=GREY, lw=0.6)
        if scattered:
            title, note, col = "scattered: lane i reads c[i]", "32 distinct addresses → 32 serialized reads", RED
        else:
            title, note, col = "uniform: every lane reads c[k]", "1 address → 1 read, broadcast to all 32 lanes", GREEN
        ax.text(16, 12.6, title, ha="center", va="top", fontsize=10.5, weight="bold", color=col)
        ax.text(16, -5.2, note, ha="center", va="top", fontsize=8.5)
    return save(fig, "constant-broadcast.svg")


# ---------------------------------------------------------------------------------------------
PEAK_FP32 = 67.0      # TFLOP/s, H200 datasheet (FP32, non-tensor)
BW_COPY = 4.24        # TB/s, device-to-device copy, measured on our H200
SGEMM = 51.0          # TFLOP/s, cuBLAS SGEMM N=4096/8192, measured on our H200


def roofline():
    """The H200's two ceilings for FP32 and where the book's chapters sit."""
    fig, ax = plt.subplots(figsize=(7.9, 5.0))
    I = np.logspace(-2, 4, 400)
    roof = np.minimum(PEAK_FP32, BW_COPY * I)
    ridge = PEAK_FP32 / BW_COPY
    ax.loglog(I, roof, color=INK, lw=2.2)
    ax.set_xlim(1e-2, 1e4)
    ax.set_ylim(1e-2, 200)
    ax.set_xlabel("arithmetic intensity, flop per byte of DRAM traffic (log scale)")
    ax.set_ylabel("attainable performance, TFLOP/s (log scale)")
    ax.grid(True, which="major", color="#E6E6E6", lw=0.6)
    # plain tick labels (mathtext would pin the SVG text to one font with no fallback)
    plain = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}" if v < 1e4 else f"{v:,.0f}".replace(",", " "))
    ax.xaxis.set_major_formatter(plain)
    ax.yaxis.set_major_formatter(plain)
    for s in ("top", "right"):
        ax.spines[s].set_visible(False)

    # label the memory roof along its slope (the angle on screen, after the axes are laid out)
    fig.canvas.draw()
    (xa, ya), (xb, yb) = ax.transData.transform([(0.02, BW_COPY * 0.02), (0.2, BW_COPY * 0.2)])
    angle = float(np.degrees(np.arctan2(yb - ya, xb - xa)))
    ax.text(0.02, BW_COPY * 0.02 * 1.4, "memory roof: 4.24 TB/s × intensity (measured copy)",
            rotation=angle, rotation_mode="anchor", fontsize=8.5, ha="left", va="bottom")
    ax.text(1.2e3, PEAK_FP32 * 1.15, "compute roof: 67 TFLOP/s FP32 (datasheet)", fontsize=8.5, ha="right",
            va="bottom")
    ax.plot([ridge], [PEAK_FP32], "o", color=INK, ms=5)
    ax.annotate(f"ridge ≈ {ridge:.0f} flop/B", (ridge, PEAK_FP32), xytext=(22, 22), fontsize=8.5,
                ha="left", arrowprops=dict(arrowstyle="-", color=GREY, lw=0.6))

    # Qualitative regions for the chapters.
    def band(x0, x1, color, label, y):
        ax.axvspan(x0, x1, color=color, alpha=0.16, lw=0)
        ax.text(np.sqrt(x0 * x1), y, label, ha="center", va="center", fontsize=8.5, color=INK)

    band(0.05, 1.0, ORANGE, "radix sort (ch. 4)\nbytes in, bytes out:\nmemory-bound", 0.06)
    band(1e2, 1e4, GREEN, "subset search (ch. 2)\ndata on chip,\nwork per subset:\ncompute-bound", 0.06)
    # matmul: from the naive kernel's effective intensity to the ideal one at N = 8192
    ax.annotate("", xy=(1365, 0.35), xytext=(0.25, 0.35),
                arrowprops=dict(arrowstyle="-|>", color=BLUE, lw=1.6, mutation_scale=12))
    ax.text(0.3, 0.45, "matmul (ch. 1): each step of the ladder reuses data on chip\n"
            "naive (no reuse, ~0.25 flop/B) → ideal at N = 8192 (~1365 flop/B)",
            fontsize=8.5, color=BLUE, va="bottom")
    ax.plot([1365], [SGEMM], "s", color=BLUE, ms=6)
    ax.annotate("cuBLAS SGEMM 51 TFLOP/s (measured on\nour H200), at the ideal intensity", (1365, SGEMM), xytext=(1365, 7),
                fontsize=8.5, color=BLUE, ha="center", arrowprops=dict(arrowstyle="-", color=BLUE, lw=0.6))
    return save(fig, "roofline.svg")


def main() -> None:
    for make in (thread_hierarchy, memory_hierarchy, coalescing, bank_conflicts, constant_broadcast, roofline):
        path = make()
        print(f"{path.name:24s} {path.stat().st_size / 1024:6.1f} KiB")


if __name__ == "__main__":
    main()

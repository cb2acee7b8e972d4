"""Draw chapter 5's figures: the 15-vertex walkthrough of the GPU pipeline, and list ranking.

Run from the repository root:

    python docs/figures/make_euler_figures.py

The graph is ``gpulab.euler.deep_graph(45, degree=3, seed=124)``: 15 vertices, 45 edges, five
cycles after pairing. Every picture is drawn from what ``gpulab.euler.reference.ais_reference``
computes for it (the cycles, the circuit graph, the spanning tree, the rotations, the final
circuit), so the figures show exactly what the GPU variants compute. SVG output is
deterministic (no dates, fixed ids), text stays text.
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.patches import Circle, FancyArrowPatch  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

plt.rcParams.update({
    "svg.fonttype": "none", "svg.hashsalt": "gpulab-euler", "font.family": "sans-serif", "font.size": 10,
    "figure.facecolor": "white", "axes.facecolor": "white", "savefig.facecolor": "white",
})

# Okabe–Ito, colour-blind friendly: one colour per cycle
COLORS = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442"]
INK, GREY = "#222222", "#AAAAAA"
SEED, EDGES, DEGREE = 124, 45, 3


def save(fig, name):
    fig.savefig(HERE / name, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight",
                pad_inches=0.05)
    plt.close(fig)
    print("wrote", HERE / name)


def example():
    import os

    os.environ.setdefault("GPULAB_DEVICE", "sim")
    from gpulab.euler import generators as gen
    from gpulab.euler import reference as ref

    src, dst = gen.deep_graph(EDGES, DEGREE, SEED)
    circuit, steps = ref.ais_reference(src, dst)
    return src.astype(int), dst.astype(int), circuit, steps


def layout(V):
    ang = np.pi / 2 - 2 * np.pi * np.arange(V) / V
    return np.stack([np.cos(ang), np.sin(ang)], axis=1) * 3.0


def draw_graph(ax, src, dst, colors, widths=None, labels=None):
    V = int(max(src.max(), dst.max())) + 1
    pos = layout(V)
    seen: dict = {}
    for e in range(src.size):
        u, v = src[e], dst[e]
        key = (min(u, v), max(u, v))
        k = seen.get(key, 0)
        seen[key] = k + 1
        rad = 0.12 + 0.14 * k
        if u > v:
            rad = -rad  # opposite directions bend to opposite sides
        arrow = FancyArrowPatch(pos[u], pos[v], arrowstyle="-|>", mutation_scale=9, lw=widths[e] if widths is not None else 1.6,
                                color=colors[e], connectionstyle=f"arc3,rad={rad}", shrinkA=9, shrinkB=9, zorder=2)
        ax.add_patch(arrow)
        if labels is not None:
            mid = (pos[u] + pos[v]) / 2
            d = pos[v] - pos[u]
            normal = np.array([d[1], -d[0]]) * rad
            ax.text(*(mid + normal * 0.5), labels[e], fontsize=8.5, color=colors[e], ha="center", va="center", zorder=3,
                    bbox=dict(boxstyle="square,pad=0.05", fc="white", ec="none", alpha=0.8))
    for v in range(V):
        ax.add_patch(Circle(pos[v], 0.27, fc="white", ec=INK, lw=1.0, zorder=4))
        ax.text(*pos[v], str(v), ha="center", va="center", fontsize=9, zorder=5)
    ax.set_xlim(-3.6, 3.6)
    ax.set_ylim(-3.6, 3.6)
    ax.set_aspect("equal")
    ax.axis("off")


def fig_cycles(src, dst, steps):
    label = steps["label"]
    cyc = list(np.unique(label))
    colors = [COLORS[cyc.index(label[e])] for e in range(src.size)]
    fig, ax = plt.subplots(figsize=(6.4, 6.4))
    draw_graph(ax, src, dst, colors, labels=[str(e) for e in range(src.size)])
    handles = [plt.Line2D([], [], color=COLORS[i], lw=2.5,
                          label=f"cycle {c} ({int(np.sum(label == c))} edges)") for i, c in enumerate(cyc)]
    ax.legend(handles=handles, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False, fontsize=9,
              title="after pairing")
    ax.set_title(f"{src.size} edges, 15 vertices: the k-th in-edge of every vertex\nis followed by its k-th "
                 "out-edge, which cuts the edges into cycles", fontsize=10)
    save(fig, "euler-cycles.svg")


def fig_circuit_graph(src, dst, steps):
    label, out_order = steps["label"], steps["out_order"]
    cyc = list(np.unique(label))
    C = len(cyc)
    ang = np.pi / 2 - 2 * np.pi * np.arange(C) / C
    pos = {c: np.array([np.cos(a), np.sin(a)]) * 2.0 for c, a in zip(cyc, ang)}
    tree = set(steps["tree"].tolist())
    pairs: dict = {}
    for p, a, b in zip(steps["links"].tolist(), steps["link_u"].tolist(), steps["link_v"].tolist()):
        key = (min(a, b), max(a, b))
        pairs.setdefault(key, []).append(p)
    fig, ax = plt.subplots(figsize=(6.4, 5.0))
    for (a, b), ps in pairs.items():
        chosen = [p for p in ps if p in tree]
        lw, col, ls = (3.0, INK, "-") if chosen else (1.0, GREY, "--")
        ax.plot(*zip(pos[a], pos[b]), color=col, lw=lw, ls=ls, zorder=1)
        mid = (pos[a] + pos[b]) / 2
        vert = int(src[out_order[chosen[0]]]) if chosen else None
        txt = f"{len(ps)} link{'s' if len(ps) > 1 else ''}" + (f"\ntree: slot {chosen[0]}\nat vertex {vert}" if chosen else "")
        ax.text(*mid, txt, fontsize=8.5, ha="center", va="center", color=INK if chosen else "#666666",
                bbox=dict(fc="white", ec="none", pad=0.5), zorder=2)
    for i, c in enumerate(cyc):
        ax.add_patch(Circle(pos[c], 0.42, fc=COLORS[i], ec=INK, zorder=3))
        ax.text(*pos[c], f"{c}", ha="center", va="center", color="white", fontsize=10, fontweight="bold", zorder=4)
    ax.set_xlim(-2.9, 2.9)
    ax.set_ylim(-2.7, 2.7)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title("The circuit graph: one node per cycle, one link per pair of neighbouring\nout-slots of a vertex "
                 "in different cycles; bold: the minimum spanning tree (weight = slot)", fontsize=10)
    save(fig, "euler-circuit-graph.svg")


def fig_rotation(src, dst, steps):
    """The first run of tree links: slots k0..k1 of one vertex, before and after the rotation."""
    tree, out_order, in_order, label = steps["tree"], steps["out_order"], steps["in_order"], steps["label"]
    cyc = list(np.unique(label))
    k0 = int(tree[0])
    k1 = k0
    while k1 + 1 in set(tree.tolist()):
        k1 += 1
    k1 += 1
    slots = list(range(k0, k1 + 1))
    v = int(src[out_order[k0]])
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.2))
    for ax, after in zip(axes, (False, True)):
        for i, k in enumerate(slots):
            p, e = int(in_order[k]), int(out_order[k])
            y = (len(slots) - 1) / 2 - i
            ax.text(-1.9, y, f"in-edge {p}", ha="right", va="center", color=COLORS[cyc.index(label[p])], fontsize=9)
            ax.text(1.9, y, f"out-edge {e}", ha="left", va="center", color=COLORS[cyc.index(label[e])], fontsize=9)
            j = i if not after else (i + 1 if k < k1 else 0)
            y2 = (len(slots) - 1) / 2 - j
            ax.add_patch(FancyArrowPatch((-1.8, y), (1.8, y2), arrowstyle="-|>", mutation_scale=10, lw=1.6,
                                         color=COLORS[cyc.index(label[p])] if not after else INK,
                                         connectionstyle="arc3,rad=0.0"))
        ax.add_patch(Circle((0, 0), 0.3, fc="white", ec=INK, zorder=3))
        ax.text(0, 0, str(v), ha="center", va="center", zorder=4)
        ax.text(0, -1.45, f"vertex {v}: slots {k0}..{k1}", ha="center", fontsize=8.5, color="#555555")
        ax.set_xlim(-3.6, 3.6)
        ax.set_ylim(-1.7, 1.5)
        ax.set_aspect("equal")
        ax.axis("off")
        ax.set_title("pairing: each cycle passes through on its own" if not after else
                     f"after the rotation of slots {k0}..{k1}: one cycle", fontsize=10)
    save(fig, "euler-rotation.svg")


def fig_spliced(src, dst, circuit):
    cmap = plt.get_cmap("viridis")
    rank = np.empty(src.size, int)
    rank[circuit] = np.arange(src.size)
    colors = [cmap(r / (src.size - 1)) for r in rank]
    fig, ax = plt.subplots(figsize=(6.8, 6.4))
    draw_graph(ax, src, dst, colors, labels=[str(r) for r in rank])
    sm = plt.cm.ScalarMappable(cmap=cmap, norm=plt.Normalize(0, src.size - 1))
    fig.colorbar(sm, ax=ax, shrink=0.7, label="position in the Euler circuit")
    ax.set_title(f"After splicing: one cycle, ranked from edge {circuit[0]} (labels: positions)", fontsize=10)
    save(fig, "euler-spliced.svg")


def fig_list_ranking():
    """Pointer jumping on a list of 8 (three rounds) and a ruling set on a list of 16."""
    fig, axes = plt.subplots(2, 1, figsize=(7.4, 5.2), gridspec_kw={"height_ratios": [4.5, 1.9]})
    ax = axes[0]
    n = 8
    for r in range(4):
        y = 3 - r
        step = 1 << r
        for i in range(n):
            d = min(n - i, step)  # distance to the end reached after r rounds
            ax.add_patch(Circle((i, y), 0.28, fc="white", ec=INK, zorder=3))
            ax.text(i, y, str(d), ha="center", va="center", fontsize=9, zorder=4)
            j = i + step
            if j < n and r < 3:
                ax.add_patch(FancyArrowPatch((i, y + 0.05), (j, y + 0.05), arrowstyle="-|>", mutation_scale=8,
                                             lw=0.9, color=COLORS[r], connectionstyle=f"arc3,rad={-0.25 - 0.05 * r}",
                                             shrinkA=8, shrinkB=8))
        ax.text(-0.8, y, f"round {r}" if r else "start", ha="right", va="center", fontsize=9)
    ax.set_xlim(-2.0, n)
    ax.set_ylim(-0.6, 3.9)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title("Wyllie: every element adds its successor's distance and jumps\ntwice as far (all n elements, "
                 "every round)", fontsize=10)
    ax = axes[1]
    n = 16
    splitters = {0, 5, 9, 14}
    for i in range(n):
        fc = COLORS[1] if i in splitters else "white"
        ax.add_patch(Circle((i, 0), 0.3, fc=fc, ec=INK, zorder=3))
        if i + 1 < n:
            ax.annotate("", (i + 0.7, 0), (i + 0.3, 0), arrowprops=dict(arrowstyle="-|>", lw=0.8, color=INK))
    s = sorted(splitters) + [n]
    for a, b in zip(s[:-1], s[1:]):
        ax.plot([a - 0.3, b - 0.7], [-0.55, -0.55], color=COLORS[0], lw=2)
        ax.text((a + b - 1) / 2, -0.95, f"walks {b - a}", ha="center", fontsize=8.5, color=COLORS[0])
    ax.set_xlim(-2.0, n)
    ax.set_ylim(-1.3, 0.6)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title("Ruling set: random splitters (orange); one thread per splitter walks its\nsublist in registers, "
                 "then only the splitters are ranked", fontsize=10)
    save(fig, "euler-list-ranking.svg")


def main():
    src, dst, circuit, steps = example()
    fig_cycles(src, dst, steps)
    fig_circuit_graph(src, dst, steps)
    fig_rotation(src, dst, steps)
    fig_spliced(src, dst, circuit)
    fig_list_ranking()


if __name__ == "__main__":
    main()

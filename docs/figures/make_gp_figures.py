"""Draw chapter 3's figures as small, deterministic SVGs (run from the repository root):

    python docs/figures/make_gp_figures.py

* ``gp-tree-rpn.svg`` — the paper's example tree, its RPN, and the interpreter's stack after
  every opcode (the general stack, and the register variant's two floats and bit-stack);
* ``gp-stack-layouts.svg`` — per-thread stacks against depth-interleaved stacks: the addresses
  one warp's PUSH touches;
* ``gp-bitslice.svg`` — 32 days of a 64-day word: two comparison masks, a boolean terminal,
  the tree's word, and the days the trading loop visits.

The stack contents are computed by the library's own parser (`gpulab.gp.programs`), not typed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyBboxPatch, Rectangle  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "gpulab", "font.family": "sans-serif",
                     "font.size": 10, "figure.facecolor": "white", "axes.facecolor": "white",
                     "savefig.facecolor": "white", "path.simplify": True})
BLUE, ORANGE, GREEN, RED, PURPLE, SKY, GREY = "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#999999"
INK, LIGHT = "#222222", "#EEEEEE"


# Sized for the page: at most 7 in (504 pt = 672 px, under the 688 px content column at a 1280 px
# window, so shown at its own size) and no text under 8.5 pt (11.3 px on the page).
WIDTH = 7.0


def save(fig, name):
    path = HERE / name
    fig.savefig(path, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight", pad_inches=0.04)
    plt.close(fig)
    print("wrote", path)


def box(ax, x, y, w, h, text, fc, ec=INK, fs=9.5, color=INK, bold=False):
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.08", fc=fc, ec=ec, lw=1))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=fs, color=color,
            fontweight="bold" if bold else "normal")


def tree_rpn():
    from gpulab.gp import opcodes as oc
    from gpulab.gp.programs import PAPER_EXAMPLE, parse

    t = parse(PAPER_EXAMPLE)
    fig, ax = plt.subplots(figsize=(WIDTH, 6.0))
    ax.set_xlim(0, 10)
    ax.set_ylim(-0.5, 6.0)
    ax.axis("off")
    # the tree (positions by hand, labels from the parsed program)
    nodes = {"AND": (5.0, 5.7), ">": (2.8, 4.9), "OR": (7.2, 4.9), "MA10": (2.0, 4.1), "MA50": (3.6, 4.1),
             "<": (6.4, 4.1), "NVIG": (8.0, 4.1), "EMA9": (5.6, 3.3), "MA25": (7.2, 3.3)}
    edges = [("AND", ">"), ("AND", "OR"), (">", "MA10"), (">", "MA50"), ("OR", "<"), ("OR", "NVIG"),
             ("<", "EMA9"), ("<", "MA25")]
    for a, b in edges:
        (x0, y0), (x1, y1) = nodes[a], nodes[b]
        ax.plot([x0, x1], [y0, y1], color=GREY, lw=1, zorder=0)
    for name, (x, y) in nodes.items():
        p = oc.lookup(name)
        fc = SKY if p.returns == oc.FLOAT else ("#cfe8d8" if p.is_terminal else "#ffe3b3")
        box(ax, x - 0.42, y - 0.2, 0.84, 0.4, name, fc)
    ax.text(0.05, 5.75, "S-expression:", fontsize=9.5, color=GREY)
    ax.text(0.05, 5.3, PAPER_EXAMPLE, fontsize=9, family="monospace")
    ax.text(9.95, 5.75, "float terminal", color=BLUE, fontsize=9.5, ha="right")
    ax.text(9.95, 5.5, "boolean terminal", color=GREEN, fontsize=9.5, ha="right")
    ax.text(9.95, 5.25, "function", color=ORANGE, fontsize=9.5, ha="right")
    # the RPN and the stacks after each opcode
    y_tok, x0, dx = 2.35, 0.55, 1.05
    ax.text(0.05, y_tok + 0.3, "RPN (children first):", fontsize=9.5, color=GREY)
    stack, f0f1, bits = [], [None, None], []
    for k, op in enumerate(t.ops):
        p = oc.TABLE[int(op)]
        x = x0 + k * dx
        box(ax, x - 0.47, y_tok - 0.17, 0.94, 0.34, p.name, LIGHT, fs=9, bold=True)
        if p.is_terminal:
            stack.append(p.name)
            if p.returns == oc.FLOAT:
                f0f1 = [f0f1[1], p.name]
            else:
                bits.append(p.name)
        else:
            args = stack[-p.arity:]
            del stack[-p.arity:]
            stack.append(f"{p.name}(…)")
            if p.name in ("<", ">"):
                bits.append(f"{f0f1[0]}{p.name}{f0f1[1]}")
            elif p.name in ("AND", "OR"):
                r = bits.pop()
                bits[-1] = p.name
            else:
                bits[-1] = "NOT"
        for j, v in enumerate(stack):  # the general stack, bottom first
            box(ax, x - 0.47, 1.5 - j * 0.3, 0.94, 0.26, v if len(v) < 9 else v[:8] + "…", "#f6f6f6", ec=GREY, fs=8.5)
        word = "".join("1" if b else "·" for b in [True] * len(bits))
        ax.text(x, 0.05, f"{len(bits)} bit{'s' if len(bits) != 1 else ''}", ha="center", fontsize=8.5, color=PURPLE)
        ax.text(x, -0.2, f"{f0f1[0] or '–'}\n{f0f1[1] or '–'}" if p.returns == oc.FLOAT else "", ha="center",
                va="top", fontsize=8.5, color=BLUE, linespacing=1.1)
        _ = word
    ax.text(0.05, 1.88, "memory stack (float32; booleans as 0/1), top at the bottom:", fontsize=9.5,
            color=GREY)
    ax.text(0.05, 0.33, "register variant: booleans as bits of one uint32 (purple), floats f0, f1 (blue):",
            fontsize=9.5, color=GREY)
    save(fig, "gp-tree-rpn.svg")


def stack_layouts():
    fig, axes = plt.subplots(2, 1, figsize=(WIDTH, 4.4))
    lanes, depth = 4, 4
    colors = [BLUE, ORANGE, GREEN, RED]
    for ax, title, interleaved in ((axes[0], "each thread's stack contiguous: stack[t·STACK + j]", False),
                                   (axes[1], "depth-major, interleaved: stack[j·T + t]  (the paper's Figure 3)", True)):
        ax.set_xlim(-0.5, lanes * depth + 0.5)
        ax.set_ylim(-0.9, 1.6)
        ax.axis("off")
        ax.text(-0.4, 1.3, title, fontsize=9.5)
        for addr in range(lanes * depth):
            t, j = (addr % lanes, addr // lanes) if interleaved else (addr // depth, addr % depth)
            push = j == 2  # every lane pushes its third value at the same moment
            ax.add_patch(Rectangle((addr, 0), 0.95, 0.8, fc=colors[t] if push else "white", ec=colors[t], lw=1.2,
                                   alpha=0.85 if push else 1))
            ax.text(addr + 0.47, 0.4, f"t{t}\nj{j}", ha="center", va="center", fontsize=9,
                    color="white" if push else INK)
        hit = [a for a in range(lanes * depth) if ((a // lanes) if interleaved else (a % depth)) == 2]
        ax.text(-0.4, -0.55, f"PUSH at depth 2 by 4 lanes: addresses {hit}, "
                + ("one contiguous segment (one transaction)" if interleaved else "STACK apart (one transaction each)"),
                fontsize=9, color=GREY)
    save(fig, "gp-stack-layouts.svg")


def bitslice():
    import numpy as np

    rng = np.random.default_rng(3)
    days = 32
    a = np.cumsum(rng.normal(0, 1, days)) + 0.5 * np.sin(np.arange(days) / 3)
    b = np.convolve(a, np.ones(5) / 5, mode="same")
    m1 = a > b  # MA1 > MA5 (on the word)
    m2 = rng.random(days) < 0.5  # a boolean terminal
    buy = m1 & m2
    sell = ~m1
    rows = [("mask MA1 > MA5", m1, BLUE), ("mask NVIG", m2, GREEN), ("buy = AND", buy, ORANGE),
            ("sell = NOT mask", sell, RED)]
    fig, ax = plt.subplots(figsize=(WIDTH, 3.3))
    ax.set_xlim(-6.5, days)
    ax.set_ylim(-3.0, len(rows))
    ax.axis("off")
    for r, (name, bits, c) in enumerate(rows):
        y = len(rows) - 1 - r
        ax.text(-0.3, y + 0.4, name, ha="right", va="center", fontsize=9)
        for d in range(days):
            ax.add_patch(Rectangle((d, y), 0.9, 0.8, fc=c if bits[d] else "white", ec=GREY, lw=0.5))
    # the trading loop's visits: when flat, the next buy-and-not-sell day; when holding, the next sell-and-not-buy
    holding, visits, d = False, [], 0
    eb, es = buy & ~sell, sell & ~buy
    while d < days:
        nxt = [k for k in range(d, days) if (es[k] if holding else eb[k])]
        if not nxt:
            break
        visits.append((nxt[0], "sell" if holding else "buy"))
        holding = not holding
        d = nxt[0] + 1
    for i, (k, what) in enumerate(visits):  # buys on one line, sells on the next: neighbours never collide
        ax.annotate(what, (k + 0.45, -0.05), (k + 0.45, -0.75 - 0.6 * (i % 2)), ha="center", va="top", fontsize=9,
                    arrowprops=dict(arrowstyle="->", color=INK, lw=0.8))
    ax.text(-6.3, -2.0, f"days 0-{days - 1} of a 64-day word. The trading loop: ffs(pending) jumps to the next\n"
            f"executable signal; {len(visits)} visits instead of {days} days", ha="left", va="top", fontsize=9.5,
            color=GREY)
    save(fig, "gp-bitslice.svg")


if __name__ == "__main__":
    tree_rpn()
    stack_layouts()
    bitslice()

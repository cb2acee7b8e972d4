"""Draw chapter 4's one-sweep figure: the memory traffic of a sort, and decoupled look-back.

Run from the repository root:

    python docs/figures/make_radix_figures.py

Uses the style helpers of ``make_figures.py`` (deterministic SVG, text kept as text, white
background). Top: the passes over the keys of ``local`` (per digit: upsweep read, scan,
downsweep read + write) and of ``onesweep`` (one histogram read, then per digit one read +
write). Bottom: one digit's status words of seven tiles and tile 6 looking back.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import matplotlib.pyplot as plt  # noqa: E402
import textwrap  # noqa: E402

from make_figures import BLUE, GREEN, GREY, INK, LIGHT, ORANGE, RED, SKY, arrow, blank, box, save  # noqa: E402


def onesweep():
    fig, ax = plt.subplots(figsize=(7.1, 5.4))
    fig.subplots_adjust(0, 0, 1, 1)
    blank(ax, (0, 20.5), (-1.2, 14))

    # --- top: the sweeps over the keys, 4 digit passes of 2^28 keys
    ax.text(0, 13.5, "Reads and writes of the keys, 4 passes of 8-bit digits", fontsize=10, weight="bold",
            va="center")

    def row(y, label, steps, note):
        ax.text(0.3, y + 0.45, label, fontsize=9, va="center", family="monospace")
        x = 3.2
        for text, w, fc in steps:
            box(ax, x, y, w, 0.9, fc, text=text, fs=8.5)
            x += w + 0.12
        ax.text(x + 0.2, y + 0.45, note, fontsize=8.5, va="center")

    up, sc, dn = ("up\nR4", 0.9, SKY), ("scan", 0.9, LIGHT), ("down\nR4 W4", 1.3, BLUE)
    row(10.9, "local", [("max\nR4", 0.9, LIGHT)] + [up, sc, dn] * 4, "58 B/key")
    os_ = ("sweep\nR4 W4", 1.3, GREEN)
    row(9.2, "onesweep", [("max\nR4", 0.9, LIGHT), ("4 hists\nR4", 1.45, ORANGE), ("scan", 0.9, LIGHT)]
        + [os_] * 4, "45 B/key")
    ax.text(3.2, 8.55, "per pass: local reads every key twice (count, then rank and scatter)\nand scans a "
            "count table; onesweep reads it once: the counts of all\n4 digits come from one up-front read",
            fontsize=8.5, va="top", color=INK)

    # --- bottom: decoupled look-back for one digit d
    ax.text(0, 6.4, "Decoupled look-back (one digit d; tile ids from an atomic counter)", fontsize=10,
            weight="bold", va="center")
    states = [("P", 37), ("P", 52), ("A", 9), ("P", 71), ("A", 12), ("A", 8), ("A", 11), ("X", 0)]
    fc = {"P": GREEN, "A": ORANGE, "X": LIGHT}
    x0, w, gap, y = 0.3, 2.25, 0.25, 3.4
    for t, (s, v) in enumerate(states):
        x = x0 + t * (w + gap)
        label = {"P": f"PREFIX|{v}", "A": f"AGG|{v}", "X": "0"}[s]
        box(ax, x, y, w, 1.1, fc[s], ec=GREY if s == "X" else INK, text=label, fs=8.5, tc="white" if s == "P" else INK, family="monospace")
        ax.text(x + w / 2, y + 1.4, f"tile {t}", ha="center", fontsize=8.5)
    # tile 6 reads 5 (AGG), 4 (AGG), 3 (PREFIX): stops
    xs = [x0 + t * (w + gap) + w / 2 for t in range(8)]
    for t, txt in ((5, "+8"), (4, "+12"), (3, "+71, stop")):
        arrow(ax, xs[6], y - 0.15 - 0.5 * (5 - t), xs[t], y - 0.15 - 0.5 * (5 - t), color=RED, lw=1.0)
        ax.plot([xs[6], xs[6]], [y - 0.05, y - 0.15 - 0.5 * (5 - t)], color=RED, lw=1.0)
        ax.text(xs[t] - 0.35, y - 0.15 - 0.5 * (5 - t), txt, ha="right", va="center", fontsize=8.5, color=RED)
    ax.text(x0, 1.15, "\n".join(textwrap.wrap(
        "Tile 6 has published AGG | 11 (its own count of d) before looking back; it adds 8 + 12 + 71 = 91 keys "
        "of d in tiles 0–5, writes PREFIX | 102 and scatters its keys of d from offset(d) + 91. A status word is "
        "0 until its tile publishes: the reader spins, but only on tiles that took their ids earlier, i.e. "
        "blocks already running (tile 7 has not published yet; nobody before it waits on it). Flag and count "
        "share one 32-bit word.", 100)), fontsize=8.5, va="top")
    box(ax, 0.3, 5.35, 0.5, 0.4, GREEN)
    ax.text(0.9, 5.55, "PREFIX: prefix available", fontsize=8.5, va="center")
    box(ax, 5.9, 5.35, 0.5, 0.4, ORANGE)
    ax.text(6.5, 5.55, "AGG: aggregate only", fontsize=8.5, va="center")
    box(ax, 10.9, 5.35, 0.5, 0.4, LIGHT, ec=GREY)
    ax.text(11.5, 5.55, "not yet (0)", fontsize=8.5, va="center")
    return save(fig, "radix-onesweep.svg")


def main() -> None:
    print(onesweep())


if __name__ == "__main__":
    main()

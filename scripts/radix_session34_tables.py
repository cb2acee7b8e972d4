"""Chapter 4's table of session 34's A/B (issue 30: the public call's checks before its first
launch), from the raw files in docs/benchmarks/gpu-runs/2026-11-30-session34/:

    python scripts/radix_session34_tables.py --json docs/benchmarks/ab-runs/radix-public-checks-h200.json

`call4/pab-<tree>-<seconds>.txt` is `scripts/radix_public_pieces.py` in four turns (new, old, old,
new) on one H200, each in a process of its own importing one tree: per backend, the host time
from the public call's entry to the plan's `sort` (or `distinct`'s `run`), median of 300 calls
with the device synchronised between them, and the public call over the plan's (CUDA events,
median of 200, two rounds a turn). The versions are those of the benchmark run of the same
session's call 3 (the same kit; call 4 ran no benchmark).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from gpulab.benchmark import write_record

RUNS = Path(__file__).resolve().parents[1] / "docs/benchmarks/gpu-runs/2026-11-30-session34"
PRE = re.compile(r"^(\S+)\s+public call host: entry->plan.sort\s+([\d.]+) us")
DPRE = re.compile(r"^(\S+)\s+distinct 2M host: entry->plan.run\s+([\d.]+) us")
EV = re.compile(r"^(\S+)\s+events turn \d: plan\s+[\d.]+ us, public\s+[\d.]+ us, ratio ([\d.]+)")
DEV = re.compile(r"^(\S+)\s+distinct events turn \d: plan\s+[\d.]+ us, public\s+[\d.]+ us, ratio ([\d.]+)")


def turns() -> list[tuple[str, dict]]:
    """(tree, {(case, backend, what): [values]}) per turn, in the order they ran."""
    out = []
    files = sorted(RUNS.glob("call4/pab-*.txt"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
    for f in files:
        got: dict = {}
        for line in f.read_text().splitlines():
            for rx, case, what in ((PRE, "2^20 keys", "pre"), (DPRE, "distinct 2M", "pre"),
                                   (EV, "2^20 keys", "ratio"), (DEV, "distinct 2M", "ratio")):
                m = rx.match(line)
                if m:
                    got.setdefault((case, m.group(1), what), []).append(float(m.group(2)))
        out.append((f.stem.split("-")[1], got))
    return out


def rows(runs) -> list[dict]:
    out = []
    for case in ("2^20 keys", "distinct 2M"):
        for backend in ("cuda-c", "numba"):
            cell = {}
            for tree in ("old", "new"):
                mine = [g for t, g in runs if t == tree]
                cell[tree, "pre"] = " · ".join(f"{v:.1f}" for g in mine for v in g[case, backend, "pre"])
                cell[tree, "ratio"] = " · ".join(f"{v:.2f}" for g in mine for v in g[case, backend, "ratio"])
            out.append({"case": case, "backend": backend,
                        "µs before the plan, old": cell["old", "pre"], "µs before the plan, new": cell["new", "pre"],
                        "public ÷ plan, old": cell["old", "ratio"], "public ÷ plan, new": cell["new", "ratio"]})
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True)
    a = ap.parse_args()
    bench = json.loads((RUNS / "call3/radix-h200.json").read_text())
    write_record(a.json, "gpulab-radix-public-checks-table/1", rows(turns()), device="NVIDIA H200",
                 versions=bench["versions"], dates=["2026-11-30 (session 34, call 4)"],
                 source=str(RUNS.relative_to(RUNS.parents[2])) + "/call4",
                 what="the public call's host work before the plan's first launch (issue 30; the versions are the "
                      "new tree's, the old ran with the same kit): the tree with the "
                      "lighter checks (new) against the tree before them (old, 8c14eac), four turns "
                      "new/old/old/new on one H200 (call 4), each turn a process of its own. Host time from "
                      "the public call's entry to the plan's sort (distinct: its run), median of 300 calls "
                      "synchronised between them, one value per turn; the public call over the plan's "
                      "(CUDA events, median of 200), two rounds per turn")


if __name__ == "__main__":
    main()

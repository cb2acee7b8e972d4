"""Chapter 4's table of session 33's A/B (issue 30: kept launches and the call by addresses), from
the raw files in docs/benchmarks/gpu-runs/2026-11-30-session33/:

    python scripts/radix_session33_tables.py --json docs/benchmarks/ab-runs/radix-kept-ab-h200.json

`call6/radix-kept-ab.json` is `scripts/radix_kept_ab.py` in four turns (new, old, old, new) on one
H200: per case and backend, the plan's call and the public call (CUDA events, median of 30), CUB
alone, in each turn. The rows give the medians of each tree's two turns, and the public call over
the plan's in each turn of the new tree. The versions are those of the benchmark run in the same
device call (`call6`'s `gpulab bench radix`: the script did not record its own).
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from gpulab.benchmark import write_record

RUNS = Path(__file__).resolve().parents[1] / "docs/benchmarks/gpu-runs/2026-11-30-session33"
CASES = {"keys 1048576": "2^20 keys", "pairs 1048576": "2^20 pairs", "distinct 2000000": "distinct 2M",
         "keys 16777216": "2^24 keys"}


def rows(runs: list[dict]) -> list[dict]:
    out = []
    for case, label in CASES.items():
        for backend in ("cuda-c", "numba"):
            mine = [r for r in runs if r["case"] == case and r["backend"] == backend]
            med = {(tree, k): statistics.median(r[k] for r in mine if r["tree"] == tree)
                   for tree in ("old", "new") for k in ("plan_ms", "public_ms")}
            cub = [r["cub_ms"] for r in mine if r["cub_ms"]]
            ratios = " · ".join(f"{r['public_over_plan']:.2f}" for r in mine if r["tree"] == "new")
            out.append({"case": label, "backend": backend,
                        "plan µs": f"{1e3 * med['old', 'plan_ms']:.0f} → {1e3 * med['new', 'plan_ms']:.0f}",
                        "public µs": f"{1e3 * med['old', 'public_ms']:.0f} → {1e3 * med['new', 'public_ms']:.0f}",
                        "public ÷ plan (new)": ratios,
                        "CUB µs": f"{1e3 * statistics.median(cub):.0f}" if cub else "—"})
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True)
    a = ap.parse_args()
    raw = json.loads((RUNS / "call6/radix-kept-ab.json").read_text())
    bench = json.loads((RUNS / "call6/radix-h200.json").read_text())
    write_record(a.json, "gpulab-radix-kept-table/1", rows(raw["runs"]), device=raw["device"],
                 versions=bench["versions"], dates=[raw["date"]], source=str(RUNS.relative_to(RUNS.parents[2])) + "/call6",
                 what="onesweep's kept launches and the public call by addresses (new) against the tree "
                      "before them (old, edd8f48), four turns new/old/old/new on one H200 (call 6): the plan's "
                      "call on numba arrays (the benchmark's kernels) and the public call on CuPy arrays, CUDA "
                      "events, median of 30 each turn; medians of each tree's two turns; CUB alone in the same turns")


if __name__ == "__main__":
    main()

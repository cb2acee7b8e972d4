"""Book tables from session 32's matmul runs on H200s (issue 31), from the raw files in
docs/benchmarks/gpu-runs/2026-11-29-session32/:

    python scripts/matmul_session32_tables.py small    --json docs/benchmarks/ab-runs/matmul-small-tiles-h200.json
    python scripts/matmul_session32_tables.py pointers --json docs/benchmarks/ab-runs/matmul-call-pointers-h200.json

`small`: `scripts/matmul_small_ab.py` (call 3): `small` against `streamk` in three turns, per shape
and backend (its own `rows`, medians over the turns).
`pointers`: `scripts/matmul_call_ab.py` on the thin product in the tree before (d150e05) and after
(the call by addresses, and `small`), in turns old/new/new/old on two H200 machines (calls 5, 6):
per machine, tree and kernel, the public call's µs in each turn, the kernel alone, and cuBLAS with
a new C (`cA @ cB`) in the same turns.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from matmul_ab_tables import _span

from gpulab.benchmark import write_record

RUNS = Path(__file__).resolve().parents[1] / "docs/benchmarks/gpu-runs/2026-11-29-session32"


def _load(name: str) -> dict:
    return json.loads((RUNS / name).read_text())


SHORT = {"queued µs (streamk → small)": "queued µs", "public µs (streamk → small)": "public µs",
         "gain, each turn": "gain per turn"}


def small_rows() -> list[dict]:
    """The probe's own rows, with shorter column names (the page's width)."""
    return [{SHORT.get(k, k): v for k, v in r.items()} for r in _load("call3-small-ab.json")["rows"]]


def pointer_rows() -> list[dict]:
    rows = []
    for call in ("call5", "call6"):
        turns = sorted(RUNS.glob(f"{call}-mab-*.json"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
        by: dict = {}
        for p in turns:
            tree = p.stem.split("-")[2]  # callN-mab-<tree>-<seconds>
            for r in json.loads(p.read_text())["rows"]:
                by.setdefault((tree, r["variant"], r["backend"]), []).append(r)
        for (tree, variant, backend), got in sorted(by.items(), key=lambda kv: (kv[0][0] == "new", kv[0][1], kv[0][2])):
            after = "after" if call == "call6" else "after: CUDA C only"  # call 5: numba not yet by addresses
            rows.append({"run": call[4:], "tree": "before" if tree == "old" else after,
                         "kernel": f"{variant} ({backend})",
                         "public µs, each turn": " · ".join(f"{1e3 * r['public ms']:.0f}" for r in got),
                         "kernel alone µs": _span([1e3 * r["kernel ms"] for r in got], "{:.0f}"),
                         "cuBLAS, new C µs": _span([1e3 * r["cuBLAS new ms"] for r in got], "{:.0f}"),
                         "÷ cuBLAS, new C": " · ".join(f"{r['cuBLAS new ms'] / r['public ms']:.0%}" for r in got)})
    return rows


WHAT = {
    "small": "small (streamk with 64x64 tiles, 16 deep) against streamk (128x128, 8 deep) at small and thin products, "
             "both backends, three turns in alternating order on one H200 (call 3): the launch alone (CUDA events "
             "around one launch, median of 20), 100 launches queued back to back (per launch), the public call on "
             "CuPy arrays; medians over the turns; cuBLAS (CuPy, FP32, new C) in the same turns",
    "pointers": "chapter 1's public call on CuPy arrays at the thin product (8192x128x128; CUDA events, median of "
                "20) in the tree before (d150e05) and after (the call by addresses; small), turns old/new/new/old "
                "on two H200 machines (calls 5 and 6); the kernel alone and cuBLAS with a new C in the same turns",
}
SOURCES = {"small": ["call3-small-ab.json"],
           "pointers": ["call5-mab-new-26.json", "call5-mab-old-0.json", "call6-mab-new-30.json", "call6-mab-old-0.json"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table", choices=list(WHAT))
    ap.add_argument("--json", required=True)
    a = ap.parse_args()
    rows = {"small": small_rows, "pointers": pointer_rows}[a.table]()
    for r in rows:
        print(r)
    srcs = [_load(f) for f in SOURCES[a.table]]
    write_record(a.json, f"gpulab-matmul-{a.table}-table/1", rows, what=WHAT[a.table], device=srcs[0]["device"],
                 versions=srcs[0]["versions"], versions_of_sources=[s["versions"] for s in srcs],
                 date=srcs[0]["date"], dates=[s["date"] for s in srcs], source=str(RUNS.relative_to(RUNS.parents[3])))


if __name__ == "__main__":
    main()

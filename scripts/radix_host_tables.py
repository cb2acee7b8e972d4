"""Book tables from the host-time runs of gpulab.radix's public call (issue 30).

    python scripts/radix_host_tables.py steps --before A.json B.json --after C.json D.json --json out.json
    python scripts/radix_host_tables.py probe LABEL=probe.json ... --json out.json

`steps`: from `scripts/radix_host_breakdown.py` JSONs of the tree before and the tree after, one
row per step of the public call before the plan's sort (the call naming no parameters), each
cell the range of that step's µs over the files and both backends, for keys and for pairs; the
last row the sum of the steps that still come before the first launch.

`probe`: from `scripts/radix_call_probe.py` JSONs, one row per labelled run and sort (garbage
collector on): host µs to the first launch (plan's sort → public call), the GPU µs the public
call adds and its ratio to the plan's sort.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

STEPS = {  # the breakdown's step -> the row's name
    "validate_keys": "check the keys (`validate_keys`)",
    "validate_values": "check the values (`validate_values`)",
    "_launch": "the variant and its parameters (`_launch`)",
    "numba_stream": "the stream (`numba_stream`)",
    "describe": "who gets the result (`describe`)",
    "_plan (cached)": "the kept plan (`_plan`)",
    "_take keys": "take the keys (`_take`: interface, view)",
    "_take values": "take the values (`_take`)",
    "order_on_device (uint32)": "order the keys (`order_on_device`, uint32)",
}
AFTER_THE_FIRST_LAUNCH = {"describe"}  # moved behind the plan's first launch in the tree after


def _load(paths):
    return [json.loads(Path(p).read_text()) for p in paths]


def _span(xs) -> str:
    lo, hi = min(xs), max(xs)
    return f"{lo:.1f}" if round(lo, 1) == round(hi, 1) else f"{lo:.1f}–{hi:.1f}"


def steps(a) -> dict:
    runs = {"before": _load(a.before), "after": _load(a.after)}
    rows = []
    sums = {}
    for step, label in STEPS.items():
        row = {"step": label}
        for case in ("keys", "pairs"):
            for tree, files in runs.items():
                found = [(i, r) for i, d in enumerate(files) for r in d["rows"]
                         if r["step"] == step and r["case"] == case and r["params"] == "none"]
                col = f"{case}, {tree}"
                if not found:
                    row[col] = "—"
                    continue
                xs = [r["us"] for _, r in found]
                moved = tree == "after" and step in AFTER_THE_FIRST_LAUNCH
                row[col] = f"({_span(xs)}) later" if moved else _span(xs)
                if not moved:  # each file's and backend's own sum of the steps
                    for i, r in found:
                        key = (col, i, r["backend"])
                        sums[key] = sums.get(key, 0.0) + r["us"]
        rows.append(row)
    total = {"step": "before the first launch, in all"}
    for col in ("keys, before", "keys, after", "pairs, before", "pairs, after"):
        total[col] = _span([v for (c, _, _), v in sums.items() if c == col])
    rows.append(total)
    first = runs["before"][0]
    return {"schema": "gpulab-radix-host-steps/1", "date": first["date"], "device": first["device"]["name"],
            "versions": first["versions"], "script": first["script"],
            "what": "the public call's host steps before the plan's sort, each timed alone in a loop on CuPy "
                    "arrays at 2^24 keys (µs, median of blocks of calls); each cell the range over two turns of "
                    "each tree and both backends",
            "rows": rows}


def probe(a) -> dict:
    rows = []
    meta = None
    for spec in a.runs:
        label, _, path = spec.partition("=")
        d = json.loads(Path(path).read_text())
        meta = meta or d
        by = {(r["backend"], r["case"], r["call"].split()[0]): r for r in d["rows"] if r.get("gc") == "on"}
        for (backend, case, call), k in by.items():
            if call != "kernels":
                continue
            p = by[(backend, case, "public")]
            rows.append({"run": label, "sort": f"{backend}, {'pairs' if case.startswith('pairs') else 'keys'}",
                         "launch µs": f"{k['first us']:.0f} → {p['first us']:.0f}",
                         "GPU +µs": round(1e3 * (p["gpu ms"] - k["gpu ms"]), 1),
                         "÷ kernels": round(p["gpu ms"] / k["gpu ms"], 3)})
    return {"schema": "gpulab-radix-call-probe-table/1", "date": meta["date"], "device": meta["device"]["name"],
            "versions": meta["versions"],
            "script": "python scripts/radix_call_probe.py --log2 24, with --pairs in calls 2 and 3 and --prewalk in "
                      "the warm run",
            "what": "onesweep at 2^24 keys: the plan's sort alone and the public call on CuPy arrays, medians of 4 "
                    "blocks of 100 calls, garbage collector on",
            "columns": "launch µs: host µs from the call's start to its first launch, the plan's sort → the public "
                       "call; GPU +µs: the public call's GPU time minus the plan's sort's; ÷ kernels: their ratio",
            "rows": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("steps")
    s.add_argument("--before", nargs="+", required=True)
    s.add_argument("--after", nargs="+", required=True)
    s.add_argument("--json", required=True)
    p = sub.add_parser("probe")
    p.add_argument("runs", nargs="+", help="LABEL=probe.json")
    p.add_argument("--json", required=True)
    a = ap.parse_args()
    out = steps(a) if a.what == "steps" else probe(a)
    Path(a.json).write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    for r in out["rows"]:
        print(" | ".join(str(v) for v in r.values()))


if __name__ == "__main__":
    main()

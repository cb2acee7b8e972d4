"""Runs of `scripts/radix_call_probe.py` side by side, the tree before and the tree after a
change, in turns on one machine (issue 30): per sort, the host µs from the public call's start to
its first launch, the GPU µs the public call adds to the plan's sort, and their ratio (garbage
collector on, as a user runs); a cell lists the turns in their order, " / " between them.

    D=docs/benchmarks/gpu-runs/2026-11-29-session29
    python scripts/radix_probe_ab_table.py --before $D/call4-rplain-old-0.json $D/call4-rplain-old-74.json \
        --after $D/call4-rplain-new-30.json $D/call4-rplain-new-52.json \
        --json docs/benchmarks/ab-runs/radix-call-probe-3-h200.json

`--kernels` compares the plan's sort itself (a change that makes it faster): its pass 0 launch
and GPU time, beside the public call's ratio.
"""

from __future__ import annotations

import argparse
import json
import sys

from gpulab.benchmark import utc_now


def cases(path: str) -> dict:
    """`(backend, case) -> {"kernels": row, "public cupy": row}` of a probe file (gc on)."""
    out: dict = {}
    with open(path) as f:
        rows = json.load(f)["rows"]
    for r in rows:
        if r.get("gc") == "on":
            out.setdefault((r["backend"], r["case"]), {})[r["call"]] = r
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", nargs="+", required=True, help="the tree before: one probe file per turn")
    ap.add_argument("--after", nargs="+", required=True, help="the tree after: one probe file per turn")
    ap.add_argument("--what", default="onesweep at 2^24 on CuPy arrays, medians of 2 blocks of 60 calls, garbage "
                                       "collector on; the trees in turns on one machine",
                    help="what the probe runs measured (their --calls and --blocks)")
    ap.add_argument("--kernels", action="store_true",
                    help="a change of the plan's sort: its pass 0 launch (host µs) and GPU ms, and the public call's "
                         "ratio, instead of the public call's first launch and added GPU µs")
    ap.add_argument("--json", required=True)
    a = ap.parse_args()
    before, after = [cases(f) for f in a.before], [cases(f) for f in a.after]

    def cell(turns, key, f, fmt):
        return " / ".join(format(f(t[key]), fmt) for t in turns)

    def launch(c):
        return c["public cupy"]["first us"]

    def added(c):
        return 1e3 * (c["public cupy"]["gpu ms"] - c["kernels"]["gpu ms"])

    def ratio(c):
        return c["public cupy"]["gpu ms"] / c["kernels"]["gpu ms"]

    def pass0(c):
        return c["kernels"]["pass0 us"]

    def kernels_ms(c):
        return c["kernels"]["gpu ms"]

    metrics = ((("pass 0 µs", pass0, ".0f"), ("kernels ms", kernels_ms, ".3f"), ("÷ kernels", ratio, ".3f"))
               if a.kernels else (("launch µs", launch, ".0f"), ("GPU +µs", added, ".0f"), ("÷ kernels", ratio, ".3f")))
    rows = []
    for key in after[0]:
        backend, case = key
        row = {"sort": f"{'CUDA C' if backend == 'cuda-c' else 'numba'}, {'pairs' if case.startswith('pairs') else 'keys'}"}
        for name, f, fmt in metrics:
            row[f"{name}, before"] = cell(before, key, f, fmt)
            row[f"{name}, after"] = cell(after, key, f, fmt)
        rows.append(row)
    with open(a.after[0]) as f:
        src = json.load(f)
    with open(a.json, "w") as out:
        json.dump({"schema": "gpulab-radix-call-probe-ab/1", "date": utc_now(), "device": src.get("device"),
                   "versions": {"after": src.get("versions")},
                   "script": "python scripts/radix_probe_ab_table.py " + " ".join(sys.argv[1:]), "what": a.what,
                   "columns": ("pass 0 µs: host µs from the plan's sort's start to its pass 0 launch; kernels ms: "
                               "the plan's sort's GPU time" if a.kernels else
                               "launch µs: host µs from the public call's start to its first launch; GPU +µs: the "
                               "public call's GPU time minus the plan's sort's")
                              + "; ÷ kernels: the public call's GPU time over the plan's sort's; each cell one value "
                                "per turn of that tree, in the order run",
                   "sources": {"before": a.before, "after": a.after}, "rows": rows}, out, indent=1, ensure_ascii=False)
    for r in rows:
        print(*r.values())


if __name__ == "__main__":
    main()

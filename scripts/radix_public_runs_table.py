"""The public call over the kernels for `onesweep` at 2^24 keys and pairs, one row per benchmark
run (issue 30), from `gpulab bench radix` result files: chapter 4's table of the runs at 2^24
(30 repeats each, 20 in session 29's call 5; each row keeps its count).

    python scripts/radix_public_runs_table.py --run "session 27" docs/benchmarks/gpu-runs/2026-11-29-session27/call1-radix-h200.json \
        --run "session 28, call 4" docs/benchmarks/gpu-runs/2026-11-29-session28/call4-radix-h200.json \
        --json docs/benchmarks/ab-runs/radix-public-runs-2p24-h200.json
"""

from __future__ import annotations

import argparse
import json
import sys

from gpulab.benchmark import utc_now

COLUMNS = [("cuda-c", "keys"), ("numba", "keys"), ("cuda-c", "pairs"), ("numba", "pairs")]


def row(label: str, path: str) -> dict:
    """One run's ratios (public call ÷ kernels) and kernel times at 2^24, from its result file."""
    d = json.load(open(path))
    got = {(r["backend"], r["size"]["kind"]): r for r in d["records"]
           if r["variant"] == "onesweep" and r["size"]["n"] == 2**24 and r.get("public_over_kernel")}
    out = {"run": label}
    for backend, kind in COLUMNS:
        r = got.get((backend, kind))
        name = f"{'CUDA C' if backend == 'cuda-c' else 'numba'} {kind}"
        out[name] = f"{r['public_over_kernel']:.3f}" if r else "—"
        out[f"{name}, kernels ms"] = f"{r['median_ms']:.3f}" if r else "—"
        out[f"{name}, repeats"] = len(r["samples_ms"]) if r else None
    out["date"] = next((r.get("date") for r in d.get("parts", [])[-1:]), d.get("date"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", nargs=2, action="append", metavar=("LABEL", "FILE"), required=True)
    ap.add_argument("--json", required=True)
    a = ap.parse_args()
    rows = [row(label, path) for label, path in a.run]
    first = json.load(open(a.run[0][1]))
    json.dump({"schema": "gpulab-radix-public-runs-table/1", "date": utc_now(), "device": first.get("device"),
               "versions": first.get("versions"),
               "script": "python scripts/radix_public_runs_table.py " + " ".join(sys.argv[1:]),
               "what": "onesweep at 2^24 keys and pairs: the public call on CuPy arrays over the plan's sort "
                       "(kernels), one row per benchmark run, each run on its own H200 machine",
               "sources": [path for _, path in a.run], "rows": rows}, open(a.json, "w"), indent=1, ensure_ascii=False)
    for r in rows:
        print(r["run"], *(r[f"{'CUDA C' if b == 'cuda-c' else 'numba'} {k}"] for b, k in COLUMNS))


if __name__ == "__main__":
    main()

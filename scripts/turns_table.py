"""The book's tables of two A/B runs in turns (old and new trees on one machine), from the JSON
the probes wrote per turn (files named ``<kind>-<old|new>-<seconds>.json``):

* ``argsort``: `scripts/argsort_ab.py` — an argsort's GPU time per backend, size and keys; one
  row per case with each tree's turns and new ÷ old of their medians;
* ``timeline``: `scripts/euler_timeline.py` — the Euler public call per backend and turn: its
  GPU time, the GPU's wait before the first sort, the tail after the last kernel (the result's
  copy) and the GPU's waits for the host in all (stamped);
* ``rab``: `gpulab bench radix` of each turn (``rab-<old|new>-<seconds>/radix-*.json``, the
  `radix_call_ab` stage of `scripts/gpu_stages.sh`) — per case and backend, each tree's public
  call ÷ kernels and its public call in ms, turn by turn.

    python scripts/turns_table.py argsort DIR... --what "..." --device "..." --date ... --json out.json
    python scripts/turns_table.py timeline DIR... --what "..." --device "..." --date ... --json out.json
    python scripts/turns_table.py rab DIR... --what "..." --device "..." --date ... --json out.json
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from pathlib import Path


def turns(dirs, kind):
    """[(tree, seconds, data)] of every ``<kind>-<tree>-<seconds>.json`` under ``dirs`` (``rab``:
    every benchmark JSON in a ``rab-<tree>-<seconds>`` folder), in run order."""
    out = []
    for d in dirs:
        for f in Path(d).glob("rab-*/*.json" if kind == "rab" else f"{kind}-*.json"):
            name = f.parent.name + ".json" if kind == "rab" else f.name
            m = re.fullmatch(rf"{kind}-(old|new)-(\d+)\.json", name)
            if m:
                out.append((m.group(1), int(m.group(2)), json.loads(f.read_text()), str(f)))
    return sorted(out, key=lambda t: t[1])


def _size(n: int) -> str:
    return f"{n / 2**20:.0f} Mi" if n % 2**20 == 0 else f"{n / 1e6:.1f} M"


def argsort_rows(ts):
    cases: dict = {}
    for tree, _, rows, _ in ts:
        for r in rows:
            cases.setdefault((r["backend"], r["n"], r["keys"]), {"old": [], "new": []})[tree].append(r["median_ms"])
    out = []
    for (backend, n, keys), v in cases.items():
        o, w = statistics.median(v["old"]), statistics.median(v["new"])
        out.append({"backend": backend, "keys": f"{_size(n)}, {keys}",
                    "before ms": " / ".join(f"{x:.3f}" for x in v["old"]),
                    "after ms": " / ".join(f"{x:.3f}" for x in v["new"]),
                    "after ÷ before": f"{w / o:.3f}"})
    return out


def timeline_rows(ts):
    out = []
    for tree, sec, runs, _ in ts:
        for t in runs:
            launches = [r for r in t["rows"] if r["kind"] == "launch"]
            first_sort = next(r for r in launches if r["who"] == "sort")
            out.append({"turn": f"{'before' if tree == 'old' else 'after'} ({sec} s)", "backend": t["backend"],
                        "call ms": f"{t['plain_median_ms']:.2f}",
                        "wait before the first sort µs": f"{first_sort['gap_ms'] * 1e3:.0f}",
                        "after the last kernel µs": f"{(t['stamped_span_ms'] - launches[-1]['end']) * 1e3:.0f}",
                        "waits in all ms": f"{t['gap_ms']:.2f}"})
    return out


def rab_rows(ts):
    cases: dict = {}
    for tree, _, doc, _ in ts:
        for r in doc["records"]:
            if r.get("public_median_ms") is not None and r["median_ms"]:
                c = cases.setdefault((r["label"], r["backend"]), {"old": [], "new": []})
                c[tree].append((r["public_median_ms"] / r["median_ms"], r["public_median_ms"]))
    out = []
    for (label, backend), v in cases.items():
        out.append({"case": label, "backend": backend,
                    "public ÷ kernels, before": " / ".join(f"{x[0]:.2f}" for x in v["old"]),
                    "public ÷ kernels, after": " / ".join(f"{x[0]:.2f}" for x in v["new"]),
                    "public ms, before": " / ".join(f"{x[1]:.3f}" for x in v["old"]),
                    "public ms, after": " / ".join(f"{x[1]:.3f}" for x in v["new"])})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kind", choices=["argsort", "timeline", "rab"])
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--what", default="")
    ap.add_argument("--device", default="", help="the machine, as the run's summary names it")
    ap.add_argument("--date", default="", help="when the run was (the summary's day)")
    ap.add_argument("--json", required=True)
    a = ap.parse_args()
    ts = turns(a.dirs, a.kind)
    rows = {"argsort": argsort_rows, "timeline": timeline_rows, "rab": rab_rows}[a.kind](ts)
    doc = {"schema": f"gpulab-turns-{a.kind}/1", "date": a.date, "device": a.device, "what": a.what,
           "sources": [t[3] for t in ts],
           "script": f"python scripts/turns_table.py {a.kind} {' '.join(a.dirs)} --json {a.json}",
           "columns": list(rows[0]), "rows": rows}
    Path(a.json).write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    for r in rows:
        print(" | ".join(str(v) for v in r.values()))


if __name__ == "__main__":
    main()

"""One JSON of an A/B run in turns (the `nab` stage of scripts/gpu_session21.sh): from the
benchmark JSONs under DIR/<prefix>-<chapter>-<code>-<turn>/, one row per (size, variant,
backend) with each turn's median of the old and the new code (kernel and public call, ms),
the old and new medians of the turns, and new / old.

    python scripts/ab_turns_json.py DIR --prefix nab --about "..." --json out.json [--stages pairing ...]

With ``--stages``, chapter 5's records also give one row per named stage (``stages_ms``, the
case's ``case: stage``), its public-call column empty.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--prefix", default="nab")
    ap.add_argument("--about", default="")
    ap.add_argument("--json", required=True)
    ap.add_argument("--stages", nargs="*", default=[], help="chapter 5: rows for these stages too")
    a = ap.parse_args()
    runs: dict = {}
    meta = None
    for f in sorted(a.dir.glob(f"{a.prefix}-*-*-*/*.json")):
        m = re.fullmatch(rf"{a.prefix}-(\w+)-(old|new)-(\d+)", f.parent.name)
        if not m:
            continue
        doc = json.loads(f.read_text())
        meta = meta or {k: doc[k] for k in ("device", "versions", "date") if k in doc}
        for r in doc["records"]:
            if r.get("median_ms") is None:
                continue
            key = (doc["chapter"], r["label"], r["variant"], r["backend"])
            public = r.get("public_median_ms")
            if public is None:
                public = r.get("public_device_ms")  # (chapter 5 keeps its public call here)
            runs.setdefault(key, {}).setdefault(m[2], []).append((int(m[3]), r["median_ms"], public))
            for stage in a.stages:
                ms = (r.get("stages_ms") or {}).get(stage)
                if ms is not None:
                    skey = (doc["chapter"], f"{r['label']}: {stage}", r["variant"], r["backend"])
                    runs.setdefault(skey, {}).setdefault(m[2], []).append((int(m[3]), ms, None))
    rows = []
    for (chapter, label, variant, backend), sides in runs.items():
        old, new = sorted(sides.get("old", [])), sorted(sides.get("new", []))
        if not old or not new:
            continue
        mo, mn = statistics.median(x[1] for x in old), statistics.median(x[1] for x in new)
        rows.append({"chapter": chapter, "case": label, "variant": variant, "backend": backend,
                     "old ms, each turn": " / ".join(f"{x[1]:.3g}" for x in old),
                     "new ms, each turn": " / ".join(f"{x[1]:.3g}" for x in new),
                     "old public ms": " / ".join(f"{x[2]:.3g}" for x in old if x[2] is not None),
                     "new public ms": " / ".join(f"{x[2]:.3g}" for x in new if x[2] is not None),
                     "new / old": round(mn / mo, 3)})
    Path(a.json).write_text(json.dumps({"about": a.about, **(meta or {}), "rows": rows}, indent=1) + "\n")
    for r in rows:
        print(r)


if __name__ == "__main__":
    main()

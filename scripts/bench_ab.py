"""A/B a change on the GPU: the same benchmark cases on two source trees, interleaved, in one run.

    python scripts/bench_ab.py --old /tmp/old --new . --rounds 2 --out $OUT \
        matmul:N=4096 subset:"n=50 k=5" radix:2^26

Each argument is `CHAPTER:SIZE[,SIZE...]`, with size labels as `gpulab bench CHAPTER --sizes`
takes them; a comma inside parentheses, as in `C(100,6)`, is part of the label. For every
round, each tree runs `gpulab bench CHAPTER --backend B --sizes ... --json` for the GPU backends (old, new, old, new ...), so drift in clocks or temperature falls on both sides.
The table gives, per variant and size, the median of each side's round medians, the ratio
new / old and the run-to-run spread ((max - min) / min of each side's rounds); a variant is
flagged SLOWER when new / old - 1 exceeds the larger spread (and 2%). Full records go to
`OUT/ab-CHAPTER.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def bench(tree: Path, chapter: str, sizes: list[str], backend: str, repeat: int, out: Path,
          variants: list[str] | None = None) -> list[dict]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")])))
    cmd = [sys.executable, "-m", "gpulab", "bench", chapter, "--backend", backend, "--sizes", *sizes,
           "--repeat", str(repeat), "--json", "--no-progress", "--out", str(out)]
    if variants:
        cmd += ["--variants", *variants]
    proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    if proc.returncode not in (0, 1) or not proc.stdout.strip():
        print(f"  {tree} {chapter} {backend}: exit {proc.returncode}: {proc.stderr.strip()[-400:]}", flush=True)
        return []
    return json.loads(proc.stdout)["records"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="+", help="CHAPTER:SIZE[,SIZE...]")
    ap.add_argument("--old", required=True, type=Path)
    ap.add_argument("--new", required=True, type=Path)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--backends", nargs="+", default=["numba", "cuda-c"])
    ap.add_argument("--variants", nargs="+", default=None, help="only these variant names (default: all)")
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "ab-results")))
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    raw = Path(tempfile.mkdtemp(prefix="bench-ab-"))  # each run's own JSON/PNG: not wanted in OUT
    rows = []
    for case in a.cases:
        chapter, _, sizes = case.partition(":")
        sizes = re.split(r",(?![^(]*\))", sizes)  # commas inside a label, as in C(100,6), stay
        times: dict = {}
        t0 = time.time()
        for rnd in range(a.rounds):
            for side, tree in (("old", a.old), ("new", a.new)):
                for backend in a.backends:
                    for r in bench(tree.resolve(), chapter, sizes, backend, a.repeat, raw / side, a.variants):
                        if r.get("median_ms") is not None and r.get("check") is not False:
                            key = (r["variant"], r["backend"], r["label"])
                            times.setdefault(key, {"old": [], "new": []})[side].append(r["median_ms"])
                        elif r.get("check") is False:
                            print(f"  WRONG: {side} {r['variant']}[{r['backend']}] {r['label']}", flush=True)
        print(f"{chapter} {','.join(sizes)}: {time.time() - t0:.0f} s", flush=True)
        for (variant, backend, label), t in times.items():
            if not t["old"] or not t["new"]:
                continue
            old, new = statistics.median(t["old"]), statistics.median(t["new"])
            spread = max((max(x) - min(x)) / min(x) for x in (t["old"], t["new"]))
            ratio = new / old
            rows.append({"chapter": chapter, "variant": variant, "backend": backend, "label": label,
                         "old_ms": t["old"], "new_ms": t["new"], "ratio": ratio, "spread": spread,
                         "slower": ratio - 1 > max(spread, 0.02)})
        (a.out / f"ab-{chapter}.json").write_text(json.dumps([r for r in rows if r["chapter"] == chapter], indent=1))
    print(f"\n{'chapter':7s} {'variant[backend]':28s} {'size':18s} {'old ms':>9s} {'new ms':>9s} {'new/old':>7s} {'spread':>6s}")
    for r in rows:
        print(f"{r['chapter']:7s} {r['variant'] + '[' + r['backend'] + ']':28s} {r['label'][:18]:18s} "
              f"{statistics.median(r['old_ms']):9.4g} {statistics.median(r['new_ms']):9.4g} {r['ratio']:7.3f} "
              f"{100 * r['spread']:5.1f}%{'  SLOWER' if r['slower'] else ''}")
    slower = [r for r in rows if r["slower"]]
    spreads = [r["spread"] for r in rows]
    if spreads:
        print(f"\n{len(rows)} comparisons, {len(slower)} slower beyond the spread; spread median "
              f"{100 * statistics.median(spreads):.1f}%, max {100 * max(spreads):.1f}%")
    return 1 if slower else 0


if __name__ == "__main__":
    sys.exit(main())

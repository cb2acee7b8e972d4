"""The incremental scan's grid, measured (chapter 2, "How many blocks"; the appendix's cost per
chunk). One process, one GPU, no Dask: per size and per parameter set, the whole search, then the
same ranks as --chunks equal rank ranges searched one after another (what one Dask worker does
with its share); wall clock after a device synchronize, median of --repeat after a warm-up. The
default parameter sets are the registry's (WAVES=2) and the former cap, 132 x 64 blocks with no
WAVES cap. Every answer is checked against the whole search's. Needs a GPU.

    python scripts/subset_chunk_cost.py --sizes 200:5 200:6 100:6 --json out.json
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gpulab import device, subset, timing
from gpulab.benchmark import utc_now, versions
from gpulab.distributed import split
from gpulab.subset.combinatorics import choose
from gpulab.subset.reference import correlation, squared_packed, synthetic_returns

FORMER = {"MAX_BLOCKS": 132 * 64, "WAVES": 10**6}  # the cap before WAVES: 8,448 blocks


def wall(f, repeat):
    """Median ms of `repeat` calls after one warm-up, each ended by a synchronize."""
    return timing.wall(f, warmup=1, repeat=repeat).median_ms


def run(n, k, variant, backend, params, label, chunks_list, repeat):
    C = correlation(synthetic_returns(500, n, factors=3, strength=0.5, seed=7))
    Q = squared_packed(C)
    total = choose(n, k)
    want = subset.search_packed(Q, n, k, variant, backend, params)
    row = {"size": f"C({n},{k})", "backend": backend, "variant": variant, "params": label,
           "whole_ms": wall(lambda: subset.search_packed(Q, n, k, variant, backend, params), repeat)}
    for chunks in chunks_list:
        ranges = split(0, total, chunks)
        parts = [subset.search_packed(Q, n, k, variant, backend, params, ranks=r) for r in ranges]
        best = min(parts, key=lambda p: (p[0], p[1]))
        row[f"same_{chunks}"] = best[1] == want[1]
        row[f"chunks_{chunks}_ms"] = wall(lambda: [subset.search_packed(Q, n, k, variant, backend, params, ranks=r)
                                                   for r in ranges], repeat)
    row["subsets_per_s"] = total / (row["whole_ms"] * 1e-3)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", nargs="+", default=["200:5", "200:6", "100:6"])
    ap.add_argument("--variant", default="incremental")
    ap.add_argument("--backends", nargs="+", default=["cuda-c"])
    ap.add_argument("--chunks", nargs="+", type=int, default=[4, 8])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json")
    ap.add_argument("--also", nargs="*", default=[], metavar="JSON",
                    help='more parameter sets to compare, e.g. \'{"BLOCK": 1024}\' (over the registry\'s)')
    ap.add_argument("--no-former", action="store_true", help="skip the former cap")
    a = ap.parse_args()
    rows = []
    for s in a.sizes:
        n, k = map(int, s.split(":"))
        for b in a.backends:
            sets = [] if a.no_former else [("former cap (132 x 64 blocks)", FORMER)]
            sets += [("registry (WAVES=2)", None)] + [(f"registry + {x}", json.loads(x)) for x in a.also]
            for label, params in sets:
                rows.append(run(n, k, a.variant, b, params, label, a.chunks, a.repeat))
                r = rows[-1]
                print(f"{r['size']} {b:6} {label:30} whole {r['whole_ms']:9.2f} ms "
                      + " ".join(f"{c} chunks {r[f'chunks_{c}_ms']:9.2f} ms" for c in a.chunks)
                      + f"  same={all(r[f'same_{c}'] for c in a.chunks)}", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps({"device": device.info().name, "date": utc_now(), "versions": versions(),
                                            "script": "python " + " ".join(sys.argv), "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()

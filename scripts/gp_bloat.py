"""Bloat in chapter 3's GP loop, with and without lexicographic parsimony (CPU, small scale):
the mean program size per generation and the final training / test fitness.

    python scripts/gp_bloat.py        # writes docs/benchmarks/gp-bloat-cpu.json (a few minutes on 2 cores)

Population 2,000, 40 generations, 32 stocks × 768 training days then 256 test days (synthetic,
seeded), the ``cpu_bitsliced`` evaluator; every other setting is :class:`GPParams`' default.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

import gpulab.gp as gp
from gpulab import benchmark
from gpulab.gp.loop import GPParams, evolve


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--population", type=int, default=2000)
    ap.add_argument("--generations", type=int, default=40)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", default="docs/benchmarks/gp-bloat-cpu.json")
    args = ap.parse_args()
    market = gp.synthetic_market(32, 768 + 256, seed=1)
    base = GPParams(population=args.population, generations=args.generations)
    rows = []
    for parsimony in (False, True):
        for seed in range(args.seeds):
            r = evolve(market, train_days=768, params=replace(base, parsimony=parsimony), variant="cpu_bitsliced",
                       backend="cpu", seed=seed, progress=None)
            h = r.history
            row = {"parsimony": "lexicographic" if parsimony else "none", "seed": seed}
            for g in range(0, args.generations + 1, 10):
                row[f"mean size, gen {g}"] = h[g]["mean_nodes"]
            row.update({"train (per 100 days)": h[-1]["train_best_per100"], "test (per 100 days)": h[-1]["test_of_best_per100"]})
            rows.append(row)
            print(row, flush=True)
    data = {"rows": rows, "population": args.population, "generations": args.generations, "stocks": 32,
            "train days": 768, "test days": 256, "max depth": base.max_depth, "max nodes per tree": base.max_nodes,
            "source": "scripts/gp_bloat.py (cpu_bitsliced)", "versions": benchmark.versions()}
    Path(args.out).write_text(json.dumps(data, indent=1) + "\n")
    print("wrote", args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""How many steps a warp's trading loop takes, by loop design, on the benchmark's seed population
(first individuals) and market: the counts behind the ``bitsliced`` trading pass in chapter 3.

    python scripts/gp_trading_stats.py [--individuals 2000]   # writes docs/benchmarks/gp-trading-cpu.json

A warp trades 32 stocks of one individual in lock step, so a loop costs the warp as many steps
as its busiest lane needs. Counted from the CPU's trace (the days each (individual, stock) bought
or sold), exactly, for:

* a loop per word that ends when the word has no executable signal left (the first H200 run's
  kernel, 32-day words; and the same with 64-day words): per word, the busiest lane's trades + 1;
* a trading pass across ``TW`` words (the current kernel): per chunk of ``TW`` words, the busiest
  lane's trades + 1 (skipping a word with no signal left is a few instructions inside a step);
* the lower bound: the busiest lane's trades over all the days.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

import gpulab.gp as gp
from gpulab import benchmark
from gpulab.gp import bench


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--individuals", type=int, default=2000)
    ap.add_argument("--out", default="docs/benchmarks/gp-trading-cpu.json")
    args = ap.parse_args()
    market = gp.synthetic_market(32, 768, seed=bench.MARKET_SEED)
    pop = bench.population(25_000, args.individuals)
    ev = gp.evaluate_detail(pop, market, "cpu_bitsliced", "cpu", trace=True)
    trades = ((ev.trace >> 2) & 3) > 0  # [P, S, D]: a buy or a sell that day
    P, S, D = trades.shape

    def per_chunk(days_per_chunk: int) -> float:
        n = -(-D // days_per_chunk)
        t = np.zeros((P, S, n * days_per_chunk), bool)
        t[:, :, :D] = trades
        counts = t.reshape(P, S, n, days_per_chunk).sum(-1)  # trades per lane and chunk
        return float((counts.max(axis=1) + 1).sum(-1).mean())  # busiest lane + 1, summed over chunks

    rows = [{"trading loop": "per 32-day word (first H200 run)", "warp steps": per_chunk(32)},
            {"trading loop": "per 64-day word", "warp steps": per_chunk(64)}]
    for tw in (2, 4, 8, 12):
        rows.append({"trading loop": f"pass across TW = {tw} words of 64 days", "warp steps": per_chunk(64 * tw)})
    rows.append({"trading loop": "lower bound: the busiest lane's trades", "warp steps": float(trades.sum(-1).max(1).mean())})
    data = {"rows": rows, "individuals": P, "stocks": S, "days": D,
            "mean trades per (individual, stock)": float(trades.sum(-1).mean()),
            "source": "scripts/gp_trading_stats.py (CPU trace of the seed population)", "versions": benchmark.versions()}
    Path(args.out).write_text(json.dumps(data, indent=1) + "\n")
    for r in rows:
        print(f"{r['trading loop']:45s} {r['warp steps']:.1f}")
    print("wrote", args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

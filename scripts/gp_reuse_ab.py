"""Issue 29: whole GP runs with and without reuse (`gp.evolve(..., reuse=True|False)`), in one
process, interleaved round by round, in three modes: ``off`` (every individual interpreted),
``copies`` (copied individuals keep their fitness; `gpulab.gp.host.MASK_CACHE_SHARE` = 0, so no
day-mask cache) and ``trees`` (also: a changed child's unchanged tree is read from the cache).

The market is `gpulab gp evolve`'s default (synthetic, 32 stocks, 768 training and 256 test days,
seed 0); the breeding is the GPU's. Per run: `timing` (total_s after compilation, evaluation_s,
breeding_s), and per generation the individuals interpreted and the evaluation's milliseconds.
The runs of a round must be the same run (same rows but the count interpreted, same best rule):
`same_run` says whether they were. Writes ``--json`` (device, versions, date; ``rows``: the medians, the book's table) and prints
the table.

    python scripts/gp_reuse_ab.py --runs 25000x50:6 500000x5 --backends cuda-c numba --rounds 3 --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from gpulab.benchmark import utc_now, versions
from gpulab.gp import host
from gpulab.gp.cli import market_from
from gpulab.gp.loop import GPParams, evolve

DROP = ("eval_ms", "breed_ms", "evaluated")
MODES = ["off", "copies", "trees"]
SHARE = host.MASK_CACHE_SHARE


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", nargs="+", default=["25000x50"], help="POPULATIONxGENERATIONS[:ROUNDS]")
    ap.add_argument("--backends", nargs="+", default=["cuda-c", "numba"])
    ap.add_argument("--rounds", type=int, default=3, help="rounds of a run that does not name its own")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--modes", nargs="+", default=MODES, choices=MODES, help="reuse modes to run (default: all)")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    market = market_from("synthetic", 32, 768, 256, 0)
    rows, pairs = [], []
    runs = [(int(x.split("x")[0]), int(x.split("x")[1].split(":")[0]), int(x.split(":")[1]) if ":" in x else a.rounds)
            for x in a.runs]
    for P, G, rounds in runs:
        params = GPParams(population=P, generations=G)
        for backend in a.backends:
            for r in range(rounds):
                got = {}
                modes = [m for m in MODES[r % 3:] + MODES[:r % 3] if m in a.modes]  # the order rotates by round
                for mode in modes:
                    host.MASK_CACHE_SHARE = 0.0 if mode == "copies" else SHARE
                    res = evolve(market, train_days=768, params=params, backend=backend, breeding="gpu",
                                 seed=a.seed, progress=None, reuse=mode != "off")
                    got[mode] = res
                    h = res.history
                    rows.append({"population": P, "generations": G, "backend": backend, "reuse": mode, "round": r,
                                 **{k: res.timing[k] for k in ("total_s", "evaluation_s", "breeding_s", "warmup_s")},
                                 "interpreted": sum(x["evaluated"] for x in h), "of": P * len(h),
                                 "evaluated": [x["evaluated"] for x in h],
                                 "eval_ms": [round(x["eval_ms"], 4) for x in h],
                                 "mean_nodes": [round(x["mean_nodes"], 1) for x in h],
                                 "best_train": res.best["train"]})
                host.MASK_CACHE_SHARE = SHARE
                strip = {m: [{k: v for k, v in x.items() if k not in DROP} for x in got[m].history] for m in modes}
                same = all(strip[m] == strip[modes[0]] and got[m].best == got[modes[0]].best for m in modes)
                pairs.append({"population": P, "backend": backend, "round": r, "same_run": same})
    summary = []
    for P, G, _ in runs:
        for backend in a.backends:
            for mode in a.modes:
                sel = [x for x in rows if x["population"] == P and x["backend"] == backend and x["reuse"] == mode]
                med = {k: statistics.median(x[k] for x in sel) for k in ("total_s", "evaluation_s", "breeding_s")}
                summary.append({"run": f"{P:,} × {G}", "backend": backend, "reuse": mode,
                                **{k.replace("_s", " ms"): round(v * 1e3, 1) for k, v in med.items()},
                                "interpreted": f"{sel[0]['interpreted'] / sel[0]['of']:.1%}", "runs": len(sel)})
    try:
        from numba import cuda

        dev = cuda.get_current_device().name
        dev = dev.decode() if isinstance(dev, bytes) else dev
    except Exception as exc:  # noqa: BLE001 (the record says what it could not read)
        dev = f"unknown ({exc})"
    out = {"about": "gp.evolve with reuse off, on without the day-mask cache (copies) and on with it (trees); GPU "
                    "breeding; interleaved rounds (scripts/gp_reuse_ab.py)",
           "device": dev, "versions": versions(), "date": utc_now(), "market": "synthetic, 32 stocks, 768 + 256 days",
           "what": "rows: the median of the rounds per run, backend and reuse mode (ms: timing.* of gp.evolve, after "
                   "compilation); interpreted: the share of individuals interpreted on the training set over the "
                   "run; runs: every run, with per generation the individuals interpreted, eval_ms and mean_nodes",
           "same_run": all(p["same_run"] for p in pairs), "rows": summary, "pairs": pairs, "runs": rows}
    if a.json:
        a.json.write_text(json.dumps(out, indent=1))
    print(f"{'run':>14} {'backend':>7} {'reuse':>6} {'total ms':>9} {'eval ms':>8} {'breed ms':>9} {'interp.':>8}")
    for s in summary:
        print(f"{s['run']:>14} {s['backend']:>7} {s['reuse']:>6} {s['total ms']:9.1f} {s['evaluation ms']:8.1f} "
              f"{s['breeding ms']:9.1f} {s['interpreted']:>8}")
    print("the same run in every round:", all(p["same_run"] for p in pairs))


if __name__ == "__main__":
    main()

"""A/B of the bit-sliced interpreter on grown populations: one decoded entry per node (FUSE = 0)
against the fused programs (FUSE = 1: a leaf folded into its parent's AND / OR / NOT), and the
fused kernel over a few (WPB, TW) around the registry's. The populations are the ones a seeded run at the paper's scale reaches
(25,000 individuals, 32 stocks, 768 training and 256 test days; the host's breeding with real
fitness), snapshot at a few generations, so that the programs have the sizes the evolve loop
meets late in a run (bloat). Every configuration's fitness must equal the first's, bit for bit.

Timed: one evaluator call (train and test markets), by CUDA events between the launch of the
interpreter and the end of the fitness kernel (``kernel``), and by the wall clock around the whole
call (``call``); median of --repeat after a warm-up. Then whole runs of ``gp.evolve`` (50
generations, breeding on the GPU) with the first and the best configuration. A table on stdout,
--json FILE the numbers.

    python scripts/gp_bits_ab.py --backend cuda-c --json ab.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

CONFIGS = [dict(FUSE=0), dict(FUSE=1), dict(FUSE=1, WPB=1), dict(FUSE=1, WPB=2), dict(FUSE=1, WPB=4),
           dict(FUSE=1, TW=2), dict(FUSE=1, TW=8)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="cuda-c")
    ap.add_argument("--population", type=int, default=25_000)
    ap.add_argument("--generations", type=int, default=50)
    ap.add_argument("--snapshots", type=int, nargs="+", default=[0, 25, 50])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--configs", default=None, help="JSON list of parameter dicts (default: the built-in grid)")
    ap.add_argument("--evolve", type=int, default=3, help="whole runs per configuration (0: none)")
    ap.add_argument("--stocks", type=int, default=32)
    ap.add_argument("--days", type=int, default=768)
    ap.add_argument("--test-days", type=int, default=256)
    ap.add_argument("--json", default=None)
    ap.add_argument("--profile", default=None, help="FILE: a cProfile of one more whole run (the best configuration)")
    a = ap.parse_args()

    from gpulab import device  # (before numba: it chooses the simulator or the GPU)
    from numba import cuda
    from gpulab.gp import synthetic_market
    from gpulab.gp.loop import GPParams, evolve, initial_population, next_generation
    from gpulab.gp.variants import REGISTRY
    from gpulab.timing import wall

    configs = json.loads(a.configs) if a.configs else CONFIGS
    market = synthetic_market(a.stocks, a.days + a.test_days, seed=0)
    train, test = market.split(a.days)
    v = REGISTRY.resolve("bitsliced", a.backend)
    params = GPParams(population=a.population, generations=a.generations)
    base = v.launch_params()
    evs = [(v.run(v, train, {**base, **c}), v.run(v, test, {**base, **c})) for c in configs]

    # the populations: a seeded run with the host's breeding, fitness from the first configuration
    rng = np.random.default_rng(0)
    pop = initial_population(params, int(rng.integers(2**31)))
    snaps = {}
    for g in range(max(a.snapshots) + 1):
        if g in a.snapshots:
            snaps[g] = pop
        if g == max(a.snapshots):
            break
        fit = evs[0][0](pop)[0].copy_to_host()[:len(pop)]
        pop = next_generation(pop, fit, params, int(rng.integers(2**31)), "cpu", a.backend)

    rows = []
    for g, p in snaps.items():
        ref = None
        for c, (etr, ete) in zip(configs, evs):
            got = [etr(p)[0].copy_to_host()[:len(p)].copy(), ete(p)[0].copy_to_host()[:len(p)].copy()]
            same = ref is None or all(np.array_equal(x, y) for x, y in zip(got, ref))
            ref = ref or got
            row = {"generation": g, "mean_nodes": p.total_nodes / len(p), **{**base, **c}, "same": bool(same)}
            for name, ev in (("train", etr), ("test", ete)):
                call = wall(lambda: ev(p), warmup=2, repeat=a.repeat).median_ms
                ks = []
                for _ in range(a.repeat):
                    tl = []
                    ev(p, timeline=tl)
                    cuda.synchronize()
                    marks = dict(tl)
                    if marks:  # (none on the simulator)
                        ks.append((marks["upload"] if "upload" in marks else marks["start"]).elapsed_time(
                            marks["fitness"]))
                row[f"{name}_kernel_ms"] = statistics.median(ks) if ks else float("nan")
                row[f"{name}_call_ms"] = call
            rows.append(row)
            print(f"gen {g:3d} nodes {row['mean_nodes']:6.1f} {c}  train {row['train_kernel_ms']:.3f} "
                  f"({row['train_call_ms']:.3f}) test {row['test_kernel_ms']:.3f} ({row['test_call_ms']:.3f}) "
                  f"same {same}", flush=True)

    # whole runs: the first configuration and the best at the last snapshot
    last = [r for r in rows if r["generation"] == max(a.snapshots)]
    best = min(last, key=lambda r: r["train_kernel_ms"] + r["test_kernel_ms"])
    best_cfg = {k: best[k] for k in set().union(*configs)}
    runs = []
    for c in ([configs[0], best_cfg] if a.evolve else []):
        for rep in range(a.evolve):
            r = evolve(market, train_days=a.days, params=params, backend=a.backend, seed=0, progress=False,
                       kernel_params={**base, **c}, breeding="gpu")
            t = r.timing
            runs.append({**c, "rep": rep, "total_s": t["total_s"], "evaluation_s": t["evaluation_s"],
                         "breeding_s": t["breeding_s"], "best": r.best})
            print(f"evolve {c} total {t['total_s']:.4f} s eval {t['evaluation_s']:.4f} breed {t['breeding_s']:.4f}",
                  flush=True)
    if len(runs) >= 2:
        assert all(x["best"] == runs[0]["best"] for x in runs), "the configurations found different best rules"

    if a.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        evolve(market, train_days=a.days, params=params, backend=a.backend, seed=0, progress=False,
               kernel_params={**base, **best_cfg}, breeding="gpu")
        prof.disable()
        with open(a.profile, "w") as f:
            pstats.Stats(prof, stream=f).sort_stats("cumulative").print_stats(60)
            pstats.Stats(prof, stream=f).sort_stats("tottime").print_stats(40)

    out = {"script": "scripts/gp_bits_ab.py", "args": vars(a), "device": device.info().name if not device.on_simulator() else "simulator",
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rows": rows, "evolve": runs}
    try:
        from gpulab.benchmark import versions
        out["versions"] = versions()
    except Exception:  # noqa: BLE001 (a record without versions is still a record)
        pass
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    print(f"\n{a.backend}: | gen | nodes | FUSE | WPB | TW | train kernel | test kernel | train call | same |")
    for r in rows:
        print(f"| {r['generation']} | {r['mean_nodes']:.0f} | {r['FUSE']} | {r['WPB']} | {r['TW']} | "
              f"{r['train_kernel_ms']:.3f} | {r['test_kernel_ms']:.3f} | {r['train_call_ms']:.3f} | {r['same']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

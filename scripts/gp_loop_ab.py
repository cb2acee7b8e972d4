"""Issue 29: whole GP runs at a size (`gp.evolve`, GPU breeding, reuse on), timed in one
process, for an A/B of two versions of the package run as separate processes in turn (the
caller alternates them: ``PYTHONPATH=old python scripts/gp_loop_ab.py --tag before`` and the
same with ``--tag after``). Every round of a process runs the same seeds (``--seeds``, default 0): it prints and
writes (``--json``) its `timing` (total_s after compilation, evaluation_s, breeding_s, init_s)
per run, the best rule's training fitness (the versions must agree on it), and the medians.

    python scripts/gp_loop_ab.py --runs 25000x50 --backends cuda-c numba --rounds 3 --tag after --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from gpulab.benchmark import utc_now, versions
from gpulab.device import info
from gpulab.gp.cli import market_from
from gpulab.gp.loop import GPParams, evolve


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", nargs="+", default=["25000x50"], help="POPULATIONxGENERATIONS")
    ap.add_argument("--backends", nargs="+", default=["cuda-c", "numba"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seeds", nargs="+", type=int, default=[0], help="each round runs every seed")
    ap.add_argument("--tag", default="")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--combine", nargs="+", type=Path, help="merge these outputs of both versions into --json "
                    "(rows: per version and backend, the medians over every run; no GP run)")
    ap.add_argument("--about", default="")
    a = ap.parse_args()
    if a.combine:
        return combine(a.combine, a.json, a.about)
    market = market_from("synthetic", 32, 768, 256, 0)
    runs = []
    for spec in a.runs:
        P, G = (int(x) for x in spec.split("x"))
        for backend in a.backends:
            for r, seed in ((r, seed) for r in range(a.rounds) for seed in a.seeds):
                res = evolve(market, train_days=768, params=GPParams(population=P, generations=G), backend=backend,
                             breeding="gpu", seed=seed, progress=None)
                t = res.timing
                runs.append({"tag": a.tag, "population": P, "generations": G, "backend": backend, "round": r, "seed": seed,
                             **{k: t.get(k) for k in ("total_s", "evaluation_s", "breeding_s", "init_s", "warmup_s")},
                             "best_train": res.best["train"], "eval_ms": [h["eval_ms"] for h in res.history],
                             "breed_ms": [h["breed_ms"] for h in res.history]})
                print(f"{a.tag:7} {P:>7}x{G:<3} {backend:7} round {r} seed {seed}: total {t['total_s'] * 1e3:7.1f} ms  "
                      f"eval {t['evaluation_s'] * 1e3:6.1f}  breed {t['breeding_s'] * 1e3:6.1f}  "
                      f"init {t.get('init_s', 0) * 1e3:5.1f}  best {res.best['train']:.6f}", flush=True)
    rows = []
    for spec in a.runs:
        P, G = (int(x) for x in spec.split("x"))
        for backend in a.backends:
            rs = [x for x in runs if x["population"] == P and x["backend"] == backend]
            rows.append({"tag": a.tag, "run": f"{P:,} × {G}", "backend": backend,
                         **{k.replace("_s", " ms"): round(statistics.median(x[k] for x in rs) * 1e3, 1)
                            for k in ("total_s", "evaluation_s", "breeding_s")}, "runs": len(rs)})
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps({"device": info().name, "versions": versions(), "date": utc_now(),
                                      "rows": rows, "runs": runs}, indent=1) + "\n")
    for row in rows:
        print(row)


def combine(paths: list[Path], out: Path, about: str) -> None:
    """One JSON of several processes' outputs: per version (tag) and backend, the medians over
    all their runs, and each process's median total."""
    docs = [json.loads(p.read_text()) for p in paths]
    runs = [r | {"process": i} for i, d in enumerate(docs) for r in d["runs"]]
    rows = []
    for backend, seed in dict.fromkeys((r["backend"], r.get("seed", 0)) for r in runs):
        for tag in dict.fromkeys(r["tag"] for r in runs):
            rs = [r for r in runs if r["backend"] == backend and r["tag"] == tag and r.get("seed", 0) == seed]
            med = {k: round(statistics.median(r[k] for r in rs) * 1e3, 1)
                   for k in ("total_s", "evaluation_s", "breeding_s", "init_s")}
            per = [round(statistics.median(r["total_s"] for r in rs if r["process"] == i) * 1e3, 1)
                   for i in dict.fromkeys(r["process"] for r in rs)]
            rows.append({"backend": backend, "seed": seed, "code": tag, "total ms": med["total_s"],
                         "evaluation ms": med["evaluation_s"], "breeding ms": med["breeding_s"],
                         "init ms": med["init_s"], "total per process": ", ".join(f"{x:g}" for x in per),
                         "runs": len(rs)})
    same = all(len({r["best_train"] for r in runs if r.get("seed", 0) == seed}) == 1
               for seed in {r.get("seed", 0) for r in runs})
    out.write_text(json.dumps({"about": about, "device": docs[0]["device"], "versions": docs[0]["versions"],
                               "date": docs[-1]["date"], "same_run": same, "rows": rows, "runs": runs}, indent=1) + "\n")
    for row in rows:
        print(row)


if __name__ == "__main__":
    main()

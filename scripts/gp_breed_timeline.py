"""Where a generation's breeding time goes, on a GPU: the CPU breeding against the GPU breeding's
stages (gpulab.gp.breeding_gpu.breed(timings=...)), both backends, and Population.bred (the host
validation the loop runs after either), at P individuals; medians of --repeat calls after one
warm-up. Populations are evolved a few generations first (random fitness) so the trees have the
sizes a run has. Prints a table; --json FILE writes the numbers.

    python scripts/gp_breed_timeline.py --population 25000 500000 --repeat 5 --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from gpulab.gp import breeding, breeding_gpu
from gpulab.gp.loop import GPParams, initial_population, next_generation
from gpulab.gp.programs import STAT_DEPTH, Population


def args_for(pop, fit, p: GPParams, seed):
    return (pop.code, pop.offsets, np.ascontiguousarray(pop.stats[:, STAT_DEPTH]), fit, p.elite, p.tournament,
            p.p_crossover, p.p_mutation, p.max_depth, p.max_nodes, p.mutation_depth, p.p_leaf, p.p_function,
            bool(p.parsimony), seed)


def host_ms(f, repeat: int) -> float:
    """Median milliseconds of `repeat` calls of the host function `f` after one warm-up."""
    f()
    t = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        t.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(t)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--population", type=int, nargs="+", default=[25_000])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--backends", nargs="+", default=["numba", "cuda-c"])
    a = ap.parse_args()
    rows = []
    for P in a.population:
        p = GPParams(population=P)
        rng = np.random.default_rng(1)
        pop = initial_population(p, 1)
        for g in range(5):  # grown trees, as a run has them
            pop = next_generation(pop, rng.random(P), p, 100 + g)
        fit = rng.random(P)
        row = {"population": P, "bytes": int(pop.code.size)}
        c, o, s = breeding.breed(*args_for(pop, fit, p, 7))
        row["cpu_breed_ms"] = host_ms(lambda: breeding.breed(*args_for(pop, fit, p, 7)), a.repeat)
        row["host_validate_ms"] = host_ms(lambda: Population.bred(c, o, pop, s), a.repeat)
        for backend in a.backends:
            stages = []
            for r in range(a.repeat + 1):
                tm: dict = {}
                c2, o2, s2 = breeding_gpu.breed(*args_for(pop, fit, p, 7), backend=backend, timings=tm)
                stages.append(tm)
            same = bool(np.array_equal(c, c2) and np.array_equal(o, o2) and np.array_equal(s, s2))
            for k in stages[1]:
                row[f"{backend}_{k}_ms"] = 1e3 * statistics.median(x[k] for x in stages[1:])
            row[f"{backend}_total_ms"] = sum(v for k, v in row.items() if k.startswith(backend + "_") and k.endswith("_ms")
                                             and not k.endswith("total_ms"))
            row[f"{backend}_same_as_cpu"] = same
        rows.append(row)
        print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}), flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()

"""Where a generation's breeding time goes, on a GPU: the CPU breeding against the GPU breeding's
stages (gpulab.gp.breeding_gpu.breed(timings=...)), both backends, and Population.bred (the host
validation the loop runs after either), at P individuals; medians of --repeat calls after one
warm-up. Populations are evolved a few generations first (random fitness) so the trees have the
sizes a run has. Prints a table; --json FILE writes the numbers (an object: "what", "device",
"versions", "date" in UTC, "rows").

    python scripts/gp_breed_timeline.py --population 25000 500000 --repeat 5 --json out.json

With ``--generation``: a whole generation instead — the train and test evaluations (fitness to
the host), the breeding and the validation — on three paths, each a chain of ``--repeat``
generations from the same grown population with the same seeds (so the same populations, bit
for bit: the script checks it): ``cpu`` (the CPU breeding, `Population.bred` on the host, the
evaluator uploading the code), ``gpu-host`` (the GPU breeding with host arrays in and out, then
the same host validation and upload: the loop before issue 29) and ``gpu-resident``
(`breeding_gpu.breed_resident`: the population stays on the device, validated there, read in
place by the evaluator: the loop now). Medians over the generations after one warm-up
generation; a table on stdout, --json FILE the numbers. On the simulator, tiny sizes:

    python scripts/gp_breed_timeline.py --generation --population 8 --stocks 2 --days 16 \
        --test-days 8 --repeat 2 --backends numba
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
    return (pop.code, pop.offsets, np.ascontiguousarray(pop.stats[:, STAT_DEPTH])) + settings(fit, p, seed)


def settings(fit, p: GPParams, seed):
    """The breedings' arguments after the population's arrays."""
    return (fit, p.elite, p.tournament, p.p_crossover, p.p_mutation, p.max_depth, p.max_nodes, p.mutation_depth,
            p.p_leaf, p.p_function, bool(p.parsimony), seed)


def host_ms(f, repeat: int) -> float:
    """Median milliseconds of `repeat` calls of the host function `f` after one warm-up."""
    f()
    t = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        t.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(t)


PATHS = ("cpu", "gpu-host", "gpu-resident")


def generation(path: str, pop, ev_train, ev_test, p: GPParams, seed: int, backend: str):
    """One generation on ``path``: its next population and ``{stage: ms}`` (each stage ends on
    the host: the fitness downloaded, the children downloaded or validated)."""
    t0 = time.perf_counter()
    P = len(pop)
    fit_dev = ev_train(pop)[0]
    fit = host(fit_dev)[:P].copy()
    host(ev_test(pop)[0])[:P].copy()
    t1 = time.perf_counter()
    times = {"eval_ms": 1e3 * (t1 - t0)}
    if path == "gpu-resident":
        tm: dict = {}
        on_device = None if isinstance(fit_dev, np.ndarray) else fit_dev[:P]
        pop = breeding_gpu.breed_resident(pop, *settings(fit, p, seed), backend=backend, timings=tm,
                                          fitness_device=on_device)
        t3 = time.perf_counter()
        times["validate_ms"] = 1e3 * tm["validate"]
        times["breed_ms"] = 1e3 * (t3 - t1) - times["validate_ms"]
    else:
        breed = breeding.breed if path == "cpu" else lambda *x: breeding_gpu.breed(*x, backend=backend)
        c, o, s = breed(*args_for(pop, fit, p, seed))
        t2 = time.perf_counter()
        pop = Population.bred(c, o, pop, s)
        t3 = time.perf_counter()
        times.update(breed_ms=1e3 * (t2 - t1), validate_ms=1e3 * (t3 - t2))
    times["total_ms"] = 1e3 * (t3 - t0)
    return pop, times, fit


def host(x) -> np.ndarray:
    return x if isinstance(x, np.ndarray) else x.copy_to_host()


def generation_rows(a) -> list[dict]:
    """The ``--generation`` table: per population size, backend and path, a generation's stages."""
    from gpulab.gp.market import synthetic_market
    from gpulab.gp.variants import REGISTRY

    market = synthetic_market(a.stocks, a.days + a.test_days, seed=2010)
    train, test = market.split(a.days)
    rows = []
    for P in a.population:
        p = GPParams(population=P)
        grown = grown_population(p)
        for backend in a.backends:
            v = REGISTRY.resolve(None, backend)
            kp = v.launch_params(None)
            ev_train, ev_test = v.run(v, train, kp), v.run(v, test, kp)
            finals, fits = {}, {}
            for path in PATHS:
                pop, stages, fh = grown, [], []
                for g in range(a.repeat + 1):
                    pop, t, fit = generation(path, pop, ev_train, ev_test, p, 1000 + g, backend)
                    stages.append(t)
                    fh.append(fit)
                final = pop.to_host() if hasattr(pop, "to_host") else pop
                finals[path], fits[path] = (final.code, final.offsets, final.stats), fh
                row = {"population": P, "backend": backend, "variant": v.name, "path": path,
                       "mean_nodes": grown.total_nodes / P, "generations": a.repeat}
                for k in stages[0]:
                    row[k] = statistics.median(x[k] for x in stages[1:])
                rows.append(row)
            same = all(all(np.array_equal(x, y) for x, y in zip(finals["cpu"], finals[q])) and
                       all(np.array_equal(x, y) for x, y in zip(fits["cpu"], fits[q])) for q in PATHS[1:])
            for r in rows[-len(PATHS):]:
                r["same_run_as_cpu"] = same
    return rows


def print_table(rows: list[dict]) -> None:
    cols = ("population", "backend", "path", "eval_ms", "breed_ms", "validate_ms", "total_ms", "same_run_as_cpu")
    print("  ".join(f"{c:>15}" for c in cols))
    for r in rows:
        print("  ".join(f"{r[c]:>15.3f}" if isinstance(r[c], float) else f"{str(r[c]):>15}" for c in cols), flush=True)


def grown_population(p: GPParams) -> Population:
    """A population bred 5 generations with random fitness: trees of the sizes a run has."""
    rng = np.random.default_rng(1)
    pop = initial_population(p, 1)
    for g in range(5):
        pop = next_generation(pop, rng.random(p.population), p, 100 + g)
    return pop


def provenance() -> dict:
    """What every benchmark JSON carries: the device, the versions (`gpulab.benchmark.versions`:
    python, numpy, numba, numba-cuda, pycuda, the CUDA driver on a GPU) and the date (UTC)."""
    from gpulab import benchmark, device

    return {"device": device.info().as_dict(), "versions": benchmark.versions(), "date": benchmark.utc_now()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--population", type=int, nargs="+", default=[25_000])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--backends", nargs="+", default=["numba", "cuda-c"])
    ap.add_argument("--generation", action="store_true",
                    help="time whole generations (evaluation + breeding + validation) on the three paths")
    ap.add_argument("--stocks", type=int, default=32, help="--generation: the market's stocks")
    ap.add_argument("--days", type=int, default=768, help="--generation: training days")
    ap.add_argument("--test-days", type=int, default=256, help="--generation: test days")
    a = ap.parse_args()
    if a.generation:
        rows = generation_rows(a)
        print_table(rows)
        if a.json:
            what = __doc__.split("With ``--generation``")[1].lstrip(": ").strip()
            Path(a.json).write_text(json.dumps({"what": what, **provenance(), "rows": rows}, indent=1) + "\n")
        return
    rows = []
    for P in a.population:
        p = GPParams(population=P)
        pop = grown_population(p)
        fit = np.random.default_rng(2).random(P)
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
        what = "one generation's breeding, by stage: " + __doc__.split("\n\n")[0].replace("\n", " ")
        Path(a.json).write_text(json.dumps({"what": what, **provenance(), "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()

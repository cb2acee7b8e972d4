"""Issue 29: where the host's time goes in one generation at the paper's scale (25,000
individuals, a population bred 25 generations on the GPU): the wall time per call of the
GPU breeding, the evaluation with reuse, and their parts (a device-array slice, a one-number
readback, a launch, the scan of the breeding's offsets), each the median of many calls with
the device idle before each (synchronized), on both backends. Prints a table; ``--json`` writes it."""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
from numba import cuda

from gpulab.benchmark import utc_now, versions
from gpulab.gp import breeding_gpu, resident
from gpulab.gp.cli import market_from
from gpulab.gp.loop import GPParams, initial_population, next_generation
from gpulab.gp.variants import REGISTRY


def per_call(f, n=200, setup=None):
    out = []
    for _ in range(n):
        if setup is not None:
            setup()
        cuda.synchronize()
        t = time.perf_counter()
        f()
        cuda.synchronize()
        out.append(time.perf_counter() - t)
    return statistics.median(out) * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--population", type=int, default=25000)
    ap.add_argument("--generations", type=int, default=25, help="bred before the measurement")
    ap.add_argument("--backends", nargs="+", default=["cuda-c", "numba"])
    ap.add_argument("--calls", type=float, default=1.0, help="a factor on the number of calls per median")
    a = ap.parse_args()
    m = market_from("synthetic", 32, 768, 256, 0)
    train, _ = m.split(768)
    p = GPParams(population=a.population, generations=a.generations)
    reps = a.calls
    rows = []
    for backend in a.backends:
        v = REGISTRY.resolve("bitsliced", backend)
        ev = v.run(v, train, v.launch_params(None))
        rng = np.random.default_rng(1)
        pop = initial_population(p, 1)
        for g in range(a.generations):
            fit = ev(pop, reuse=True)[0]
            fh = fit.copy_to_host()[:len(pop)]
            pop = next_generation(pop, fh, p, int(rng.integers(2**31)), "gpu", backend, fit[:len(pop)])
        parent, parent_fit = pop, ev(pop, reuse=True)[0]
        fh = parent_fit.copy_to_host()[:len(parent)]
        args = (fh, p.elite, p.tournament, p.p_crossover, p.p_mutation, p.max_depth, p.max_nodes, p.mutation_depth,
                p.p_leaf, p.p_function, p.parsimony, 7)
        keep = []

        def breed():
            keep[:] = [breeding_gpu.breed_resident(parent, *args, backend=backend, fitness_device=parent_fit[:len(parent)])]
        timings: dict = {}
        r = {"backend": backend, "mean nodes": round(parent.total_nodes / len(parent), 1),
             "breed_resident us": per_call(breed, max(2, int(100 * reps)))}
        for _ in range(20):
            t = {}
            breeding_gpu.breed_resident(parent, *args, backend=backend, fitness_device=parent_fit[:len(parent)], timings=t)
            for k, x in t.items():
                timings.setdefault(k, []).append(x)
        for k, x in timings.items():
            r[f"stage {k} us"] = statistics.median(x) * 1e6
        b = breeding_gpu._buffers(len(parent), p.max_nodes, p.mutation_depth, breeding_gpu._width(p.max_nodes, parent),
                                  p.elite)
        off = cuda.to_device(np.zeros(2 * len(parent) + 1, np.int32))  # (scratch: never a slot's own offsets)
        r["slice us"] = per_call(lambda: off[1:], max(2, int(500 * reps)))
        r["1-number copy_to_host us"] = per_call(lambda: off[5:6].copy_to_host(), max(2, int(500 * reps)))
        r["exclusive_scan us"] = per_call(lambda: resident.exclusive_scan(b.lens, off, backend), max(2, int(200 * reps)))
        r["summary copy_to_device us"] = per_call(lambda: b.summary.copy_to_device(resident.SUMMARY_START), max(2, int(500 * reps)))
        r["fitness D2D copy us"] = per_call(lambda: b.fitness.copy_to_device(parent_fit[:len(parent)]), max(2, int(500 * reps)))
        child = breeding_gpu.breed_resident(parent, *args, backend=backend, fitness_device=parent_fit[:len(parent)])
        r["evaluate parent (all) us"] = per_call(lambda: ev(parent), max(2, int(50 * reps)))
        r["evaluate child (reuse) us"] = per_call(lambda: ev(child, reuse=True), max(2, int(50 * reps)),
                                                  setup=lambda: ev(parent, reuse=True))
        assert ev.evaluated < len(child)
        r["fitness copy_to_host us"] = per_call(lambda: parent_fit.copy_to_host(), max(2, int(200 * reps)))
        rows.append(r)
    keys = list(dict.fromkeys(k for r in rows for k in r))
    for k in keys:
        print(f"{k:>32}: " + "  ".join(f"{r.get(k, ''):>10}" if isinstance(r.get(k), str) else f"{r.get(k, 0):10.1f}"
                                        for r in rows))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": cuda.get_current_device().name.decode() if isinstance(cuda.get_current_device().name, bytes)
                       else cuda.get_current_device().name, "versions": versions(), "date": utc_now(), "rows": rows}, f,
                      indent=1)


if __name__ == "__main__":
    main()

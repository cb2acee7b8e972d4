"""Probe: where the clock's initialization (evolve's timing.init_s: 3 ms in most runs, 35 ms in
some, on H100 hosts) goes. Runs evolve with 0 generations at the paper's size repeatedly, its
initial_population wrapped to time its two parts (the trees' generation, the host validation)
with the process's page faults and context switches around each."""
import resource
import statistics
import sys
import time

from gpulab.gp import loop
from gpulab.gp.cli import market_from
from gpulab.gp.loop import GPParams, evolve

rows = []
real_rhh, real_pop = loop.breeding.ramped_half_and_half, loop.Population


def ru():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return time.perf_counter(), r.ru_minflt, r.ru_nvcsw, r.ru_nivcsw


def init(params, seed):
    a = ru()
    code, offsets = real_rhh(params.population, *params.init_depth, params.max_nodes, params.p_leaf, seed)
    b = ru()
    pop = real_pop(code, offsets)
    c = ru()
    rows.append([(b[0] - a[0]) * 1e3, b[1] - a[1], b[3] - a[3], (c[0] - b[0]) * 1e3, c[1] - b[1], c[3] - b[3]])
    return pop


loop.initial_population = init
m = market_from("synthetic", 32, 768, 256, 0)
backend = sys.argv[1] if len(sys.argv) > 1 else "cuda-c"
for r in range(12):
    res = evolve(m, train_days=768, params=GPParams(population=25000, generations=0), backend=backend, seed=r,
                 progress=None, breeding="cpu")  # (the host initialization: the GPU breeding makes it on the GPU)
    x = rows[-1]
    print(f"{backend} {r:2d}: init_s {res.timing['init_s'] * 1e3:6.1f} ms | trees {x[0]:6.1f} ms, {x[1]:6d} faults, "
          f"{x[2]} preempted | validation {x[3]:6.1f} ms, {x[4]:6d} faults, {x[5]} preempted", flush=True)
print(backend, "init median", statistics.median(r[0] + r[3] for r in rows[1::2]))

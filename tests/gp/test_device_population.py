"""Chapter 3's device-resident population (gpulab.gp.breeding_gpu.breed_resident,
gpulab.gp.resident, gpulab.gp.programs.DevicePopulation): the children the GPU breeding keeps
on the device equal the CPU breeding's, with the same stats as the host validation; the device
prefix sum; the device validation rejects invalid trees; the evaluators read device code and
give the host code's results; a whole seeded run is the CPU breeding's run. Tiny sizes: these
run on numba's simulator."""

import numpy as np
import pytest

from gpulab import device
from gpulab.errors import GpulabError
from gpulab.gp import breeding, breeding_gpu, resident
from gpulab.gp.loop import GPParams, evolve, initial_population
from gpulab.gp.market import synthetic_market
from gpulab.gp.programs import STAT_DEPTH, STAT_STACK, DevicePopulation, Population, ProgramError


def _args(fitness, p, seed):
    return (fitness, p.elite, p.tournament, p.p_crossover, p.p_mutation, p.max_depth, p.max_nodes, p.mutation_depth,
            p.p_leaf, p.p_function, p.parsimony, seed)


def _cpu_generation(pop, fitness, p, seed):
    code, offsets, src = breeding.breed(pop.code, pop.offsets, np.ascontiguousarray(pop.stats[:, STAT_DEPTH]),
                                        *_args(fitness, p, seed))
    return Population.bred(code, offsets, pop, src)


def _same(host: Population, dev: DevicePopulation):
    h = dev.to_host()
    for name in ("code", "offsets", "stats"):
        assert np.array_equal(getattr(host, name), getattr(h, name)), name
    for name in ("max_stack_depth", "max_bool_depth", "max_tree_nodes", "max_program_nodes", "total_nodes"):
        assert getattr(host, name) == getattr(dev, name), name
    assert len(dev) == len(host)


@pytest.mark.parametrize("parsimony", [False, True])
def test_resident_breeding_gives_the_cpu_children_and_stats(rng, parsimony):
    """Three generations chained on the device (the second and third read the previous children
    in place) against the CPU breeding with the host validation: the same code, offsets and
    stats, and the same maxima the evaluators check."""
    p = GPParams(population=int(rng.integers(24, 40)), elite=int(rng.integers(1, 4)), tournament=3,
                 max_depth=int(rng.integers(6, 9)), max_nodes=int(rng.integers(30, 60)), p_mutation=0.15,
                 parsimony=parsimony)
    host = initial_population(p, int(rng.integers(2**31)))
    dev = host
    for _ in range(3):
        fitness = rng.normal(size=p.population).round(1)  # ties: parsimony decides some
        seed = int(rng.integers(2**31))
        host = _cpu_generation(host, fitness, p, seed)
        before = dev
        dev = breeding_gpu.breed_resident(dev, *_args(fitness, p, seed))
        assert isinstance(dev, DevicePopulation)
        if isinstance(before, DevicePopulation):  # read in place: the children went to the other slot
            assert dev._slot is not before._slot
        _same(host, dev)
    i = int(rng.integers(p.population))
    assert dev[i].buy == host[i].buy and dev[i].sell == host[i].sell


def test_a_population_overwritten_by_a_later_breeding_refuses_to_be_read(rng):
    p = GPParams(population=12, elite=1, max_nodes=40)
    pop = initial_population(p, int(rng.integers(2**31)))
    fitness = rng.normal(size=12)
    first = breeding_gpu.breed_resident(pop, *_args(fitness, p, 1))
    second = breeding_gpu.breed_resident(first, *_args(fitness, p, 2))
    kept = second.to_host()
    first.code  # still readable: the next breeding writes over it
    breeding_gpu.breed_resident(second, *_args(fitness, p, 3))
    second.to_host()  # (downloaded before: kept)
    with pytest.raises(GpulabError, match="overwritten by a later breeding"):
        first.device_arrays()
    assert not first.on_device and second.on_device  # (the third breeding wrote over first's slot only)
    third = breeding_gpu.breed_resident(kept, *_args(fitness, p, 3))  # a host population: uploaded
    assert third.total_nodes > 0


def test_an_overwritten_population_with_a_host_copy_is_read_from_that_copy(rng):
    """Evaluated, bred and uploaded again from its host copy; without one, its evaluation
    raises (never stale code)."""
    import gpulab.gp as gp

    p = GPParams(population=10, elite=1, max_nodes=40)
    market = synthetic_market(stocks=2, days=262, seed=int(rng.integers(2**31)))
    fitness = rng.normal(size=10)
    first = breeding_gpu.breed_resident(initial_population(p, int(rng.integers(2**31))), *_args(fitness, p, 1))
    second = breeding_gpu.breed_resident(first, *_args(fitness, p, 2))
    kept = second.to_host()
    want = gp.evaluate(kept, market)
    breeding_gpu.breed_resident(second, *_args(fitness, p, 3))  # writes over first's slot
    breeding_gpu.breed_resident(initial_population(p, 5), *_args(fitness, p, 4))  # and over second's
    assert not second.on_device and second.device_or_host() is kept
    assert np.array_equal(gp.evaluate(second, market), want)
    again = breeding_gpu.to_device(second, p.elite, p.max_nodes, p.mutation_depth)
    assert isinstance(again, DevicePopulation) and again.on_device and again is not second
    _same(kept, again)
    assert np.array_equal(gp.evaluate(again, market), want)
    seed = int(rng.integers(2**31))
    _same(_cpu_generation(kept, fitness, p, seed), breeding_gpu.breed_resident(second, *_args(fitness, p, seed)))
    with pytest.raises(GpulabError, match="overwritten by a later breeding"):
        gp.evaluate(first, market)


def test_device_exclusive_scan_equals_numpy(rng):
    """Lengths over two blocks of the scan (so the block totals are scanned too) and a short one."""
    from numba import cuda

    for n in (int(rng.integers(resident.SCAN_BLOCK + 2, 3 * resident.SCAN_BLOCK)), int(rng.integers(1, 9))):
        lens = rng.integers(0, 300, n).astype(np.int32)
        out = cuda.to_device(np.zeros(n + 1, np.int32))
        total = resident.exclusive_scan(cuda.to_device(lens), out)
        want = np.concatenate([[0], np.cumsum(lens)])
        assert total == want[-1] and np.array_equal(out.copy_to_host(), want)


def _validate(pop: Population, code, src, parent_stats, max_nodes=255, max_depth=12):
    """resident.validate over `pop`'s offsets with `code` (maybe corrupted) and `src`."""
    from numba import cuda

    P = len(pop)
    stats = cuda.device_array((6, 2 * P), np.int32)
    sizes = cuda.device_array(P, np.int32)
    maxima = resident.validate(cuda.to_device(code), cuda.to_device(pop.offsets), cuda.to_device(src),
                               cuda.to_device(np.ascontiguousarray(parent_stats.T)), max_nodes, max_depth,
                               cuda.device_array((P, max_nodes + 2), np.int32),
                               cuda.device_array((P, max_nodes + 8), np.uint8), stats, sizes,
                               cuda.device_array(resident.NSUMMARY, np.int32),
                               device.Readback(resident.NSUMMARY, np.int32))
    return stats.copy_to_host().T, sizes.copy_to_host(), maxima


def test_device_validation_accepts_valid_trees_and_flags_each_kind_of_bad_one(rng):
    p = GPParams(population=10, init_depth=(3, 5))
    pop = initial_population(p, int(rng.integers(2**31)))
    T = 2 * len(pop)
    scanned = np.full(T, -1, np.int64)
    stats, sizes, maxima = _validate(pop, pop.code, scanned, pop.stats)
    assert np.array_equal(stats, pop.stats) and np.array_equal(sizes, pop.nodes.sum(axis=1))
    assert (maxima["stack"], maxima["tree_nodes"]) == (pop.max_stack_depth, pop.max_tree_nodes)
    lengths = np.diff(pop.offsets)  # every tree a "copy" of a tree of the same length: accepted
    src = np.array([int(rng.choice(np.flatnonzero(lengths == lengths[t]))) for t in range(T)], np.int64)
    stats, _, _ = _validate(pop, pop.code, src, pop.stats)
    assert np.array_equal(stats, pop.stats[src])
    t = int(rng.integers(T))  # the tree to corrupt
    i, k = divmod(t, 2)
    tree = pop.tree(i, k)
    end = int(pop.offsets[t + 1]) - 1  # its root (RPN: the last byte)
    cases = []
    bad = pop.code.copy()
    bad[end] = 200  # not an opcode
    cases.append((bad, scanned, pop.stats, "unknown opcode"))
    bad = pop.code.copy()
    bad[end] = 0  # a float terminal where the boolean root was: leftover values or a float result
    cases.append((bad, scanned, pop.stats, "leftover values|returns a float"))
    wrong = scanned.copy()
    other = np.flatnonzero(lengths != lengths[t])
    assert other.size  # (ramped trees: several lengths)
    wrong[t] = int(rng.choice(other))  # a "copy" of a tree of another length
    cases.append((pop.code, wrong, pop.stats, "a copy of parent tree"))
    cases.append((pop.code, scanned, pop.stats, "over max_depth", pop.depth.max() - 1))
    for code, src, parent_stats, match, *depth in cases:
        with pytest.raises(ProgramError, match=match) as e:
            _validate(pop, code, src, parent_stats, max_depth=depth[0] if depth else 12)
        assert "GPU breeding produced" in str(e.value)
        if not depth:
            assert f"individual {i}, {('buy', 'sell')[k]} tree" in str(e.value), (str(e.value), tree)


def test_evaluator_reads_device_code_and_gives_the_host_codes_results(rng):
    from gpulab.gp.variants import REGISTRY

    market = synthetic_market(3, 24, seed=int(rng.integers(1000)))
    p = GPParams(population=6, elite=1, max_nodes=30)
    dev = breeding_gpu.breed_resident(initial_population(p, int(rng.integers(2**31))),
                                      *_args(rng.normal(size=6), p, int(rng.integers(2**31))))
    v = REGISTRY.resolve(None, "numba")
    ev = v.run(v, market, v.launch_params(None))
    fit_dev, money_dev, _ = ev(dev)
    assert dev._host is None  # read on the device: nothing downloaded
    fit_host, money_host, _ = ev(dev.to_host())
    assert np.array_equal(fit_dev.copy_to_host()[:6], fit_host.copy_to_host()[:6])
    assert np.array_equal(money_dev.copy_to_host()[:18], money_host.copy_to_host()[:18])


def test_device_resident_run_equals_the_cpu_breeding_run(rng):
    """A seeded run with the evaluation on the (simulated) device and the GPU breeding, which
    keeps the population on the device, is the CPU breeding's run: the same history and best."""
    market = synthetic_market(2, 40, seed=int(rng.integers(1000)))
    params = GPParams(population=8, generations=2, elite=1, max_nodes=40)
    seed = int(rng.integers(1000))

    def run(where):
        r = evolve(market, train_days=30, params=params, backend="numba", seed=seed, progress=None, breeding=where)
        return [{k: v for k, v in h.items() if not k.endswith("_ms")} for h in r.history], r.best

    assert run("gpu") == run("cpu")


def _needs_gpu(what: str, backend: str):
    from gpulab import cudac, device

    reason = cudac.unavailable_reason() if backend == "cuda-c" else (
        "numba's CUDA simulator runs this process" if device.on_simulator() else None)
    if reason:
        pytest.skip(f"{what}: {reason}")


@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
def test_resident_breeding_on_a_gpu_at_a_size_with_three_scan_levels(rng, backend):
    """On a GPU only: 40,000 individuals (80,000 lengths: the prefix sum's block totals are
    scanned twice more), five generations chained on the device with either backend's breeding
    kernels, against the CPU breeding and the host validation."""
    _needs_gpu("a large device-resident breeding", backend)
    p = GPParams(population=40_000, p_mutation=0.15)
    host = dev = initial_population(p, int(rng.integers(2**31)))
    assert 2 * p.population > resident.SCAN_BLOCK ** 2
    for _ in range(5):
        fitness = rng.normal(size=p.population)
        seed = int(rng.integers(2**31))
        host = _cpu_generation(host, fitness, p, seed)
        dev = breeding_gpu.breed_resident(dev, *_args(fitness, p, seed), backend=backend)
        _same(host, dev)


_HARNESS = r"""
struct dim { unsigned x; };
static dim blockIdx, blockDim = {1}, threadIdx = {0};
#define __device__
#define __forceinline__ inline
#define __global__
#define __shared__ static
#define __syncthreads()
static int atomicAdd(int *a, int v) { int o = *a; *a += v; return o; }
static int atomicMin(int *a, int v) { int o = *a; if (v < o) *a = v; return o; }
static int atomicMax(int *a, int v) { int o = *a; if (v > o) *a = v; return o; }
#include "resident.cu"
extern "C" void run_check(const u8 *code, const int *off, const i64 *src, const int *ps, i64 mn, i64 md, int *h,
                          i64 hs, u8 *k, i64 ks, int *stats, int *sizes, int *summary, i64 P) {
  for (i64 c = 0; c < P; c++) { blockIdx.x = (unsigned)c; check_children(code, off, src, ps, mn, md, h, hs, k, ks, stats,
                                                                        sizes, summary, P); }
}
"""


def _c_check(tmp_path):
    """resident.cu's check_children compiled for the host (one thread per block, the blocks in a
    loop; atomics as plain updates), as ``check(pop, code, src, parent_stats, max_nodes, max_depth)``."""
    import ctypes

    from tests.gp.host_cxx import compile_for_host, ptr

    lib = compile_for_host(tmp_path, resident.CUDA_SOURCE, resident.CUDA_DEFINES, _HARNESS)
    i = ctypes.c_longlong

    def check(pop, code, src, parent_stats, max_nodes, max_depth):
        P = len(pop)
        ps = np.ascontiguousarray(parent_stats.T)
        h, k = np.zeros((P, max_nodes + 2), np.int32), np.zeros((P, max_nodes + 8), np.uint8)
        stats, sizes, summary = np.zeros((6, 2 * P), np.int32), np.zeros(P, np.int32), resident.SUMMARY_START.copy()
        lib.run_check(ptr(code), ptr(pop.offsets), ptr(src), ptr(ps), i(max_nodes), i(max_depth), ptr(h),
                      i(h.shape[1]), ptr(k), i(k.shape[1]), ptr(stats), ptr(sizes), ptr(summary), i(P))
        return stats.T, sizes, summary

    return check


def _numba_check(pop, code, src, parent_stats, max_nodes, max_depth):
    """resident.check_children (numba) on the same inputs, its outputs as host arrays."""
    from numba import cuda

    P = len(pop)
    stats, sizes = cuda.device_array((6, 2 * P), np.int32), cuda.device_array(P, np.int32)
    summary = cuda.to_device(resident.SUMMARY_START)
    resident.check_children[1, resident.CHECK_THREADS](
        cuda.to_device(code), cuda.to_device(pop.offsets), cuda.to_device(src),
        cuda.to_device(np.ascontiguousarray(parent_stats.T)), max_nodes, max_depth,
        cuda.device_array((P, max_nodes + 2), np.int32), cuda.device_array((P, max_nodes + 8), np.uint8), stats, sizes,
        summary)
    return stats.copy_to_host().T, sizes.copy_to_host(), summary.copy_to_host()


def test_cuda_c_validation_compiled_for_the_host_equals_the_numba_kernel(rng, tmp_path):
    """resident.cu's check_children (its logic, compiled by the host's C++ compiler) against the
    numba kernel on the simulator: valid trees, copies, and each kind of bad tree, the same
    stats, sizes and summary; the summary's facts checked too."""
    c_check = _c_check(tmp_path)
    pop = initial_population(GPParams(population=10, init_depth=(3, 5)), int(rng.integers(2**31)))
    T, lengths = 2 * len(pop), np.diff(pop.offsets)
    scanned = np.full(T, -1, np.int64)
    copies = np.array([int(rng.choice(np.flatnonzero(lengths == lengths[t]))) for t in range(T)], np.int64)
    t = int(rng.integers(T))
    unknown = pop.code.copy()
    unknown[pop.offsets[t + 1] - 1] = 200
    wrong = scanned.copy()
    wrong[t] = int(rng.choice(np.flatnonzero(lengths != lengths[t])))
    deepest = int(pop.depth.max())
    cases = [(pop.code, scanned, 255, 12, 0), (pop.code, copies, 255, 12, 0), (unknown, scanned, 255, 12, 1),
             (pop.code, wrong, 255, 12, resident.COPY_LENGTH), (pop.code, scanned, 255, deepest - 1, resident.OVER_DEPTH),
             (pop.code, scanned, int(lengths.max()) - 1, 12, resident.OVER_NODES)]
    for code, src, max_nodes, max_depth, kind in cases:
        got_c = c_check(pop, code, src, pop.stats, max_nodes, max_depth)
        got_numba = _numba_check(pop, code, src, pop.stats, max_nodes, max_depth)
        for a, b in zip(got_c, got_numba):
            assert np.array_equal(a, b), kind
        stats, sizes, summary = got_c
        assert np.array_equal(sizes, pop.nodes.sum(axis=1))
        bad = np.flatnonzero(stats[:, 4])
        assert summary[resident.BAD] == bad.size and (kind == 0) == (bad.size == 0)
        if kind:
            assert summary[resident.FIRST_BAD] == bad[0] and stats[bad[0], 4] == kind
        else:
            want = pop.stats[src] if src is copies else pop.stats
            assert np.array_equal(stats, want)
            # (the copies' stats are their sources', whose deepest stack may be another tree's)
            assert summary[resident.MAX_STACK] == want[:, STAT_STACK].max()
            assert summary[resident.MAX_PROGRAM] == pop.max_program_nodes


@pytest.mark.parametrize("init", ["gpu", "host"])
def test_evolve_allocates_and_uploads_before_its_clock(rng, monkeypatch, init):
    """With the GPU breeding, `evolve` allocates the kept buffers at the run's size and runs the
    prefix sum at that size before its clock starts; the initial population is made on the GPU
    (``gpu``: nothing is uploaded) or, where its scratch would not fit (``host``,
    `initial_fits` made False), made on the host and uploaded once, its seconds reported apart
    (timing.upload_s). No breeding in the timed loop builds buffers or uploads a population; each
    reads a DevicePopulation."""
    events = []
    real_buffers, real_upload, real_breed = breeding_gpu._Buffers, breeding_gpu._upload, breeding_gpu.breed_resident

    class Counted(real_buffers):
        def __init__(self, *key):
            events.append(("buffers", key[0]))
            super().__init__(*key)

    def upload(*a, **k):
        events.append(("upload",))
        return real_upload(*a, **k)

    def breed(parents, *a, **k):
        events.append(("breed", type(parents).__name__, 2 * len(parents) in resident._SCRATCH))
        return real_breed(parents, *a, **k)

    monkeypatch.setattr(breeding_gpu, "_Buffers", Counted)
    monkeypatch.setattr(breeding_gpu, "_upload", upload)
    monkeypatch.setattr(breeding_gpu, "breed_resident", breed)
    if init == "host":
        monkeypatch.setattr(breeding_gpu, "initial_fits", lambda *a: False)
    breeding_gpu.clear_cache()
    P = int(rng.integers(6, 12))
    params = GPParams(population=P, generations=2, elite=1, max_nodes=40)
    r = evolve(synthetic_market(2, 40, seed=int(rng.integers(1000))), train_days=30, params=params, backend="numba",
               seed=int(rng.integers(1000)), progress=None, breeding="gpu")
    breeds = [i for i, e in enumerate(events) if e[0] == "breed"]
    assert len(breeds) == 3  # the compile warm-up's (4 individuals), then the run's two generations
    assert events[breeds[0]][1] == "Population" and ("buffers", P) in events[breeds[0]:breeds[1]]
    sized = events.index(("buffers", P))  # (before it, the warm-up's 4 parents go up: a host population)
    assert events[sized:breeds[1]].count(("upload",)) == (1 if init == "host" else 0)
    timed = events[breeds[1]:]
    assert timed == [("breed", "DevicePopulation", True)] * 2, timed
    assert r.settings["breeding"] == "gpu" and r.timing["init_s"] > 0
    assert (r.timing["upload_s"] > 0) if init == "host" else r.timing["upload_s"] == 0.0

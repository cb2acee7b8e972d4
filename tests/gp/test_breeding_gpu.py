"""Chapter 3's GPU breeding (gpulab.gp.breeding_gpu): the same children as the CPU breeding,
bit for bit, for fresh seeds and settings (so validity, typing, limits and the operators'
statistics follow from the CPU breeding's tests in test_evolve.py); seeded runs repeat;
``breeding=`` / ``--breeding`` and their errors. Small populations: these run on the simulator.

The CUDA C twin (breeding.cu) runs only on a GPU; without one its logic is still checked here:
compiled as plain C++ by the host compiler (the CUDA keywords defined away, each launch a loop
over the threads) it must give the CPU breeding's children too."""

import ctypes
import json

import numpy as np
import pytest

import gpulab.gp as gp
from gpulab.errors import GpulabError
from gpulab.gp import breeding, breeding_gpu
from gpulab.gp.loop import GPParams, evolve, initial_population
from gpulab.gp.market import synthetic_market
from gpulab.gp.programs import STAT_DEPTH
from tests.gp.host_cxx import compile_for_host, ptr
from tests.test_cli import assert_one_line_error, gpulab


def _breed_args(pop, fitness, p, seed):
    return (pop.code, pop.offsets, np.ascontiguousarray(pop.stats[:, STAT_DEPTH]), fitness, p.elite, p.tournament,
            p.p_crossover, p.p_mutation, p.max_depth, p.max_nodes, p.mutation_depth, p.p_leaf, p.p_function,
            p.parsimony, seed)


def test_gpu_children_are_the_cpu_childrens_bit_for_bit(rng):
    """Three generations from a fresh population, settings drawn fresh, tight limits (so that
    children over a limit fall back to their parent); each generation's GPU children must equal
    the CPU's, and go through the typed validation of Population.bred."""
    for trial in range(2):
        p_cross = float(rng.uniform(0.4, 0.7))
        params = GPParams(population=int(rng.integers(40, 72)), elite=int(rng.integers(0, 4)),
                          tournament=int(rng.integers(2, 8)), p_crossover=p_cross,
                          p_mutation=float(rng.uniform(0.2, 1 - p_cross)), max_depth=int(rng.integers(6, 9)),
                          max_nodes=int(rng.integers(30, 60)), init_depth=(2, 5), parsimony=bool(trial % 2))
        pop = initial_population(params, int(rng.integers(2**31)))
        changed = copied = 0
        for _ in range(3):
            fitness = rng.normal(size=len(pop)).round(1)  # ties: parsimony and index order decide some tournaments
            args = _breed_args(pop, fitness, params, int(rng.integers(2**31)))
            cpu = breeding.breed(*args)
            gpu = breeding_gpu.breed(*args)
            for name, a, b in zip(("code", "offsets", "src"), cpu, gpu):
                assert a.dtype == b.dtype and np.array_equal(a, b), (trial, name)
            changed += int((gpu[2] < 0).sum())
            copied += int((gpu[2] >= 0).sum())
            pop = gp.Population.bred(*gpu[:2], pop, gpu[2])
            assert pop.depth.max() <= max(params.max_depth, params.init_depth[1])
            assert pop.nodes.max() <= params.max_nodes
        assert changed > 0 and copied > 0  # both paths of the write kernel ran


def test_gpu_breeding_run_repeats_and_equals_the_cpu_breeding_run(rng):
    market = synthetic_market(4, 96, seed=int(rng.integers(2**31)))
    params = GPParams(population=32, generations=2)
    seed = int(rng.integers(2**31))

    def run(where):
        r = evolve(market, train_days=64, params=params, backend="cpu", seed=seed, progress=None, breeding=where)
        assert r.settings["breeding"] == where
        return [{k: v for k, v in h.items() if not k.endswith("_ms")} for h in r.history], r.best

    first = run("gpu")
    assert run("gpu") == first
    assert run("cpu") == first
    history = first[0]
    assert [h["generation"] for h in history] == [0, 1, 2]
    assert len({(h["train_mean"], h["mean_nodes"]) for h in history}) > 1  # the populations did change


@pytest.mark.parametrize("bad", ["tpu", "GPU", 1])
def test_evolve_breeding_must_be_gpu_or_cpu(bad):
    with pytest.raises(GpulabError, match="breeding must be one of gpu, cpu"):
        evolve(synthetic_market(2, 16, seed=1), params=GPParams(population=4, generations=0), breeding=bad)


def test_default_breeding_is_the_gpu_from_the_measured_size_on_a_gpu_only(monkeypatch):
    from gpulab import device
    from gpulab.gp import loop

    at = loop.GPU_BREEDING_FROM
    monkeypatch.setattr(device, "on_simulator", lambda: False)  # as on a GPU
    assert [loop.default_breeding(p) for p in (None, 1, at - 1, at, 10 * at)] == ["cpu", "cpu", "cpu", "gpu", "gpu"]
    assert loop.check_breeding(None, at) == "gpu" and loop.check_breeding("cpu", at) == "cpu"
    assert loop.default_breeding(10 * at, "cpu") == "cpu"  # a CPU evaluation keeps its breeding on the host
    assert loop.default_breeding(10 * at, "cuda-c") == "gpu"
    monkeypatch.setattr(device, "on_simulator", lambda: True)  # the simulator: always the host's
    assert loop.default_breeding(10 * at) == "cpu"


def test_cli_help_states_the_measured_threshold(tmp_path):
    p = gpulab("gp", "evolve", "--help", cwd=tmp_path)
    from gpulab.gp.loop import GPU_BREEDING_FROM

    assert p.returncode == 0 and f"{GPU_BREEDING_FROM:,} individuals" in " ".join(p.stdout.split())


def test_cli_breeding_recorded_default_and_one_line_error(tmp_path):
    small = ["gp", "evolve", "--backend", "cpu", "--population", "12", "--generations", "1", "--stocks", "2",
             "--days", "32", "--test-days", "16", "--out", str(tmp_path), "--json"]
    default = "cpu"  # 12 individuals: below GPU_BREEDING_FROM, the host's breeding is the faster
    for flag, want in (([], default), (["--breeding", "gpu"], "gpu")):
        p = gpulab(*small, *flag, "--stem", want + str(len(flag)), cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        summary = json.loads(p.stdout)
        assert summary["breeding"] == want
        assert json.loads((tmp_path / f"{want}{len(flag)}.json").read_text())["settings"]["breeding"] == want
    assert_one_line_error(gpulab(*small, "--breeding", "tpu", cwd=tmp_path), "--breeding", "invalid choice: 'tpu'")


def _random_params(rng, trial):
    p_cross = float(rng.uniform(0.3, 0.7))
    return GPParams(population=int(rng.integers(40, 200)), elite=int(rng.integers(0, 4)),
                    tournament=int(rng.integers(1, 8)), p_crossover=p_cross,
                    p_mutation=float(rng.uniform(0.2, 1 - p_cross)), max_depth=int(rng.integers(5, 10)),
                    max_nodes=int(rng.integers(25, 90)), mutation_depth=int(rng.integers(1, 6)), init_depth=(2, 5),
                    parsimony=bool(trial % 2))


def _generations_agree(rng, breed, trials=4, generations=3):
    """``breed`` (breeding.breed's signature) gives the CPU breeding's children, generation after
    generation, for fresh settings; returns how many trees changed (the premise: some did)."""
    changed = 0
    for trial in range(trials):
        params = _random_params(rng, trial)
        pop = initial_population(params, int(rng.integers(2**31)))
        for _ in range(generations):
            args = _breed_args(pop, rng.normal(size=len(pop)).round(1), params, int(rng.integers(2**31)))
            cpu, other = breeding.breed(*args), breed(*args)
            for name, a, b in zip(("code", "offsets", "src"), cpu, other):
                assert a.dtype == b.dtype and np.array_equal(a, b), (trial, name)
            changed += int((cpu[2] < 0).sum())
            pop = gp.Population.bred(*cpu[:2], pop, cpu[2])
    return changed


_HARNESS = r"""
struct dim { unsigned x; };
static dim blockIdx, blockDim = {1}, threadIdx = {0};
#define __device__
#define __forceinline__ inline
#define __global__
#define __shared__
#define __syncthreads()
#include "breeding.cu"
#define LOOP(P, call) for (i64 c = 0; c < P; c++) { blockIdx.x = (unsigned)c; call; }
extern "C" void run_plan(const u8 *code, const int *off, const int *td, const double *fit, const int *sizes,
    const i64 *el, i64 ne, i64 P, i64 nt, double pc, double pm, i64 md, i64 mn, i64 mut, double pl, double pf, int par,
    i64 seed, int *st, i64 sts, int *ops, int *left, u8 *grown, i64 *plan, u64 *ga) {
  LOOP(P, breed_plan(code, off, td, fit, sizes, el, ne, P, nt, pc, pm, md, mn, mut, pl, pf, par, seed, st, sts, ops,
                     left, grown, plan, ga))
}
extern "C" void run_init(i64 lo, i64 hi, i64 mn, double pl, i64 seed, u8 *grown, int *ops, int *left, int *lens,
    i64 *src, i64 T, int *off, u8 *code) {
  LOOP(T, init_trees(lo, hi, mn, pl, seed, grown, mn + 8, ops, left, hi + 2, lens, src, T))
  for (i64 t = 0; t < T; t++) off[t + 1] = off[t] + lens[t];
  LOOP(T, init_write(grown, mn + 8, off, code, T))
}
extern "C" void run_elites(const double *fit, const int *sizes, i64 P, int par, i64 chunk, i64 *cand, i64 *el,
                           i64 n) {  // (one thread a block: the reductions have nothing to combine)
  i64 blocks = (P + chunk - 1) / chunk;
  LOOP(blocks, elite_candidates(fit, sizes, P, par, chunk, cand, n))
  blockIdx.x = 0;
  select_elites(fit, sizes, par, cand, blocks * n, el, n);
}
extern "C" void run_write(const u8 *code, const int *off, const i64 *plan, const u64 *ga, const int *oo, u8 *out,
    i64 *src, i64 P, i64 mn, double pl, i64 mut, int *ops, int *left) {
  LOOP(P, breed_write(code, off, plan, ga, oo, out, src, P, mn, pl, mut, ops, left))
}
"""


def _host_compiled_twin(tmp_path):
    lib = compile_for_host(tmp_path, breeding_gpu.CUDA_SOURCE, breeding_gpu.CUDA_DEFINES, _HARNESS)
    i, f = ctypes.c_longlong, ctypes.c_double

    def breed(code, offsets, tree_depth, fitness, elite, tournament, p_cross, p_mut, max_depth, max_nodes, mut_depth,
              p_leaf, p_func, parsimony, seed):
        P = (offsets.size - 1) // 2
        sizes, elites, longest = breeding.sizes_and_elites(offsets, fitness, elite, parsimony)
        plan, grown_at = np.zeros((P, breeding.NPLAN), np.int64), np.zeros(P, np.uint64)
        ops, left = np.zeros((P, mut_depth + 2), np.int32), np.zeros((P, mut_depth + 2), np.int32)
        st, grown = np.zeros((P, longest + 2), np.int32), np.zeros((P, max_nodes + 8), np.uint8)
        depth = np.ascontiguousarray(tree_depth, np.int32)
        lib.run_plan(ptr(code), ptr(offsets), ptr(depth), ptr(fitness), ptr(sizes), ptr(elites), i(elites.size), i(P),
                     i(tournament), f(p_cross), f(p_mut), i(max_depth), i(max_nodes), i(mut_depth), f(p_leaf),
                     f(p_func), ctypes.c_int(int(parsimony)), i(seed), ptr(st), i(longest + 2), ptr(ops), ptr(left),
                     ptr(grown), ptr(plan), ptr(grown_at))
        out_off = np.zeros(2 * P + 1, np.int32)
        out_off[1:] = np.cumsum(plan[:, -2:].ravel())
        out, src = np.zeros(max(int(out_off[-1]), 1), np.uint8), np.zeros(2 * P, np.int64)
        lib.run_write(ptr(code), ptr(offsets), ptr(plan), ptr(grown_at), ptr(out_off), ptr(out), ptr(src), i(P),
                      i(max_nodes), f(p_leaf), i(mut_depth), ptr(ops), ptr(left))
        return out[:out_off[-1]], out_off, src

    return breed


def test_cuda_c_twin_compiled_for_the_host_gives_the_cpu_children(rng, tmp_path):
    assert _generations_agree(rng, _host_compiled_twin(tmp_path)) > 0


def _init_settings(rng, redraw: bool = False):
    """Random initialization settings ``(P, lo, hi, max_nodes, p_leaf, seed)``. With ``redraw``:
    settings (and a seed found for them) in which some tree's first draw is over ``max_nodes``,
    so that the redraw loop runs; otherwise any, the population sizes 1, 31, 32, 33 among them."""
    if not redraw:
        lo = int(rng.integers(1, 4))
        hi = int(rng.integers(lo, 7))
        return (int(rng.choice([1, 2, 31, 32, 33, int(rng.integers(3, 60))])), lo, hi, int(rng.integers(8, 40)),
                float(rng.uniform(0.1, 0.5)), int(rng.integers(2**31)))
    P, mn, pl = int(rng.integers(20, 60)), int(rng.integers(8, 16)), float(rng.uniform(0.1, 0.3))
    for _ in range(100):
        seed = int(rng.integers(2**31))
        if _redrawn(P, 2, 6, mn, pl, seed):
            return P, 2, 6, mn, pl, seed
    raise AssertionError("no seed of 100 redraws a tree: the settings cannot test the redraw")


def _redrawn(P, lo, hi, mn, pl, seed) -> bool:
    """Whether some tree of this initialization was redrawn (its first draw passed ``mn``):
    against a limit no tree of ``hi`` levels reaches (``2**(hi + 2)`` nodes)."""
    return bool(breeding.ramped_half_and_half(P, lo, hi, 2 ** (hi + 2), pl, seed)[1].tolist()
                != breeding.ramped_half_and_half(P, lo, hi, mn, pl, seed)[1].tolist())


def test_cuda_c_initialization_compiled_for_the_host_gives_the_cpu_population(rng, tmp_path):
    """breeding.cu's init_trees / init_write, compiled as C++ for the host: the CPU's initial
    population byte for byte, redrawn trees included, over several settings."""
    lib = compile_for_host(tmp_path, breeding_gpu.CUDA_SOURCE, breeding_gpu.CUDA_DEFINES, _HARNESS)
    i, f = ctypes.c_longlong, ctypes.c_double
    for k in range(6):
        P, lo, hi, mn, pl, seed = _init_settings(rng, redraw=k == 0)
        T = 2 * P
        grown, lens = np.zeros((T, mn + 8), np.uint8), np.full(T, -7, np.int32)
        ops, left, src = np.zeros((T, hi + 2), np.int32), np.zeros((T, hi + 2), np.int32), np.zeros(T, np.int64)
        off, code = np.zeros(T + 1, np.int32), np.full(T * mn, 0xEE, np.uint8)
        lib.run_init(i(lo), i(hi), i(mn), f(pl), i(seed), ptr(grown), ptr(ops), ptr(left), ptr(lens), ptr(src), i(T),
                     ptr(off), ptr(code))
        want_code, want_off = breeding.ramped_half_and_half(P, lo, hi, mn, pl, seed)
        assert np.array_equal(off, want_off) and np.array_equal(code[:off[-1]], want_code)
        assert (src == -1).all()


def test_cuda_c_breeding_on_the_gpu_gives_the_cpu_children(rng):
    from gpulab import cudac

    reason = cudac.unavailable_reason()
    if reason:
        pytest.skip(f"GPU breeding in CUDA C: {reason}")
    assert _generations_agree(rng, lambda *args: breeding_gpu.breed(*args, backend="cuda-c")) > 0


def test_gpu_breeding_keeps_its_buffers_between_generations(rng):
    """A second generation of the same population size, bred from the first one's children
    (new code in the kept buffers), allocates no new scratch — the plan cache holds one
    `_Buffers`, the same object — and still gives the CPU breeding's children."""
    params = _random_params(rng, 0)
    pop = initial_population(params, int(rng.integers(2**31)))
    breeding_gpu.clear_cache()
    kept = []
    for _ in range(2):
        args = _breed_args(pop, rng.normal(size=len(pop)).round(1), params, int(rng.integers(2**31)))
        got = breeding_gpu.breed(*args)
        kept.append(list(breeding_gpu._BUFFERS.values()))
        cpu = breeding.breed(*args)
        for a, b in zip(cpu, got):
            assert np.array_equal(a, b)
        assert (cpu[2] < 0).any()  # the premise: some trees changed, so the next parents differ
        pop = gp.Population.bred(*cpu[:2], pop, cpu[2])
    assert len(kept[0]) == len(kept[1]) == 1 and kept[0][0] is kept[1][0]


def _elite_inputs(rng, P: int, n: int, tied: bool):
    """Fitness and sizes for choosing ``n`` elites of ``P``. ``tied``: ``n + 1`` individuals
    (more where ``P`` allows) share the best fitness, half of them the smaller size, so the
    tie rules decide every elite; else five fitness levels with many individuals on each, so
    the elites span levels and the rules decide within them. Sizes from two values."""
    fitness = rng.integers(0, 5, P).astype(np.float64) / 4 - 1.0
    sizes = rng.integers(5, 7, P).astype(np.int32)
    if tied:
        top = rng.choice(P, size=min(P, n + 1 + int(rng.integers(0, 3))), replace=False)
        fitness[top] = 0.5
        sizes[top[: max(1, len(top) // 2)]] = 5
    return fitness, sizes


def _elite_cases(rng, big: bool = False):
    """``(P, n, parsimony, fitness, sizes)``: populations of 1 to 257 with 1, 2 or 5 elites, and
    `DEVICE_ELITES_MAX` elites of a few more individuals (with ``big``, 25,000 and 100,003
    individuals too, for a GPU); parsimony and the two kinds of inputs (`_elite_inputs`) in
    turn. Checks the premises over the cases: some choice spans several fitness values, and
    parsimony changes some choice."""
    cases = [(P, n) for P in (1, 2, 31, 32, 33, 97, 257) for n in sorted({1, min(P, 2), min(P, 5)})]
    cases.append((breeding_gpu.DEVICE_ELITES_MAX + 3, breeding_gpu.DEVICE_ELITES_MAX))
    if big:
        cases += [(25_000, 2), (100_003, breeding_gpu.DEVICE_ELITES_MAX)]
    out, spans, by_size = [], False, False
    for k, (P, n) in enumerate(cases):
        parsimony = k % 2 == 0
        fitness, sizes = _elite_inputs(rng, P, n, tied=k % 4 < 2)
        want = breeding._elites(fitness, sizes, n, parsimony)
        spans |= len(set(fitness[want])) > 1
        by_size |= want.tolist() != breeding._elites(fitness, sizes, n, not parsimony).tolist()
        out.append((P, n, parsimony, fitness, sizes, want))
    assert spans and by_size, (spans, by_size)
    return out


def _chunks(P: int):
    """Chunks of `elite_candidates` for ``P`` individuals: one block, and several (of 7 and 32)."""
    return (max(P, 1), 7, 32)


def test_select_elites_is_the_cpu_choice_with_ties_at_every_block_size(rng):
    """choose_elites in numba (the simulator, or the GPU) picks the CPU's `_elites`, in order,
    with ties in fitness (broken by size with parsimony, then by index) and elites across
    fitness levels, for populations of 1 to 257 (and 25,000 and 100,003 on a GPU), blocks of 1
    to 64 threads and the library's `ELITE_THREADS`, its candidates from one block or several (a
    chunk of 7 or 32 individuals, and the library's on a GPU). On a GPU every case takes every
    block size and chunk; on the simulator, whose threads are Python's, each case one of each in
    turn."""
    from numba import cuda

    from gpulab import device

    sim = device.on_simulator()
    blocks = (1, 2, 32, 64, breeding_gpu.ELITE_THREADS)
    for k, (P, n, parsimony, fitness, sizes, want) in enumerate(_elite_cases(rng, big=not sim)):
        chunks = (*_chunks(P), breeding_gpu.ELITE_CHUNK)
        combos = ([(t, c) for t in blocks for c in chunks] if not sim
                  else [(blocks[k % 4], chunks[k % 3])] if n < 8 else [(4, P)])
        for threads, chunk in combos:
            out = cuda.to_device(np.full(n, -7, np.int64))
            breeding_gpu.choose_elites(cuda.to_device(fitness), cuda.to_device(sizes), parsimony, out, "numba",
                                       threads, chunk)
            assert out.copy_to_host().tolist() == want.tolist(), (P, n, parsimony, threads, chunk)


def test_select_elites_cuda_c_compiled_for_the_host_is_the_cpu_choice(rng, tmp_path):
    lib = compile_for_host(tmp_path, breeding_gpu.CUDA_SOURCE, breeding_gpu.CUDA_DEFINES, _HARNESS)
    i = ctypes.c_longlong
    for k, (P, n, parsimony, fitness, sizes, want) in enumerate(_elite_cases(rng, big=True)):
        for chunk in (*_chunks(P), breeding_gpu.ELITE_CHUNK):
            cand, out = np.full(-(-P // chunk) * n, -7, np.int64), np.full(n, -7, np.int64)
            lib.run_elites(ptr(fitness), ptr(sizes), i(P), ctypes.c_int(int(parsimony)), i(chunk), ptr(cand), ptr(out),
                           i(n))
            assert out.tolist() == want.tolist(), (P, n, parsimony, chunk)
            for b, lo in enumerate(range(0, P, chunk)):  # each block's candidates: its n best, then -1
                best = breeding._elites(fitness[lo:lo + chunk], sizes[lo:lo + chunk], n, parsimony) + lo
                assert cand[b * n:(b + 1) * n].tolist() == [*best.tolist(), *[-1] * (n - best.size)], (P, n, chunk, b)


def test_select_elites_cuda_c_on_the_gpu_is_the_cpu_choice(rng):
    from numba import cuda

    from gpulab import cudac

    reason = cudac.unavailable_reason()
    if reason:
        pytest.skip(f"select_elites in CUDA C: {reason}")
    for P, n, parsimony, fitness, sizes, want in _elite_cases(rng, big=True):
        for threads in (1, 32, breeding_gpu.ELITE_THREADS):
            for chunk in (*_chunks(P), breeding_gpu.ELITE_CHUNK):
                out = cuda.to_device(np.full(n, -7, np.int64))
                breeding_gpu.choose_elites(cuda.to_device(fitness), cuda.to_device(sizes), parsimony, out, "cuda-c",
                                           threads, chunk)
                assert out.copy_to_host().tolist() == want.tolist(), (P, n, threads, chunk)


def test_choose_elites_refuses_what_would_give_a_wrong_choice():
    """A block that is not a power of two (the reduction would skip threads), over the shared
    arrays, a chunk below 1, or a candidates' buffer of another size: one clear error each."""
    from numba import cuda

    f, s = cuda.to_device(np.arange(12.0)), cuda.to_device(np.ones(12, np.int32))
    out = cuda.to_device(np.zeros(3, np.int64))
    for kw, why in (({"threads": 3}, "power of two"), ({"threads": 2 * breeding_gpu.ELITE_THREADS}, "power of two"),
                    ({"chunk": 0}, "chunk"), ({"chunk": 5, "cand": cuda.to_device(np.zeros(8, np.int64))}, "need 9")):
        with pytest.raises(GpulabError, match=why):
            breeding_gpu.choose_elites(f, s, False, out, **kw)


def test_gpu_breeding_with_nan_fitness_picks_the_cpus_elites(rng, monkeypatch):
    """A fitness with NaN (not a total order: the device's choice would not be the CPU's) is
    chosen on the host (the device's choice is not called): the children are still the CPU's,
    bit for bit."""

    def device_choice(*a, **k):
        raise AssertionError("elites chosen on the device from a fitness with NaN")

    monkeypatch.setattr(breeding_gpu, "_select_elites", device_choice)
    params = GPParams(population=int(rng.integers(12, 30)), elite=3, max_nodes=40, max_depth=6, init_depth=(2, 3))
    pop = initial_population(params, int(rng.integers(2**31)))
    fitness = rng.normal(size=len(pop)).round(1)
    fitness[rng.choice(len(pop), 3, replace=False)] = np.nan
    args = _breed_args(pop, fitness, params, int(rng.integers(2**31)))
    for a, b in zip(breeding.breed(*args), breeding_gpu.breed(*args)):
        assert np.array_equal(a, b)


def test_breed_resident_without_host_fitness_needs_the_device_elites(rng):
    """fitness=None (the loop's early queueing) is one clear error, naming why, where the elites
    cannot be chosen on the device: over DEVICE_ELITES_MAX of them, or no fitness on the device;
    and the host breeding refuses it too."""
    from numba import cuda

    from gpulab.gp.loop import next_generation

    P = breeding_gpu.DEVICE_ELITES_MAX + 3
    for elite, on_device, why in ((breeding_gpu.DEVICE_ELITES_MAX + 1, True, "over DEVICE_ELITES_MAX"),
                                  (2, False, "fitness_device is not")):
        params = GPParams(population=P, elite=elite, max_nodes=40, max_depth=6, init_depth=(2, 3))
        pop = initial_population(params, int(rng.integers(2**31)))
        fit = cuda.to_device(rng.normal(size=P)) if on_device else None
        args = (params.elite, params.tournament, params.p_crossover, params.p_mutation, params.max_depth,
                params.max_nodes, params.mutation_depth, params.p_leaf, params.p_function, params.parsimony, 1)
        with pytest.raises(GpulabError, match=why):
            breeding_gpu.breed_resident(pop, None, *args, fitness_device=fit)
    with pytest.raises(GpulabError, match="breeding_on='gpu'"):
        next_generation(pop, None, params, 1, "cpu")


def test_best_record_of_a_run_stopped_before_its_training_fitness_came_back():
    """A stop between the early queueing of a breeding and the training fitness: the record
    waits for that fitness (the best of it, test unknown); if that fails, it is empty."""
    from gpulab.gp.loop import _best_record

    pop = initial_population(GPParams(population=5, max_nodes=30, init_depth=(2, 3)), 3)
    fit = np.array([0.1, 0.7, -0.2, 0.7, 0.0])
    rec = _best_record(None, (pop, None, 4, lambda: fit))
    assert rec["generation"] == 4 and rec["train"] == 0.7 and rec["test"] is None
    assert rec["buy"] == pop[1].buy.sexpr()

    def fails():
        raise RuntimeError("device lost")

    def interrupted():
        raise KeyboardInterrupt

    assert _best_record(None, (pop, None, 4, fails)) == {}
    assert _best_record(None, (pop, None, 4, interrupted)) == {}  # (the interrupt that stopped the run is raised)


@pytest.mark.parametrize("elite", [1, 5])
def test_warm_up_breeds_as_the_run_does_and_the_run_queues_it_early(rng, monkeypatch, elite):
    """The compile warm-up's breeding takes the device path the run's generations take (the
    elites chosen on the device where the run's are, so their kernel is compiled before the
    clock); with the elites on the device, each generation's breeding is queued before the
    host waits for the training fitness (no host fitness passed), otherwise after it."""
    from gpulab.gp import loop

    calls, real = [], loop.next_generation

    def spy(pop, fitness, params, seed, breeding_on="cpu", backend="numba", fitness_device=None, wait=True):
        calls.append((len(pop), fitness is None,
                      breeding_gpu.elites_on_device(fitness_device, len(pop), params.elite)))
        return real(pop, fitness, params, seed, breeding_on, backend, fitness_device, wait)

    monkeypatch.setattr(loop, "next_generation", spy)
    monkeypatch.setattr(breeding_gpu, "DEVICE_ELITES_MAX", 3)  # (a small population can pass it)
    P = int(rng.integers(6, 12))
    params = GPParams(population=P, generations=2, elite=elite, max_nodes=40, init_depth=(2, 3))
    evolve(synthetic_market(2, 40, seed=int(rng.integers(1000))), train_days=30, params=params, backend="numba",
           seed=int(rng.integers(1000)), progress=None, breeding="gpu")
    early = elite <= 3
    assert calls[0] == (4, False, min(elite, 4) <= 3)  # the warm-up: 4 individuals, at most 4 elites
    assert calls[1:] == [(P, early, early)] * 2, calls

r"""The GP loop: evolve trading rules on a training period, report them on a test period.

Per generation: evaluate the population on the training days (the fitness that drives
selection) and on the test days that follow them (out-of-sample, never used for selection),
then breed the next population: on the GPU ([`gpulab.gp.breeding_gpu`][gpulab.gp.breeding_gpu], one thread
per child) or on the host ([`gpulab.gp.breeding`][gpulab.gp.breeding], compiled with numba: the
reference), both with typed subtree crossover and mutation on the flat byte code, tournament
selection, elitism, depth and length limits, and both drawing from the same counter-based
streams: the same seed gives the same run, bit for bit, with either breeding.

Fitness is the mean over stocks of ROI − buy-and-hold ROI over the period. Periods of
different length are compared per 100 days, as the paper's figures do: ``fitness × 100 / D``.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from gpulab import device
from gpulab import progress as _progress
from gpulab.errors import GpulabError
from gpulab.gp import breeding
from gpulab.gp.host import check_int, check_market_arg, check_variant_args
from gpulab.gp.market import Market
from gpulab.gp.programs import STAT_DEPTH, DevicePopulation, Population
from gpulab.gp.variants import REGISTRY


@dataclass
class GPParams:
    """The GP run's settings (defaults: the paper's scale where it says, Koza's otherwise)."""

    population: int = 25_000
    generations: int = 50
    tournament: int = 7
    elite: int = 2
    p_crossover: float = 0.8
    p_mutation: float = 0.1  # the rest is reproduction
    max_depth: int = 12  # a tree's height, root = 1
    max_nodes: int = 255  # per tree
    init_depth: tuple = (2, 5)  # ramped half-and-half: mean ~12.8 nodes per individual (both trees)
    mutation_depth: int = 4
    p_leaf: float = 0.3  # grow: chance of a terminal above the depth limit
    p_function: float = 0.9  # crossover points: internal nodes preferred (Koza's 90%)
    parsimony: bool = False  # lexicographic parsimony (on equal fitness the smaller wins): see the chapter

    def check(self) -> "GPParams":
        """Raise a [`GpulabError`][gpulab.errors.GpulabError] naming the first setting out of range."""
        for name, minimum in (("population", 1), ("generations", 0), ("tournament", 1), ("elite", 0),
                              ("max_depth", 2), ("max_nodes", 3), ("mutation_depth", 1)):
            check_int(getattr(self, name), f"params.{name}", minimum)
        if self.elite > self.population:
            raise GpulabError(f"params.elite = {self.elite} is over params.population = {self.population}")
        for name in ("p_crossover", "p_mutation", "p_leaf", "p_function"):
            x = getattr(self, name)
            if isinstance(x, bool) or not isinstance(x, (int, float, np.floating)) or not 0 <= x <= 1:
                raise GpulabError(f"params.{name} must be a probability in [0, 1], got {x!r}")
        if self.p_crossover + self.p_mutation > 1:
            raise GpulabError(f"params.p_crossover + params.p_mutation = {self.p_crossover + self.p_mutation} is over 1")
        lo, hi = (tuple(self.init_depth) + (None, None))[:2] if isinstance(self.init_depth, (tuple, list)) else (None, None)
        if not (isinstance(lo, (int, np.integer)) and isinstance(hi, (int, np.integer)) and 1 <= lo <= hi <= self.max_depth):
            raise GpulabError(f"params.init_depth must be (lo, hi) with 1 <= lo <= hi <= max_depth = {self.max_depth}, "
                              f"got {self.init_depth!r}")
        return self


@dataclass
class EvolutionResult:
    """A run's record: one entry per generation, the best rule, and where the time went.
    ``interrupted``: the run was stopped (Ctrl-C) and holds the generations it finished; its
    ``best`` is then the last finished generation's, or the best on training of the generation
    it stopped in (``best["test"]`` None) when that generation's breeding had already started."""

    settings: dict
    history: list = field(default_factory=list)
    best: dict = field(default_factory=dict)
    timing: dict = field(default_factory=dict)
    interrupted: bool = False

    def to_json(self) -> dict:
        return {"schema": "gpulab-gp-evolve/1", "settings": self.settings, "history": self.history,
                "best": self.best, "timing": self.timing, "interrupted": self.interrupted,
                "generations_done": self.history[-1]["generation"] if self.history else None}


class EvolutionInterrupted(KeyboardInterrupt):
    """Ctrl-C during [`evolve`][gpulab.gp.loop.evolve] or [`experiment`][gpulab.gp.loop.experiment]:
    still a `KeyboardInterrupt`, carrying what finished in ``result`` (an
    [`EvolutionResult`][gpulab.gp.loop.EvolutionResult] marked ``interrupted``, or the experiment's
    dict with ``"interrupted": True`` and the runs done)."""

    def __init__(self, result):
        done = len(result.history) if isinstance(result, EvolutionResult) else len(result.get("runs", ()))
        what = "generation(s)" if isinstance(result, EvolutionResult) else "run(s)"
        super().__init__(f"interrupted after {done} {what}")
        self.result = result


def initial_population(params: GPParams, seed: int) -> Population:
    """Ramped half-and-half, typed, seeded."""
    lo, hi = params.init_depth
    code, offsets = breeding.ramped_half_and_half(params.population, lo, hi, params.max_nodes, params.p_leaf, seed)
    return Population(code, offsets)


def _breeding_kernels(backend: str) -> str:
    """The GPU breeding's kernels for an evaluation ``backend``: its CUDA C ones with
    ``"cuda-c"``, its numba ones otherwise."""
    return "cuda-c" if backend == "cuda-c" else "numba"


def _initial_on_gpu(params: GPParams, breeding_on: str) -> bool:
    """Whether [`evolve`][gpulab.gp.loop.evolve] makes its initial population on the GPU: with
    the GPU breeding, whose buffers it goes into, when the trees fit the device validation's
    limit (`MAX_TREE_NODES`; a longer limit is the host's to report, as it does) and its scratch
    fits the device's free memory ([`initial_fits`][gpulab.gp.breeding_gpu.initial_fits])."""
    from gpulab.gp import breeding_gpu
    from gpulab.gp.programs import MAX_TREE_NODES

    return (breeding_on == "gpu" and params.max_nodes <= MAX_TREE_NODES
            and breeding_gpu.initial_fits(params.population, params.init_depth[1], params.max_nodes))


def _gpu_initial(params: GPParams, seed: int, backend: str):
    """[`initial_population`][gpulab.gp.loop.initial_population] made on the GPU
    ([`breeding_gpu.initial_population`][gpulab.gp.breeding_gpu.initial_population]): the same
    population, already where the evaluators and the GPU breeding read it."""
    from gpulab.gp import breeding_gpu

    lo, hi = params.init_depth
    return breeding_gpu.initial_population(params.population, lo, hi, params.max_nodes, params.p_leaf, seed,
                                           params.elite, params.mutation_depth,
                                           _breeding_kernels(backend))


BREEDINGS = ("gpu", "cpu")


# The population from which the GPU breeding is the default. Measured on an H100 (2026-11-26,
# scripts/gp_breed_timeline.py --generation, docs/benchmarks/gp-generation-h100.json): one whole
# generation (train and test evaluation, breeding, validation), the population kept on the device
# (breed_resident) against the CPU breeding (Population.bred on the host, the evaluator uploading
# the code). CUDA C: 1.33 against 0.77 ms at 1,000 individuals, 1.48 against 1.46 at 5,000 (a tie),
# 1.96 against 4.44 at 25,000, 14.0 against 84.9 at 500,000. At 10,000 that run's CUDA C row was
# out of line (3.23 against 2.05, its breeding twice its neighbours'); measured again alone
# (docs/benchmarks/gp-generation-10k-h100.json): 1.88 against 2.36 in CUDA C, 2.04 against 2.52 in
# numba. So from 10,000 the device wins with either backend; below, the host's breeding is faster
# (the GPU's share is launches, not work). (The old threshold, 100,000, was measured with the
# children going back to the host each generation: docs/benchmarks/gp-breeding-h100.json.)
GPU_BREEDING_FROM = 10_000


def _elites_on_device(fitness_device, params: GPParams) -> bool:
    """Whether the GPU breeding can pick the elites from ``fitness_device`` on the device (then
    it needs no host fitness: [`breeding_gpu.elites_on_device`][gpulab.gp.breeding_gpu.elites_on_device])."""
    from gpulab.gp import breeding_gpu

    return breeding_gpu.elites_on_device(fitness_device, params.population, params.elite)


def default_breeding(population: int | None = None, backend: str | None = None) -> str:
    """The faster breeding as measured: ``"gpu"`` on a GPU (not numba's simulator) for
    ``population`` >= `GPU_BREEDING_FROM` (10,000) when the evaluation runs there too
    (``backend`` is not ``"cpu"``), ``"cpu"`` otherwise. Both give the same children for the
    same seed; the GPU one wins where there is enough work to hide its launches and copies (the
    chapter's "Breeding on the GPU" has the measurements)."""
    if (population is not None and population >= GPU_BREEDING_FROM and backend != "cpu"
            and not device.on_simulator()):
        return "gpu"
    return "cpu"


def next_generation(pop: Population, fitness: np.ndarray | None, params: GPParams, seed: int,
                    breeding_on: str = "cpu", backend: str = "numba", fitness_device=None, wait: bool = True):
    """Selection, crossover, mutation, elitism: one call into compiled code, on the host
    (``breeding_on="cpu"``: the reference, validated on the host with
    [`Population.bred`][gpulab.gp.programs.Population.bred]) or the GPU (``"gpu"``: CUDA C
    kernels when ``backend`` is ``"cuda-c"``, numba's otherwise; the children stay on the
    device as a [`DevicePopulation`][gpulab.gp.programs.DevicePopulation], validated there by
    [`gpulab.gp.resident`][gpulab.gp.resident]); the same children either way.
    ``fitness_device``: ``fitness`` as the evaluator left it on the device, if it did (the GPU
    breeding reads it there instead of uploading ``fitness``). ``wait=False``: returns a function
    that returns the children: the GPU breeding's kernels are queued and the function waits for
    them (the host breeding is done at once). ``fitness=None``: the GPU breeding with the elites
    chosen on the device ([`breeding_gpu.elites_on_device`][gpulab.gp.breeding_gpu.elites_on_device]),
    which reads only ``fitness_device``."""
    if fitness is None and breeding_on != "gpu":
        raise GpulabError("next_generation: fitness=None needs breeding_on='gpu' (the host breeding reads the "
                          "fitness on the host)")
    args = (None if fitness is None else np.ascontiguousarray(fitness, np.float64), params.elite, params.tournament,
            params.p_crossover, params.p_mutation, params.max_depth, params.max_nodes, params.mutation_depth,
            params.p_leaf, params.p_function, bool(params.parsimony), seed)
    if breeding_on == "gpu":
        from gpulab.gp import breeding_gpu

        return breeding_gpu.breed_resident(pop, *args, backend=_breeding_kernels(backend),
                                           fitness_device=fitness_device, wait=wait)
    code, offsets, src = breeding.breed(pop.code, pop.offsets, np.ascontiguousarray(pop.stats[:, STAT_DEPTH]), *args)
    children = Population.bred(code, offsets, pop, src)
    return children if wait else lambda: children


# --8<-- [start:evolve]
def evolve(market: Market, *, train_days: int | None = None, test_market: Market | None = None,
           params: GPParams | None = None, variant: str | None = None, backend: str = "numba",
           seed: int = 0, progress: bool | Callable[[str], None] | None = True, kernel_params: dict | None = None,
           breeding: str | None = None, reuse: bool = True) -> EvolutionResult:
    """Evolve buy/sell rules on ``market``'s first ``train_days`` evaluation days and report them
    on the rest (or on ``test_market`` when given; then all of ``market`` is training data).

    Args:
        market: the data.
        train_days: training days, in [1, market.days - 1] (default: 3/4 of the market's days).
        test_market: a separate test market (then all of ``market`` is training data).
        params: population size, generations, operators ([`GPParams`][gpulab.gp.loop.GPParams]).
        variant: the evaluator: any registry entry; ``None`` (default): the backend's best
            (``bitsliced`` on ``numba`` / ``cuda-c``, ``cpu_bitsliced`` on ``cpu``).
        backend: ``"numba"``, ``"cuda-c"`` or ``"cpu"``.
        seed: makes the run reproducible (a whole number >= 0).
        progress: ``True``: a progress bar over the generations (on stderr, drawn on a terminal,
            see `gpulab.progress`); a callable: called with one line per
            generation; ``None`` / ``False``: quiet.
        kernel_params: override the variant's compile-time parameters.
        breeding: ``"gpu"`` ([`gpulab.gp.breeding_gpu`][gpulab.gp.breeding_gpu]: its CUDA C kernels
            with ``backend="cuda-c"``, its numba kernels otherwise) or ``"cpu"``
            ([`gpulab.gp.breeding`][gpulab.gp.breeding]); ``None`` (default): the faster for this
            population size ([`default_breeding`][gpulab.gp.loop.default_breeding]: on a GPU, the
            GPU from 10,000 individuals unless ``backend="cpu"``).
            Both give the same children for the same seed. Recorded as ``settings["breeding"]``.
        reuse: an individual the breeding copied unchanged (reproduction, elitism, or an operator
            whose child broke a limit) keeps its parent's fitness instead of being interpreted
            again, and a changed individual's other tree is read from the last generation's day
            masks instead of being interpreted (`gpulab.gp.host.Evaluator`'s ``reuse``, with
            variants that support it; the masks take 16 bytes per tree, 64-day word and stock
            on each of the training and test sets, where a quarter of the free device memory
            holds them: `gpulab.gp.host.MASK_CACHE_SHARE`); the same run either way. Each
            generation's row records the individuals interpreted on the training set
            (``evaluated``).

    Returns:
        [`EvolutionResult`][gpulab.gp.loop.EvolutionResult]: per generation the best and mean training fitness, the test
        fitness of the best-on-training rule, the population's mean on the test period, mean
        size, and times (evaluation, breeding); the final best rule.

    Raises:
        GpulabError: an argument of the wrong kind or out of range, named in the message (checked
            before any work). EvolutionInterrupted: Ctrl-C during the generations; a
            ``KeyboardInterrupt`` whose ``result`` holds the generations finished.
    """
    params = _check_evolve(market, train_days, test_market, params, variant, backend, seed, progress, kernel_params)
    breeding_on = check_breeding(breeding, params.population, backend)
    if not isinstance(reuse, (bool, np.bool_)):
        raise GpulabError(f"reuse must be True or False, got {reuse!r}")
    reuse = bool(reuse)
    if test_market is None:
        train, test = market.split(market.days * 3 // 4 if train_days is None else train_days)
    else:
        train, test = market, test_market
    v = REGISTRY.resolve(variant, backend)
    variant = v.name
    kp = v.launch_params(kernel_params)
    ev_train, ev_test = v.run(v, train, kp), v.run(v, test, kp)
    rng = np.random.default_rng(seed)
    t_warm = time.perf_counter()
    # compile the kernels (JIT, or numba's disk cache) and upload the markets before the clock starts:
    # the evaluation, the breeding, and the evaluation of children that reuses their parents' fitness
    warm = GPParams(**{**asdict(params), "population": 4, "elite": min(params.elite, 4)})
    parents = initial_population(warm, 0)
    ev_train(parents, reuse=reuse), ev_test(parents, reuse=reuse)
    # (the breeding as the run calls it: reading the evaluator's fitness on the device, with the
    # elites chosen there too, which compiles their kernel: 0.38 s on the clock otherwise)
    children = next_generation(parents, np.zeros(4), warm, 0, breeding_on, backend, ev_train.fitness_device)
    if reuse and v.policy is not None and v.policy.lists:
        ev_train(children, reuse=reuse), ev_test(children, reuse=reuse)
    children[0].buy.sexpr()  # (the best rule's way out, as the run's end takes it: its one-tree check compiled)
    on_gpu = _initial_on_gpu(params, breeding_on)
    if on_gpu:  # (its kernels compiled too)
        _gpu_initial(warm, 0, backend)
    thaw = _gc_frozen()
    try:
        seed0 = int(rng.integers(2**31))
        if on_gpu:  # (its buffers made off the clock)
            from gpulab.gp import breeding_gpu

            breeding_gpu.reserve_initial(params.population, params.init_depth[1], params.max_nodes, params.elite,
                                         params.mutation_depth, _breeding_kernels(backend))
        t0 = time.perf_counter()
        pop = _gpu_initial(params, seed0, backend) if on_gpu else initial_population(params, seed0)
        t_init = time.perf_counter() - t0  # (the clock: initialization + the generations; the warm-up apart)
        # (a variant that compiles each population into its kernels compiles generation 0 on the clock)
        evals = (ev_train, ev_test) if backend != "cpu" and not (v.policy and v.policy.compiled) else ()
        pop, t_up = _warm_at_size(pop, params, evals, breeding_on, backend, reuse)
        t_start = time.perf_counter() - t_init - t_up
        warmup_s = t_start - t_warm  # the compile warm-up, then the one at the run's size
        settings = {**{k: (list(x) if isinstance(x, tuple) else x) for k, x in asdict(params).items()},
                    "variant": variant, "backend": backend, "breeding": breeding_on, "reuse": bool(reuse), "seed": seed,
                    "stocks": train.stocks,
                    "train_days": train.days, "test_days": test.days, "test_stocks": test.stocks,
                    "initial_mean_nodes": pop.total_nodes / len(pop)}
        result = EvolutionResult(settings)
        per100_train, per100_test = 100.0 / train.days, 100.0 / test.days
        t_eval = t_breed = 0.0
        last = None  # (population, index of its best, row) of the last generation evaluated
        current = None  # (population, index of its best on training, generation, its training fitness)
        pbar = _progress.bar(total=params.generations + 1, desc="generations", unit="gen",
                             disable=None if progress is True else True)
    except BaseException:
        thaw()
        raise
    try:
        with pbar, _progress.interruptible("this generation") as stop:
            for g in range(params.generations + 1):
                t0 = time.perf_counter()
                # both periods queued before the host waits for either, and the breeding behind
                # them where it reads the fitness on the device and picks the elites there (the
                # GPU breeding, up to DEVICE_ELITES_MAX elites); otherwise it is queued once the
                # training fitness is back, while the device evaluates the test period (t_q: the
                # queueing, counted as breeding). The host then waits for the training fitness,
                # the test fitness and the children, in turn
                train_done = ev_train.launch(pop, reuse=reuse, to_host=True)
                test_done = ev_test.launch(pop, reuse=reuse, to_host=True)
                breed = g < params.generations and not stop.requested
                t_q, children = time.perf_counter(), None
                early = breed and breeding_on == "gpu" and _elites_on_device(ev_train.fitness_device, params)
                if early:  # (a stop from here on finds the last generation's population overwritten)
                    current = (pop, None, g, lambda: (train_done(), ev_train.fitness_host[:len(pop)].copy())[1])
                    children = next_generation(pop, None, params, int(rng.integers(2**31)), breeding_on, backend,
                                               ev_train.fitness_device, wait=False)
                t_q = time.perf_counter() - t_q
                train_done()
                fit = ev_train.fitness_host[:len(pop)].copy()
                best = int(np.argmax(fit))
                current = (pop, best, g, float(fit[best]))
                if breed and not early and not stop.requested:
                    t_late = time.perf_counter()
                    children = next_generation(pop, fit, params, int(rng.integers(2**31)), breeding_on, backend,
                                               ev_train.fitness_device, wait=False)
                    t_q += time.perf_counter() - t_late
                test_done()
                fit_test = ev_test.fitness_host[:len(pop)].copy()
                t1 = time.perf_counter() - t_q
                row = {"generation": g, "train_best": float(fit[best]), "train_mean": float(fit.mean()),
                       "test_of_best": float(fit_test[best]), "test_mean": float(fit_test.mean()),
                       "train_best_per100": float(fit[best] * per100_train),
                       "test_of_best_per100": float(fit_test[best] * per100_test),
                       "mean_nodes": pop.total_nodes / len(pop), "evaluated": ev_train.evaluated,
                       "eval_ms": (t1 - t0) * 1e3,
                       "breed_ms": 0.0}
                last = (pop, best, row)
                result.history.append(row)  # (with the best it names: an interrupt in breeding keeps both)
                t_eval += t1 - t0
                t_b = time.perf_counter() - t_q  # breeding alone: the row's bookkeeping above is in total_s only
                if children is not None:
                    pop = children()
                t2 = time.perf_counter()
                row["breed_ms"] = (t2 - t_b) * 1e3
                t_breed += t2 - t_b
                pbar.set_postfix_str(f"train {row['train_best_per100']:+.3f}, test {row['test_of_best_per100']:+.3f} "
                                     f"per 100 days", refresh=False)
                pbar.update()
                if callable(progress) and progress is not True:
                    progress(f"gen {g:3d}  train best {row['train_best_per100']:+.4f}  test of best "
                             f"{row['test_of_best_per100']:+.4f}  (per 100 days)  mean size {row['mean_nodes']:.1f}  "
                             f"eval {row['eval_ms']:.1f} ms  breed {row['breed_ms']:.1f} ms")
                if stop.requested and g < params.generations:
                    raise KeyboardInterrupt
    except (KeyboardInterrupt, SystemError) as exc:
        if not _progress.is_interrupt(exc):
            raise
        result.interrupted = True
        raise EvolutionInterrupted(result) from None
    finally:  # an interrupted run keeps its best so far and its times
        thaw()
        result.best = _best_record(last, current)
        result.timing = {"total_s": time.perf_counter() - t_start, "evaluation_s": t_eval, "breeding_s": t_breed,
                         "evaluations": 2 * len(result.history), "warmup_s": warmup_s, "init_s": t_init,
                         "upload_s": t_up,
                         "what": "total_s: initialization (the initial population: init_s, made on the device with "
                                 "breeding gpu where it fits, else on the host and then, with breeding gpu, uploaded: "
                                 "upload_s) + every generation's evaluations (train and test) and breeding + the loop's "
                                 "bookkeeping; breeding_s: the next_generation calls alone (the children and their "
                                 "validation: on the host, or on the device with breeding gpu), called while the device "
                                 "evaluates (with breeding gpu and the elites chosen on the device, right after both "
                                 "evaluations are queued; otherwise once the training fitness is back): the host's "
                                 "time in the call (with breeding gpu, queueing the kernels) plus, after the test "
                                 "fitness is back, its wait for the children; evaluation_s: the rest of the host's "
                                 "time until both fitnesses are back; "
                                 "warmup_s (not in total_s): kernel compilation, market upload, and the device buffers "
                                 "for the run's size (one evaluation of the initial population, two with reuse; the GPU "
                                 "breeding's and initialization's buffers)"}
    return result
# --8<-- [end:evolve]


def _best_record(last, current) -> dict:
    """The run's ``best``: the best rule of the last generation recorded (``last``: population,
    index, row). A run stopped (an error, a second Ctrl-C) while the next generation was being
    evaluated may have queued that generation's breeding, which writes over the recorded
    generation's device buffers: then the best on training of the generation being evaluated
    (``current``: population, index, generation, training fitness), whose test fitness is not
    known (``None``); when its index is ``None`` (stopped before its training fitness came
    back), the fourth item is a function that waits for that fitness, and the record is empty
    if it fails. Empty before any fitness came back."""
    if last is not None:
        p, best, row = last
        if not (isinstance(p, DevicePopulation) and isinstance(p.device_or_host(), DevicePopulation)
                and not p.on_device):
            return {"buy": p[best].buy.sexpr(), "sell": p[best].sell.sexpr(), "train": row["train_best"],
                    "test": row["test_of_best"], "generation": row["generation"]}
    if current is not None:
        p, best, g, train = current
        if best is None:
            try:
                fit = train()
            except BaseException:  # noqa: BLE001 (the error or interrupt that stopped the run is the one raised)
                return {}
            best = int(np.argmax(fit))
            train = float(fit[best])
        return {"buy": p[best].buy.sexpr(), "sell": p[best].sell.sexpr(), "train": train, "test": None,
                "generation": g}
    return {}


def _gc_frozen() -> Callable[[], None]:
    """Python's cyclic garbage collector told to skip every object alive now (`gc.freeze`), until
    the returned function is called (`gc.unfreeze`): the objects of the warm-up's compilations
    (numba's: over a hundred thousand) are then not traversed by a full collection during the
    run (one took 39 ms on the 2-core development machine in such a process). A guard: whether
    a full collection fell inside a timed run was not measured. New objects are collected as
    usual. Does nothing when the collector is off or something froze objects already (the
    caller's freeze is left alone)."""
    import gc

    if not gc.isenabled() or gc.get_freeze_count():
        return lambda: None
    gc.freeze()
    return gc.unfreeze


def _warm_at_size(pop: Population, params: GPParams, evaluators, breeding_on: str, backend: str, reuse: bool = False):
    """[`evolve`][gpulab.gp.loop.evolve]'s warm-up at the run's size, off the clock: what the
    first generation would otherwise do once and no other does. With the GPU breeding and a host
    initial population, its kept buffers for this population size
    ([`reserve`][gpulab.gp.breeding_gpu.reserve]), then the initial population uploaded into
    them ([`to_device`][gpulab.gp.breeding_gpu.to_device]: on the clock, returned as its
    seconds), so that the evaluators and the first breeding read it in place (an initial
    population made on the GPU is there already: nothing to do); then one call of each of ``evaluators`` (the GPU ones) on the initial population (two
    with ``reuse``: its fitness and day-mask buffers are used in turn), the results dropped, which
    allocates their buffers for this size. Changes no result.
    Returns ``(population, upload seconds)``."""
    t_up = 0.0
    if breeding_on == "gpu" and not isinstance(pop, DevicePopulation):
        from gpulab.gp import breeding_gpu

        breeding_gpu.reserve(pop, params.elite, params.max_nodes, params.mutation_depth,
                             _breeding_kernels(backend))
        t0 = time.perf_counter()
        pop = breeding_gpu.to_device(pop, params.elite, params.max_nodes, params.mutation_depth)
        t_up = time.perf_counter() - t0
    for ev in evaluators:  # (twice with reuse: both of its fitness and day-mask buffers)
        for _ in range(2 if reuse else 1):
            ev.launch(pop, reuse=reuse, to_host=True)()  # (and the pinned buffer the fitness comes back in)
    return pop, t_up


def check_breeding(breeding: str | None, population: int | None = None, backend: str | None = None) -> str:
    """``breeding`` (``"gpu"``, ``"cpu"`` or ``None``: [`default_breeding`][gpulab.gp.loop.default_breeding]
    for ``population`` individuals evaluated on ``backend``), else a GpulabError naming it."""
    if breeding is None:
        return default_breeding(population, backend)
    if not isinstance(breeding, str) or breeding not in BREEDINGS:
        raise GpulabError(f"breeding must be one of {', '.join(BREEDINGS)} (or None: the faster for the population size), "
                          f"got {breeding!r}")
    return breeding


def _check_evolve(market, train_days, test_market, params, variant, backend, seed, progress, kernel_params) -> GPParams:
    """Every argument of [`evolve`][gpulab.gp.loop.evolve], before any work: GpulabErrors that name it."""
    check_market_arg(market)
    if test_market is None:
        if train_days is not None:
            check_int(train_days, "train_days", 1)
            if train_days >= market.days:
                raise GpulabError(f"train_days = {train_days} must be below the market's {market.days} evaluation "
                                  "days (the rest is the test period)")
        elif market.days < 2:
            raise GpulabError(f"market has {market.days} evaluation day: it needs 2 or more (train and test)")
    else:
        check_market_arg(test_market, "test_market")
        if train_days is not None:
            raise GpulabError("train_days and test_market exclude each other: with a test_market all of market "
                              "is training data")
    if params is None:
        params = GPParams()
    elif not isinstance(params, GPParams):
        raise GpulabError(f"params must be a gpulab.gp.GPParams or None, got {type(params).__name__}")
    params.check()
    check_variant_args(variant, backend, kernel_params)
    check_int(seed, "seed", 0)
    if not (progress is None or isinstance(progress, bool) or callable(progress)):
        raise GpulabError(f"progress must be True, False, None or a callable, got {type(progress).__name__}")
    return params


def write(result: EvolutionResult, out: str | Path, stem: str = "gp-evolve", extra: dict | None = None) -> list[Path]:
    """``<stem>.json`` and ``<stem>.png`` (train vs test fitness per generation) in ``out``."""
    from gpulab import benchmark, device

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    data = result.to_json()
    data.update({"device": device.info().as_dict(), "versions": benchmark.versions(),
                 "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, **(extra or {}))
    path = out / f"{stem}.json"
    path.write_text(json.dumps(data, indent=1) + "\n")
    return [path, plot([result], out / f"{stem}.png", [""])]


def plot(results: list[EvolutionResult], path: Path, labels: list[str], title: str = "") -> Path:
    """Train and test fitness (per 100 days) against the generation, one colour per run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=120)
    colors = plt.get_cmap("tab10")
    for k, (r, lab) in enumerate(zip(results, labels)):
        g = [h["generation"] for h in r.history]
        ax.plot(g, [h["train_best_per100"] for h in r.history], color=colors(k), linestyle="--",
                label=f"{lab} train (best)".strip())
        ax.plot(g, [h["test_of_best_per100"] for h in r.history], color=colors(k), label=f"{lab} test (same rule)".strip())
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xlabel("generation")
    ax.set_ylabel("ROI − buy-and-hold ROI, per 100 days")
    ax.set_title(title or "GP trading rules: training vs out-of-sample")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


# ----------------------------------------------------------------------------- the chapter's experiment


# --8<-- [start:experiment]
EXPERIMENT_CONFIGS = [(8, 256), (8, 768), (32, 256), (32, 768)]  # (training stocks, training days)


def experiment(*, stocks_total: int = 64, test_days: int = 256, configs=EXPERIMENT_CONFIGS, seeds=(0, 1, 2),
               params: GPParams | None = None, variant: str | None = None, backend: str = "cpu",
               market_seed: int = 2010, progress: bool | Callable[[str], None] | None = True) -> dict:
    """The paper's section 6 at a small scale: train on S stocks over the D days just before a
    fixed test period, then measure the best rule on the test period over all ``stocks_total``
    stocks (new days, mostly new stocks). Several seeds per configuration.

    ``variant=None``: the backend's best. ``progress``: as in [`evolve`][gpulab.gp.loop.evolve],
    over the (configuration, seed) runs. Ctrl-C raises
    [`EvolutionInterrupted`][gpulab.gp.loop.EvolutionInterrupted] whose ``result`` is this
    function's dict over the runs finished, with ``"interrupted": True``."""
    from gpulab.gp.market import synthetic_market

    params, configs, seeds = _check_experiment(stocks_total, test_days, configs, seeds, params, variant, backend,
                                               market_seed, progress)
    variant = REGISTRY.resolve(variant, backend).name
    longest = max(d for _, d in configs)
    market = synthetic_market(stocks_total, longest + test_days, seed=market_seed)
    start = market.start
    test = market.window(start + longest, test_days)
    runs = []
    say = progress if callable(progress) and progress is not True else None
    pbar = _progress.bar(total=len(configs) * len(seeds), desc="runs", unit="run",
                         disable=None if progress is True else True)
    try:
        with pbar:
            for S, D in configs:
                sub = _stocks(market, S)
                train = sub.window(start + longest - D, D)
                for seed in seeds:
                    if say:
                        say(f"== {S} stocks × {D} training days, seed {seed}")
                    pbar.set_description_str(f"{S} stocks × {D} days, seed {seed}", refresh=False)
                    r = evolve(train, test_market=test, params=params, variant=variant, backend=backend, seed=seed,
                               progress=None)
                    last = r.history[-1]
                    runs.append({"stocks": S, "train_days": D, "seed": seed, "history": r.history, "best": r.best,
                                 "final_train_per100": last["train_best_per100"],
                                 "final_test_per100": last["test_of_best_per100"], "seconds": r.timing["total_s"]})
                    pbar.update()
                    if say:
                        say(f"   train {last['train_best_per100']:+.4f}  test {last['test_of_best_per100']:+.4f} "
                            f"per 100 days ({r.timing['total_s']:.1f} s)")
    except (KeyboardInterrupt, SystemError) as exc:
        if not _progress.is_interrupt(exc):
            raise
        data = _experiment_data(runs, configs, seeds, params, variant, backend, market_seed, stocks_total, test_days)
        data["interrupted"] = True
        raise EvolutionInterrupted(data) from None
    return _experiment_data(runs, configs, seeds, params, variant, backend, market_seed, stocks_total, test_days)
# --8<-- [end:experiment]


def _experiment_data(runs, configs, seeds, params, variant, backend, market_seed, stocks_total, test_days) -> dict:
    summary = []
    for S, D in configs:
        rs = [r for r in runs if r["stocks"] == S and r["train_days"] == D]
        if not rs:  # an interrupted experiment: only the configurations with runs
            continue
        tr = np.array([r["final_train_per100"] for r in rs])
        te = np.array([r["final_test_per100"] for r in rs])
        summary.append({"stocks": S, "train_days": D, "train_mean": float(tr.mean()), "train_std": float(tr.std()),
                        "test_mean": float(te.mean()), "test_std": float(te.std()), "runs": len(rs)})
    return {"schema": "gpulab-gp-experiment/1", "market": {"kind": "synthetic", "seed": market_seed,
            "stocks": stocks_total, "test_days": test_days, "test_stocks": stocks_total},
            "settings": {**asdict(params), "variant": variant, "backend": backend, "seeds": list(seeds),
                         "configs": [list(c) for c in configs]},
            "summary": summary, "runs": runs, "interrupted": False, "runs_planned": len(configs) * len(seeds)}


def _check_experiment(stocks_total, test_days, configs, seeds, params, variant, backend, market_seed, progress):
    """Every argument of [`experiment`][gpulab.gp.loop.experiment], before any work."""
    if params is None:
        params = GPParams(population=2000, generations=30)
    elif not isinstance(params, GPParams):
        raise GpulabError(f"params must be a gpulab.gp.GPParams or None, got {type(params).__name__}")
    params.check()
    check_variant_args(variant, backend)
    check_int(test_days, "test_days", 1)
    check_int(market_seed, "market_seed", 0)
    try:
        configs = [(int(S), int(D)) for S, D in configs]
    except (TypeError, ValueError):
        raise GpulabError(f"configs must be (training stocks, training days) pairs, got {configs!r}") from None
    if not configs:
        raise GpulabError("configs is empty: give at least one (training stocks, training days) pair")
    for S, D in configs:
        check_int(S, "configs: training stocks", 1)
        check_int(D, "configs: training days", 1)
    check_int(stocks_total, "stocks_total", 1)
    most = max(S for S, _ in configs)
    if stocks_total < most:
        raise GpulabError(f"stocks_total = {stocks_total} is below the {most} training stocks of the largest "
                          "configuration (the test period covers all stocks_total stocks, the training ones among them)")
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise GpulabError(f"seeds must be a sequence of whole numbers, got {type(seeds).__name__}")
    seeds = tuple(seeds)
    if not seeds:
        raise GpulabError("seeds is empty: give at least one seed")
    for x in seeds:
        check_int(x, "seeds: each seed", 0)
    if not (progress is None or isinstance(progress, bool) or callable(progress)):
        raise GpulabError(f"progress must be True, False, None or a callable, got {type(progress).__name__}")
    return params, configs, seeds


def _stocks(market: Market, S: int) -> Market:
    """The first S stocks of a market (same history and window)."""
    o = market.ohlcv(window=False)
    m = Market(*(o[k][:S] for k in ("open", "high", "low", "close", "volume")), names=market.names[:S])
    return m.window(market.start, market.days)


def plot_experiment(data: dict, path: Path) -> Path:
    """Mean (± std over seeds) train and test fitness per generation for each configuration
    (SVG or PNG by `path`'s suffix; sized for the book's page width, `gpulab.benchmark.CHART_RC`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from gpulab import benchmark

    if len(data["summary"]) > 4:
        return _plot_experiment_grid(data, path)
    with plt.rc_context(benchmark.CHART_RC):
        fig, axes = plt.subplots(1, 2, figsize=(benchmark.CHART_WIDTH_IN, 3.6), sharey=False, layout="constrained")
        colors = plt.get_cmap("tab10")
        for k, s in enumerate(data["summary"]):
            rs = [r for r in data["runs"] if r["stocks"] == s["stocks"] and r["train_days"] == s["train_days"]]
            g = [h["generation"] for h in rs[0]["history"]]
            for ax, key in zip(axes, ("train_best_per100", "test_of_best_per100")):
                y = np.array([[h[key] for h in r["history"]] for r in rs])
                ax.plot(g, y.mean(0), color=colors(k), label=f"{s['stocks']} stocks × {s['train_days']} days")
                ax.fill_between(g, y.mean(0) - y.std(0), y.mean(0) + y.std(0), color=colors(k), alpha=0.12)
        for ax, t in zip(axes, ("training period (best rule)", "test period (the same rule)")):
            ax.axhline(0, color="black", linewidth=0.8)
            ax.set_title(t)
            ax.set_xlabel("generation")
            ax.grid(True, alpha=0.3)
        axes[0].set_ylabel("ROI − buy-and-hold ROI,\nper 100 days")
        fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=2, frameon=False)
        benchmark.save_chart(fig, path)
        plt.close(fig)
    return path


def _plot_experiment_grid(data: dict, path: Path) -> Path:
    """A larger grid of configurations: the final generation's train and test fitness, mean ±
    std over seeds, as bars grouped by training stocks, one colour per number of training days
    (a line per configuration would be too many series to read)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from gpulab import benchmark

    stocks = sorted({s["stocks"] for s in data["summary"]})
    days = sorted({s["train_days"] for s in data["summary"]})
    by = {(s["stocks"], s["train_days"]): s for s in data["summary"]}
    width = 0.8 / len(days)
    with plt.rc_context(benchmark.CHART_RC):
        fig, axes = plt.subplots(1, 2, figsize=(benchmark.CHART_WIDTH_IN, 3.4), layout="constrained")
        colors = plt.get_cmap("tab10")
        for ax, key, title in zip(axes, ("train", "test"), ("training period (best rule)", "test period (the same rule)")):
            for j, d in enumerate(days):
                xs = [i + (j - (len(days) - 1) / 2) * width for i, S in enumerate(stocks) if (S, d) in by]
                ss = [by[(S, d)] for S in stocks if (S, d) in by]
                ax.bar(xs, [s[f"{key}_mean"] for s in ss], width, yerr=[s[f"{key}_std"] for s in ss],
                       color=colors(j), capsize=2, label=f"{d} training days")
            ax.axhline(0, color="black", linewidth=0.8)
            ax.set_xticks(range(len(stocks)), [f"{S} stocks" for S in stocks])
            ax.set_title(title)
            ax.grid(True, axis="y", alpha=0.3)
        axes[0].set_ylabel("ROI − buy-and-hold ROI,\nper 100 days (last generation)")
        runs = min(s["runs"] for s in data["summary"])
        fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=len(days), frameon=False,
                   title=f"mean ± std over {runs} seeds")
        benchmark.save_chart(fig, path)
        plt.close(fig)
    return path

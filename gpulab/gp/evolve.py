r"""The GP loop: evolve trading rules on a training period, report them on a test period.

Per generation: evaluate the population on the training days (the fitness that drives
selection) and on the test days that follow them (out-of-sample, never used for selection),
then breed the next population on the host (:mod:`gpulab.gp.breeding`, compiled with numba:
typed subtree crossover and mutation on the flat byte code, tournament selection, elitism,
depth and length limits). Everything is seeded: the same seed gives the same run.

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

from gpulab.gp import breeding
from gpulab.gp.market import Market
from gpulab.gp.programs import STAT_DEPTH, Population
from gpulab.gp.variants import DEFAULT_VARIANT, REGISTRY


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
    init_depth: tuple = (2, 5)  # ramped half-and-half: mean ~15.5 nodes per individual (both trees)
    mutation_depth: int = 4
    p_leaf: float = 0.3  # grow: chance of a terminal above the depth limit
    p_function: float = 0.9  # crossover points: internal nodes preferred (Koza's 90%)
    parsimony: bool = False  # lexicographic parsimony (on equal fitness the smaller wins): see the chapter


@dataclass
class EvolutionResult:
    """A run's record: one entry per generation, the best rule, and where the time went."""

    settings: dict
    history: list = field(default_factory=list)
    best: dict = field(default_factory=dict)
    timing: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"schema": "gpulab-gp-evolve/1", "settings": self.settings, "history": self.history,
                "best": self.best, "timing": self.timing}


def initial_population(params: GPParams, seed: int) -> Population:
    """Ramped half-and-half, typed, seeded."""
    lo, hi = params.init_depth
    code, offsets = breeding.ramped_half_and_half(params.population, lo, hi, params.max_nodes, params.p_leaf, seed)
    return Population(code, offsets)


def next_generation(pop: Population, fitness: np.ndarray, params: GPParams, seed: int) -> Population:
    """Selection, crossover, mutation, elitism: one call into compiled code."""
    depth = np.ascontiguousarray(pop.stats[:, STAT_DEPTH])
    code, offsets, src = breeding.breed(pop.code, pop.offsets, depth, np.ascontiguousarray(fitness, np.float64), params.elite,
                                   params.tournament, params.p_crossover, params.p_mutation, params.max_depth,
                                   params.max_nodes, params.mutation_depth, params.p_leaf, params.p_function,
                                   bool(params.parsimony), seed)
    return Population.bred(code, offsets, pop, src)


def _host(x) -> np.ndarray:
    return x if isinstance(x, np.ndarray) else x.copy_to_host()


# --8<-- [start:evolve]
def evolve(market: Market, *, train_days: int | None = None, test_market: Market | None = None,
           params: GPParams | None = None, variant: str = DEFAULT_VARIANT, backend: str = "numba",
           seed: int = 0, progress: Callable[[str], None] | None = print, kernel_params: dict | None = None
           ) -> EvolutionResult:
    """Evolve buy/sell rules on ``market``'s first ``train_days`` evaluation days and report them
    on the rest (or on ``test_market`` when given; then all of ``market`` is training data).

    Args:
        market: the data.
        train_days: training days (default: 3/4 of the market's days).
        test_market: a separate test market (then all of ``market`` is training data).
        params: population size, generations, operators (:class:`GPParams`).
        variant: the evaluator: any registry entry, e.g. ``"bitsliced"`` on a GPU,
            ``"cpu_bitsliced"`` (with ``backend="cpu"``) without one.
        backend: ``"numba"``, ``"cuda-c"`` or ``"cpu"``.
        seed: makes the run reproducible.
        progress: called with one line per generation (``None``: quiet).
        kernel_params: override the variant's compile-time parameters.

    Returns:
        :class:`EvolutionResult`: per generation the best and mean training fitness, the test
        fitness of the best-on-training rule, the population's mean on the test period, mean
        size, and times (evaluation, breeding); the final best rule.
    """
    params = params or GPParams()
    if test_market is None:
        train_days = train_days or max(1, market.days * 3 // 4)
        train, test = market.split(train_days)
    else:
        train, test = market, test_market
    v = REGISTRY.resolve(variant, backend)
    kp = dict(v.params, **(kernel_params or {}))
    ev_train, ev_test = v.run(variant, train, kp), v.run(variant, test, kp)
    rng = np.random.default_rng(seed)
    t_warm = time.perf_counter()
    tiny = Population.from_individuals([("NVIG", "NVIL")])
    ev_train(tiny), ev_test(tiny)  # compile the kernels (JIT) and upload the markets before the clock starts
    warm = GPParams(**{**asdict(params), "population": 4})  # ... and the breeding (numba JIT, or its disk cache)
    next_generation(initial_population(warm, 0), np.zeros(4), warm, 0)
    t_start = time.perf_counter()
    pop = initial_population(params, int(rng.integers(2**31)))
    settings = {**{k: (list(x) if isinstance(x, tuple) else x) for k, x in asdict(params).items()},
                "variant": variant, "backend": backend, "seed": seed, "stocks": train.stocks,
                "train_days": train.days, "test_days": test.days, "test_stocks": test.stocks,
                "initial_mean_nodes": float(pop.nodes.sum(axis=1).mean())}
    result = EvolutionResult(settings)
    per100_train, per100_test = 100.0 / train.days, 100.0 / test.days
    t_eval = t_breed = 0.0
    for g in range(params.generations + 1):
        t0 = time.perf_counter()
        fit = _host(ev_train(pop)[0])[:len(pop)].copy()
        fit_test = _host(ev_test(pop)[0])[:len(pop)].copy()
        t1 = time.perf_counter()
        best = int(np.argmax(fit))
        row = {"generation": g, "train_best": float(fit[best]), "train_mean": float(fit.mean()),
               "test_of_best": float(fit_test[best]), "test_mean": float(fit_test.mean()),
               "train_best_per100": float(fit[best] * per100_train),
               "test_of_best_per100": float(fit_test[best] * per100_test),
               "mean_nodes": float(pop.nodes.sum(axis=1).mean()), "eval_ms": (t1 - t0) * 1e3}
        if g < params.generations:
            pop_next = next_generation(pop, fit, params, int(rng.integers(2**31)))
        t2 = time.perf_counter()
        row["breed_ms"] = (t2 - t1) * 1e3
        t_eval += t1 - t0
        t_breed += t2 - t1
        result.history.append(row)
        if progress:
            progress(f"gen {g:3d}  train best {row['train_best_per100']:+.4f}  test of best "
                     f"{row['test_of_best_per100']:+.4f}  (per 100 days)  mean size {row['mean_nodes']:.1f}  "
                     f"eval {row['eval_ms']:.1f} ms  breed {row['breed_ms']:.1f} ms")
        if g == params.generations:
            result.best = {"buy": pop[best].buy.sexpr(), "sell": pop[best].sell.sexpr(), "train": row["train_best"],
                           "test": row["test_of_best"]}
        else:
            pop = pop_next
    total = time.perf_counter() - t_start
    result.timing = {"total_s": total, "evaluation_s": t_eval, "breeding_s": t_breed,
                     "evaluations": 2 * (params.generations + 1), "warmup_s": t_start - t_warm,
                     "what": "total_s: initialization + every generation's evaluations (train and test) and "
                             "breeding; warmup_s (before it): kernel compilation and market upload"}
    return result
# --8<-- [end:evolve]


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
               params: GPParams | None = None, variant: str = "cpu_bitsliced", backend: str = "cpu",
               market_seed: int = 2010, progress: Callable[[str], None] | None = print) -> dict:
    """The paper's section 6 at a small scale: train on S stocks over the D days just before a
    fixed test period, then measure the best rule on the test period over all ``stocks_total``
    stocks (new days, mostly new stocks). Several seeds per configuration."""
    from gpulab.gp.market import synthetic_market

    params = params or GPParams(population=2000, generations=30)
    longest = max(d for _, d in configs)
    market = synthetic_market(stocks_total, longest + test_days, seed=market_seed)
    start = market.start
    test = market.window(start + longest, test_days)
    runs = []
    for S, D in configs:
        sub = _stocks(market, S)
        train = sub.window(start + longest - D, D)
        for seed in seeds:
            if progress:
                progress(f"== {S} stocks × {D} training days, seed {seed}")
            r = evolve(train, test_market=test, params=params, variant=variant, backend=backend, seed=seed,
                       progress=None)
            last = r.history[-1]
            runs.append({"stocks": S, "train_days": D, "seed": seed, "history": r.history, "best": r.best,
                         "final_train_per100": last["train_best_per100"], "final_test_per100": last["test_of_best_per100"],
                         "seconds": r.timing["total_s"]})
            if progress:
                progress(f"   train {last['train_best_per100']:+.4f}  test {last['test_of_best_per100']:+.4f} per 100 days "
                         f"({r.timing['total_s']:.1f} s)")
    summary = []
    for S, D in configs:
        rs = [r for r in runs if r["stocks"] == S and r["train_days"] == D]
        tr = np.array([r["final_train_per100"] for r in rs])
        te = np.array([r["final_test_per100"] for r in rs])
        summary.append({"stocks": S, "train_days": D, "train_mean": float(tr.mean()), "train_std": float(tr.std()),
                        "test_mean": float(te.mean()), "test_std": float(te.std()), "runs": len(rs)})
    return {"schema": "gpulab-gp-experiment/1", "market": {"kind": "synthetic", "seed": market_seed,
            "stocks": stocks_total, "test_days": test_days, "test_stocks": stocks_total},
            "settings": {**asdict(params), "variant": variant, "backend": backend, "seeds": list(seeds)},
            "summary": summary, "runs": runs}
# --8<-- [end:experiment]


def _stocks(market: Market, S: int) -> Market:
    """The first S stocks of a market (same history and window)."""
    o = market.ohlcv(window=False)
    m = Market(*(o[k][:S] for k in ("open", "high", "low", "close", "volume")), names=market.names[:S])
    return m.window(market.start, market.days)


def plot_experiment(data: dict, path: Path) -> Path:
    """Mean (± std over seeds) train and test fitness per generation for each configuration."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), dpi=120, sharey=False)
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
    axes[0].set_ylabel("ROI − buy-and-hold ROI, per 100 days")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path

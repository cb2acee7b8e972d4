r"""Chapter 3: genetic programming of stock-trading rules, evaluated by an RPN interpreter on the GPU.

Examples:
    One individual (a buy tree and a sell tree) on a seeded synthetic market: its fitness, the
    mean over the stocks of its return minus buy-and-hold's (the same on every backend):

    >>> import gpulab.gp as gp
    >>> market = gp.synthetic_market(stocks=32, days=768, seed=1)
    >>> pop = gp.Population.from_individuals([("(AND (> MA10 MA50) (OR (< EMA9 MA25) NVIG))", "MACDL")])
    >>> gp.evaluate(pop, market)
    array([-0.668...])
    >>> gp.to_rpn("(AND (> MA10 MA50) (OR (< EMA9 MA25) NVIG))")
    'MA10 MA50 > EMA9 MA25 < NVIG OR AND'

Arrays: numpy in, numpy out. A market built from device arrays (CuPy, PyTorch, numba; its
OHLCV goes to the host once, for the indicators) gets its fitness back on the device, in the
caller's library ([`gpulab.arrays`][gpulab.arrays]).
"""

from __future__ import annotations

import numpy as np

from gpulab.chapters import Chapter
from gpulab import device  # noqa: F401  (selects GPU or simulator before numba loads)
from gpulab.errors import GpulabError
from gpulab.launch import PlanCache
from gpulab.gp import host
from gpulab.gp.market import DataError, Market, load_csv, sample_market, synthetic_market
from gpulab.gp.opcodes import BOOL_TERMINALS, FLOAT_TERMINALS, FUNCTIONS
from gpulab.gp.programs import (Individual, Population, ProgramError, ProgramLimitError, Tree, parse, to_rpn,
                                to_sexpr)
from gpulab.gp.reference import Evaluation
from gpulab.gp.variants import DEFAULT_VARIANT, REGISTRY
from gpulab.gp.loop import EvolutionInterrupted, EvolutionResult, GPParams, evolve, experiment

__all__ = ["CHAPTER", "parse", "to_rpn", "to_sexpr", "Tree", "Individual", "Population", "Market", "synthetic_market",
           "load_csv", "sample_market", "evaluate", "evaluate_detail", "check", "evolve", "experiment", "GPParams",
           "EvolutionResult", "EvolutionInterrupted", "variants", "Evaluation",
           "ProgramError", "ProgramLimitError", "DataError", "FLOAT_TERMINALS", "BOOL_TERMINALS", "FUNCTIONS",
           "REGISTRY", "DEFAULT_VARIANT", "clear_cache"]


def _population(population) -> Population:
    if isinstance(population, Population):
        return population
    if population is None or isinstance(population, (str, bytes)) or not hasattr(population, "__iter__"):
        raise GpulabError("population must be a gpulab.gp.Population or a list of individuals / (buy, sell) "
                          f"pairs, got {type(population).__name__}")
    return Population.from_individuals(population)


def check(population, market: Market, variant: str | None = None, backend: str = "numba",
          params: dict | None = None) -> Population:
    """The checks of [`evaluate`][gpulab.gp.evaluate], without evaluating and without the
    device: the population as `evaluate` reads it, or the error `evaluate` would raise (its
    arguments, then every program against the variant's limits: stack and boolean depth,
    program length, the market's size).

    Whether the variant can run on this machine is not checked (a Dask client without pycuda
    checks a `cuda-c` evaluation its GPU workers run): [`gpulab.distributed`][gpulab.distributed]
    calls this on its client before any task is submitted.
    """
    pop = _population(population)
    host.check_market_arg(market)
    host.check_variant_args(variant, backend, params)
    v = REGISTRY.get(variant or REGISTRY.default(backend), backend)
    p = v.launch_params(params)
    if v.policy.path == "gpu":
        host.check_market(market, v.name)
        p = host.geometry(p)
    host.check_limits(v, pop, p)
    return pop


# The evaluators of the last calls: a variant bound to a market (its arrays on the device, its
# buffers), kept while the same market is evaluated again; each holds its market, so the market's
# id in the key is not reused while the entry lives.
_EVALUATORS = PlanCache(maxsize=16)


def _evaluator(market, variant, backend, params):
    host.check_market_arg(market)
    host.check_variant_args(variant, backend, params)
    v = REGISTRY.resolve(variant, backend)
    p = v.launch_params(params)
    key = (id(market), v.key, repr(sorted(p.items())))
    return _EVALUATORS.get(key, lambda: v.run(v, market, p))


def clear_cache() -> None:
    """Free what the evaluations keep between calls: the evaluators (each a market's arrays on the
    device and its buffers), the populations compiled by the `compiled` variant, and the GPU
    breeding's buffers."""
    import sys

    from gpulab.gp import compiled

    _EVALUATORS.clear()
    compiled.clear_cache()
    bred = sys.modules.get("gpulab.gp.breeding_gpu")  # loaded only once a GPU breeding ran
    if bred is not None:
        bred.clear_cache()


# --8<-- [start:entry]
def evaluate(population, market: Market, variant: str | None = None, backend: str = "numba",
             params: dict | None = None):
    """Fitness of every individual: mean over the market's stocks of (ROI − buy-and-hold ROI).

    Args:
        population: a [`Population`][gpulab.gp.Population] (or individuals / ``(buy, sell)`` pairs of trees).
        market: a [`Market`][gpulab.gp.Market] (its evaluation window is what is traded).
        variant: a name from `variants`; ``None`` (default): the backend's best
            (``bitsliced`` on ``numba`` and ``cuda-c``, ``cpu_bitsliced`` on ``cpu``).
        backend: ``"numba"``, ``"cuda-c"`` (needs pycuda and a GPU) or ``"cpu"``.
        params: override the variant's compile-time parameters (STACK, WPB, CODE ...).

    Returns:
        float64 ``[P]``: numpy, or a device array in the caller's library when the market was
        built from device arrays (GPU backends; the CPU backends always return numpy).

    Raises:
        ProgramError: a malformed program.
        ProgramLimitError: a program too deep or too long for the variant (the message names
            individual, tree and position).
        LimitError: a buy would reach 2**29 shares.
        BackendUnavailable: the variant cannot run here.
        GpulabError: an argument of the wrong kind (e.g. ``market=None``), named in the message.
    """
    pop = _population(population)
    fit, _, _ = _evaluator(market, variant, backend, params)(pop)
    if backend == "cpu":
        return fit
    from gpulab import arrays

    if market.on_device:  # a copy: the evaluator reuses its buffers at the next call
        from numba import cuda

        out = cuda.device_array(len(pop), np.float64)
        out.copy_to_device(fit[:len(pop)])
        return arrays.to_caller(out, arrays.DeviceInput(out, True, arrays.library(market.source), market.source))
    return fit[:len(pop)].copy_to_host()
# --8<-- [end:entry]


def evaluate_detail(population, market: Market, variant: str | None = None, backend: str = "numba",
                    params: dict | None = None, trace: bool = True, poison: bool = False) -> Evaluation:
    """Fitness, final money per (individual, stock) and the day-by-day trace, as numpy arrays
    (what the tests compare with the reference bit for bit). ``poison`` fills the outputs with
    NaN / 0xFF before the launch, so a cell a kernel forgets to write shows."""
    from gpulab import arrays

    pop = _population(population)
    fit, money, tr = _evaluator(market, variant, backend, params)(pop, trace=trace, poison=poison)
    P, S, D = len(pop), market.stocks, market.days
    fit, money = arrays.to_host(fit)[:P], arrays.to_host(money)[:P * S].reshape(P, S)
    tr = arrays.to_host(tr)[:P * S * D].reshape(P, S, D) if trace else None
    return Evaluation(np.array(fit), np.array(money), None if tr is None else np.array(tr))


def variants(backend: str | None = None) -> list[str]:
    """Names of the registered variants (of one backend, or all)."""
    return list(dict.fromkeys(REGISTRY.names(backend)))


# ----------------------------------------------------------------------------- the chapter


from gpulab.gp import bench as _bench, tour as _tour  # noqa: E402  (they use the API above)
from gpulab.gp.variants import cuda_builds as _cuda_builds, ptx_targets as _ptx_targets  # noqa: E402

CHAPTER = Chapter(name="gp", number=3, title="Genetic programming: evolving trading rules", registry=REGISTRY,
                  ptx_targets=_ptx_targets, cuda_builds=_cuda_builds, bench=_bench.SPEC,
                  tour_cases=_tour.tour_cases, exercises="gp")

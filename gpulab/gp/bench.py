r"""``gpulab bench gp``: one generation's evaluation, every variant, against the numba CPU interpreter.

Cases (the population comes from the GP initializer, seeded; a synthetic market, seeded):

* ``seed`` — the paper's size: 25,000 individuals × 32 stocks × 768 days;
* ``large`` — 25,000 individuals × 128 stocks × 4,096 days;
* ``P=1024`` and ``P=64`` — the seed population's first individuals on the seed market: the
  ``compiled`` variant (whose compile time grows with the population; numba's is limited to 64
  individuals) against every interpreter at the same size, compile time reported beside.

What is timed is one generation's evaluation, as the GP loop runs it: upload the population's
byte code, every kernel launch (and the constant variant's batch copies), the fitness reduction,
and the 4-byte overflow flag back (the one synchronization). The market's arrays are uploaded
once, before (as in a GP run). Throughput is **GP operations per second**: tree nodes (both
trees, all individuals) × stocks × days / time. ``bitsliced`` evaluates 64 days per word
operation; its records also carry ``word_ops_per_s`` (nodes × stocks × ⌈days/64⌉ / time), the
other counting convention.

The peer is the numba ``parallel=True`` CPU interpreter (`gpulab.gp.cpu.interpret`, the
same algorithm as the interpreter kernels) on all the machine's cores, measured in the same run
on the same population and market, and doing the same work (no byte-code upload; its inputs are
host arrays). Each record also gets ``speedup_same_algorithm``: against the CPU interpreter for
the interpreter variants, against the bit-sliced CPU version (``cpu_bitsliced``) for
``bitsliced``.
"""

from __future__ import annotations

import os

import numpy as np

from gpulab import device
from gpulab.benchmark import BenchSpec, Case
from gpulab.errors import GpulabError
from gpulab.gp.breeding import ramped_half_and_half
from gpulab.gp.market import synthetic_market
from gpulab.gp.policy import INTERPRETER_MAX_WORK
from gpulab.gp.programs import Population

POP_SEED, MARKET_SEED = 2010, 768
PEER_VARIANT = "interpreter"  # the peer column is this CPU variant's algorithm, on the whole population
CHECK_ROWS = 500  # at the large size the CPU checks these individuals (and every variant agrees with the first)


def _population(P: int) -> Population:
    code, offsets = ramped_half_and_half(P, 2, 5, 255, 0.3, POP_SEED)
    return Population(code, offsets)


_POPS: dict = {}


def population(P: int, take: int | None = None) -> Population:
    if P not in _POPS:
        _POPS[P] = _population(P)
    pop = _POPS[P]
    if take is not None and take < P:
        pop = Population(pop.code[:pop.offsets[2 * take]], pop.offsets[:2 * take + 1])
    return pop


def _case(label: str, P: int, S: int, D: int, take: int | None = None) -> Case:
    pop = population(P, take)
    n = len(pop)
    nodes = pop.total_nodes
    words = -(-D // 64)  # the bit-sliced variants' 64-day words
    return Case(label=label, size={"population": n, "stocks": S, "days": D, "nodes": nodes,
                                   "mean_nodes": nodes / n, "words": words, "source_population": P},
                work=float(nodes) * S * D, unit="GP ops/s", unit_scale=1.0)


def cases(quick: bool) -> list[Case]:
    if device.on_simulator():
        return [_case("sim P=3", 3, 33, 40), _case("sim P=2 long", 2, 2, 100)]
    seed = _case("seed 25000x32x768", 25_000, 32, 768)
    small = [_case("P=1024 32x768", 25_000, 32, 768, take=1024), _case("P=64 32x768", 25_000, 32, 768, take=64)]
    if quick:
        return [seed] + small
    return [seed, _case("large 25000x128x4096", 25_000, 128, 4096)] + small


def setup(case: Case, rng: np.random.Generator):
    from gpulab.gp import evaluate_detail

    z = case.size
    pop = population(z["source_population"], z["population"])
    market = synthetic_market(z["stocks"], z["days"], seed=MARKET_SEED)
    work = len(pop) * z["stocks"] * z["days"]
    rows = len(pop) if work * pop.total_nodes / len(pop) <= 2e10 else CHECK_ROWS
    sub = pop if rows == len(pop) else Population(pop.code[:pop.offsets[2 * rows]], pop.offsets[:2 * rows + 1])
    cpu = evaluate_detail(sub, market, "interpreter", "cpu", trace=False)
    return {"case": case, "pop": pop, "market": market, "rows": rows, "cpu": cpu, "consensus": None,
            "evaluators": {}, "work": work}


def _over_cap(variant, state) -> str | None:
    """Why the variant's policy does not time it at this case (its `bench_cap`), or None."""
    cap = variant.policy.bench_cap
    if cap is None:
        return None
    z = state["case"].size
    value = {"pair_days": state["work"], "ops": state["case"].work, "population": z["population"]}[cap.measure]
    return cap.reason.format(value=value, limit=cap.limit) if value > cap.limit else None


def runner(variant, state):
    reason = _over_cap(variant, state)
    if reason:
        raise GpulabError(reason)
    key = variant.key
    if key not in state["evaluators"]:
        state["evaluators"][key] = variant.run(variant, state["market"], variant.launch_params())
    ev, pop = state["evaluators"][key], state["pop"]
    return lambda: ev(pop)


def check(variant, state):
    from gpulab import arrays

    fit, money, _ = runner(variant, state)()
    P, S = len(state["pop"]), state["market"].stocks
    money = arrays.to_host(money)[:P * S].reshape(P, S)
    fit = arrays.to_host(fit)[:P]
    rows, cpu = state["rows"], state["cpu"]
    if not np.array_equal(money[:rows].view(np.uint64), cpu.money.view(np.uint64)):
        bad = np.argwhere(money[:rows] != cpu.money)
        return False, f"money differs from the CPU interpreter at (individual, stock) {bad[0].tolist()}"
    if not np.allclose(fit[:rows], cpu.fitness, rtol=1e-12, atol=1e-15):
        return False, "fitness differs from the CPU interpreter beyond 1e-12"
    if rows < P:  # the rest: every variant agrees with the first one checked, bit for bit
        if state["consensus"] is None:
            state["consensus"] = money
        elif not np.array_equal(money.view(np.uint64), state["consensus"].view(np.uint64)):
            return False, "money differs from the first variant's beyond the CPU-checked rows"
    if variant.policy.compiled:  # the first call compiled the population: report it with the record
        COMPILE_MS[(state["case"].label, variant.key)] = state["evaluators"][variant.key].compile_ms
    return True, f"bit-identical money on {rows} individuals" + ("" if rows == P else f", and all {P} agree")


def peer(state):
    """The numba parallel=True CPU interpreter on the whole population (compiled beforehand)."""
    from gpulab.gp.variants import REGISTRY

    v = REGISTRY.get(PEER_VARIANT, "cpu")
    ev = v.run(v, state["market"], v.launch_params())
    ev(Population(state["pop"].code[:state["pop"].offsets[2]], state["pop"].offsets[:3]))  # JIT outside the timing
    pop = state["pop"]
    return lambda: ev(pop)


def peer_timing(case: Case) -> tuple[int, int]:
    """The CPU interpreter takes seconds (seed) to minutes (large) per run: fewer repeats."""
    return (0, 1) if case.work > INTERPRETER_MAX_WORK else (0, 3)


def teardown(state):
    state["evaluators"].clear()


def _policy(record):
    """The policy of a record's variant (None: a variant no longer registered)."""
    from gpulab.gp.variants import REGISTRY

    try:
        return REGISTRY.get(record["variant"], record["backend"]).policy
    except GpulabError:
        return None


def finalize(result: dict) -> None:
    """Derived fields per record: word operations for the bit-sliced variants, the compile time
    of ``compiled``, and the speedup over the CPU version of the same algorithm."""
    recs = result["records"]
    timed: dict = {}  # (label, CPU variant) -> its first timed record
    for q in recs:
        if q["backend"] == "cpu" and q["median_ms"] is not None:
            timed.setdefault((q["label"], q["variant"]), q)
    for r in recs:
        if r["median_ms"] is None:
            continue
        r["ms_per_generation"] = r["median_ms"]
        z, pol = r["size"], _policy(r)
        if pol is None:
            continue
        if pol.word_ops:
            r["word_ops_per_s"] = z["nodes"] * z["stocks"] * z["words"] / (r["median_ms"] * 1e-3)
            r["op_convention"] = "throughput: tree nodes × stock-days; word_ops_per_s: tree nodes × stocks × 64-day words"
        cpu_peer = pol.same_algorithm_cpu
        if r["backend"] != "cpu":
            same = timed.get((r["label"], cpu_peer))
            base = same["median_ms"] if same else (r["peer_median_ms"] if cpu_peer == PEER_VARIANT else None)
            if base:
                r["speedup_same_algorithm"] = base / r["median_ms"]
                r["same_algorithm_cpu"] = cpu_peer
        key = (r["label"], f"{r['variant']}[{r['backend']}]")
        if key in COMPILE_MS:
            r["compile_ms"] = COMPILE_MS[key]


COMPILE_MS: dict = {}  # (case label, variant key) -> ms to build the compiled variant's kernels


def annotate(variant, state, rec) -> None:
    """The compile-time parameters each record was measured with (they are tuned)."""
    rec["params"] = dict(variant.params)


def _overrides() -> dict:
    from gpulab.gp.variants import overrides

    return overrides()


SPEC = BenchSpec(chapter="gp", cases=cases, setup=setup, runner=runner, check=check, teardown=teardown,
                 peer_name=f"numba CPU interpreter (parallel=True, {os.cpu_count()} threads)", peer=peer,
                 peer_timing=peer_timing, finalize=finalize, annotate=annotate,
                 extra={"work": "tree nodes × stocks × days per generation (both trees of every individual)",
                        "params_overrides": _overrides})

"""Chapter 3: every variant of every backend against the CPU reference — the same buy/sell
signals and actions on every day (the trace), bit-identical money per (individual, stock),
fitness to 1e-12 — on adversarial sizes and programs, with outputs poisoned before each launch.

On the simulator the populations are small; on a GPU the same tests run larger, and the
seed-size population (25,000 × 32 stocks × 768 days) is checked against the numba CPU
interpreter.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import cuda

import gpulab.gp as gp
from gpulab.errors import LimitError
from gpulab.gp import reference
from gpulab.gp.breeding import ramped_half_and_half
from gpulab.gp.market import WARMUP
from gpulab.gp.variants import REGISTRY
from tests.conftest import ON_SIMULATOR, skip_unless_runnable
from tests.gp.programs_strategy import individual

# the reference itself is the oracle; every other entry is checked against it
CHECKED = [v for v in REGISTRY if v.name != "reference"]
DEVICE = [v for v in REGISTRY if v.backend != "cpu"]
# (stocks, days): 1 stock, a warp minus one, a warp, a warp plus one; 1 and 2 days, 700 (10 whole
# 64-day words plus 60 days: three trading passes of TW = 4 words, the last one short) and 767
# (11 words plus 63 days; the register variant's last pass of DAYS = 8 holds 7 days)
SIM_SIZES = [(1, 1), (31, 2), (32, 1), (33, 2), (1, 700), (2, 767)]
GPU_SIZES = SIM_SIZES + [(33, 767), (32, 768), (128, 4096), (97, 1000)]
SIZES = SIM_SIZES if ON_SIMULATOR else GPU_SIZES
PAPER = ("(AND (> MA10 MA50) (OR (< EMA9 MA25) NVIG))", "(OR MACDL (NOT (< CP MA200)))")


def params_for(variant):
    return {"CONST_CAPACITY": 96} if variant.name == "constant" else None  # several batches even for tiny populations


def random_population(rng, n):
    code, offsets = ramped_half_and_half(n, 2, 5, 255, 0.3, int(rng.integers(2**31)))
    pop = gp.Population(code, offsets)
    return gp.Population.from_individuals([PAPER] + list(pop))


def assert_same(got: gp.Evaluation, ref: gp.Evaluation, what: str):
    """Signals and actions equal on every day, money bit for bit, fitness to 1e-12."""
    assert got.trace is not None and got.trace.shape == ref.trace.shape, what
    bad = np.argwhere(got.trace != ref.trace)
    assert bad.size == 0, f"{what}: trace differs first at (individual, stock, day) {tuple(bad[0])}: " \
                          f"{got.trace[tuple(bad[0])]:04b} != reference {ref.trace[tuple(bad[0])]:04b}"
    assert np.array_equal(got.money.view(np.uint64), ref.money.view(np.uint64)), \
        f"{what}: money differs at {np.argwhere(got.money != ref.money)[:3].tolist()}"
    np.testing.assert_allclose(got.fitness, ref.fitness, rtol=1e-12, atol=1e-15, err_msg=what)


REFERENCE_MAX = 1_000_000  # (individual, stock, day)s the pure-Python oracle affords in a test


def oracle(pop, market):
    """The reference; at GPU-sized tests the numba CPU interpreter (itself checked against the
    reference on the small sizes and on random programs below)."""
    if len(pop) * market.stocks * market.days <= REFERENCE_MAX:
        return reference.evaluate(pop, market, trace=True)
    return gp.evaluate_detail(pop, market, "interpreter", "cpu")


def check(variant, pop, market):
    skip_unless_runnable(variant)
    ref = oracle(pop, market)
    got = gp.evaluate_detail(pop, market, variant.name, variant.backend, params=params_for(variant), poison=True)
    assert_same(got, ref, f"{variant.key} P={len(pop)} S={market.stocks} D={market.days}")
    return got, ref


@pytest.mark.parametrize("variant,size", [pytest.param(v, sd, id=f"{v.key}-S{sd[0]}-D{sd[1]}")
                                          for v in CHECKED for sd in SIZES])
def test_variant_matches_reference(variant, size, rng):
    S, D = size
    market = gp.synthetic_market(S, D, seed=int(rng.integers(2**31)))
    n = 3 if ON_SIMULATOR and D > 2 else (4 if ON_SIMULATOR else 300)
    if variant.name == "compiled" and variant.backend == "numba":
        n = min(n, 8)
    check(variant, random_population(rng, n), market)


# the registry's defaults are the H200 sweep's winners (register DAYS = 8; bitsliced WPB = 1 in numba,
# 4 in CUDA C): these are the other configurations, the previous defaults (DAYS = 4, WPB = 4) among them
TUNED = [("register", dict(DAYS=1)), ("register", dict(DAYS=3)), ("register", dict(DAYS=4, WPB=1)),
         ("bitsliced", dict(TW=1)), ("bitsliced", dict(TW=3, WPB=4)), ("bitsliced", dict(TW=8, BSTACK=16))]


@pytest.mark.parametrize("name,params", TUNED, ids=lambda x: str(x))
def test_tuned_parameters_give_the_same_results(name, params, rng):
    """The tuning sweep's other configurations (days per pass, words per trading pass, warps per
    block) against the reference: 330 days = 5 words of 64 + 10 days, 33 stocks."""
    market = gp.synthetic_market(33, 330, seed=int(rng.integers(2**31)))
    pop = random_population(rng, 3)
    ref = reference.evaluate(pop, market, trace=True)
    p = REGISTRY.get(name, "numba").params | params  # (overrides come after sim_params: WPB as given)
    got = gp.evaluate_detail(pop, market, name, "numba", params=p, poison=True)
    assert_same(got, ref, f"{name} {params}")


def right_deep(terminals, bottom):
    text = bottom
    for t in reversed(terminals):
        text = f"(AND {t} {text})"
    return text


def left_deep(terminals):
    text = terminals[0]
    for t in terminals[1:]:
        text = f"(OR {text} {t})"
    return text


def stack_limit(variant):
    p = variant.params
    return {"register": 32, "compiled": 32, "interpreter": p.get("STACK")}.get(variant.name, p.get("STACK", p.get("BSTACK")))


def special_population(variant, rng):
    """Single terminals, the deepest stack the variant accepts, left- and right-deep chains,
    NOT chains, and every opcode (each float terminal on both sides of < and >)."""
    b = gp.BOOL_TERMINALS
    f = gp.FLOAT_TERMINALS
    L = stack_limit(variant)
    # memory stacks count the comparison's two floats; bit-stacks count only booleans
    floats_count = variant.name in ("thread_global", "coalesced", "constant", "shared", "interpreter")
    deep = right_deep([b[k % 14] for k in range(L - 2 if floats_count else L - 1)], "(< MA5 EMA20)")
    inds = [("NVIG", "NVIL"), (deep, "(< CP TP)"), ("MFIL", deep),
            (left_deep(list(b) + list(b)), "(NOT " * 7 + "EOMG" + ")" * 7),
            ("(NOT " * 8 + "MACDG" + ")" * 8, right_deep(list(b[:10]), "PVIG"))]
    for k in range(0, 17, 3):  # every float terminal, left and right of < and >
        cmp = [f"(< {f[j]} {f[(j + 5) % 17]})" for j in range(k, min(k + 3, 17))]
        rev = [f"(> {f[(j + 3) % 17]} {f[j]})" for j in range(k, min(k + 3, 17))]
        inds.append((left_deep(cmp + [b[k % 14]]), left_deep(rev + [f"(NOT {b[(k + 1) % 14]})"])))
    return gp.Population.from_individuals(inds)


@pytest.mark.parametrize("variant", CHECKED, ids=lambda v: v.key)
def test_special_programs(variant, rng):
    skip_unless_runnable(variant)
    market = gp.synthetic_market(33, 35, seed=int(rng.integers(2**31)))
    pop = special_population(variant, rng)
    if variant.name == "compiled" and variant.backend == "numba":
        pop = pop.select(range(0, len(pop), 3))
    check(variant, pop, market)


def high_price_market(days=60):
    """Close 12,000 falling to 8,000: $10,000 buys no share until the close drops below 9,999."""
    close = np.concatenate([np.full(WARMUP, 12000.0), np.linspace(12000.0, 8000.0, days)])[None, :]
    close = np.repeat(close, 2, axis=0) * np.array([[1.0], [1.5]])
    vol = np.full_like(close, 1e6) + np.arange(close.shape[1])
    return gp.Market(close, close * 1.01, close * 0.99, close, vol)


@pytest.mark.parametrize("variant", CHECKED, ids=lambda v: v.key)
def test_money_below_one_share_price_places_no_order_until_affordable(variant):
    skip_unless_runnable(variant)
    market = high_price_market()
    always, never = "(OR NVIG (NOT NVIG))", "(AND NVIG (NOT NVIG))"
    pop = gp.Population.from_individuals([(always, never), (always, always), (never, always)])
    got, ref = check(variant, pop, market)
    c = market.close32().astype(np.float64)
    for s in range(2):
        first = int(np.argmax(c[s] <= 9999.0)) if (c[s] <= 9999.0).any() else None
        bought = np.flatnonzero(got.trace[0, s] & 4)
        if first is None:  # never affordable: no order, no fee, the money untouched
            assert bought.size == 0 and got.money[0, s] == 10000.0
        else:  # the first affordable buy signal, and nothing before it cost a fee
            assert bought.tolist() == [first]
            n = int(9999.0 // c[s, first])
            assert got.money[0, s] == 9999.0 - n * c[s, first] + n * c[s, -1] - 1.0
    assert (got.money[1:] == 10000.0).all()  # buy and sell together: nothing; sell only: nothing held


@pytest.mark.parametrize("variant", CHECKED, ids=lambda v: v.key)
def test_a_buy_of_2_to_the_29_shares_raises(variant):
    skip_unless_runnable(variant)
    close = np.full((1, WARMUP + 5), 1e-5)
    market = gp.Market(close, close, close, close, np.ones_like(close))
    pop = gp.Population.from_individuals([("(OR NVIG (NOT NVIG))", "NVIL")])
    with pytest.raises(LimitError, match="2\\*\\*29"):
        gp.evaluate(pop, market, variant.name, variant.backend)
    with pytest.raises(LimitError, match="2\\*\\*29"):
        reference.evaluate(pop, market)


@settings(max_examples=6 if ON_SIMULATOR else 15, deadline=None)
@given(st.lists(individual, min_size=1, max_size=4), st.integers(0, 2**31 - 1))
def test_random_programs_every_device_variant(inds, seed):
    pop = gp.Population.from_individuals(inds)
    market = gp.synthetic_market(2 if ON_SIMULATOR else 40, 40, seed=seed)
    ref = reference.evaluate(pop, market, trace=True)
    for v in DEVICE:
        if v.unavailable_reason():
            continue
        got = gp.evaluate_detail(pop, market, v.name, v.backend, params=params_for(v), poison=True)
        assert_same(got, ref, v.key)


@settings(max_examples=60, deadline=None)
@given(st.lists(individual, min_size=1, max_size=6), st.integers(0, 2**31 - 1))
def test_random_programs_cpu_peers(inds, seed):
    pop = gp.Population.from_individuals(inds)
    market = gp.synthetic_market(5, 100, seed=seed)
    ref = reference.evaluate(pop, market, trace=True)
    for name in ("interpreter", "cpu_bitsliced"):
        assert_same(gp.evaluate_detail(pop, market, name, "cpu"), ref, name)


def test_the_comparison_catches_a_wrong_result(rng):
    """The checks above can fail: one flipped trace bit, one ulp of money, are caught."""
    market = gp.synthetic_market(3, 50, seed=1)
    pop = random_population(rng, 2)
    ref = reference.evaluate(pop, market, trace=True)
    bad = gp.Evaluation(ref.fitness.copy(), ref.money.copy(), ref.trace.copy())
    bad.trace[1, 2, 30] ^= 1
    with pytest.raises(AssertionError, match="trace differs first at"):
        assert_same(bad, ref, "flipped")
    bad = gp.Evaluation(ref.fitness.copy(), np.nextafter(ref.money, np.inf), ref.trace.copy())
    with pytest.raises(AssertionError, match="money differs"):
        assert_same(bad, ref, "one ulp")


def test_device_arrays_in_give_device_fitness_out(rng):
    """A market built from numba device arrays returns the fitness on the device."""
    host = gp.synthetic_market(3, 20, seed=int(rng.integers(1000)))
    o = host.ohlcv(window=False)
    dev = gp.Market(*(cuda.to_device(np.ascontiguousarray(o[k])) for k in ("open", "high", "low", "close", "volume")))
    assert dev.on_device
    pop = random_population(rng, 2)
    out = gp.evaluate(pop, dev, "register")
    from gpulab import arrays

    assert arrays.is_device_array(out) and not isinstance(out, np.ndarray)
    np.testing.assert_array_equal(arrays.to_host(out), gp.evaluate(pop, host, "register"))
    assert isinstance(gp.evaluate(pop, host, "register"), np.ndarray)
    train, test = dev.split(10)
    assert train.on_device and arrays.is_device_array(gp.evaluate(pop, test, "bitsliced"))
    first = arrays.to_host(out).copy()
    gp.evaluate(random_population(rng, 2), dev, "register")  # the next call must not overwrite the result
    np.testing.assert_array_equal(arrays.to_host(out), first)


def test_default_variant_and_public_api(rng):
    assert gp.DEFAULT_VARIANT == "bitsliced" and "bitsliced" in gp.variants("numba")
    market = gp.synthetic_market(4, 30, seed=2)
    pop = random_population(rng, 2)
    fit = gp.evaluate(pop, market)
    np.testing.assert_allclose(fit, reference.evaluate(pop, market).fitness, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(gp.evaluate([PAPER], market), fit[:1], rtol=1e-12, atol=1e-15)


_SEED: dict = {}


def _seed_size():
    """The seed-size market and population, and the CPU interpreter's result (computed once)."""
    if not _SEED:
        market = gp.synthetic_market(32, 768, seed=11)
        pop = gp.Population(*ramped_half_and_half(25_000, 2, 5, 255, 0.3, 11))
        _SEED["v"] = (market, pop, gp.evaluate_detail(pop, market, "interpreter", "cpu", trace=False))
    return _SEED["v"]


@pytest.mark.skipif(ON_SIMULATOR, reason="the seed-size population (25,000 × 32 × 768): GPU only")
@pytest.mark.parametrize("variant", [v for v in DEVICE], ids=lambda v: v.key)
def test_seed_size_population_matches_the_cpu_interpreter(variant):
    skip_unless_runnable(variant)
    market, pop, full = _seed_size()
    if variant.name == "compiled":
        n = 64 if variant.backend == "numba" else 1024
        pop = gp.Population(pop.code[:pop.offsets[2 * n]], pop.offsets[:2 * n + 1])
        cpu = gp.Evaluation(full.fitness[:n], full.money[:n])
    else:
        cpu = full
    got = gp.evaluate_detail(pop, market, variant.name, variant.backend, trace=False, poison=True)
    assert np.array_equal(got.money.view(np.uint64), cpu.money.view(np.uint64))
    assert np.array_equal(got.fitness.view(np.uint64), cpu.fitness.view(np.uint64))


def test_params_overrides_from_the_environment(monkeypatch, tmp_path):
    """GPULAB_GP_PARAMS (JSON text or a file) overrides the registry's parameters per variant or
    per variant and backend; unknown names are an error that names them."""
    import importlib

    variants = importlib.import_module("gpulab.gp.variants")
    monkeypatch.setenv("GPULAB_GP_PARAMS", '{"register": {"DAYS": 8}, "bitsliced[cuda-c]": {"TW": 2}}')
    extra = variants.overrides()
    assert variants.params_for("register", "cuda-c", extra)["DAYS"] == 8
    assert variants.params_for("bitsliced", "cuda-c", extra)["TW"] == 2
    assert variants.params_for("bitsliced", "numba", extra)["TW"] == variants.PARAMS["bitsliced"]["TW"]
    path = tmp_path / "p.json"
    path.write_text('{"registr": {"DAYS": 2}}')
    monkeypatch.setenv("GPULAB_GP_PARAMS", str(path))
    with pytest.raises(ValueError, match="registr"):
        variants.overrides()

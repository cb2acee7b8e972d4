"""The GP loop's waits (issue 29): what the host does not wait for changes nothing. A breeding
queued without waiting (`breed_resident(..., wait=False)`), with the children's code length read
before the write pass or after it, gives the CPU breeding's children; evaluations launched
together (`Evaluator.launch`) give each its own result; `evolve` freezes Python's garbage
collector only during its run. Tiny sizes: these run on numba's simulator."""

import gc

import numpy as np
import pytest

from gpulab.gp import breeding_gpu, resident
from gpulab.gp.loop import GPParams, evolve, initial_population
from gpulab.gp.market import synthetic_market
from gpulab.gp.variants import REGISTRY
from tests.conftest import skip_unless_runnable
from tests.gp.test_device_population import _args, _cpu_generation, _same


@pytest.mark.parametrize("room", ["reserved", "grown"])
@pytest.mark.parametrize("wait", [True, False])
def test_a_breeding_gives_the_cpu_children_whether_or_not_the_host_waits(rng, monkeypatch, room, wait):
    """Three generations chained on the device. ``reserved``: the code buffers have room for any
    children (`reserve`), so the write pass is queued before the code length is read; ``grown``:
    they grow with the code, so the length is read first. Either way, waited for at once or
    later, the children are the CPU breeding's."""
    p = GPParams(population=int(rng.integers(20, 40)), elite=int(rng.integers(1, 3)), tournament=3,
                 max_depth=int(rng.integers(6, 9)), max_nodes=int(rng.integers(30, 60)), p_mutation=0.15)
    host = initial_population(p, int(rng.integers(2**31)))
    breeding_gpu.clear_cache()
    if room == "reserved":
        breeding_gpu.reserve(host, p.elite, p.max_nodes, p.mutation_depth)
    waits = []
    real_scan = resident.exclusive_scan

    def scan(*a, **k):
        waits.append(k.get("wait", True))
        return real_scan(*a, **k)

    monkeypatch.setattr(resident, "exclusive_scan", scan)
    dev = host
    for _ in range(3):
        fitness = rng.normal(size=p.population)
        seed = int(rng.integers(2**31))
        host = _cpu_generation(host, fitness, p, seed)
        got = breeding_gpu.breed_resident(dev, *_args(fitness, p, seed), wait=wait)
        dev = got if wait else got()
        _same(host, dev)
    # the premise: the length was read after the write pass exactly when the room was reserved
    assert waits == [room == "grown"] * 3


def _evaluators(markets):
    v = REGISTRY.get("bitsliced", "numba")
    skip_unless_runnable(v)
    return [v.run(v, m, v.launch_params(None)) for m in markets]


def test_evaluations_launched_together_give_each_its_own_result(rng):
    """Two evaluators (two periods) launched one after the other and finished in the other order
    give what each gives alone, and ``to_host`` brings back the same fitness as the device's."""
    market = synthetic_market(3, 70, seed=int(rng.integers(1000)))
    train, test = market.split(50)
    pop = initial_population(GPParams(population=int(rng.integers(5, 40)), max_nodes=40), int(rng.integers(2**31)))
    alone = [ev(pop)[0].copy_to_host() for ev in _evaluators([train, test])]
    a, b = _evaluators([train, test])
    done_a = a.launch(pop, to_host=True)
    done_b = b.launch(pop, to_host=True)
    fit_b = done_b()[0].copy_to_host()
    fit_a = done_a()[0].copy_to_host()
    for fit, ev, want in ((fit_a, a, alone[0]), (fit_b, b, alone[1])):
        assert np.array_equal(fit[:len(pop)], want[:len(pop)])
        assert np.array_equal(ev.fitness_host, want[:len(pop)])
    assert not np.array_equal(fit_a[:len(pop)], fit_b[:len(pop)])  # (two periods: two results)


@pytest.mark.parametrize("before", ["none", "frozen", "disabled"])
def test_evolve_freezes_the_garbage_collector_during_its_run_only(before):
    """During the generations the collector skips the objects of the warm-up (`gc.freeze`);
    afterwards it is as it was: nothing frozen, or the caller's freeze left alone, and nothing
    done when the caller turned the collector off."""
    seen = []
    was_enabled = gc.isenabled()
    gc.unfreeze()  # (a known start: nothing frozen)
    try:
        if before == "frozen":
            gc.freeze()
        elif before == "disabled":
            gc.disable()
        count = gc.get_freeze_count()
        evolve(synthetic_market(2, 40, seed=3), train_days=30, params=GPParams(population=6, generations=2, elite=1),
               backend="cpu", seed=1, progress=lambda line: seen.append(gc.get_freeze_count()))
        assert len(seen) == 3
        if before == "frozen":  # (the count falls as frozen objects die: it is not a constant)
            assert count > 0 and gc.get_freeze_count() > 0  # the caller's freeze is not undone
        else:
            assert count == 0 and gc.get_freeze_count() == 0
            assert all(n > 0 for n in seen) if before == "none" else seen == [0] * 3
    finally:
        gc.unfreeze()
        if was_enabled:
            gc.enable()


@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
def test_the_gpu_initial_population_is_the_cpu_one(rng, backend):
    """`breeding_gpu.initial_population`: the CPU's `ramped_half_and_half` bit for bit (code,
    offsets, stats, maxima), with redrawn trees among them, whether its code buffer was
    reserved (no wait for the length) or not; the first breeding reads it in place."""
    from tests.gp.test_breeding_gpu import _init_settings

    if backend == "cuda-c":
        from gpulab import cudac

        if cudac.unavailable_reason():
            pytest.skip(f"GPU initialization in CUDA C: {cudac.unavailable_reason()}")
    for k in range(4):
        P, lo, hi, mn, pl, seed = _init_settings(rng, redraw=k < 2)  # (reserved and not, with redrawn trees)
        p = GPParams(population=P, init_depth=(lo, hi), max_depth=max(hi, 2), max_nodes=mn, p_leaf=pl,
                     elite=min(2, P))
        breeding_gpu.clear_cache()
        if k % 2:
            breeding_gpu.reserve_initial(P, hi, mn, p.elite, p.mutation_depth, backend)
        dev = breeding_gpu.initial_population(P, lo, hi, mn, pl, seed, p.elite, p.mutation_depth, backend)
        host = initial_population(p, seed)
        _same(host, dev)
        fitness = rng.normal(size=P)
        s = int(rng.integers(2**31))
        children = breeding_gpu.breed_resident(dev, *_args(fitness, p, s), backend=backend)
        assert children._slot is not dev._slot  # read in place: bred into the other slot
        _same(_cpu_generation(host, fitness, p, s), children)


def test_a_run_whose_code_room_does_not_fit_is_the_same_run(rng, monkeypatch):
    """With `CODE_ROOM_SHARE` 0 the code buffers grow with the code (the children's length is
    read before each write pass), the initial population made on the GPU included: the same
    run as with the room reserved."""
    market = synthetic_market(2, 40, seed=int(rng.integers(1000)))
    params = GPParams(population=int(rng.integers(6, 12)), generations=3, elite=1, max_nodes=40)
    seed = int(rng.integers(1000))

    def run():
        breeding_gpu.clear_cache()
        r = evolve(market, train_days=30, params=params, backend="numba", seed=seed, progress=None, breeding="gpu")
        return [{k: v for k, v in h.items() if not k.endswith("_ms")} for h in r.history], r.best

    reserved = run()
    waits = []
    real_scan = resident.exclusive_scan
    monkeypatch.setattr(resident, "exclusive_scan", lambda *a, **k: waits.append(k.get("wait", True)) or real_scan(*a, **k))
    monkeypatch.setattr(breeding_gpu, "CODE_ROOM_SHARE", 0.0)
    assert run() == reserved
    assert waits and all(waits)  # the premise: every length was read first


@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
def test_a_run_stopped_during_the_test_evaluation_keeps_a_best_rule(rng, monkeypatch, error):
    """An error (or a second Ctrl-C) while the test period of generation 1 is evaluated, after
    that generation's breeding was queued over generation 0's device buffers: that error reaches
    the caller (not a complaint about overwritten buffers), and an interrupted run's result keeps
    generation 1's best on training, its test fitness unknown (None)."""
    from gpulab.gp import host
    from gpulab.gp.loop import EvolutionInterrupted

    market = synthetic_market(2, 40, seed=int(rng.integers(1000)))
    params = GPParams(population=int(rng.integers(6, 12)), generations=3, elite=1, max_nodes=40)
    calls = []
    real_launch = host.Evaluator.launch

    def launch(self, pop, *a, **k):
        finish = real_launch(self, pop, *a, **k)
        calls.append(self.market.days)
        # launches: the warm-ups' (train, test) twice, then generation 0's and generation 1's pairs
        if len(calls) == 8:
            assert calls[-1] == 10  # (the test period: 40 days, 30 of training)

            def fail():
                finish()
                raise error("stop here")
            return fail
        return finish

    monkeypatch.setattr(host.Evaluator, "launch", launch)
    with pytest.raises(EvolutionInterrupted if error is KeyboardInterrupt else RuntimeError) as info:
        evolve(market, train_days=30, params=params, backend="numba", seed=int(rng.integers(1000)), progress=None,
               breeding="gpu", reuse=False)
    if error is KeyboardInterrupt:
        r = info.value.result
        assert [h["generation"] for h in r.history] == [0] and r.interrupted
        assert r.best["generation"] == 1 and r.best["test"] is None and r.best["buy"] and r.best["sell"]
    else:
        assert str(info.value) == "stop here"

"""Chapter 3's reuse of a copied individual's fitness (`Evaluator(..., reuse=True)`,
`gpulab.gp.kernels.cu`'s `gp_changed` / `gp_fitness_copies` and their numba twins): a child the
breeding copied unchanged takes its parent's fitness without being interpreted, every other
child is interpreted, and the fitness is the full evaluation's, bit for bit. Only a child whose
two trees are one parent's, in order, counts as a copy; a broken lineage (another population
evaluated in between, the parents gone) evaluates everything. Tiny sizes: these run on numba's
simulator; on a GPU the CUDA C kernels too. With the day-mask cache (`gp_copy_masks`, the
kernel's ``cache``), a changed child's tree that its parents had is read, not interpreted."""

import gc

import numpy as np
import pytest

from gpulab.errors import GpulabError
from gpulab.gp import host
from gpulab.gp.breeding import ramped_half_and_half
from gpulab.gp.loop import GPParams, evolve
from gpulab.gp.market import synthetic_market
from gpulab.gp.programs import Population
from gpulab.gp.variants import REGISTRY
from tests.conftest import skip_unless_runnable

KINDS = ("copy", "new", "half", "two parents", "swapped")  # only "copy" may be reused


def _evaluator(backend, market):
    v = REGISTRY.get("bitsliced", backend)
    skip_unless_runnable(v)
    return v.run(v, market, v.launch_params(None))


def _population(rng, n):
    code, offsets = ramped_half_and_half(n, 2, 4, 60, 0.3, int(rng.integers(2**31)))
    return Population(code, offsets)


def _child(rng, parents: Population, P: int):
    """``P`` children, each of a kind of `KINDS` (every kind at least once when ``P`` allows,
    "copy" and "new" always), with the ``src`` a breeding would give them."""
    kinds = list(KINDS[:P]) if P < len(KINDS) else list(KINDS) + list(rng.choice(KINDS, P - len(KINDS)))
    if P >= 2:
        kinds[:2] = ["copy", "new"]
    rng.shuffle(kinds)
    fresh = _population(rng, P)
    n = len(parents)
    trees, src = [], []
    for c, kind in enumerate(kinds):
        a, b = int(rng.integers(n)), int(rng.integers(n))
        if kind == "two parents":
            b = (a + 1 + int(rng.integers(n - 1))) % n if n > 1 else a
        pick = {"copy": [(a, 0), (a, 1)], "new": [(None, 0), (None, 1)], "half": [(a, 0), (None, 1)],
                "two parents": [(a, 0), (b, 1)], "swapped": [(a, 1), (a, 0)]}[kind]
        if kind == "two parents" and b == a:  # one parent only: a copy after all
            kinds[c] = "copy"
        for u, (who, t) in enumerate(pick):
            if who is None:
                trees.append(fresh.code[fresh.offsets[2 * c + u]:fresh.offsets[2 * c + u + 1]])
                src.append(-1)
            else:
                trees.append(parents.code[parents.offsets[2 * who + t]:parents.offsets[2 * who + t + 1]])
                src.append(2 * who + t)
    offsets = np.concatenate([[0], np.cumsum([t.size for t in trees])]).astype(np.int32)
    child = Population.bred(np.concatenate(trees), offsets, parents, np.array(src, np.int64))
    return child, kinds


def _host(x):
    return x if isinstance(x, np.ndarray) else x.copy_to_host()


def _poison(ev, P):
    """NaN in the fitness buffer and all ones in the day-mask buffer the next call writes:
    every entry it returns or keeps must be written."""
    turn = 1 - ev._turn
    ev._buf(f"fitness{turn}", P, np.float64).copy_to_device(np.full(ev._buffers[f"fitness{turn}"].size, np.nan))
    if f"masks{turn}" in ev._buffers:
        masks = ev._buffers[f"masks{turn}"]
        masks.copy_to_device(np.full(masks.size, ~np.uint64(0), np.uint64))


MODES = {"trees": "the day-mask cache: only changed trees interpreted",
         "individuals": "no cache (MASK_CACHE_SHARE = 0): only copies skipped"}


@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("P", [1, 2, 31, 33, 67])
def test_a_copied_child_takes_its_parents_fitness_and_the_rest_are_interpreted(rng, backend, mode, P, monkeypatch):
    if mode == "individuals":
        monkeypatch.setattr(host, "MASK_CACHE_SHARE", 0.0)
    market = synthetic_market(3, 150, seed=int(rng.integers(2**31)))
    ev = _evaluator(backend, market)
    parents = _population(rng, int(rng.integers(max(P // 2, 1), P + 8)))
    parent_fit = _host(ev(parents, reuse=True)[0])[:len(parents)].copy()
    assert ev._cached is (mode == "trees")
    child, kinds = _child(rng, parents, P)
    assert "copy" in kinds and (P == 1 or "new" in kinds)  # the premise: both paths run
    full = _host(_evaluator(backend, market)(child)[0])[:P].copy()
    _poison(ev, P)
    got = _host(ev(child, reuse=True)[0])[:P]
    assert np.array_equal(got.view(np.uint64), full.view(np.uint64)), \
        f"{mode}, kinds {kinds}: differs at {np.flatnonzero(got != full).tolist()}"
    copies = [c for c, k in enumerate(kinds) if k == "copy"]
    assert ev.evaluated == P - len(copies)
    for c in copies:
        assert got[c] == parent_fit[child.copies_of(parents)[2 * c] // 2]


@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
def test_the_day_masks_of_copies_reach_the_next_generation(rng, backend):
    """Three generations on one evaluator: the grandchildren copy trees of children that were
    themselves copies (their masks were moved by `gp_copy_masks`, not written by the kernel)."""
    market = synthetic_market(3, 200, seed=int(rng.integers(2**31)))
    ev = _evaluator(backend, market)
    pop = _population(rng, 23)
    ev(pop, reuse=True)
    for g in range(2):
        child, kinds = _child(rng, pop, 23)
        full = _host(_evaluator(backend, market)(child)[0])[:23].copy()
        _poison(ev, 23)
        got = _host(ev(child, reuse=True)[0])[:23]
        assert np.array_equal(got.view(np.uint64), full.view(np.uint64)), f"generation {g + 1}, kinds {kinds}"
        assert ev.evaluated == 23 - kinds.count("copy") and ev._cached
        pop = child


def test_filling_the_cache_interprets_every_child(rng):
    """Parents evaluated without reuse left no day masks: the child is interpreted whole (and
    fills the cache), then its own child reuses it."""
    market = synthetic_market(2, 100, seed=int(rng.integers(2**31)))
    ev = _evaluator("numba", market)
    parents = _population(rng, 12)
    ev(parents)
    child, kinds = _child(rng, parents, 12)
    ev(child, reuse=True)
    assert ev.evaluated == 12 and ev._cached
    grandchild, kinds = _child(rng, child, 12)
    full = _host(_evaluator("numba", market)(grandchild)[0])[:12].copy()
    got = _host(ev(grandchild, reuse=True)[0])[:12]
    assert ev.evaluated == 12 - kinds.count("copy")
    assert np.array_equal(got.view(np.uint64), full.view(np.uint64))


@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
@pytest.mark.parametrize("broken", ["another population evaluated in between", "the parents gone", "reuse off"])
def test_a_broken_lineage_interprets_every_child(rng, backend, broken):
    market = synthetic_market(2, 100, seed=int(rng.integers(2**31)))
    ev = _evaluator(backend, market)
    ev(_population(rng, 12), reuse=True)  # the first launches (compilation, caches) on a population of no interest
    parents = _population(rng, 12)
    ev(parents, reuse=True)
    child, kinds = _child(rng, parents, 12)
    assert "copy" in kinds
    full = _host(_evaluator(backend, market)(child)[0])[:12].copy()
    if broken == "another population evaluated in between":
        ev(_population(rng, 12), reuse=True)
    elif broken == "the parents gone":
        del parents
        gc.collect()
        alive = child._lineage[0]()
        assert alive is None, [f"{type(r).__name__}: {repr(r)[:300]}" for r in gc.get_referrers(alive)]
    got = _host(ev(child, reuse=broken != "reuse off")[0])[:12]
    assert ev.evaluated == 12
    assert np.array_equal(got.view(np.uint64), full.view(np.uint64))


@pytest.mark.parametrize("backend,breeding", [("numba", "gpu"), ("numba", "cpu"), ("cuda-c", "gpu")])
def test_a_run_that_reuses_copies_is_the_run_that_does_not(rng, backend, breeding):
    """The same seeded run with and without the reuse: the same rows (but the count of individuals
    interpreted) and the same best rule; with elites, every bred generation interprets fewer."""
    skip_unless_runnable(REGISTRY.get("bitsliced", backend))
    if breeding == "gpu":
        from tests.gp.test_device_population import _needs_gpu

        if backend == "cuda-c":
            _needs_gpu("the CUDA C breeding", backend)
    market = synthetic_market(3, 140, seed=int(rng.integers(2**31)))
    p = GPParams(population=int(rng.integers(12, 20)), generations=3, elite=2, tournament=3, max_depth=6,
                 max_nodes=40)
    seed = int(rng.integers(2**31))

    def run(reuse):
        r = evolve(market, params=p, backend=backend, breeding=breeding, seed=seed, progress=None, reuse=reuse)
        assert r.settings["reuse"] is reuse
        return r

    on, off = run(True), run(False)
    drop = ("eval_ms", "breed_ms", "evaluated")
    assert [{k: v for k, v in h.items() if k not in drop} for h in on.history] == \
           [{k: v for k, v in h.items() if k not in drop} for h in off.history]
    assert on.best == off.best
    assert all(h["evaluated"] == p.population for h in off.history)
    assert on.history[0]["evaluated"] == p.population
    assert all(h["evaluated"] <= p.population - p.elite for h in on.history[1:])


def test_reuse_must_be_a_bool():
    with pytest.raises(GpulabError, match="reuse must be True or False"):
        evolve(synthetic_market(1, 80), params=GPParams(population=4, generations=1), backend="cpu", reuse="yes")

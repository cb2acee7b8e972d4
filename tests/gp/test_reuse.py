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
    """NaN in the fitness buffer and random bits in the day-mask buffer the next call writes
    (allocated here at the size it will have): every entry it returns, and every mask the
    generation after it reads, must have been written."""
    turn = 1 - ev._turn
    ev._buf(f"fitness{turn}", P, np.float64).copy_to_device(np.full(ev._buffers[f"fitness{turn}"].size, np.nan))
    m = ev.market
    masks = ev._buf(f"masks{turn}", 2 * P * m.words * m.stocks, np.uint64)
    masks.copy_to_device(np.random.default_rng(7).integers(0, 2**63, masks.size, dtype=np.uint64))


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
    last_kinds = None
    for g in range(2):
        for _ in range(50):  # the premise: in generation 2, a changed child reads a tree of a copy
            child, kinds = _child(rng, pop, 23)
            src = child.copies_of(pop)
            if last_kinds is None or any(last_kinds[int(src[t]) // 2] == "copy" and kinds[t // 2] != "copy"
                                         for t in range(46) if src[t] >= 0):
                break
        else:
            pytest.fail("no generation-2 child reads a tree of a generation-1 copy in 50 tries")
        last_kinds = kinds
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
    r = evolve(synthetic_market(1, 80), params=GPParams(population=4, generations=1), backend="cpu",
               reuse=np.False_, progress=None)
    assert r.settings["reuse"] is False


def test_unchanged_trees_are_read_from_the_cache_not_interpreted(rng):
    """Bits written over the parents' day masks reach the children, whatever the trees are: a
    swapped child's two trees take the random words written at its parent's trees (words no
    interpretation would give) into the new cache; a half child's kept buy tree takes the zeros
    written at its parent's, into the cache and into its trades (it never buys: it keeps its
    money, and its fitness is minus the mean buy-and-hold return), its new tree is interpreted;
    a child of only new trees keeps its interpreted masks and its true fitness. (Before: the
    test wrote random bits and required some half child's fitness to change, which a sell tree
    that decides every day need not give.)"""
    market = synthetic_market(3, 150, seed=int(rng.integers(2**31)))
    W, S = market.words, market.stocks
    ev = _evaluator("numba", market)
    parents = _population(rng, 20)
    ev(parents, reuse=True)
    child, kinds = _child(rng, parents, 20)
    assert {"half", "new", "swapped"} <= set(kinds)
    src = child.copies_of(parents)
    half = [c for c, k in enumerate(kinds) if k == "half"]
    new = [c for c, k in enumerate(kinds) if k == "new"]
    fresh = _evaluator("numba", market)
    full = _host(fresh(child, reuse=True)[0])[:20].copy()  # a first call: every tree interpreted, its masks kept
    true_masks = _host(fresh._buffers[f"masks{fresh._turn}"])[:2 * 20 * W * S].reshape(2 * 20, W, S)
    cache = ev._buffers[f"masks{ev._turn}"]
    garbage = np.random.default_rng(int(rng.integers(2**31))).integers(0, 2**63, cache.size, dtype=np.uint64)
    trees = garbage[:2 * 20 * W * S].reshape(2 * 20, W, S)
    for c in half:
        trees[src[2 * c]] = 0  # the buy tree a half child keeps: never buys
    cache.copy_to_device(garbage)
    got = _host(ev(child, reuse=True)[0])[:20]
    masks = _host(ev._buffers[f"masks{ev._turn}"])[:2 * 20 * W * S].reshape(2 * 20, W, S)
    valid = np.full(W, ~np.uint64(0))
    if market.days % 64:
        valid[-1] = np.uint64((1 << market.days % 64) - 1)
    never = sum(0.0 - b for b in market.buy_and_hold().astype(np.float64).tolist()) / S
    for c in half:
        assert np.array_equal(masks[2 * c], trees[src[2 * c]] & valid[:, None]), c  # read: zeros
        assert np.array_equal(masks[2 * c + 1], true_masks[2 * c + 1]), c  # the new tree, interpreted
        assert got[c] == never, (c, got[c], never, full[c])
    for c in [c for c, k in enumerate(kinds) if k == "swapped"]:  # both trees read: the random words
        for t in (2 * c, 2 * c + 1):
            assert np.array_equal(masks[t], trees[src[t]] & valid[:, None]), (c, t)
    for c in new:
        assert np.array_equal(masks[2 * c:2 * c + 2], true_masks[2 * c:2 * c + 2]), c
        assert got[c] == full[c]


def test_a_failed_call_leaves_the_next_one_right(rng, monkeypatch):
    """A launch that raises after `gp_changed` counted (the kernel's, or the fitness kernel's):
    the count is reset, and the next call with reuse lists exactly its own changed children."""
    market = synthetic_market(2, 100, seed=int(rng.integers(2**31)))
    ev = _evaluator("numba", market)
    parents = _population(rng, 16)
    ev(parents, reuse=True)
    child, kinds = _child(rng, parents, 16)

    def broken(self, *args, **kw):
        raise KeyboardInterrupt

    for where in ("_launch", "_fitness"):  # the kernel, or the fitness kernel that resets the count
        real = getattr(type(ev), where)
        monkeypatch.setattr(type(ev), where, broken)
        with pytest.raises(KeyboardInterrupt):
            ev(child, reuse=True)
        monkeypatch.setattr(type(ev), where, real)
        assert int(ev._buffers["count"].copy_to_host()[0]) == 0, where
        ev(parents, reuse=True)  # the lineage again
    full = _host(_evaluator("numba", market)(child)[0])[:16].copy()
    got = _host(ev(child, reuse=True)[0])[:16]
    assert ev.evaluated == 16 - kinds.count("copy")
    assert np.array_equal(got.view(np.uint64), full.view(np.uint64))


def test_without_room_for_the_cache_only_copies_are_skipped(rng, monkeypatch):
    """An allocation of the day masks that fails for lack of memory turns the cache off for
    that size: copies are still skipped, every changed child is interpreted whole."""
    market = synthetic_market(2, 100, seed=int(rng.integers(2**31)))
    ev = _evaluator("numba", market)
    real = type(ev)._buf

    def no_room(self, key, n, dtype):
        if str(key).startswith("masks"):
            raise MemoryError("out of memory (a test)")
        return real(self, key, n, dtype)

    monkeypatch.setattr(type(ev), "_buf", no_room)
    parents = _population(rng, 14)
    ev(parents, reuse=True)
    assert not ev._cached and ev._fits == {14: False} and not {"masks0", "masks1"} & set(ev._buffers)
    child, kinds = _child(rng, parents, 14)
    full = _host(_evaluator("numba", market)(child)[0])[:14].copy()
    got = _host(ev(child, reuse=True)[0])[:14]
    assert ev.evaluated == 14 - kinds.count("copy")
    assert np.array_equal(got.view(np.uint64), full.view(np.uint64))


def test_cli_no_reuse_is_recorded(tmp_path):
    import json

    from tests.test_cli import gpulab

    small = ["gp", "evolve", "--backend", "cpu", "--population", "8", "--generations", "1", "--stocks", "2",
             "--days", "32", "--test-days", "16", "--out", str(tmp_path), "--json"]
    for flag, want in (([], True), (["--no-reuse"], False)):
        p = gpulab(*small, *flag, "--stem", f"r{want}", cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        assert json.loads((tmp_path / f"r{want}.json").read_text())["settings"]["reuse"] is want

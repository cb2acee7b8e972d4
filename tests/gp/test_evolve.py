"""Chapter 3's GP loop: typed initialization, crossover and mutation keep types and limits,
the operators splice subtrees correctly, and a run is reproducible from its seed."""

import json
import subprocess
import sys

import numpy as np
import pytest

import gpulab.gp as gp
from gpulab.gp import breeding, reference
from gpulab.gp.loop import GPParams, evolve, initial_population, next_generation
from gpulab.gp.programs import analyze


def test_initial_population_is_typed_and_ramped_over_every_depth(rng):
    params = GPParams(population=25_000)
    seed = int(rng.integers(2**31))
    pop = initial_population(params, seed)
    assert len(pop) == 25_000  # Population() validated every tree (types, one boolean left)
    mean = pop.nodes.sum(axis=1).mean()
    assert 11 <= mean <= 15, f"mean {mean} nodes per individual; ramped 2-5 half-and-half makes about 12.8"
    assert pop.depth.max() <= params.init_depth[1] and pop.depth.min() >= 1
    assert set(np.unique(pop.depth)) >= {2, 3, 4, 5}  # ramped over the depths
    assert np.array_equal(initial_population(params, seed).code, pop.code)


@pytest.mark.parametrize("lo,hi", [(2, 5), (1, 3), (3, 6), (4, 4)])
def test_ramped_half_and_half_gives_every_depth_grown_and_full_trees(rng, lo, hi):
    """Koza's ramp: at every depth of [lo, hi], half the trees full (every leaf at that depth),
    half grown (no deeper). Premise by construction: 2·D·k individuals hold each (depth, method)
    exactly 2k times (two trees each), whatever the seed."""
    D = hi - lo + 1
    P = 2 * D * int(rng.integers(3, 9))
    code, offsets = breeding.ramped_half_and_half(P, lo, hi, 2 ** (hi + 2), 0.3, int(rng.integers(2**31)))
    subtree, height, depth, _ = breeding.node_info(code, offsets)
    leaf = subtree == 1
    size = np.diff(offsets)
    seen = {}
    for t in range(2 * P):
        want, full = breeding._ramp(t, lo, hi)
        a, b = int(offsets[t]), int(offsets[t + 1])
        h = int(height[b - 1])  # the root is the tree's last opcode (RPN)
        if full:
            assert h == want and np.all(depth[a:b][leaf[a:b]] == want), f"tree {t} is not full at depth {want}"
        else:
            assert 1 <= h <= want, f"tree {t}: height {h} over its depth {want}"
        seen[(want, full)] = seen.get((want, full), 0) + 1
        assert size[t] >= 1
    assert seen == {(d, f): P // D for d in range(lo, hi + 1) for f in (False, True)}


def test_node_info_spans_are_subtrees():
    pop = gp.Population.from_individuals([("(AND (> MA10 MA50) (OR (< EMA9 MA25) NVIG))", "(NOT NVIL)")])
    size, height, depth, isf = breeding.node_info(pop.code, pop.offsets)
    # RPN: MA10 MA50 > EMA9 MA25 < NVIG OR AND | NVIL NOT
    assert size.tolist() == [1, 1, 3, 1, 1, 3, 1, 5, 9, 1, 2]
    assert height.tolist() == [1, 1, 2, 1, 1, 2, 1, 3, 4, 1, 2]
    assert depth.tolist() == [3, 3, 2, 4, 4, 3, 3, 2, 1, 2, 1]
    assert isf.tolist() == [1, 1, 0, 1, 1, 0, 0, 0, 0, 0, 0]


@pytest.mark.parametrize("p_cross,p_mut", [(1.0, 0.0), (0.0, 1.0), (0.8, 0.1)])
def test_crossover_and_mutation_keep_types_and_limits(rng, p_cross, p_mut):
    params = GPParams(population=3000, p_crossover=p_cross, p_mutation=p_mut, max_depth=7, max_nodes=40)
    pop = initial_population(params, int(rng.integers(2**31)))
    for g in range(6):
        fit = rng.normal(size=len(pop))
        new = next_generation(pop, fit, params, int(rng.integers(2**31)))  # validated by Population()
        assert len(new) == len(pop)
        assert new.depth.max() <= params.max_depth and new.nodes.max() <= params.max_nodes
        pop = new
    # the operators do change programs: most children differ from every parent tree they could copy
    before = {pop.tree(i, 0).tobytes() for i in range(len(pop))}
    after = next_generation(pop, rng.normal(size=len(pop)), params, 1)
    novel = sum(after.tree(i, 0).tobytes() not in before for i in range(len(after)))
    assert novel > 0.2 * len(after) * max(p_cross, p_mut) / 2


def test_elitism_keeps_the_best_and_reproduction_copies():
    params = GPParams(population=200, elite=3, p_crossover=0.0, p_mutation=0.0)
    pop = initial_population(params, 5)
    fit = np.arange(200, dtype=float)
    new = next_generation(pop, fit, params, 9)
    for k in range(3):  # the three best, in order
        for t in range(2):
            assert np.array_equal(new.tree(k, t), pop.tree(199 - k, t))
    parents = {(pop.tree(i, 0).tobytes(), pop.tree(i, 1).tobytes()) for i in range(200)}
    assert all((new.tree(i, 0).tobytes(), new.tree(i, 1).tobytes()) in parents for i in range(200))


def test_crossover_splices_a_subtree_of_the_same_type(rng):
    """Every child of pure crossover is, tree by tree, parent A with one subtree replaced by a
    subtree of a parent B of the same type; checked on the flat code with node_info spans."""
    params = GPParams(population=400, p_crossover=1.0, p_mutation=0.0, max_depth=10, max_nodes=100)
    pop = initial_population(params, int(rng.integers(2**31)))
    new = next_generation(pop, np.zeros(len(pop)), params, int(rng.integers(2**31)))
    size, _, _, isf = breeding.node_info(pop.code, pop.offsets)
    trees, spans = [], {0: set(), 1: set()}
    for t in range(2 * len(pop)):
        a, b = pop.offsets[t], pop.offsets[t + 1]
        nodes = [(p - a - size[p] + 1, p - a + 1, int(isf[p])) for p in range(a, b)]  # (lo, hi, type) per node
        trees.append((pop.code[a:b].tobytes(), nodes))
        for lo, hi, ty in nodes:
            spans[ty].add(pop.code[a + lo:a + hi].tobytes())
    whole = {t for t, _ in trees}

    def is_splice(child):
        for parent, nodes in trees:
            for lo, hi, ty in nodes:
                tail = len(parent) - hi
                if len(child) > lo + tail and child[:lo] == parent[:lo] and child[len(child) - tail:] == parent[hi:]:
                    if child[lo:len(child) - tail] in spans[ty]:
                        return True
        return False

    changed = [(i, t) for i in range(len(new)) for t in range(2) if new.tree(i, t).tobytes() not in whole][:10]
    assert len(changed) >= 5
    for i, t in changed:
        assert is_splice(new.tree(i, t).tobytes()), f"child {i} tree {t} is not a same-type splice of two parents"
    # and a splice check that can fail: a child with a float subtree where a boolean one was is rejected
    wrong = bytes([2, 5, 34]).replace(bytes([5, 34]), bytes([5]))  # "MA10 MA50" cut short: not a splice
    assert not is_splice(wrong)


def test_evolution_is_reproducible_from_its_seed():
    market = gp.synthetic_market(4, 120, seed=7)
    params = GPParams(population=300, generations=4)
    a = evolve(market, train_days=80, params=params, variant="cpu_bitsliced", backend="cpu", seed=42, progress=None)
    b = evolve(market, train_days=80, params=params, variant="interpreter", backend="cpu", seed=42, progress=None)
    c = evolve(market, train_days=80, params=params, variant="cpu_bitsliced", backend="cpu", seed=43, progress=None)
    keys = ("train_best", "train_mean", "test_of_best", "test_mean", "mean_nodes")
    assert [[h[k] for k in keys] for h in a.history] == [[h[k] for k in keys] for h in b.history]
    assert a.best == b.best and a.best != c.best
    assert len(a.history) == 5 and a.settings["train_days"] == 80 and a.settings["test_days"] == 40
    # the reported best is what the reference says about that rule
    train, test = market.split(80)
    best = gp.Population.from_individuals([(a.best["buy"], a.best["sell"])])
    assert reference.evaluate(best, train).fitness[0] == pytest.approx(a.best["train"], rel=1e-12)
    assert reference.evaluate(best, test).fitness[0] == pytest.approx(a.best["test"], rel=1e-12)
    # elitism: the best training fitness never falls
    tb = [h["train_best"] for h in a.history]
    assert all(y >= x for x, y in zip(tb, tb[1:]))


def test_evolve_on_the_simulated_gpu_matches_the_cpu():
    market = gp.synthetic_market(3, 60, seed=8)
    params = GPParams(population=40, generations=2)
    a = evolve(market, train_days=40, params=params, variant="bitsliced", backend="numba", seed=5, progress=None)
    b = evolve(market, train_days=40, params=params, variant="cpu_bitsliced", backend="cpu", seed=5, progress=None)
    assert [h["train_best"] for h in a.history] == [h["train_best"] for h in b.history] and a.best == b.best


def test_cli_evolve_writes_json_and_png(tmp_path):
    p = subprocess.run([sys.executable, "-m", "gpulab", "gp", "evolve", "--population", "200", "--generations", "2",
                        "--stocks", "3", "--days", "60", "--test-days", "30", "--backend", "cpu", "--seed", "3",
                        "--out", str(tmp_path)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "best rule" in p.stdout and "2 generations in" in p.stdout.splitlines()[-1]
    assert "gen " not in p.stdout  # no line per generation (a progress bar on a terminal instead)
    data = json.loads((tmp_path / "gp-evolve.json").read_text())
    assert data["settings"]["population"] == 200 and len(data["history"]) == 3
    assert (tmp_path / "gp-evolve.png").stat().st_size > 1000
    bad = subprocess.run([sys.executable, "-m", "gpulab", "gp", "evolve", "--data", "csv:/no/such.csv", "--backend", "cpu"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "cannot read" in bad.stderr and "Traceback" not in bad.stderr


def test_breeding_gives_the_same_children_on_any_number_of_threads(rng):
    """Every child draws from its own counter-based stream: the result cannot depend on threads."""
    import numba

    params = GPParams(population=1500, max_depth=8, max_nodes=60)
    pop = initial_population(params, int(rng.integers(2**31)))
    fit = rng.normal(size=len(pop))
    seed = int(rng.integers(2**31))
    saved, most = numba.get_num_threads(), numba.config.NUMBA_NUM_THREADS
    if most < 2:  # the premise: two thread counts to compare (NUMBA_NUM_THREADS=1 allows only one)
        pytest.skip("NUMBA_NUM_THREADS=1: no second thread count to compare with")
    try:
        numba.set_num_threads(1)
        one = next_generation(pop, fit, params, seed)
        first = initial_population(params, seed)
        numba.set_num_threads(most)
        many = next_generation(pop, fit, params, seed)
        again = initial_population(params, seed)
    finally:
        numba.set_num_threads(saved)
    assert np.array_equal(one.code, many.code) and np.array_equal(one.offsets, many.offsets)
    assert np.array_equal(first.code, again.code) and np.array_equal(first.offsets, again.offsets)
    assert not np.array_equal(one.code, next_generation(pop, fit, params, seed + 1).code)


def test_subtree_and_depth_walks_agree_with_node_info(rng):
    """The backward walks breeding uses (subtree span and height, depth of a node) against the
    forward stack pass of node_info, on every node of random trees."""
    pop = initial_population(GPParams(population=60, init_depth=(2, 7)), int(rng.integers(2**31)))
    size, height, depth, _ = breeding.node_info(pop.code, pop.offsets)
    st = np.empty(pop.code.size + 2, np.int32)
    for t in range(2 * len(pop)):
        a, b = pop.offsets[t], pop.offsets[t + 1]
        for p in range(a, b):
            lo, h = breeding._subtree(pop.code, p, st)
            assert (lo, h) == (p - size[p] + 1, height[p])
            assert breeding._depth_at(pop.code, b, p, st) == depth[p]


def test_pick_draws_nodes_uniformly_by_kind(rng):
    """Rejection sampling picks every node of the wanted kind equally often: functions only
    (p_func = 1), any node (p_func = 0), floats only."""
    tree = gp.parse("(AND (> MA10 MA50) (OR (< EMA9 MA25) (NOT NVIG)))").ops  # functions at 2, 5, 7, 8, 9
    r = np.empty(1, np.uint64)
    breeding._seed_stream(r, int(rng.integers(2**31)), 0)
    n = 6000
    for want, p_func, allowed in [(-1, 1.0, [2, 5, 7, 8, 9]), (-1, 0.0, range(10)), (1, 0.9, [0, 1, 3, 4])]:
        counts = np.bincount([breeding._pick(r, tree, 0, tree.size, want, p_func) for _ in range(n)], minlength=10)
        assert set(np.flatnonzero(counts)) == set(allowed)
        expect = n / len(allowed)
        assert np.all(np.abs(counts[list(allowed)] - expect) < 5 * np.sqrt(expect)), counts
    assert breeding._pick(r, gp.parse("(AND NVIG NVIL)").ops, 0, 3, 1, 0.9) == -1  # no float to pick


def test_lexicographic_parsimony_breaks_fitness_ties_towards_the_smaller():
    params = GPParams(population=2000, elite=2, p_crossover=0.0, p_mutation=0.0, init_depth=(2, 6), parsimony=True)
    pop = initial_population(params, 11)
    sizes = pop.nodes.sum(axis=1)
    flat = np.zeros(len(pop))  # every fitness equal: only size can decide
    lean = next_generation(pop, flat, params, 5)
    plain = next_generation(pop, flat, GPParams(**{**params.__dict__, "parsimony": False}), 5)
    assert lean.nodes.sum(axis=1).mean() < 0.7 * sizes.mean()
    assert abs(plain.nodes.sum(axis=1).mean() - sizes.mean()) < 0.1 * sizes.mean()
    smallest = np.flatnonzero(sizes == sizes.min())[:2]  # the elite: equal fitness, smallest first, then by index
    for k, i in enumerate(smallest):
        assert np.array_equal(lean.tree(k, 0), pop.tree(i, 0)) and np.array_equal(lean.tree(k, 1), pop.tree(i, 1))
    better = flat.copy()
    better[int(np.argmax(sizes))] = 1.0  # fitness still comes first
    top = next_generation(pop, better, params, 5)
    assert np.array_equal(top.tree(0, 0), pop.tree(int(np.argmax(sizes)), 0))


def test_bred_population_stats_equal_a_full_validation(rng):
    """Population.bred re-scans only the changed trees: its stats must equal a scan of every tree,
    and a copied tree whose length disagrees with its parent's is caught."""
    params = GPParams(population=800, max_depth=9, max_nodes=80)
    pop = initial_population(params, int(rng.integers(2**31)))
    for _ in range(3):
        parent = pop
        code, offsets, src = breeding.breed(parent.code, parent.offsets, np.ascontiguousarray(parent.stats[:, 1]),
                                            rng.normal(size=len(parent)), 2, 7, 0.8, 0.1, params.max_depth,
                                            params.max_nodes, 4, 0.3, 0.9, False, int(rng.integers(2**31)))
        assert 0 < (src < 0).sum() < src.size  # some trees changed, some were copied
        pop = gp.Population.bred(code, offsets, parent, src)
        assert np.array_equal(pop.stats, gp.Population(code, offsets).stats)
    wrong = src.copy()
    k = int(np.flatnonzero(wrong >= 0)[0])
    wrong[k] = next(t for t in range(src.size) if np.diff(parent.offsets)[t] != np.diff(offsets)[k])
    with pytest.raises(gp.ProgramError, match="copied tree"):
        gp.Population.bred(code, offsets, parent, wrong)

"""Chapter 3's GPU breeding (gpulab.gp.breeding_gpu): the same children as the CPU breeding,
bit for bit, for fresh seeds and settings (so validity, typing, limits and the operators'
statistics follow from the CPU breeding's tests in test_evolve.py); seeded runs repeat;
``breeding=`` / ``--breeding`` and their errors. Small populations: these run on the simulator."""

import json

import numpy as np
import pytest

import gpulab.gp as gp
from gpulab import device
from gpulab.errors import GpulabError
from gpulab.gp import breeding, breeding_gpu
from gpulab.gp.loop import GPParams, evolve, initial_population
from gpulab.gp.market import synthetic_market
from gpulab.gp.programs import STAT_DEPTH
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
    assert first[0][0]["train_best"] != first[0][-1]["train_best"] or first[0][0]["mean_nodes"] != first[0][-1]["mean_nodes"]


@pytest.mark.parametrize("bad", ["tpu", "GPU", 1])
def test_evolve_breeding_must_be_gpu_or_cpu(bad):
    with pytest.raises(GpulabError, match="breeding must be one of gpu, cpu"):
        evolve(synthetic_market(2, 16, seed=1), params=GPParams(population=4, generations=0), breeding=bad)


def test_cli_breeding_recorded_default_and_one_line_error(tmp_path):
    small = ["gp", "evolve", "--backend", "cpu", "--population", "12", "--generations", "1", "--stocks", "2",
             "--days", "32", "--test-days", "16", "--out", str(tmp_path), "--json"]
    default = "cpu" if device.on_simulator() else "gpu"
    for flag, want in (([], default), (["--breeding", "gpu"], "gpu")):
        p = gpulab(*small, *flag, "--stem", want + str(len(flag)), cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        summary = json.loads(p.stdout)
        assert summary["breeding"] == want
        assert json.loads((tmp_path / f"{want}{len(flag)}.json").read_text())["settings"]["breeding"] == want
    assert_one_line_error(gpulab(*small, "--breeding", "tpu", cwd=tmp_path), "--breeding", "invalid choice: 'tpu'")

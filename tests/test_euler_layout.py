"""Chapter 5's layout (issue 26): every variant is one registry entry whose
[`EulerPolicy`][gpulab.euler.policy.EulerPolicy] the host's one dispatch path and the benchmark
read; nothing there asks for a variant by its name."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import gpulab.euler as eu
from gpulab.errors import GpulabError
from gpulab.euler import bench, generators as gen, host, labelling, reference as ref
from gpulab.euler import kernels_numba as kn
from gpulab.euler.policy import EulerPolicy
from gpulab.euler.variants import BASE, REGISTRY, SIM
from gpulab.registry import Variant
from tests.conftest import ON_SIMULATOR, skip_unless_runnable

ROOT = Path(__file__).resolve().parent.parent
# the modules of the dispatch path: validation and the pipeline, its steps, the public call, the benchmark
DISPATCH = ["host.py", "labelling.py", "api.py", "bench.py"]


def test_every_variant_has_a_policy_the_dispatch_can_run():
    assert len(REGISTRY) >= 7
    for v in REGISTRY:
        assert isinstance(v.policy, EulerPolicy), v.key
        p = v.policy
        if v.backend == "cpu":  # the CPU peers: a timed call and a role in the GPU records
            assert p.labelling is None and callable(p.bench_timer) and p.bench_role in ("peer", "python"), v.key
            assert p.peer_includes, v.key
        else:  # one function of each step, the kernels its parameters build, the plan running them
            assert p.labelling.__module__ == labelling.__name__, v.key
            assert p.ranking in (host.EulerPlan.rank_wyllie, host.EulerPlan.rank_ruling_set,
                                 host.EulerPlan.rank_sublists), v.key
            assert set(p.kernels) <= set(kn.TEMPLATED), v.key
            assert all(kn.TEMPLATED[k][1] in v.params for k in kn.COMMON_TEMPLATED + p.kernels), v.key
            assert v.run.policy is p and v.run.backend == v.backend, v.key
    roles = sorted(v.policy.bench_role for v in REGISTRY.select(backend="cpu"))
    assert roles == ["peer", "python"]  # one of each: the GPU records' two ratios


def test_the_simulator_gets_the_same_keys_as_before():
    """`sim_params` replace SIM_PARAMS + effective_params: a GPU variant took every simulator value
    of a key it has, and BLOCK and SMALL_SORT always (every GPU variant has them)."""
    for v in REGISTRY.select():
        if v.backend == "cpu":
            assert v.sim_params == {}, v.key
            continue
        old = dict(v.params)
        old.update({k: x for k, x in SIM.items() if k in v.params or k in ("BLOCK", "SMALL_SORT")})
        assert {**v.params, **v.sim_params} == old, v.key
    v = REGISTRY.get("ruling_set", "numba")
    got = v.launch_params({"SPACING": 7})
    assert got["SPACING"] == 7 and got["BLOCK"] == (SIM["BLOCK"] if ON_SIMULATOR else v.params["BLOCK"])


def _name_checks(source: str, names: set[str]) -> list[str]:
    """Where the code of ``source`` (docstrings aside) spells a variant's name as a string:
    compared with something, a key, a branch... anything."""
    tree = ast.parse(source)
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    return [f"line {n.lineno}: {n.value!r}" for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in names
            and id(n) not in docstrings]


def test_no_variant_name_in_the_dispatch_path():
    names = set(REGISTRY.names())
    # the check finds what it must find
    assert _name_checks('def f(v):\n    """ruling_set"""\n    return v.name == "propagate"\n', names) == [
        "line 3: 'propagate'"]
    assert _name_checks('CAP = {"hierholzer": 1}\n', names)
    for f in DISPATCH:
        found = _name_checks((ROOT / "gpulab" / "euler" / f).read_text(), names)
        assert not found, f"gpulab/euler/{f} names a variant: {found}"


def _toy(**policy):
    """A variant no registry entry has: jump labelling with the ruling set's ranking."""
    params = dict(BASE, RANK_SPACING=4)
    p = EulerPolicy(labelling=labelling.label_jump, ranking=host.EulerPlan.rank_ruling_set, **policy)
    return Variant("toy", "numba", ("global",), "jump labels, splitter ranks", host.plan_factory(p, "numba"),
                   params=params, needs_warp_intrinsics=True,
                   sim_params={k: x for k, x in SIM.items() if k in params}, policy=p)


@pytest.fixture
def toy():
    v = REGISTRY.add(_toy())
    try:
        yield v
    finally:
        del REGISTRY._variants[(v.name, v.backend)]
        eu.clear_cache()


def test_a_variant_is_one_registry_entry(toy, rng):
    """Added as a Variant with its policy alone, it runs through the public call and gives the
    reference circuit (the same as every variant's), by the steps its policy names."""
    skip_unless_runnable(toy)
    V = int(rng.integers(3, 9))
    walk = rng.integers(0, V, int(rng.integers(20, 40)))  # one closed random walk: Eulerian, connected
    src, dst = gen.from_cycles([list(walk)], rng)
    out = eu.euler_circuit(src, dst, variant="toy")
    assert np.array_equal(out, ref.ais_reference(src, dst)[0])
    plan = eu.api.plan_for(toy, src.size + 1)  # the plan the call kept
    assert plan.policy is toy.policy and plan.stats["rank_splitters"] >= 1 and "splitters" not in plan.stats


def test_the_benchmark_reads_the_caps_and_parameters_of_the_policy():
    v = _toy(bench_max_edges=50, bench_params={"MAX_ROUNDS": 9})
    with pytest.raises(GpulabError, match="timed up to 50 edges"):
        bench.runner(v, {"E": 51, "kind": "deep"})
    cpu = REGISTRY.get("hierholzer", "cpu")
    state = {"E": 4, "kind": "deep", "host": (np.array([0, 1, 1, 2]), np.array([1, 0, 2, 1])), "cpu_calls": {}}
    call = bench.runner(cpu, state)
    assert bench.runner(cpu, state) is call  # prepared once per case
    assert bench.check(cpu, state)[0]

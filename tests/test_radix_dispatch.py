"""Chapter 4's dispatch reads launch policies, never variant names (issue 26).

Every registry entry carries a [`RadixPolicy`][gpulab.radix.policy.RadixPolicy]; the radix
modules never compare a value with a variant's name; and a variant that exists only as a
`Variant` with a policy (no other table names it) sorts, through the plan and through the
benchmark's runner and check.
"""

import ast
from pathlib import Path

import numpy as np
import pytest

import gpulab.radix as rx
from gpulab.radix import bench, host, policy
from gpulab.radix.policy import RadixPolicy
from gpulab.radix.variants import REGISTRY
from gpulab.registry import Registry, Variant
from tests.conftest import ON_SIMULATOR, skip_unless_runnable

RADIX = Path(rx.__file__).parent
NAMES = set(REGISTRY.names())


def test_every_variant_has_a_policy():
    for v in REGISTRY:
        assert isinstance(v.policy, RadixPolicy), f"{v.key} has no RadixPolicy"
        assert v.needs_warp_intrinsics == v.policy.needs_warp_intrinsics, v.key
        if v.backend != "cpu":  # its plan runs the entry's own policy
            assert v.run.policy is v.policy and v.run.backend == v.backend, v.key
        assert set(v.sim_params) <= set(v.params), f"{v.key}: sim_params name a parameter the variant lacks"


def name_comparisons(source: str, names=NAMES) -> list[str]:
    """`x == "local"`, `name in ("a", "b")`, `match name: case "onesweep"` ...: every place a
    value is compared with one of `names` (a string literal, alone or in a tuple/list/set)."""

    def literals(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return {node.value}
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return set().union(*(literals(e) for e in node.elts)) if node.elts else set()
        return set()

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            hit = set().union(*(literals(x) for x in [node.left, *node.comparators])) & names
        elif isinstance(node, ast.MatchValue):
            hit = literals(node.value) & names
        else:
            continue
        if hit:
            found.append(f"line {node.lineno}: {sorted(hit)}")
    return found


def test_the_detector_finds_name_comparisons():
    src = ('if v.name == "onesweep": pass\nx = k in ("local", "local4")\n'
           'match n:\n    case "split1_global": pass\ny = family == "tile split"\n')
    assert [f.split(":")[0] for f in name_comparisons(src)] == ["line 1", "line 2", "line 4"]


@pytest.mark.parametrize("module", sorted(p.name for p in RADIX.glob("*.py")))
def test_no_variant_name_comparisons(module):
    found = name_comparisons((RADIX / module).read_text())
    assert not found, f"gpulab/radix/{module} branches on a variant's name: {found}"


# A new entry of each GPU family the simulator runs quickly: other tile shapes than the
# registry's, named nowhere else. (reduce-then-scan ranks with warp intrinsics: gpulab.simwarp.)
TOYS = [
    Variant("toy_local", "numba", ("global", "shared", "registers"), "local with 3 keys per thread",
            host.plan_factory(policy.REDUCE_THEN_SCAN, "numba"),
            params=dict(SCAN_BLOCK=256, BLOCK=128, BITS=6, ITEMS=6, BALLOT=1),
            sim_params=dict(SCAN_BLOCK=4, BLOCK=32, BITS=4, ITEMS=3),
            needs_warp_intrinsics=True, policy=policy.REDUCE_THEN_SCAN),
    Variant("toy_tile", "numba", ("global", "shared"), "3-bit digits in small tiles",
            host.plan_factory(policy.TILE_SPLIT, "numba"),
            params=dict(SCAN_BLOCK=128, BLOCK=64, BITS=3), sim_params=dict(SCAN_BLOCK=4, BLOCK=16, BITS=4),
            policy=policy.TILE_SPLIT),
]


@pytest.mark.parametrize("toy", TOYS, ids=lambda v: v.name)
def test_a_variant_is_one_registry_entry(toy, rng):
    skip_unless_runnable(toy)
    assert toy.name not in NAMES
    p = toy.launch_params()
    tile = toy.policy.tile_keys(p)
    # keys of 7 significant bits: two or three digit passes; a full tile and a partial one
    n = tile + int(rng.integers(1, tile))
    keys = rng.integers(0, 2**7, n, dtype=np.uint32)
    keys[-1] = np.uint32(2**7 - 1)  # the largest key decides the passes: all 7 bits
    from numba import cuda

    plan = toy.run(n, True, p)
    dk, dv = plan.sort(cuda.to_device(keys), iota=True)
    assert np.array_equal(dk.copy_to_host(), np.sort(keys))
    assert np.array_equal(dv.copy_to_host(), np.argsort(keys, kind="stable")), "not a stable argsort"
    assert plan.passes_run == bench.passes(toy.policy, p, int(keys.max())) == -(-7 // p["BITS"])
    # the benchmark's path: its launch parameters, its poisoned buffers, its check
    reg = Registry("radix-toys", [toy])
    case = bench._case("keys", n, str(n))
    state = bench.setup(case, rng)
    ok, detail = bench.check(reg.get(toy.name, "numba"), state)
    assert ok, detail
    once, per = bench.bytes_per_key(toy.policy, toy.params)
    assert once == 4.0 and per > toy.policy.pass_bytes  # the model has its counts term


def test_tune_is_a_module():
    """The tuner runs as `python -m gpulab.radix.tune` (it was scripts/tune_radix.py)."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "gpulab.radix.tune", "--help"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "python -m gpulab.radix.tune" in r.stdout and "--round" in r.stdout


@pytest.mark.skipif(not ON_SIMULATOR, reason="the simulator's launch parameters")
def test_sim_params_replace_params_on_the_simulator():
    for v in REGISTRY.select():
        assert v.launch_params() == {**v.params, **v.sim_params}
        assert v.launch_params({"BLOCK": 7})["BLOCK"] == 7

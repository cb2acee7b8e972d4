"""Issue 26 for chapters 1 and 2: each variant's launch is data (a policy) read by one launch
path per chapter, on both backends; the host code never branches on a variant's name."""

import ast
import dataclasses
import inspect
from pathlib import Path

import numpy as np
import pytest
from numba import cuda

from gpulab.checking import float32_tolerance, poisoned, relative_error
from gpulab.matmul import host as mm_host
from gpulab.matmul.policy import MatmulPolicy
from gpulab.matmul.variants import REGISTRY as MATMUL
from gpulab.registry import Variant
from gpulab.subset import host as ss_host
from gpulab.subset import reference
from gpulab.subset.policy import SubsetPolicy
from gpulab.subset.variants import REGISTRY as SUBSET
from tests.conftest import ON_SIMULATOR

ROOT = Path(__file__).resolve().parents[1]
# The host code of the two chapters: their launches, registries, benchmarks, tours and tuners,
# and the distributed search's use of chapter 2.
DISPATCH_FILES = [f"gpulab/{chapter}/{module}.py" for chapter in ("matmul", "subset")
                  for module in ("host", "variants", "bench", "tour", "tune", "__init__")] + ["gpulab/distributed.py"]


@pytest.mark.parametrize("registry,policy_type", [(MATMUL, MatmulPolicy), (SUBSET, SubsetPolicy)], ids=["matmul", "subset"])
def test_every_variant_has_a_frozen_policy(registry, policy_type):
    for v in registry:
        assert isinstance(v.policy, policy_type), v.key
        assert dataclasses.is_dataclass(v.policy) and v.policy.__dataclass_params__.frozen, v.key
        with pytest.raises(dataclasses.FrozenInstanceError):
            v.policy.kernel = "another"


def test_both_backends_of_a_step_share_one_policy_and_source():
    """numba and CUDA C differ only inside the kernels: a step's two entries launch alike."""
    for registry in (MATMUL, SUBSET):
        for v in registry.select(backend="cuda-c"):
            twin = {w.backend: w for w in registry if w.name == v.name}.get("numba")
            if twin is not None:  # (the parameters may differ: each backend's tuning)
                assert twin.policy == v.policy, v.key


# ----------------------------------------------------------------------------- no names in the host code


def _name_like(node) -> bool:
    """`name`, `variant`, `variant_name`, or any `x.name`: what holds a variant's name."""
    return (isinstance(node, ast.Name) and node.id in ("name", "variant", "variant_name")) or \
        (isinstance(node, ast.Attribute) and node.attr == "name")


def _strings(node) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return bool(node.elts) and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts)
    return isinstance(node, ast.Name) and node.id.isupper()  # a module constant: a tuple of names


def name_comparisons(source: str) -> list[str]:
    """`name == "x"`, `v.name in ("x", "y")`, `variant in NAMES`, `v.name.startswith("x")`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in node.ops):
            sides = [node.left, *node.comparators]
            if any(_name_like(s) for s in sides) and any(_strings(s) for s in sides):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("startswith", "endswith") and _name_like(node.func.value):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_the_name_check_can_fail():
    bad = ('if v.name == "shared":\n    pass\nx = name in ("naive", "constant")\ny = variant in COMPARES_SUMS\n'
           'z = v.name.startswith("incremental")\n')
    assert len(name_comparisons(bad)) == 4
    assert name_comparisons('if policy.q_in == "shared" and backend == "numba":\n    pass\n') == []


@pytest.mark.parametrize("path", DISPATCH_FILES)
def test_no_branch_on_a_variant_name(path):
    assert name_comparisons((ROOT / path).read_text()) == []


# ----------------------------------------------------------------------------- matmul: one grid rule


# (grid, block) of each variant for a 300×260 C, by the rules the launchers had before issue 26
EXPECTED_300x260 = {
    "naive": ((19, 17), (16, 16)), "coalesced": ((17, 19), (16, 16)), "shared": ((17, 19), (16, 16)),
    "constant": ((10, 33), (32, 8)), "constant_scattered": ((9, 38), (32, 8)),
    "register[numba]": ((3, 3), (16, 16)), "register[cuda-c]": ((3, 3), (16, 16)),
    "prefetch[numba]": ((3, 3), (16, 8)), "prefetch[cuda-c]": ((3, 3), (16, 16)),
    "wide": ((3, 3), (16, 16)), "vec4": ((3, 3), (16, 16)), "warptile": ((3, 3), (128,)),
    "cpasync": ((3, 3), (128,)), "streamk": ((3, 3), (128,)),  # streamk: the grid before its schedule
    "small": ((5, 5), (128,)),  # streamk's kernel, 64x64 tiles: 260/64 -> 5 columns, 300/64 -> 5 rows
}


@pytest.mark.parametrize("v", list(MATMUL), ids=lambda v: v.key)
def test_matmul_grid_of_every_variant(v):
    want = EXPECTED_300x260.get(v.key, EXPECTED_300x260.get(v.name))
    assert mm_host.geometry(v.policy, v.params, 300, 260) == want


def test_matmul_cuda_defines_are_the_variant_parameters():
    """Every CUDA C parameter reaches the compiler as a -D macro (none dropped by the source),
    but the few the host reads at launch (`HOST_PARAMS`, stream-K's schedule)."""
    for v in MATMUL.select(backend="cuda-c"):
        want = {k: x for k, x in v.params.items() if k not in mm_host.HOST_PARAMS}
        assert mm_host.KERNELS.cuda_defines(v.params) == want, v.key
    assert any(set(mm_host.HOST_PARAMS) <= set(v.params) for v in MATMUL.select(backend="cuda-c"))


def test_matmul_parameter_names_are_upper_case():
    for v in MATMUL:
        assert all(k.isupper() for k in v.params), v.key


def _toy(name, policy, params):
    return Variant(name, "numba", ("global", "shared"), "a toy: an existing kernel with other tile parameters",
                   mm_host.launcher(policy, "numba"), params=params, policy=policy)


@pytest.mark.parametrize("toy,tile,threads", [
    (_toy("shared8", MatmulPolicy("matmul_shared", tile=("TILE", "TILE")), {"TILE": 8}), 8, (8, 8)),
    (_toy("register16", MatmulPolicy("matmul_register", tile=("BM", "BN"), per_thread=("TM", "TN")),
          dict(BM=16, BN=16, BK=4, TM=2, TN=2, PAD=4)), 16, (8, 8)),
], ids=["shared8", "register16"])
def test_a_variant_added_as_data_computes_correctly(toy, tile, threads, rng):
    """A Variant and a policy are all a new variant needs (no launcher of its own): an existing
    kernel with other tile parameters, at sizes that are not multiples of its tile."""
    ragged = [x for x in range(9, 40) if x % tile]  # never a multiple of the tile
    M, K, N = (int(x) for x in rng.choice(ragged, size=3))
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.standard_normal((K, N), dtype=np.float32)
    assert mm_host.geometry(toy.policy, toy.params, M, N) == ((-(-N // tile), -(-M // tile)), threads)
    dC = cuda.to_device(poisoned((M, N), np.float32))
    toy.run(cuda.to_device(A), cuda.to_device(B), dC, B, toy.launch_params())()
    err = relative_error(dC.copy_to_host(), A.astype(np.float64) @ B)
    assert err <= float32_tolerance(K), f"{toy.name} {M}x{K}x{N}: relative error {err:.3g}"


# ----------------------------------------------------------------------------- subset


def test_subset_shared_layouts():
    """What each launch asks of shared memory: Q where it is copied there, plus per thread a
    value and a rank (16 bytes) and, for `shared`, the k selected indices."""
    n, k, block = 50, 5, 256
    q = 8 * n * (n - 1) // 2
    want = {"global": 0, "shared": q + 16 * block + 4 * k * block, "constant_local": 16 * block,
            "incremental": q + 16 * block, "incremental_warp": q + 16 * block, "incremental_global": 16 * block}
    for name, nbytes in want.items():
        assert ss_host.shared_bytes(SUBSET.get(name, "numba").policy, n, k, block) == nbytes, name


def test_subset_simulator_sizes_are_sim_params():
    """The simulator's blocks, grids, chunks and final block are the variants' `sim_params`; on
    a GPU, `params`. The final argmin's block is one value for both backends."""
    for v in SUBSET.select(backend="numba") + SUBSET.select(backend="cuda-c"):
        p = v.launch_params()
        assert p == ({**v.params, **v.sim_params} if ON_SIMULATOR else v.params), v.key
        if v.policy.chunked:
            assert p["FINAL_BLOCK"] == SUBSET.get(v.name, "numba").launch_params()["FINAL_BLOCK"]
    assert "sim_chunk" not in inspect.getsource(ss_host) and "sim_block" not in inspect.getsource(ss_host)


def test_subset_cpu_variants_run_from_the_reference_module():
    assert SUBSET.get("cpu_parallel", "cpu").run is reference.cpu_parallel
    assert SUBSET.get("reference", "cpu").run is reference.cpu_reference
    assert not hasattr(ss_host, "cpu_parallel") and not hasattr(ss_host, "cpu_reference")


def test_subset_compares_sums_is_policy_data():
    from gpulab.subset.variants import COMPARES_SUMS

    assert COMPARES_SUMS == {"incremental", "incremental_warp", "incremental_global", "incremental_lanes", "cpu_parallel"}

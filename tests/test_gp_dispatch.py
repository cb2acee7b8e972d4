"""Chapter 3's one dispatch path (issue 26): every variant's launch is its `GPPolicy`, read by
the host code, the kernel table, the compile checks and the benchmark; none of them branches on
a variant's name, and a new variant is one registry entry (a `Variant` with its policy)."""

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gpulab.gp as gp
from gpulab.gp import host, reference
from gpulab.gp import kernels_numba as kn
from gpulab.gp.breeding import ramped_half_and_half
from gpulab.gp.policy import GPPolicy
from gpulab.gp.variants import REGISTRY
from gpulab.registry import Registry, Variant

GP = Path(gp.__file__).parent
# the host code, the kernel builders, the registry, the benchmark and the tuner
DISPATCH_FILES = ["__init__.py", "host.py", "kernels_numba.py", "compiled.py", "variants.py", "bench.py", "tune.py",
                  "loop.py", "tour.py", "policy.py"]
PAPER = ("(AND (> MA10 MA50) (OR (< EMA9 MA25) NVIG))", "(OR MACDL (NOT (< CP MA200)))")
NAMES = sorted(set(REGISTRY.names()))
_LIT = "|".join(map(re.escape, NAMES))
# `name == ...`, `v.name != ...`, `name in (...)`, `r["variant"] == ...` (not `for name in (...)`)
NAME_OPERAND = re.compile(r"""(?<!for )(?:\bname|\.name|\bvariant|\["variant"\])\s*(?:==|!=|(?:not\s+)?in\s*[(\[{])""")
# a variant's name as a literal in a comparison or a tuple membership
NAME_LITERAL = re.compile(rf"""(?:==|!=)\s*["'](?:{_LIT})["']|["'](?:{_LIT})["']\s*(?:==|!=)"""
                          rf"""|\bin\s*[(\[{{][^)\]}}]*["'](?:{_LIT})["']""")
# a policy field compared with one of its values (some values are words a variant's name also uses)
POLICY_FIELD = re.compile(r"""\b(?:pol|policy|self)\.\w+\s*(?:==|!=)\s*["'][^"']*["']""")


def switches_on_name(line: str) -> bool:
    code = line.split("#")[0]
    return bool(NAME_OPERAND.search(code) or NAME_LITERAL.search(POLICY_FIELD.sub("", code)))


def test_name_switch_pattern_sees_the_forms_it_forbids():
    for bad in ['if name == "constant":', 'layout = "sid" if name == "thread_global" else "dis"',
                'if v.name in ("shared", "register"):', 'if self.name != "reference":',
                'if r["variant"] == "bitsliced":', 'x = 1 if "compiled" == kind else 2',
                'if kind in ("bitsliced", "cpu_bitsliced"):']:
        assert switches_on_name(bad), bad
    for ok in ['for name in ("p_crossover", "p_mutation"):', 'v = REGISTRY.get("interpreter", "cpu")',
               'if pol.programs == "constant":', 'elif self.policy.programs != "compiled":',
               'K(f"gp_{pol.kernel}", grid, block)', 'if variant.policy.compiled:  # "compiled" == it']:
        assert not switches_on_name(ok), ok


@pytest.mark.parametrize("fname", DISPATCH_FILES)
def test_no_source_line_switches_on_a_variant_name(fname):
    bad = [f"{fname}:{i}: {line.strip()}" for i, line in enumerate((GP / fname).read_text().splitlines(), 1)
           if switches_on_name(line)]
    assert not bad, "branches on a variant's name (read variant.policy instead):\n" + "\n".join(bad)


def test_every_variant_has_a_policy_the_dispatch_path_knows():
    cu = (GP / "kernels.cu").read_text()
    for v in REGISTRY:
        pol = v.policy
        assert isinstance(pol, GPPolicy), v.key
        assert pol.path == ("cpu" if v.backend == "cpu" else "gpu"), v.key
        if pol.path == "cpu":
            assert pol.kernel in host.CPU_KERNELS, v.key
        elif not pol.compiled:
            assert pol.kernel in kn.BUILDERS, v.key
            assert re.search(rf"__global__ void gp_{pol.kernel}\(", cu), f"{v.key}: no CUDA C kernel gp_{pol.kernel}"
        # parameter names are upper-case (the -D macros of CUDA C)
        for k in list(v.params) + list(v.sim_params):
            assert k.isupper(), f"{v.key}: parameter {k!r}"
        if pol.same_algorithm_cpu:
            assert REGISTRY.get(pol.same_algorithm_cpu, "cpu").backend == "cpu"


def test_a_policy_rejects_unknown_values():
    with pytest.raises(ValueError, match="layout"):
        GPPolicy(kernel="shared", layout="xyz")
    with pytest.raises(ValueError, match="kernel"):
        GPPolicy()


def _toy_registry():
    """A copy of the registry plus two variants made of a Variant and a policy alone: the
    coalesced kernel launched in blocks of WPB warps, and the CPU interpreter with a shallower
    stack."""
    reg = Registry("gp-toy", list(REGISTRY))
    reg.add(Variant("toy_warps", "numba", ("global",), "the coalesced kernel in blocks of WPB warps",
                    host.evaluator_factory("numba"), params=dict(WPB=1, STACK=12), sim_params=dict(WPB=1),
                    policy=GPPolicy(kernel="coalesced", block="WPB", stack="grid", stack_limit=True)))
    reg.add(Variant("toy_cpu", "cpu", ("host",), "the CPU interpreter, 12 stack slots",
                    host.evaluator_factory("cpu"), params=dict(STACK=12),
                    policy=GPPolicy(path="cpu", kernel="interpret", stack_limit=True)))
    return reg


def test_a_new_variant_is_a_registry_entry_and_its_policy(rng):
    reg = _toy_registry()
    market = gp.synthetic_market(33, 40, seed=int(rng.integers(2**31)))  # two warps of stocks, one short
    code, offsets = ramped_half_and_half(2, 2, 4, 255, 0.3, int(rng.integers(2**31)))
    pop = gp.Population.from_individuals([PAPER] + list(gp.Population(code, offsets)))
    ref = reference.evaluate(pop, market, trace=True)
    P, S, D = len(pop), market.stocks, market.days
    for v in (reg.resolve("toy_warps", "numba"), reg.resolve("toy_cpu", "cpu")):
        fit, money, tr = v.run(v, market, v.launch_params())(pop, trace=True, poison=True)
        money = (money if isinstance(money, np.ndarray) else money.copy_to_host())[:P * S].reshape(P, S)
        tr = (tr if isinstance(tr, np.ndarray) else tr.copy_to_host())[:P * S * D].reshape(P, S, D)
        assert np.array_equal(tr, ref.trace), v.key
        assert np.array_equal(money.view(np.uint64), ref.money.view(np.uint64)), v.key
    # its policy's limits, named after it
    deep = "NVIG"
    for _ in range(12):
        deep = f"(AND NVIL {deep})"
    too_deep = gp.Population.from_individuals([("NVIG", deep)])
    for v in (reg.get("toy_warps", "numba"), reg.get("toy_cpu", "cpu")):
        with pytest.raises(gp.ProgramLimitError, match=f"too deep.*the {v.name} variant.s stack of STACK = 12"):
            v.run(v, market, v.launch_params())(too_deep)


def test_evaluators_are_kept_until_clear_cache(rng):
    market = gp.synthetic_market(3, 30, seed=int(rng.integers(2**31)))
    pop = gp.Population.from_individuals([("(< MA5 MA10)", "(> MA5 MA10)")])
    gp.clear_cache()
    first = gp.evaluate(pop, market, "interpreter", "cpu")
    assert len(gp._EVALUATORS) == 1
    assert np.array_equal(gp.evaluate(pop, market, "interpreter", "cpu"), first)
    assert len(gp._EVALUATORS) == 1  # the same evaluator again
    gp.clear_cache()
    assert len(gp._EVALUATORS) == 0


def _python(code, **env):
    import os

    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "GPULAB_DEVICE": "sim", **env}, cwd=Path(__file__).parents[1])


def test_params_overrides_reach_the_registry_and_sim_params_still_apply():
    """GPULAB_GP_PARAMS changes a variant's `params`; on the simulator its `sim_params` still
    replace the block shape in `launch_params()`."""
    p = _python("import json; from gpulab.gp.variants import REGISTRY; v = REGISTRY.get('register', 'cuda-c'); "
                "print(json.dumps([v.params, v.launch_params()]))",
                GPULAB_GP_PARAMS='{"register": {"DAYS": 3}, "register[cuda-c]": {"WPB": 8}}')
    assert p.returncode == 0, p.stderr
    params, launch = json.loads(p.stdout)
    assert params["DAYS"] == 3 and params["WPB"] == 8
    assert launch["DAYS"] == 3 and launch["WPB"] == 2


def test_the_tuner_is_a_module_of_the_package():
    p = subprocess.run([sys.executable, "-m", "gpulab.gp.tune", "--help"], capture_output=True, text=True,
                       cwd=Path(__file__).parents[1])
    assert p.returncode == 0, p.stderr
    assert "--budget" in p.stdout and "--population" in p.stdout

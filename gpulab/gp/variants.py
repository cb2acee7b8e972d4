"""Chapter 3's variant registry: the interpreter ladder, the bit-sliced and compiled steps beyond
it, and the CPU peers; each entry's [`GPPolicy`][gpulab.gp.policy.GPPolicy] is how it launches."""

from __future__ import annotations

from gpulab.gp import host
from gpulab.gp.policy import (COMPILED_MAX_POPULATION, INTERPRETER_MAX_WORK, REFERENCE_MAX_WORK, BenchCap,
                              GPPolicy)
from gpulab.registry import Registry, Variant

# Compile-time parameters, the same for numba and CUDA C (-D macros). STACK: float32 stack
# slots per thread. WPB: warps per block. CODE: program opcodes (both trees) a warp keeps in
# shared memory. DAYS: days the register variant evaluates per pass over a program (<= 32).
# BSTACK: the bit-sliced stack's 64-day words per thread (booleans deep; the GP's depth limit of
# 12 never needs more than 12). TW: 64-day words the bit-sliced variant evaluates before each
# trading pass. CHUNK: individuals per NVRTC-compiled kernel.
PARAMS = {
    "thread_global": dict(BLOCK=128, STACK=32),
    "coalesced": dict(BLOCK=128, STACK=32),
    "constant": dict(BLOCK=128, STACK=32),
    "shared": dict(WPB=4, STACK=16, CODE=512),
    "register": dict(WPB=4, CODE=512, DAYS=8),
    "bitsliced": dict(WPB=1, CODE=512, BSTACK=12, TW=4),
    "compiled": dict(WPB=4, CHUNK=128),
}
# On the simulator (each variant's sim_params, where it has the parameter): smaller blocks (it
# pays per thread), so that the tests still see several warps per block.
SIM_PARAMS = {"BLOCK": 64, "WPB": 2}

# The GPU ladder: each step's Variant fields but its parameters (PARAMS) and backend (both).
_LADDER = [
    dict(name="thread_global", memory=("global",), teaching_only=True,
         lesson="one thread per (individual, stock); programs, per-thread stacks and stock/indicator/day indicators "
                "in global memory",
         policy=GPPolicy(kernel="thread_global", threads="pair", block="BLOCK", layout="sid", stack="thread",
                         stack_limit=True)),
    dict(name="coalesced", memory=("global",),
         lesson="a warp = one individual × 32 stocks: no divergence; day/indicator/stock indicators and interleaved "
                "stacks coalesce",
         policy=GPPolicy(kernel="coalesced", block="BLOCK", stack="grid", stack_limit=True)),
    dict(name="constant", memory=("constant", "global"),
         lesson="programs in constant memory, one broadcast per opcode for the warp; batches of individuals that fit "
                "64 KiB",
         policy=GPPolicy(kernel="constant", programs="constant", block="BLOCK", stack="grid", stack_limit=True)),
    dict(name="shared", memory=("shared", "global"),
         lesson="each warp's program and the stacks in shared memory",
         policy=GPPolicy(kernel="shared", stack_limit=True, code_limit=True)),
    dict(name="register", memory=("registers", "shared", "global"),
         lesson="no stack in memory: typing leaves two floats and a bit-stack of booleans in one 32-bit register; "
                "DAYS days per pass over the program",
         policy=GPPolicy(kernel="register", code_limit=True, bool_limit=host.REGISTER_BITS)),
    dict(name="bitsliced", memory=("registers", "shared", "global"),
         lesson="comparisons as precomputed bit masks: 64 days per word operation, the program decoded once per "
                "warp, and a trading pass that jumps between signals across several words",
         policy=GPPolicy(kernel="bitsliced", masks=True, code_limit=True, bool_limit="BSTACK", word_ops=True,
                         lists=True, same_algorithm_cpu="cpu_bitsliced")),
    dict(name="compiled", memory=("registers", "global"),
         lesson="the population compiled to straight-line code (NVRTC / numba): no interpreter at all, at a compile "
                "cost per generation",
         policy=GPPolicy(programs="compiled", bench_cap=BenchCap(
             "population", COMPILED_MAX_POPULATION,
             "compiling {value} individuals takes minutes per generation (NVRTC time grows with the population; "
             "see the P=1024 case for compile time against run time)"))),
]

# Where the tuned best differs between the backends: (name, backend) -> parameters over PARAMS.
BACKEND_PARAMS: dict = {('register', 'cuda-c'): dict(WPB=1), ('bitsliced', 'cuda-c'): dict(WPB=4)}

PARAMS_ENV = "GPULAB_GP_PARAMS"


def overrides() -> dict:
    """Parameters from ``$GPULAB_GP_PARAMS`` (JSON text, or the path of a JSON file): keys
    ``"name"`` or ``"name[backend]"``, values dicts over the registry's parameters. The tuning
    sweep (``python -m gpulab.gp.tune``) writes such a file so that one GPU run can benchmark its
    winners before they are written into `PARAMS`."""
    import json
    import os

    text = os.environ.get(PARAMS_ENV, "").strip()
    if not text:
        return {}
    if not text.startswith("{"):
        with open(text) as f:
            text = f.read()
    data = json.loads(text)
    names = [step["name"] for step in _LADDER]
    known = {f"{n}[{b}]" for n in names for b in ("numba", "cuda-c")} | set(names)
    bad = sorted(set(data) - known)
    if bad:
        raise ValueError(f"{PARAMS_ENV}: unknown variant(s) {bad}; expected names like 'register' or 'register[cuda-c]'")
    return data


def params_for(name: str, backend: str, extra: dict | None = None) -> dict:
    """PARAMS, then BACKEND_PARAMS, then the environment's overrides (``extra``)."""
    extra = overrides() if extra is None else extra
    return {**PARAMS[name], **BACKEND_PARAMS.get((name, backend), {}), **extra.get(name, {}),
            **extra.get(f"{name}[{backend}]", {})}


def sim_params_for(params: dict) -> dict:
    """The simulator's entries of `SIM_PARAMS` for a variant with these parameters."""
    return {k: x for k, x in SIM_PARAMS.items() if k in params}


REGISTRY = Registry("gp")
_OVERRIDES = overrides()
for step in _LADDER:
    for backend in ("numba", "cuda-c"):
        params = params_for(step["name"], backend, _OVERRIDES)
        REGISTRY.add(Variant(backend=backend, run=host.evaluator_factory(backend), params=params,
                             sim_params=sim_params_for(params), **step))

REGISTRY.add(Variant("interpreter", "cpu", ("host",),
                     "the CPU peer: Algorithm 2 with numba parallel=True over (individual, stock) pairs",
                     host.evaluator_factory("cpu"), params=dict(STACK=32),
                     policy=GPPolicy(path="cpu", kernel="interpret", stack_limit=True, bench_cap=BenchCap(
                         "ops", INTERPRETER_MAX_WORK, "at this size one CPU interpreter evaluation takes minutes: "
                         "its time is the peer column (measured once, in this run)"))))
REGISTRY.add(Variant("cpu_bitsliced", "cpu", ("host",),
                     "the bit-sliced evaluation and jumping trading loop on the CPU (numba parallel=True)",
                     host.evaluator_factory("cpu"), params=dict(BSTACK=16),
                     policy=GPPolicy(path="cpu", kernel="interpret_bitsliced", bool_limit="BSTACK", word_ops=True,
                                     same_algorithm_cpu="cpu_bitsliced")))
REGISTRY.add(Variant("reference", "cpu", ("host",),
                     "the tests' oracle: Algorithm 2 in numpy over all stock-days, the trading loop in Python",
                     host.evaluator_factory("cpu"), teaching_only=True,
                     policy=GPPolicy(path="cpu", kernel="reference", bench_cap=BenchCap(
                         "pair_days", REFERENCE_MAX_WORK, "the pure-Python reference is timed only up to {limit:.0e} "
                         "individual-stock-days (it is the tests' oracle, not a contender)"))))

GPU_VARIANTS = tuple(step["name"] for step in _LADDER)
DEFAULT_VARIANT = "bitsliced"
# Each backend's best variant: what a backend named without a variant runs (API and CLI alike).
REGISTRY.defaults.update({"numba": DEFAULT_VARIANT, "cuda-c": DEFAULT_VARIANT, "cpu": "cpu_bitsliced"})


def cuda_builds() -> list[tuple]:
    """Every CUDA C configuration the registry uses (for the NVRTC check), plus generated
    ``compiled`` source for a small fixed population, and the GPU breeding's kernels."""
    from gpulab.gp import breeding_gpu, compiled, resident

    seen, out = set(), []
    for v in REGISTRY.select(backend="cuda-c"):
        if v.policy.compiled:  # (its kernels are generated per population: the example below)
            continue
        d = host.cuda_defines(v.params)
        key = tuple(sorted(d.items()))
        if key not in seen:
            seen.add(key)
            out.append((host.SOURCE, d))
    out.append(("compiled_example.cu", {}, compiled.example_cuda_source()))
    out.append((breeding_gpu.CUDA_SOURCE, breeding_gpu.CUDA_DEFINES))  # the GPU breeding's CUDA C twin
    out.append((resident.CUDA_SOURCE, resident.CUDA_DEFINES))  # ... and its device-resident population's
    return out


def ptx_targets() -> list[tuple[str, object, str]]:
    """Every numba kernel of this chapter with the parameters the registry uses (plus a
    generated `compiled` kernel for a small fixed population), for the PTX check
    (`gpulab.compilecheck`)."""
    from gpulab.gp import breeding_gpu as bg
    from gpulab.gp import compiled
    from gpulab.gp import kernels_numba as kn
    from gpulab.gp import resident as rs

    out, seen = [("gp_fitness", kn.gp_fitness, kn.SIG_FITNESS), ("gp_changed", kn.gp_changed, kn.SIG_CHANGED),
                 ("gp_fitness_copies", kn.gp_fitness_copies, kn.SIG_FITNESS_COPIES),
                 ("gp_copy_masks", kn.gp_copy_masks, kn.SIG_COPY_MASKS), ("breed_plan", bg.breed_plan, bg.SIG_PLAN),
                 ("breed_write", bg.breed_write, bg.SIG_WRITE), ("plan_lengths", bg.plan_lengths, bg.SIG_LENGTHS),
                 ("elite_candidates", bg.elite_candidates, bg.SIG_CANDIDATES),
                 ("select_elites", bg.select_elites, bg.SIG_ELITES), ("init_trees", bg.init_trees, bg.SIG_INIT),
                 ("init_write", bg.init_write, bg.SIG_INIT_WRITE),
                 ("check_children", rs.check_children, rs.SIG_CHECK), ("scan_blocks", rs.scan_blocks, rs.SIG_SCAN),
                 ("add_block_totals", rs.add_block_totals, rs.SIG_ADD)], set()
    for v in REGISTRY.select(backend="numba"):
        if v.policy.compiled:
            kern, sig = compiled.example_numba_kernel()
            out.append((f"gp_{v.name}[example population]", kern, sig))
            continue
        params = v.params
        kern, sig = kn.kernel_for(v.policy.kernel, params)
        key = (v.name, tuple(sorted(params.items())))
        if key not in seen:
            seen.add(key)
            out.append((f"gp_{v.name}{params}", kern, sig))
    return out

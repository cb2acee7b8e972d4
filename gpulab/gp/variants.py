"""Chapter 3's variant registry: the interpreter ladder, the bit-sliced and compiled steps beyond
it, and the CPU peers."""

from __future__ import annotations

from gpulab.gp import host
from gpulab.registry import Registry, Variant

# Compile-time parameters, the same for numba and CUDA C (-D macros). STACK: float32 stack
# slots per thread. WPB: warps per block. CODE: program opcodes (both trees) a warp keeps in
# shared memory. DAYS: days the register variant evaluates per pass over a program (<= 32).
# BSTACK: the bit-sliced stack's 64-day words per thread (booleans deep; the GP's depth limit of
# 12 never needs more than 12). TW: 64-day words the bit-sliced variant evaluates before each
# trading pass.
# "sim": smaller blocks on the simulator (it pays per thread), so that the tests still see
# several warps per block.
PARAMS = {
    "thread_global": dict(BLOCK=128, STACK=32, sim=dict(BLOCK=64)),
    "coalesced": dict(BLOCK=128, STACK=32, sim=dict(BLOCK=64)),
    "constant": dict(BLOCK=128, STACK=32, sim=dict(BLOCK=64)),
    "shared": dict(WPB=4, STACK=16, CODE=512, sim=dict(WPB=2)),
    "register": dict(WPB=4, CODE=512, DAYS=8, sim=dict(WPB=2)),
    "bitsliced": dict(WPB=1, CODE=512, BSTACK=12, TW=4, sim=dict(WPB=2)),
    "compiled": dict(WPB=4, CHUNK=128, sim=dict(WPB=2)),
}

_LADDER = [
    ("thread_global", ("global",),
     "one thread per (individual, stock); programs, per-thread stacks and stock/indicator/day indicators in global memory"),
    ("coalesced", ("global",),
     "a warp = one individual × 32 stocks: no divergence; day/indicator/stock indicators and interleaved stacks coalesce"),
    ("constant", ("constant", "global"),
     "programs in constant memory, one broadcast per opcode for the warp; batches of individuals that fit 64 KiB"),
    ("shared", ("shared", "global"),
     "each warp's program and the stacks in shared memory"),
    ("register", ("registers", "shared", "global"),
     "no stack in memory: typing leaves two floats and a bit-stack of booleans in one 32-bit register; DAYS days per "
     "pass over the program"),
    ("bitsliced", ("registers", "shared", "global"),
     "comparisons as precomputed bit masks: 64 days per word operation, the program decoded once per warp, and a "
     "trading pass that jumps between signals across several words"),
    ("compiled", ("registers", "global"),
     "the population compiled to straight-line code (NVRTC / numba): no interpreter at all, at a compile cost per generation"),
]

# Where the tuned best differs between the backends: (name, backend) -> parameters over PARAMS.
BACKEND_PARAMS: dict = {('register', 'cuda-c'): dict(WPB=1), ('bitsliced', 'cuda-c'): dict(WPB=4)}

PARAMS_ENV = "GPULAB_GP_PARAMS"


def overrides() -> dict:
    """Parameters from ``$GPULAB_GP_PARAMS`` (JSON text, or the path of a JSON file): keys
    ``"name"`` or ``"name[backend]"``, values dicts over the registry's parameters. The tuning
    sweep (``scripts/tune_gp.py``) writes such a file so that one GPU run can benchmark its
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
    known = {f"{n}[{b}]" for n, *_ in _LADDER for b in ("numba", "cuda-c")} | {n for n, *_ in _LADDER}
    bad = sorted(set(data) - known)
    if bad:
        raise ValueError(f"{PARAMS_ENV}: unknown variant(s) {bad}; expected names like 'register' or 'register[cuda-c]'")
    return data


def params_for(name: str, backend: str, extra: dict | None = None) -> dict:
    """PARAMS, then BACKEND_PARAMS, then the environment's overrides (``extra``)."""
    extra = overrides() if extra is None else extra
    return {**PARAMS[name], **BACKEND_PARAMS.get((name, backend), {}), **extra.get(name, {}),
            **extra.get(f"{name}[{backend}]", {})}


REGISTRY = Registry("gp")
_OVERRIDES = overrides()
for name, memory, lesson in _LADDER:
    for backend in ("numba", "cuda-c"):
        REGISTRY.add(Variant(name, backend, memory, lesson, host.evaluator_factory(backend),
                             params=params_for(name, backend, _OVERRIDES), teaching_only=name == "thread_global"))

REGISTRY.add(Variant("interpreter", "cpu", ("host",),
                     "the CPU peer: Algorithm 2 with numba parallel=True over (individual, stock) pairs",
                     host.evaluator_factory("cpu"), params=dict(STACK=32)))
REGISTRY.add(Variant("cpu_bitsliced", "cpu", ("host",),
                     "the bit-sliced evaluation and jumping trading loop on the CPU (numba parallel=True)",
                     host.evaluator_factory("cpu"), params=dict(BSTACK=16)))
REGISTRY.add(Variant("reference", "cpu", ("host",),
                     "the tests' oracle: Algorithm 2 in numpy over all stock-days, the trading loop in Python",
                     host.evaluator_factory("cpu"), teaching_only=True))

GPU_VARIANTS = tuple(name for name, *_ in _LADDER)
DEFAULT_VARIANT = "bitsliced"
# Each backend's best variant: what a backend named without a variant runs (API and CLI alike).
REGISTRY.defaults.update({"numba": DEFAULT_VARIANT, "cuda-c": DEFAULT_VARIANT, "cpu": "cpu_bitsliced"})


def cuda_builds() -> list[tuple]:
    """Every CUDA C configuration the registry uses (for the NVRTC check), plus generated
    ``compiled`` source for a small fixed population."""
    from gpulab.gp import compiled

    seen, out = set(), []
    for v in REGISTRY.select(backend="cuda-c"):
        if v.name == "compiled":
            continue
        d = host.cuda_defines(v.params)
        key = tuple(sorted(d.items()))
        if key not in seen:
            seen.add(key)
            out.append((host.SOURCE, d))
    out.append(("compiled_example.cu", {}, compiled.example_cuda_source()))
    return out


def ptx_targets() -> list[tuple[str, object, str]]:
    """Every numba kernel of this chapter with the parameters the registry uses (plus a
    generated `compiled` kernel for a small fixed population), for the PTX check
    (`gpulab.compilecheck`)."""
    from gpulab.gp import compiled
    from gpulab.gp import kernels_numba as kn

    out, seen = [("gp_fitness", kn.gp_fitness, kn.SIG_FITNESS)], set()
    for v in REGISTRY.select(backend="numba"):
        if v.name == "compiled":
            kern, sig = compiled.example_numba_kernel()
            out.append(("gp_compiled[example population]", kern, sig))
            continue
        params = {k: x for k, x in v.params.items() if k != "sim"}
        kern, sig = kn.kernel_for(v.name, params)
        key = (v.name, tuple(sorted(params.items())))
        if key not in seen:
            seen.add(key)
            out.append((f"gp_{v.name}{params}", kern, sig))
    return out

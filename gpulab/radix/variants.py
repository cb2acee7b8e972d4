"""Chapter 4's variant registry: the radix-sort ladder, in the order the book climbs it."""

from __future__ import annotations

from dataclasses import dataclass, field

from gpulab.radix import host
from gpulab.radix.policy import GLOBAL_SPLIT, HOST, ONE_SWEEP, REDUCE_THEN_SCAN, TILE_SPLIT, Family, RadixPolicy
from gpulab.radix.reference import cpu_factory
from gpulab.registry import Registry, Variant

# Compile-time parameters, the same for numba and CUDA C. SCAN_BLOCK: threads of the block
# scans (a Blelloch block scans 2*SCAN_BLOCK values). BLOCK: threads of a sorting block.
# BITS: digit width. ITEMS: keys each thread holds in registers.
#
# The tile shapes of local and onesweep (*_MIN_BLOCKS: __launch_bounds__(BLOCK, MIN_BLOCKS) of the
# kernel named, which caps registers so that that many blocks share an SM; PAIRS_*: the shape of key-value sorts,
# whose tile holds more registers) come from the H200 sweep, `python -m gpulab.radix.tune`
# (docs/benchmarks/radix-tuning-h200.json, round 5 of the sweep): occupancy decided it -- at 256 x 16
# with every load issued first, onesweep used 94 registers and ran 2 blocks (25% occupancy) per SM.
# Since values pass through the keys' shared buffer after them, a key-value tile has the keys'
# shape with 2 blocks per SM (its values, their places and destinations take 80 registers).
# Both backends find a lane's digit peers with BITS ballots (BALLOT=1): faster than one
# match_any_sync in CUDA C (10.4 against 14.1 ms for 2^28 keys, run 2) and in numba (14.8 against
# 16.1 ms for onesweep at 256 x 16, sweep round 1). numba's ballot build crashed until its masks
# were kept 32 bits wide (chapter 4, "the numba ballot crash").
#
# On numba's simulator (sim_params) the blocks are small: it pays per thread and per barrier.
# Tiles, multi-level scans and partial tiles then all occur at a few dozen keys. The
# register-resident tiles take at most 5-bit digits there (BLOCK=32 must be >= 2**BITS).
SIM_SCAN = dict(SCAN_BLOCK=8)
SIM_TILE = dict(SCAN_BLOCK=8, BLOCK=32)
SIM_REGISTERS = dict(SCAN_BLOCK=8, BLOCK=32, ITEMS=2)
# onesweep in CUDA C only (scripts/radix_params_ab.py on an H200, CUB in the same run, chapter 4's
# "Early counts"): EARLY_COUNTS=1 counts a tile's digits before ranking, which took the keys-only
# build from 400 bytes of spill to none and 2^28 keys from 6.95 to 6.86 ms
# (ab-runs/radix-early-counts-h200.json); a key-value tile of 384 x 22 (PAIRS_ITEMS) took 2^28
# pairs from 9.11 to 8.32 ms, 2^26 from 2.39 to 2.20 (384 x 20: 8.51 and 2.24;
# ab-runs/radix-pairs-items-h200.json). numba's build of the same code gained nothing from either
# (early counts: keys 8.76 against 8.52 ms, pairs 11.20 against 11.20; with a 384 x 20 key-value
# tile 11.81; ab-runs/radix-early-counts-numba-h200.json), so numba keeps the shared parameters.
ONESWEEP_CUDA_C = dict(EARLY_COUNTS=1, PAIRS_ITEMS=22)


@dataclass(frozen=True)
class Rung:
    """One step of the ladder: one registry entry per GPU backend."""

    name: str
    memory: tuple[str, ...]
    lesson: str
    policy: RadixPolicy
    params: dict
    sim_params: dict
    teaching_only: bool = False
    backend_params: dict = field(default_factory=dict)  # backend -> parameters measured best on it alone

    def variant(self, backend: str) -> Variant:
        params = {**self.params, **self.backend_params.get(backend, {})}
        sim = dict(self.sim_params)  # a key-value shape of its own shrinks with the keys' on the simulator
        sim.update({k: sim[k[len("PAIRS_"):]] for k in params if k.startswith("PAIRS_") and k[len("PAIRS_"):] in sim})
        return Variant(self.name, backend, self.memory, self.lesson, host.plan_factory(self.policy, backend),
                       params=params, needs_warp_intrinsics=self.policy.needs_warp_intrinsics,
                       teaching_only=self.teaching_only, sim_params=sim, policy=self.policy)


LADDER = [
    Rung("split1_global", ("global", "shared"),
         "the seed's algorithm: one bit per pass, flags in global memory, a multi-block scan, a scatter (~32 passes)",
         GLOBAL_SPLIT, dict(SCAN_BLOCK=512), SIM_SCAN, teaching_only=True),
    Rung("split1_shared", ("global", "shared"),
         "split each block's keys in shared memory, then merge blocks with a scan of per-block counts: coalesced writes",
         TILE_SPLIT, dict(SCAN_BLOCK=512, BLOCK=256, BITS=1), SIM_TILE),
    Rung("radix4_shared", ("global", "shared"),
         "4-bit digits: four shared-memory splits per pass, a scan over (digit, block) counts, 8 passes instead of 32",
         TILE_SPLIT, dict(SCAN_BLOCK=512, BLOCK=256, BITS=4), SIM_TILE),
    Rung("local4", ("global", "shared", "registers"),
         "16 keys per thread in registers, ranked with warp match_any/popc; 4-bit digits, reduce-then-scan",
         REDUCE_THEN_SCAN, dict(SCAN_BLOCK=512, BLOCK=256, BITS=4, ITEMS=16, BALLOT=1), SIM_REGISTERS),
    Rung("local", ("global", "shared", "registers"),
         "8-bit digits (4 passes), 16 keys per thread in registers ranked by warp intrinsics, exchanged through shared memory",
         REDUCE_THEN_SCAN, dict(SCAN_BLOCK=512, BLOCK=384, BITS=8, ITEMS=16, DOWNSWEEP_MIN_BLOCKS=3,
                                PAIRS_DOWNSWEEP_MIN_BLOCKS=2, BALLOT=1), {**SIM_REGISTERS, "BITS": 5}),
    Rung("onesweep", ("global", "shared", "registers"),
         "every pass's histogram in one read, then one kernel per pass: tile ids from an atomic counter, decoupled look-back",
         ONE_SWEEP, dict(SCAN_BLOCK=512, BLOCK=384, BITS=8, ITEMS=16, ONESWEEP_MIN_BLOCKS=3,
                         PAIRS_ONESWEEP_MIN_BLOCKS=2, BALLOT=1), {**SIM_REGISTERS, "BITS": 5},
         backend_params={"cuda-c": ONESWEEP_CUDA_C}),
]

# Each backend's default (what a call naming a backend but no variant runs; on the simulator
# it falls back to a quicker GPU variant, FALLBACKS): the
# fastest measured. In the committed H200 benchmark (docs/benchmarks/radix-h200.json, 2026-11-29)
# onesweep is the fastest variant of both GPU backends at every size, keys, pairs and distinct
# alike (2^28 keys: 6.93 ms against local's 8.06 in CUDA C, 8.67 against 10.84 in numba; 2^24
# pairs in CUDA C 0.772 against 0.869, where the benchmark of 2026-11-28 had local ahead by
# 3.5%); tests/radix/test_defaults.py checks the defaults against that file.
DEFAULTS = {"numba": "onesweep", "cuda-c": "onesweep", "cpu": "numpy"}
# For more keys than a default's policy sorts (onesweep's look-back packs counts in 30 bits:
# at most 2^30 keys, since a tile reads only earlier tiles' counts), a call naming no variant
# runs the fastest variant without that limit, the second fastest in the same benchmark
# (`gpulab.radix.default_variant`).
LARGE_DEFAULTS = {"numba": "local", "cuda-c": "local"}
# On the simulator: warp intrinsics run there (gpulab.simwarp), but every lane of the default
# 256-thread blocks is a Python thread meeting at a barrier per intrinsic; radix4_shared is
# the quicker of the exact sorts to simulate.
FALLBACKS = {"numba": "radix4_shared", "cuda-c": "radix4_shared"}

REGISTRY = Registry("radix", defaults=DEFAULTS, fallbacks=FALLBACKS)
for rung in LADDER:
    for backend in ("numba", "cuda-c"):
        REGISTRY.add(rung.variant(backend))

REGISTRY.add(Variant("numpy", "cpu", ("host",), "numpy.sort / argsort / unique on the CPU: the seed's baseline",
                     cpu_factory, policy=HOST))

# The variants that rank keys with warp intrinsics (the tests exercise both rankings of each).
WARP = tuple(dict.fromkeys(v.name for v in REGISTRY if v.needs_warp_intrinsics))


def _early_counts_both_ways(v: Variant) -> list[dict]:
    """A onesweep variant's parameters, and the same with EARLY_COUNTS the other way (one backend
    counts early, the other does not: CI compiles both ways of each backend's pass kernel)."""
    if v.policy.family is not Family.ONE_SWEEP:
        return [v.params]
    return [v.params, {**v.params, "EARLY_COUNTS": 1 - v.params.get("EARLY_COUNTS", 0)}]


def cuda_builds() -> list[tuple[str, dict]]:
    """Every (source, defines) configuration the CUDA C variants compile (for the NVRTC check):
    a sort plan builds keys-only and key-value tiles."""
    return REGISTRY.cuda_builds(host.SOURCE, lambda v: [
        host.cuda_defines({**host.tile_shape(p, bool(pairs)), "PAIRS": pairs})
        for p in _early_counts_both_ways(v) for pairs in (0, 1)])


# The numba signatures of the kernels a policy names (uint32 keys, int32 counts, int32 scalars);
# RANKED: those built in both rankings (BALLOT) and for keys-only and key-value tiles (PAIRS).
_U, _I, _S = "uint32[::1]", "int32[::1]", "int32"
SIGNATURES = {
    "tile_sort": f"void({_U}, {_U}, {_U}, {_U}, {_I}, {_I}, {_S}, {_S}, {_S}, {_S})",
    "tile_scatter": f"void({_U}, {_U}, {_U}, {_U}, {_I}, {_I}, {_S}, {_S}, {_S}, {_S})",
    "upsweep": f"void({_U}, {_I}, {_S}, {_S}, {_S})",
    "downsweep": f"void({_U}, {_U}, {_U}, {_U}, {_I}, {_S}, {_S}, {_S}, {_S})",
    "onesweep_hist": f"void({_U}, {_I}, {_S}, {_S})",
    "onesweep_scan": f"void({_I})",
    "onesweep": f"void({_U}, {_U}, {_U}, {_U}, {_I}, {_I}, {_U}, {_U}, {_S}, {_S}, {_S}, {_S})",
}
SIGNATURES["onesweep_first"] = SIGNATURES["onesweep"]
RANKED = ("downsweep", "onesweep", "onesweep_first")


def ptx_targets() -> list[tuple[str, object, str]]:
    """Every numba kernel of this chapter with the parameters the registry uses (for the PTX
    check, `gpulab.compilecheck`)."""
    from gpulab.radix import kernels_numba as kn

    U32, I32, s = _U, _I, _S
    targets = kn.fixed_targets()
    seen = set()

    def add(name, kern, sig):
        if name not in seen:
            seen.add(name)
            targets.append((name, kern, sig))

    for v in REGISTRY.select(backend="numba"):
        p = v.params
        sb = p["SCAN_BLOCK"]
        add(f"max_reduce[{sb}]", kn.max_kernel(sb), f"void({U32}, {s}, {U32})")
        add(f"scan_hs[{sb}]", kn.scan_hs_kernel(sb), f"void({I32}, {I32}, {I32}, {s}, {s})")
        add(f"scan_blelloch[{sb}]", kn.scan_blelloch_kernel(sb), f"void({I32}, {I32}, {I32}, {s}, {s})")
        # the policy's tile kernels: keys-only and pairs shapes; the ranking kernels in both
        # rankings (match_any_sync, BITS ballot_sync), keys-only and pairs builds
        shaped = [k for k in v.policy.kernels if k not in RANKED]
        for q in (host.tile_shape(p, False), host.tile_shape(p, True)):
            for k in shaped:
                add(f"{k}{q}", host.numba_kernel(k, q), SIGNATURES[k])
        for ballot, pairs in ((0, 0), (0, 1), (1, 0), (1, 1)):
            q = {**host.tile_shape(p, bool(pairs)), "BALLOT": ballot, "PAIRS": pairs}  # a key-value plan's own shape
            for k in v.policy.kernels:
                if k in RANKED:
                    add(f"{k}{q}", host.numba_kernel(k, q), SIGNATURES[k])
        if v.policy.family is Family.ONE_SWEEP:  # an argsort's passes over the input: key-value tiles only
            q = {**host.tile_shape(p, True), "PAIRS": 1}
            for k in ("onesweep_iota", "onesweep_first_iota"):
                add(f"{k}{q}", host.numba_kernel(k, q), SIGNATURES["onesweep"])
        for other in _early_counts_both_ways(v)[1:]:  # the early counts the other way
            for pairs in (0, 1):
                q = {**host.tile_shape(other, bool(pairs)), "PAIRS": pairs}
                add(f"onesweep{q}", host.numba_kernel("onesweep", q), SIGNATURES["onesweep"])
    return targets

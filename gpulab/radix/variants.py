"""Chapter 4's variant registry: the radix-sort ladder, in the order the book climbs it."""

from __future__ import annotations

from gpulab.radix import host
from gpulab.registry import Registry, Variant

# Compile-time parameters, the same for numba and CUDA C. SCAN_BLOCK: threads of the block
# scans (a Blelloch block scans 2*SCAN_BLOCK values). BLOCK: threads of a sorting block.
# BITS: digit width. ITEMS: keys each thread holds in registers.
PARAMS = {
    "split1_global": dict(SCAN_BLOCK=512),
    "split1_shared": dict(SCAN_BLOCK=512, BLOCK=256, BITS=1),
    "radix4_shared": dict(SCAN_BLOCK=512, BLOCK=256, BITS=4),
    "local": dict(SCAN_BLOCK=512, BLOCK=384, BITS=8, ITEMS=16, DOWNSWEEP_MIN_BLOCKS=3,
                  PAIRS_DOWNSWEEP_MIN_BLOCKS=2),
    "local4": dict(SCAN_BLOCK=512, BLOCK=256, BITS=4, ITEMS=16),
    "onesweep": dict(SCAN_BLOCK=512, BLOCK=384, BITS=8, ITEMS=16, ONESWEEP_MIN_BLOCKS=3,
                     PAIRS_ONESWEEP_MIN_BLOCKS=2),
}

# The tile shapes of local and onesweep (*_MIN_BLOCKS: __launch_bounds__(BLOCK, MIN_BLOCKS) of the
# kernel named, which caps registers so that that many blocks share an SM; PAIRS_*: the shape of key-value sorts,
# whose tile holds more registers) come from the H200 sweep, scripts/tune_radix.py
# (docs/benchmarks/radix-tuning-h200.json, round 5 of the sweep): occupancy decided it -- at 256 x 16
# with every load issued first, onesweep used 94 registers and ran 2 blocks (25% occupancy) per SM.
# Since values pass through the keys' shared buffer after them, a key-value tile has the keys'
# shape with 2 blocks per SM (its values, their places and destinations take 80 registers).
# Both backends find a lane's digit peers with BITS ballots (BALLOT=1): faster than one
# match_any_sync in CUDA C (10.4 against 14.1 ms for 2^28 keys, run 2) and in numba (14.8 against
# 16.1 ms for onesweep at 256 x 16, sweep round 1). numba's ballot build crashed until its masks
# were kept 32 bits wide (chapter 4, "the numba ballot crash").
BACKEND_PARAMS = {(name, backend): dict(BALLOT=1) for name in ("local", "local4", "onesweep")
                  for backend in ("numba", "cuda-c")}

KIND = {"split1_global": "split1_global", "split1_shared": "tile", "radix4_shared": "tile",
        "local": "warp", "local4": "warp", "onesweep": "onesweep"}

_LADDER = [
    ("split1_global", ("global", "shared"),
     "the seed's algorithm: one bit per pass, flags in global memory, a multi-block scan, a scatter (~32 passes)"),
    ("split1_shared", ("global", "shared"),
     "split each block's keys in shared memory, then merge blocks with a scan of per-block counts: coalesced writes"),
    ("radix4_shared", ("global", "shared"),
     "4-bit digits: four shared-memory splits per pass, a scan over (digit, block) counts, 8 passes instead of 32"),
    ("local4", ("global", "shared", "registers"),
     "16 keys per thread in registers, ranked with warp match_any/popc; 4-bit digits, reduce-then-scan"),
    ("local", ("global", "shared", "registers"),
     "8-bit digits (4 passes), 16 keys per thread in registers ranked by warp intrinsics, exchanged through shared memory"),
    ("onesweep", ("global", "shared", "registers"),
     "every pass's histogram in one read, then one kernel per pass: tile ids from an atomic counter, decoupled look-back"),
]

WARP = ("local", "local4", "onesweep")

# Each backend's default (what a call naming a backend but no variant runs; on the simulator
# gpulab.radix falls back to a quicker GPU variant, see gpulab.radix.FALLBACK_VARIANT).
DEFAULTS = {"numba": "local", "cuda-c": "local", "cpu": "numpy"}

REGISTRY = Registry("radix", defaults=DEFAULTS)
for name, memory, lesson in _LADDER:
    for backend in ("numba", "cuda-c"):
        REGISTRY.add(Variant(name, backend, memory, lesson, host.plan_factory(KIND[name], backend),
                             params={**PARAMS[name], **BACKEND_PARAMS.get((name, backend), {})}, needs_warp_intrinsics=name in WARP,
                             teaching_only=name == "split1_global"))

REGISTRY.add(Variant("numpy", "cpu", ("host",), "numpy.sort / argsort / unique on the CPU: the seed's baseline",
                     host.cpu_factory))


def cuda_builds() -> list[tuple[str, dict]]:
    """Every (source, defines) configuration the CUDA C variants compile (for the NVRTC check)."""
    seen, out = set(), []
    for v in REGISTRY.select(backend="cuda-c"):
        for pairs in (0, 1):  # a sort plan builds keys-only or pairs tiles
            d = host.cuda_defines({**host.tile_shape(v.params, bool(pairs)), "PAIRS": pairs})
            key = tuple(sorted(d.items()))
            if key not in seen:
                seen.add(key)
                out.append((host.SOURCE, d))
    return out


def ptx_targets() -> list[tuple[str, object, str]]:
    """Every numba kernel of this chapter with the parameters the registry uses (for the PTX
    check, `gpulab.compilecheck`)."""
    from gpulab.radix import kernels_numba as kn

    U32, I32, s = kn.U32, kn.I32, "int32"
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
        if v.name == "onesweep":
            for q in (host.tile_shape(p, False), host.tile_shape(p, True)):
                hk, sk = kn.onesweep_hist_kernel(q["BLOCK"], q["ITEMS"], q["BITS"])
                add(f"onesweep_hist{q}", hk, f"void({U32}, {I32}, {s}, {s})")
                add(f"onesweep_scan{q}", sk, f"void({I32})")
            for ballot, pairs in ((0, 0), (0, 1), (1, 0), (1, 1)):
                q = host.tile_shape(p, bool(pairs))  # a key-value plan's own shape
                add(f"onesweep{ {**q, 'BALLOT': ballot, 'PAIRS': pairs} }",
                    kn.onesweep_kernel(q["BLOCK"], q["ITEMS"], q["BITS"], ballot, pairs, q.get("ONESWEEP_MIN_BLOCKS", 1)),
                    f"void({U32}, {U32}, {U32}, {U32}, {I32}, {I32}, {U32}, {U32}, {s}, {s}, {s}, {s})")
        elif "ITEMS" in p:
            for q in (host.tile_shape(p, False), host.tile_shape(p, True)):
                add(f"upsweep{q}", kn.upsweep_kernel(q["BLOCK"], q["ITEMS"], q["BITS"]), f"void({U32}, {I32}, {s}, {s}, {s})")
            # both rankings (match_any_sync, BITS ballot_sync), keys-only and pairs builds
            for ballot, pairs in ((0, 0), (0, 1), (1, 0), (1, 1)):
                q = host.tile_shape(p, bool(pairs))
                add(f"downsweep{ {**q, 'BALLOT': ballot, 'PAIRS': pairs} }",
                    kn.downsweep_kernel(q["BLOCK"], q["ITEMS"], q["BITS"], ballot, pairs, q.get("DOWNSWEEP_MIN_BLOCKS", 1)),
                    f"void({U32}, {U32}, {U32}, {U32}, {I32}, {s}, {s}, {s}, {s})")
        elif "BITS" in p:
            add(f"tile_sort{p}", kn.tile_sort_kernel(p["BLOCK"], p["BITS"]),
                f"void({U32}, {U32}, {U32}, {U32}, {I32}, {I32}, {s}, {s}, {s}, {s})")
            add(f"tile_scatter{p}", kn.tile_scatter_kernel(p["BLOCK"], p["BITS"]),
                f"void({U32}, {U32}, {U32}, {U32}, {I32}, {I32}, {s}, {s}, {s}, {s})")
    return targets

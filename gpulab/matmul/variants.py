"""Chapter 1's variant registry: the optimization ladder, in the order the book climbs it."""

from __future__ import annotations

import numpy as np

from gpulab.matmul import host
from gpulab.registry import Registry, Variant

# One register-tile shape for numba and CUDA C alike: a 128×128 tile of C per block of 256
# threads, each thread an 8×8 sub-tile; BK = 8 columns of A / rows of B per shared stage.
TILE_128 = dict(BM=128, BN=128, BK=8, TM=8, TN=8, PAD=4)
# numba's prefetch kernel measured fastest with 16×8 per thread (128 threads) in the H200 sweep
# (docs/benchmarks/matmul-numba-tuning-h200.json); CUDA C's with 8×8.
TILE_128_16X8 = dict(BM=128, BN=128, BK=8, TM=16, TN=8, PAD=4)

_LADDER = [
    ("naive", ("global",), "one thread per output; lanes walk down a column of C, so warp loads are uncoalesced",
     host.numba_naive, host.cuda_naive, {}, {}),
    ("coalesced", ("global",), "swap the thread mapping so the 32 lanes of a warp read 32 consecutive floats",
     host.numba_coalesced, host.cuda_coalesced, {}, {}),
    ("shared", ("global", "shared"), "stage 16x16 tiles of A and B in shared memory: each value read from DRAM is reused 16 times",
     host.numba_shared, host.cuda_shared, {"tile": 16}, {"TILE": 16}),
    ("constant", ("global", "constant"), "a thin B in constant memory, every lane of a warp reading the same address (broadcast)",
     host.numba_constant, host.cuda_constant, {}, {}),
    ("constant_scattered", ("global", "constant"), "the same with lanes reading different constant addresses: serialized, the lesson in what not to do",
     host.numba_constant_scattered, host.cuda_constant_scattered, {}, {}),
    ("register", ("global", "shared", "registers"), "each thread computes an 8x8 block held in registers: 64 FMAs per 16 shared loads",
     host.numba_register, host.cuda_register, TILE_128, TILE_128),
    ("prefetch", ("global", "shared", "registers"), "double-buffered shared tiles with the next tile prefetched into registers: one barrier per tile, loads hidden behind FMAs",
     host.numba_prefetch, host.cuda_prefetch, TILE_128_16X8, TILE_128),
]

# Each backend's default (what a call naming a backend but no variant runs). No CPU variant.
DEFAULTS = {"numba": "register", "cuda-c": "register"}

REGISTRY = Registry("matmul", defaults=DEFAULTS)
for name, memory, lesson, numba_prepare, cuda_prepare, numba_params, cuda_params in _LADDER:
    teaching = name in ("naive", "constant_scattered")
    REGISTRY.add(Variant(name, "numba", memory, lesson, numba_prepare, params=numba_params, teaching_only=teaching))
    REGISTRY.add(Variant(name, "cuda-c", memory, lesson, cuda_prepare, params=cuda_params, teaching_only=teaching))

# Beyond the ladder. numba has no float2/float4, but a float64 shared array holds float pairs.
REGISTRY.add(Variant("wide", "numba", ("global", "shared", "registers"),
                     "prefetch with 64-bit shared loads of float pairs (bit-cast through float64): half the load instructions",
                     host.numba_wide, params=TILE_128))

# Beyond the ladder, in CUDA C where the language gives direct control over vector types.
REGISTRY.add(Variant("vec4", "cuda-c", ("global", "shared", "registers"),
                     "16-byte float4 loads from global and shared memory: a quarter of the load instructions",
                     host.cuda_vec4, params=TILE_128))
REGISTRY.add(Variant("warptile", "cuda-c", ("global", "shared", "registers"),
                     "warp tiling + float4 + double buffering: each warp owns a sub-tile, so shared reads are warp-local and registers reused",
                     host.cuda_warptile,
                     # WT_-prefixed so that one set of -D flags never reshapes two kernels of the file.
                     params=dict(WT_BM=128, WT_BN=128, WT_BK=8, WT_WM=64, WT_WN=64, WT_WNITER=2, WT_TM=4, WT_TN=4,
                                 WT_THREADS=128, WT_MINBLOCKS=1, WT_APAD=4)))

CONSTANT_VARIANTS = ("constant", "constant_scattered")
LADDER_STEPS = tuple(step[0] for step in _LADDER)  # each in numba and in CUDA C


def cuda_builds() -> list[tuple[str, dict]]:
    """Every (source, defines) configuration the CUDA C variants compile (for the NVRTC check)."""
    seen, out = set(), []
    for v in REGISTRY.select(backend="cuda-c"):
        key = tuple(sorted(v.params.items()))
        if key not in seen:
            seen.add(key)
            out.append((host.SOURCE, dict(v.params)))
    return out


def ptx_targets() -> list[tuple[str, object, str]]:
    """Every numba kernel of this chapter with the parameters the registry uses (for the PTX
    check, `gpulab.compilecheck`)."""
    from gpulab.matmul import kernels_numba as kn

    sig = kn.SIG
    targets = [("matmul_naive", kn.matmul_naive, sig), ("matmul_coalesced", kn.matmul_coalesced, sig)]
    csig = "void(float32[:, ::1], float32[:, ::1], int32, int32, int32)"
    B = np.ones((64, 64), np.float32)
    targets.append(("matmul_constant", kn.constant_kernel(B, True), csig))
    targets.append(("matmul_constant_scattered", kn.constant_kernel(B, False), csig))
    for v in REGISTRY.select(backend="numba"):
        if v.name == "shared":
            targets.append((f"matmul_shared{v.params}", kn.shared_kernel(**v.params), sig))
        elif v.name.startswith("register"):
            targets.append((f"matmul_register{v.params}", kn.register_kernel(**v.params), sig))
        elif v.name.startswith("prefetch"):
            targets.append((f"matmul_prefetch{v.params}", kn.prefetch_kernel(**v.params), sig))
        elif v.name.startswith("wide"):
            targets.append((f"matmul_wide{v.params}", kn.wide_kernel(**v.params), sig))
    return targets

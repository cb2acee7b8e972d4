"""Chapter 2's variant registry: the ladder from global-memory temporaries to one-sync incremental search."""

from __future__ import annotations

from gpulab.registry import Registry, Variant
from gpulab.subset import host

SEED = dict(block=256, max_blocks=132 * 16, partition=1 << 24)
# Incremental: up to 1024 consecutive ranks per thread (fewer, down to 32, for small problems so
# every SM gets threads); 512-thread blocks. The H200 tuning sweep (docs/benchmarks/
# subset-tuning-h200.json) measured C(200,5) at 13.8 ms with 1024-thread blocks and 15.2 ms with
# 512, but 1024 threads only launch while the kernel needs <= 64 registers (k <= 5 in CUDA C; the
# numba kernel needs 70 at k = 5): 1024-thread launches failed with LAUNCH_OUT_OF_RESOURCES.
INCREMENTAL = dict(block=512, max_blocks=132 * 64, chunk=1024)

_LADDER = [
    ("global", ("global",),
     "one subset per thread; selection, submatrix and every distance in global memory, argmin on the host",
     host.numba_global, host.cuda_global, SEED, True, False),
    ("shared", ("global", "shared"),
     "Q and each thread's selection in shared memory; a block argmin sends one (value, rank) per block to the host",
     host.numba_shared, host.cuda_shared, SEED, False, False),
    ("constant_local", ("constant", "local", "shared"),
     "Q in constant memory, the selection in a thread-local array: lanes read different constant addresses, so reads serialize",
     host.numba_constant_local, host.cuda_constant_local, SEED, False, False),
    ("incremental", ("global", "shared", "registers"),
     "chunks of consecutive ranks: fix k-1 indices, loop the last (k-1 lookups per subset), squared sums, the whole search in one launch",
     host.numba_incremental, host.cuda_incremental, INCREMENTAL, False, False),
    ("incremental_warp", ("global", "shared", "registers"),
     "the same with a warp-shuffle argmin: no shared memory or barrier until one value per warp is left",
     host.numba_incremental_warp, host.cuda_incremental_warp, INCREMENTAL, False, True),
]

# Each backend's default (what a call naming a backend but no variant runs).
DEFAULTS = {"numba": "incremental", "cuda-c": "incremental", "cpu": "cpu_parallel"}

REGISTRY = Registry("subset", defaults=DEFAULTS)
for name, memory, lesson, numba_prepare, cuda_prepare, params, teaching, warp in _LADDER:
    REGISTRY.add(Variant(name, "numba", memory, lesson, numba_prepare, params=params, teaching_only=teaching,
                         needs_warp_intrinsics=warp))
    REGISTRY.add(Variant(name, "cuda-c", memory, lesson, cuda_prepare, params=params, teaching_only=teaching))

REGISTRY.add(Variant("cpu_parallel", "cpu", ("host",),
                     "the fast CPU baseline: numba njit(parallel=True) over chunks, the same incremental scan",
                     host.cpu_parallel, params=dict(chunk=1 << 16)))
REGISTRY.add(Variant("reference", "cpu", ("host",),
                     "the exact reference: itertools.combinations in pure Python",
                     host.cpu_reference, teaching_only=True))

GPU_VARIANTS = ("global", "shared", "constant_local", "incremental", "incremental_warp")
# What each variant's argmin compares: the incremental scans (and the CPU baseline, the same
# scan) compare squared sums s; the seed variants and the reference compare distances
# sqrt(2 s). sqrt maps neighbouring doubles to one double, so the two orders can differ on
# ties; a merge of partial searches (gpulab.distributed) must compare what the variant compares.
COMPARES_SUMS = frozenset({"incremental", "incremental_warp", "cpu_parallel"})
# K values the CUDA C incremental kernels are compiled for in the NVRTC check (any K <= MAX_K works).
CHECK_KS = (1, 2, 5, 6, 16)


def cuda_builds() -> list[tuple[str, dict]]:
    """Every (source, defines) configuration compiled for the NVRTC check: one per SUBSET_K."""
    return [(host.SOURCE, {"SUBSET_K": K}) for K in CHECK_KS]


PTX_KS = (1, 2, 5, 6, 16)  # the selection sizes K whose incremental kernels the PTX check compiles


def ptx_targets() -> list[tuple[str, object, str]]:
    """Every numba kernel with the signatures the host code launches (for the PTX check,
    `gpulab.compilecheck`)."""
    import numpy as np

    from gpulab.subset import kernels_numba as kn

    out = [("subset_global", kn.subset_global, kn.SIG_GLOBAL), ("subset_shared", kn.subset_shared, kn.SIG_SHARED),
           ("subset_constant_local", kn.constant_local_kernel(np.linspace(0, 1, 8128)), kn.SIG_CONSTANT),
           ("final_argmin", kn.final_argmin, kn.SIG_FINAL)]
    for dt in ("float64", "float32"):
        out.append((f"correlation_checks[{dt}]", kn.correlation_checks, kn.SIG_CHECKS.format(dt)))
        out.append((f"pack_squared[{dt}]", kn.pack_squared, kn.SIG_PACK.format(dt)))
        out.append((f"column_moments[{dt}]", kn.column_moments, kn.SIG_MOMENTS.format(dt)))
        out.append((f"correlation_pairs[{dt}]", kn.correlation_pairs, kn.SIG_PAIRS.format(dt)))
    for K in PTX_KS:
        for warp in (False, True):
            out.append((f"subset_incremental[K={K}{',warp' if warp else ''}]", kn.incremental_kernel(K, warp),
                        kn.SIG_INCREMENTAL))
    return out

"""Chapter 2's variant registry: the ladder from global-memory temporaries to one-sync incremental search."""

from __future__ import annotations

from gpulab import device
from gpulab.registry import Registry, Variant
from gpulab.subset import host, reference
from gpulab.subset.combinatorics import choose
from gpulab.subset.policy import SubsetPolicy

SEED = dict(BLOCK=256, MAX_BLOCKS=132 * 16, PARTITION=1 << 24)
# Incremental: up to 1024 consecutive ranks per thread (fewer, down to 32, for small problems so
# every SM gets threads); 512-thread blocks. The H200 tuning sweep (docs/benchmarks/
# subset-tuning-h200.json) measured C(200,5) at 13.8 ms with 1024-thread blocks and 15.2 ms with
# 512, but 1024 threads only launch while the kernel needs <= 64 registers (k <= 5 in CUDA C; the
# numba kernel needs 70 at k = 5): 1024-thread launches failed with LAUNCH_OUT_OF_RESOURCES (since
# 2026-11-28 the plan halves such a block instead: host.IncrementalPlan; the sweep records the
# block that launched).
# FINAL_BLOCK: the threads of the one block that reduces the blocks' answers. WAVES: at most
# twice the blocks the GPU runs at once (host.IncrementalPlan.waves_cap). On an H100
# (docs/benchmarks/subset-grid-h100.json) two waves against the former 132 x 64 blocks, CUDA C:
# C(200,5) 13.0 against 16.4 ms, C(200,6) 463 against 485 ms, C(100,6) 7.32 against 7.31 ms. In
# an earlier run (docs/benchmarks/ab-runs/subset-grid-waves-h100.log) one wave (132 blocks at
# n = 200, 264 at n = 100, where an SM runs 2) took 12.5, 462 and 7.42 ms, two 12.6, 463 and 7.24.
INCREMENTAL = dict(BLOCK=512, MAX_BLOCKS=132 * 64, CHUNK=1024, FINAL_BLOCK=256, WAVES=2)
# Lanes: a chunk of ranks per warp, so chunks are 32 times as long as incremental's (the
# warp's lanes split each unit's subsets); at least 256 ranks for small problems. The same
# blocks and waves as incremental, where the kernel's registers allow (from k = 8 they do not
# allow 512 threads: the plan halves the block). The chunk count aims at 2,048 threads an SM,
# which this kernel's registers do not reach (16 warps at 126 registers): not tuned for that.
LANES = dict(INCREMENTAL, CHUNK=32 * 1024, CHUNK_MIN=256)
# On numba's simulator (which pays per thread): one warp per block, a few blocks, short chunks.
SEED_SIM = dict(BLOCK=32, MAX_BLOCKS=3)
INCREMENTAL_SIM = dict(SEED_SIM, CHUNK=7, FINAL_BLOCK=32)
LANES_SIM = dict(INCREMENTAL_SIM, CHUNK=224, CHUNK_MIN=224)  # 7 ranks a lane, as incremental has 7 a thread

# How each kernel launches (policy.SubsetPolicy): where Q lives, the shared memory per thread, the
# launch sequence (the seed's host partition loop, or the incremental scan's one launch).
INCREMENTAL_POLICY = dict(chunked=True, q_in="shared", signature="SIG_INCREMENTAL", compares_sums=True)
_LADDER = [
    ("global", ("global",),
     "one subset per thread; selection, submatrix and every distance in global memory, argmin on the host",
     SubsetPolicy("subset_global", per_subset=True, thread_bytes=(0, 0)), SEED, SEED_SIM, True, False),
    ("shared", ("global", "shared"),
     "Q and each thread's selection in shared memory; a block argmin sends one (value, rank) per block to the host",
     SubsetPolicy("subset_shared", q_in="shared", thread_bytes=(16, 4), signature="SIG_SHARED"), SEED, SEED_SIM, False, False),
    ("constant_local", ("constant", "local", "shared"),
     "Q in constant memory, the selection in a thread-local array: lanes read different constant addresses, so reads serialize",
     SubsetPolicy("subset_constant_local", q_in="constant"), SEED, SEED_SIM, False, False),
    ("incremental", ("global", "shared", "registers"),
     "chunks of consecutive ranks: fix k-1 indices, loop the last (k-1 lookups per subset), squared sums, the whole search in one launch",
     SubsetPolicy("subset_incremental", **INCREMENTAL_POLICY), INCREMENTAL, INCREMENTAL_SIM, False, False),
    ("incremental_warp", ("global", "shared", "registers"),
     "the same with a warp-shuffle argmin: no shared memory or barrier until one value per warp is left",
     SubsetPolicy("subset_incremental_warp", **INCREMENTAL_POLICY), INCREMENTAL, INCREMENTAL_SIM, False, True),
    ("incremental_global", ("global", "shared", "registers"),
     "incremental's scan with Q read where it lies, through the read-only cache and L2: no copy into shared "
     "memory, so no shared-memory cap on n",
     SubsetPolicy("subset_incremental_global", **dict(INCREMENTAL_POLICY, q_in="global")), INCREMENTAL,
     INCREMENTAL_SIM, False, False),
    ("incremental_lanes", ("global", "shared", "registers"),
     "a warp per chunk: its lanes share all but the last two indices, each lane keeps its second-to-last "
     "index's prefix sum in registers, so a subset costs one read of Q, 32 consecutive words across the warp",
     SubsetPolicy("subset_lanes", **dict(INCREMENTAL_POLICY, per_warp=True)), LANES, LANES_SIM, False, False),
]

# Each backend's default (what a call naming a backend but no variant runs).
DEFAULTS = {"numba": "incremental", "cuda-c": "incremental", "cpu": "cpu_parallel"}

# What a search naming no backend runs (`default_choice`): on a GPU where the CUDA C backend runs,
# CUDA C — on the H200, incremental takes 8.9 ms at C(100,6) and 15.2 ms at C(200,5) against
# numba's 19.2 and 28.5 ms — with the variant this table gives for the number of subsets:
# (at most this many subsets, variant), smallest first; the first row whose variant can run at
# n wins (else the backend's default). Derived on 2026-11-26 from docs/benchmarks/subset-h200.json
# (measured 2026-11-21): constant_local was the fastest GPU record at every measured size up to
# C(50,4) = 230,300 subsets (0.28-0.38 ms against incremental's 0.42-0.51 ms; at C(20,7) 0.433 ms,
# 2% behind incremental_warp), incremental from C(50,5) = 2,118,760 (0.551 ms against
# constant_local's 0.862; at C(100,6) and C(200,5) within 1% of incremental_warp). Between
# those two sizes nothing was measured: the boundary is the last size constant_local won.
# tests/subset/test_default_backend.py checks every row against the newest full H200 run
# (docs/benchmarks/subset-lanes-h200.json, 2026-11-28).
# Elsewhere (numba's simulator, a GPU without pycuda) numba runs its default, incremental:
# numba's constant_local compiles a kernel for every Q (Q is baked into it), which the
# benchmark's warm-up hides.
FASTEST = {"cuda-c": ((230_300, "constant_local"), (None, "incremental"))}
# Where the table (or a backend's default) picks incremental for k >= 5 and the search's units
# are large, incremental_lanes instead. A unit is what a warp of incremental_lanes walks per
# prefix of k-2 indices; the C(n-2, k-2) units hold n(n-1)/(k(k-1)) subsets on average.
# docs/benchmarks/subset-lanes-h200.json (an H200, 2026-11-28, every step in one run) measured
# incremental_lanes faster on both backends at C(200,5) (units of 1,990: 8.34 against 12.82 ms in
# CUDA C), slower in CUDA C at C(100,6) (330: 8.63 against 7.60) and on both at n = 50, k = 5
# (122.5); the A/B script (docs/benchmarks/ab-runs/subset-lanes-ab-h200.json) measured C(200,6)
# (1,326: 259 against 462 ms, 457 against 951 in numba). The bound is the smallest unit measured
# faster on both backends among the sizes where the table picks incremental; k >= 5 because only
# k = 5 and 6 were measured at such sizes (at n = 50, k = 3 and 4 it was slower in numba). Not on the simulator (its default stays incremental), nor past the
# kernel's n <= 256.
LANES_FROM_UNIT = 1326
# What a default becomes where lanes_instead holds.
LARGE_UNITS = {"incremental": "incremental_lanes"}
# Where the variant a default picks keeps Q in shared memory and n needs more of it than a block
# of this device gets (n > 237 for incremental's 512-thread blocks on an H100 or H200), the default
# is this one instead, on the same backend: the same scan, Q read from global memory, no cap on n
# but the kernels' own (MAX_N, MAX_K, C(n, k) in 64 bits). (A variant named by the caller is
# never replaced: above the cap it fails with the LimitError that names the shared memory.)
BEYOND_SHARED = "incremental_global"

REGISTRY = Registry("subset", defaults=DEFAULTS)
for name, memory, lesson, policy, params, sim_params, teaching, warp in _LADDER:
    for backend in ("numba", "cuda-c"):
        REGISTRY.add(Variant(name, backend, memory, lesson, host.launcher(policy, backend), params=params,
                             sim_params=sim_params, policy=policy, teaching_only=teaching,
                             needs_warp_intrinsics=warp and backend == "numba"))

REGISTRY.add(Variant("cpu_parallel", "cpu", ("host",),
                     "the fast CPU baseline: numba njit(parallel=True) over chunks, the same incremental scan",
                     reference.cpu_parallel, params=dict(CHUNK=1 << 16), policy=SubsetPolicy(compares_sums=True)))
REGISTRY.add(Variant("reference", "cpu", ("host",),
                     "the exact reference: itertools.combinations in pure Python",
                     reference.cpu_reference, teaching_only=True, policy=SubsetPolicy()))

# What each variant's argmin compares (SubsetPolicy.compares_sums): a merge of partial searches
# (gpulab.distributed) must compare what the variant compares.
COMPARES_SUMS = frozenset(v.name for v in REGISTRY if v.policy.compares_sums)
# K values the incremental kernels are compiled for in the NVRTC and PTX checks (any K <= MAX_K works).
CHECK_KS = (1, 2, 5, 6, 16)


def default_backend() -> str:
    """The backend of a search that names none: `"cuda-c"` where the CUDA C backend can run
    (a GPU, pycuda and a compiler: `gpulab.cudac.unavailable_reason()` is `None`), else
    `"numba"` (on numba's simulator always: CUDA C cannot run there)."""
    from gpulab import cudac

    if device.on_simulator():
        return "numba"
    return "numba" if cudac.unavailable_reason() else "cuda-c"


def fastest(backend: str, n: int, k: int, limit: int | None = None) -> str:
    """The variant `FASTEST` gives `backend` for C(n, k) subsets: its first row that covers
    the size and whose variant can run at n; else the backend's default; `incremental_lanes`
    for `incremental` where the units are large (`lanes_instead`); then `beyond_shared` of
    that."""
    subsets = choose(n, k)
    name = REGISTRY.default(backend)
    for most, row in FASTEST.get(backend, ()):
        if (most is None or subsets <= most) and host.fits_by_kernel(REGISTRY.get(row, backend).policy, n):
            name = row
            break
    if lanes_instead(n, k):
        name = LARGE_UNITS.get(name, name)
    return beyond_shared(name, backend, n, k, limit)


def lanes_instead(n: int, k: int) -> bool:
    """Whether a default that would run `incremental` runs `incremental_lanes`: k >= 5, units
    of n(n-1)/(k(k-1)) >= `LANES_FROM_UNIT` subsets on average (C(n, k) over its C(n-2, k-2)
    units), n within the lanes kernel's 32 x `host.LANE_SLOTS`, and not on numba's simulator."""
    return (k >= 5 and n <= 32 * host.LANE_SLOTS and not device.on_simulator()
            and n * (n - 1) >= LANES_FROM_UNIT * k * (k - 1))


def beyond_shared(name: str, backend: str, n: int, k: int, limit: int | None = None) -> str:
    """`name`, or `BEYOND_SHARED` where `name` copies Q into shared memory and its layout at n
    (with its launch parameters) does not fit a block's shared memory: `limit` bytes, or where
    it is `None` this device's, asked only for layouts over the 48 KiB every CUDA GPU gives
    (`host.fits_shared`)."""
    v = REGISTRY.get(name, backend)
    if (v.policy is None or v.policy.kernel is None
            or host.fits_shared(v.policy, n, k, v.launch_params(), limit)):
        return name
    return BEYOND_SHARED


def default_choice(n: int, k: int, variant: str | None = None, backend: str | None = None, *,
                   limit: int | None = None) -> tuple[str, str]:
    """The concrete `(variant, backend)` a search of C(n, k) subsets runs, for the arguments
    the caller gave (`None`: not named). The one place the defaults are decided:

    * no backend and no variant: `default_backend()` (CUDA C where it runs, else numba) with
      `fastest(backend, n, k)`'s variant for the size (the measured table `FASTEST`, and
      `incremental_lanes` where its units are large: `lanes_instead`);
    * no backend, a variant: that variant on the default backend, or on the backend that has
      it (`cpu_parallel`: `"cpu"`);
    * a backend and no variant: the backend's default (`DEFAULTS`);
    * both: unchanged.

    A default (no variant named) that would copy Q into more shared memory than this device
    gives a block becomes `BEYOND_SHARED` (`incremental_global`), on the same backend.
    `limit` (bytes per block) is the shared memory to assume instead of asking this device: a
    process that must not open a CUDA context passes sm_90's (`host.SM90_SHARED_OPTIN`: H100,
    H200), a Dask client its workers' smallest
    ([`gpulab.distributed.workers_shared_limit`][gpulab.distributed.workers_shared_limit]).
    """
    if backend is None:
        backend = default_backend()
        if variant is None:
            return fastest(backend, n, k, limit), backend
        if variant not in REGISTRY.names(backend):
            backend = next((v.backend for v in REGISTRY if v.name == variant), backend)
    return variant or beyond_shared(REGISTRY.default(backend), backend, n, k, limit), backend


def cuda_builds() -> list[tuple[str, dict]]:
    """Every (source, defines) configuration compiled for the NVRTC check: one per SUBSET_K."""
    return [(host.SOURCE, {"SUBSET_K": K}) for K in CHECK_KS]




def ptx_targets() -> list[tuple[str, object, str]]:
    """Every numba kernel with the signatures the host code launches (for the PTX check,
    `gpulab.compilecheck`)."""
    import numpy as np

    from gpulab.subset import kernels_numba as kn

    out = [("subset_global", kn.subset_global, kn.SIG_GLOBAL), ("subset_shared", kn.subset_shared, kn.SIG_SHARED),
           ("subset_constant_local", kn.constant_local_kernel(np.linspace(0, 1, 8128)), kn.SIG_CONSTANT),
           ("final_argmin", kn.final_argmin, kn.SIG_FINAL)]
    for dt in ("float64", "float32"):
        out.append((f"check_and_pack[{dt}]", kn.check_and_pack, kn.SIG_CHECKS.format(dt)))
        out.append((f"column_moments[{dt}]", kn.column_moments, kn.SIG_MOMENTS.format(dt)))
        out.append((f"correlation_pairs[{dt}]", kn.correlation_pairs, kn.SIG_PAIRS.format(dt)))
    for K in CHECK_KS:
        for warp, q_in, tag in ((False, "shared", ""), (True, "shared", ",warp"), (False, "global", ",global")):
            out.append((f"subset_incremental[K={K}{tag}]", kn.incremental_kernel(K, warp, q_in), kn.SIG_INCREMENTAL))
        out.append((f"subset_lanes[K={K}]", kn.lanes_kernel(K), kn.SIG_INCREMENTAL))
    return out

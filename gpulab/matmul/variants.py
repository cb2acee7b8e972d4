"""Chapter 1's variant registry: the optimization ladder, in the order the book climbs it."""

from __future__ import annotations

import numpy as np

from gpulab.launch import ceil_div
from gpulab.matmul import host
from gpulab.matmul.policy import MatmulPolicy
from gpulab.registry import Registry, Variant

# One register-tile shape for numba and CUDA C alike: a 128×128 tile of C per block of 256
# threads, each thread an 8×8 sub-tile; BK = 8 columns of A / rows of B per shared stage.
TILE_128 = dict(BM=128, BN=128, BK=8, TM=8, TN=8, PAD=4)
# numba's prefetch kernel measured fastest with 16×8 per thread (128 threads) in the H200 sweep
# (docs/benchmarks/matmul-numba-tuning-h200.json); CUDA C's with 8×8.
TILE_128_16X8 = dict(BM=128, BN=128, BK=8, TM=16, TN=8, PAD=4)

# How each kernel launches (policy.MatmulPolicy): the tile of C per block and per thread, the
# thread mapping, where B lives. The register tiles' shape comes from the parameters.
NAIVE = MatmulPolicy("matmul_naive", rows_on_x=True)  # x over rows: the uncoalesced mapping
COALESCED = MatmulPolicy("matmul_coalesced")  # x over columns
SHARED = MatmulPolicy("matmul_shared", tile=("TILE", "TILE"))
CONSTANT = MatmulPolicy("matmul_constant", tile=(32, 8), rows_on_x=True, constant_b=True)
CONSTANT_SCATTERED = MatmulPolicy("matmul_constant_scattered", tile=(8, 32), constant_b=True)


def tiled(kernel: str) -> MatmulPolicy:
    """A register-tiled kernel: a BM×BN tile of C per block, TM×TN per thread."""
    return MatmulPolicy(kernel, tile=("BM", "BN"), per_thread=("TM", "TN"))


# (name, memory, lesson, numba policy, CUDA C policy, numba params, CUDA C params, teaching_only:
# a deliberately slow step, still measured)
_LADDER = [
    ("naive", ("global",), "one thread per output; lanes walk down a column of C, so warp loads are uncoalesced",
     NAIVE, NAIVE, {}, {}, True),
    ("coalesced", ("global",), "swap the thread mapping so the 32 lanes of a warp read 32 consecutive floats",
     COALESCED, COALESCED, {}, {}, False),
    ("shared", ("global", "shared"), "stage 16x16 tiles of A and B in shared memory: each value read from DRAM is reused 16 times",
     SHARED, SHARED, {"TILE": 16}, {"TILE": 16}, False),
    ("constant", ("global", "constant"), "a thin B in constant memory, every lane of a warp reading the same address (broadcast)",
     CONSTANT, CONSTANT, {}, {}, False),
    ("constant_scattered", ("global", "constant"), "the same with lanes reading different constant addresses: serialized, the lesson in what not to do",
     CONSTANT_SCATTERED, CONSTANT_SCATTERED, {}, {}, True),
    ("register", ("global", "shared", "registers"), "each thread computes an 8x8 block held in registers: 64 FMAs per 16 shared loads",
     tiled("matmul_register"), tiled("matmul_register"), TILE_128, TILE_128, False),
    ("prefetch", ("global", "shared", "registers"), "double-buffered shared tiles with the next tile prefetched into registers: one barrier per tile, loads hidden behind FMAs",
     tiled("matmul_prefetch"), tiled("matmul_prefetch"), TILE_128_16X8, TILE_128, False),
]

# Each backend's default (what a call naming a backend but no variant runs): the fastest
# measured. On both backends that is streamk (warptile whose last, part-empty wave is split
# along k): at every shape of the committed H200 runs that takes 0.1 ms or more it was the
# fastest, or within 2.5 % of it (docs/benchmarks/matmul-h200-fast.json and
# matmul-shapes-h200.json: 4096^3, 8192^3, 4099^3, 4000^3, 3001x2999x5003, 8191^3 ...;
# tests/matmul/test_matmul_defaults.py holds `default_variant` to the committed benchmarks).
# SCALAR_ROWS is the pick where K % 4 or N % 4 is not 0 (rows of A and B that are not whole
# float4s): streamk there too, since the H200 run that timed streamk (before it, cpasync in
# CUDA C and wide in numba). On numba's simulator a call naming no variant runs register:
# the 128-thread blocks of 128x128 tiles are slow to simulate thread by thread. No CPU variant.
DEFAULTS = {"numba": "streamk", "cuda-c": "streamk"}
FALLBACKS = {"numba": "register", "cuda-c": "register"}
SCALAR_ROWS = {"numba": "streamk", "cuda-c": "streamk"}
# --8<-- [start:fastest]
# Small products: where C has no more 128x128 tiles than half the GPU's SMs (8192x128 times
# 128x128: 64 tiles for 132 SMs), `small` (streamk with 64x64 tiles, 16 deep) gives four times the
# blocks and half the k-loop's trips. On an H200 it was as fast or faster than streamk in every
# turn at 8192x128x128, 512^3 and 1024^3 in both backends, and slower at 16384x128x128 (128 tiles)
# and 2048^3 (docs/benchmarks/ab-runs/matmul-small-tiles-h200.json).
SMALL = {"numba": "small", "cuda-c": "small"}
SMALL_TILES_PER_SM = 0.5  # `small` where C's 128x128 tiles <= this x the SMs
H200_SMS = 132  # the rule's SM count where no GPU is asked (the committed benchmarks' H100s and H200s: 132)


def fastest(backend: str, M: int, K: int, N: int, sm_count: int = H200_SMS) -> str:
    """The variant measured fastest on `backend` for an M×K by K×N product on a GPU of
    `sm_count` SMs (the table above: `SMALL` where C has at most `SMALL_TILES_PER_SM` × SMs
    tiles of 128×128, else `DEFAULTS`, or `SCALAR_ROWS` where K % 4 or N % 4 is not 0)."""
    tiles = ceil_div(M, WARP_TILE["WT_BM"]) * ceil_div(N, WARP_TILE["WT_BN"])
    if tiles <= SMALL_TILES_PER_SM * sm_count:
        return SMALL[backend]
    return SCALAR_ROWS[backend] if (K % 4 or N % 4) else DEFAULTS[backend]
# --8<-- [end:fastest]


def default_variant(backend: str, M: int, K: int, N: int) -> str:
    """What `gpulab.matmul.matmul` runs when no variant is named: `fastest(backend, M, K, N)`
    for this GPU's SMs where it can run here (its `unavailable_reason` is None), else
    the backend's default; on numba's simulator `FALLBACKS`."""
    from gpulab import device

    if device.on_simulator():
        return FALLBACKS[backend]
    name = fastest(backend, M, K, N, device.info().sm_count)
    return DEFAULTS[backend] if REGISTRY.get(name, backend).unavailable_reason() else name


def variant(name, backend, memory, lesson, policy, params, teaching_only=False) -> Variant:
    """A variant whose launch is `policy` (its `run` is the chapter's one launch path)."""
    return Variant(name, backend, memory, lesson, host.launcher(policy, backend), params=params, policy=policy,
                   teaching_only=teaching_only)


REGISTRY = Registry("matmul", defaults=DEFAULTS, fallbacks=FALLBACKS)
for name, memory, lesson, numba_policy, cuda_policy, numba_params, cuda_params, teaching in _LADDER:
    REGISTRY.add(variant(name, "numba", memory, lesson, numba_policy, numba_params, teaching))
    REGISTRY.add(variant(name, "cuda-c", memory, lesson, cuda_policy, cuda_params, teaching))

# Beyond the ladder. numba has no float2/float4, but a float64 shared array holds float pairs.
REGISTRY.add(variant("wide", "numba", ("global", "shared", "registers"),
                     "prefetch with 64-bit shared loads of float pairs (bit-cast through float64): half the load instructions",
                     tiled("matmul_wide"), TILE_128))

# Beyond the ladder, in CUDA C where the language gives direct control over vector types.
REGISTRY.add(variant("vec4", "cuda-c", ("global", "shared", "registers"),
                     "16-byte float4 loads from global and shared memory: a quarter of the load instructions",
                     tiled("matmul_vec4"), TILE_128))
# Warp tiling in both backends, one policy and one shape (WT_-prefixed so that one set of -D
# flags never reshapes two kernels of the .cu file). numba has no float4: its groups of 4 floats
# are 4 scalar loads (kernels_numba.warptile_kernel says which ones the compiler merges).
WARPTILE = MatmulPolicy("matmul_warptile", tile=("WT_BM", "WT_BN"), threads="WT_THREADS")
WARP_TILE = dict(WT_BM=128, WT_BN=128, WT_BK=8, WT_WM=64, WT_WN=64, WT_WNITER=2, WT_TM=4, WT_TN=4,
                 WT_THREADS=128, WT_MINBLOCKS=1, WT_APAD=4)
REGISTRY.add(variant("warptile", "cuda-c", ("global", "shared", "registers"),
                     "warp tiling + float4 + double buffering: each warp owns a sub-tile, so shared reads are warp-local and registers reused",
                     WARPTILE, WARP_TILE))
REGISTRY.add(variant("warptile", "numba", ("global", "shared", "registers"),
                     "warp tiling + double buffering as in CUDA C, float4 loads written as 4 scalar loads each",
                     WARPTILE, WARP_TILE))

# warptile + stream-K: the tiles of the last, part-empty wave shared along k by every block slot
# (2 blocks of 128 threads are resident per SM: 254 registers in CUDA C, 255 in numba; a
# stream-K block takes at least 16 k-tiles).
STREAMK = MatmulPolicy("matmul_streamk", tile=("WT_BM", "WT_BN"), threads="WT_THREADS", stream_k=True)
STREAMK_PARAMS = {**WARP_TILE, "SK_PER_SM": 2, "SK_MIN": 16}
for _backend in ("cuda-c", "numba"):
    REGISTRY.add(variant("streamk", _backend, ("global", "shared", "registers"),
                         "warptile + stream-K: the last wave's tiles split along k over every block slot, so the GPU is not half idle at the end",
                         STREAMK, STREAMK_PARAMS))

# streamk for small products: 64x64 tiles, 16 deep (the rest of warptile's shape: 4 warps of 32x32,
# 4x4 per lane in 2 sub-tiles). A thin product's 128x128 tiles give a block to half the SMs, and
# its short k-loop (16 trips of 8 at K = 128) waits for memory at every trip; these tiles give
# four times the blocks and half the trips (scripts/matmul_small_tiles.py swept the shapes).
# --8<-- [start:small]
SMALL_TILE = {**WARP_TILE, "WT_BM": 64, "WT_BN": 64, "WT_BK": 16, "WT_WM": 32, "WT_WN": 32}
SMALL_PARAMS = {**SMALL_TILE, "SK_PER_SM": 2, "SK_MIN": 16}
for _backend in ("cuda-c", "numba"):
    REGISTRY.add(variant("small", _backend, ("global", "shared", "registers"),
                         "streamk with 64x64 tiles 16 deep: four times the blocks and half the k-loop's trips, for products too small to give every SM a 128x128 tile",
                         STREAMK, SMALL_PARAMS))
# --8<-- [end:small]

# warptile's shape (CA_-prefixed: its own macros) fed by a cp.async pipeline of CA_STAGES shared
# stages, blocks rasterized CA_GROUP block rows at a time. Shape, depth and group: gpulab.matmul.tune.
CPASYNC = MatmulPolicy("matmul_cpasync", tile=("CA_BM", "CA_BN"), threads="CA_THREADS", min_cc=(8, 0))
REGISTRY.add(variant("cpasync", "cuda-c", ("global", "shared", "registers"),
                     "warptile fed by cp.async: global->shared copies in a 3-stage ring, no staging registers, zero-filled edges; blocks rasterized for L2 reuse",
                     CPASYNC, dict(CA_BM=128, CA_BN=128, CA_BK=8, CA_WM=64, CA_WN=64, CA_WNITER=2, CA_TM=4, CA_TN=4,
                                   CA_THREADS=128, CA_MINBLOCKS=1, CA_APAD=4, CA_STAGES=3, CA_GROUP=8)))

CONSTANT_VARIANTS = tuple(dict.fromkeys(v.name for v in REGISTRY if v.policy.constant_b))
LADDER_STEPS = tuple(step[0] for step in _LADDER)  # each in numba and in CUDA C


def cuda_builds() -> list[tuple[str, dict]]:
    """Every (source, defines) configuration the CUDA C variants compile (for the NVRTC check)."""
    builds = REGISTRY.cuda_builds(host.SOURCE, lambda v: [host.KERNELS.cuda_defines(v.params)])  # streamk = warptile's
    # and streamk with its stream-K blocks first (WT_SK_FIRST=1: measured, not the default)
    return builds + [(host.SOURCE, host.KERNELS.cuda_defines({**STREAMK_PARAMS, "WT_SK_FIRST": 1}))]


def ptx_targets() -> list[tuple[str, object, str]]:
    """Every numba kernel of this chapter with the parameters the registry uses (for the PTX
    check, `gpulab.compilecheck`)."""
    from gpulab.matmul import kernels_numba as kn

    sig = kn.SIG
    csig = "void(float32[:, ::1], float32[:, ::1], int32, int32, int32)"
    sksig = sig[:-1] + ", float32[::1], int32[::1], int32, int32)"  # + workspace, arrivals, dp_tiles, sk_blocks
    B = np.ones((64, 64), np.float32)  # the constant-memory kernels are compiled with a B
    targets, seen = [], set()
    for v in REGISTRY.select(backend="numba"):
        p = {**v.params, host.CONSTANT_DATA: B} if v.policy.constant_b else v.params
        label = f"{v.policy.kernel}{v.params or ''}"
        if label not in seen:
            seen.add(label)
            targets.append((label, host.numba_kernel(v.policy.kernel, p),
                            csig if v.policy.constant_b else sksig if v.policy.stream_k else sig))
    return targets

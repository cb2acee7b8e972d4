"""Chapter 1's stream-K step: the schedule (on any machine) and the kernel (CUDA C, on a GPU).

The kernel is forced onto its stream-K path with small `SK_PER_SM` / `SK_MIN`, so that tiles
are split into many segments whose sums another block finishes; every case asserts that the
schedule it ran had stream-K blocks."""

import numpy as np
import pytest
from numba import cuda

import gpulab.matmul as mm
from gpulab import device
from gpulab.checking import float32_tolerance, poisoned, relative_error
from gpulab.errors import LimitError
from gpulab.launch import ceil_div
from gpulab.matmul import host
from gpulab.matmul.tune import _reference as float64_product  # on the GPU machine in float64 through CuPy
from gpulab.matmul.variants import REGISTRY
from tests.conftest import skip_unless_runnable


def _run(v, A, B, params):
    """C = A @ B by variant `v` with `params`, C poisoned first."""
    dA, dB = cuda.to_device(A), cuda.to_device(B)
    dC = cuda.to_device(poisoned((A.shape[0], B.shape[1]), np.float32))
    v.run(dA, dB, dC, B, params)()
    cuda.synchronize()
    return dC.copy_to_host()


def covering(tiles, k_tiles, slots, min_k):
    """Which blocks each tile's k-tiles go to under the schedule: {tile: [(block, k_lo, k_hi)]},
    walking the stream-K blocks' equal runs of units (the kernel's arithmetic, in Python)."""
    dp, sk = host.stream_k_schedule(tiles, k_tiles, slots, min_k)
    cover = {t: [(t, 0, k_tiles)] for t in range(dp)}
    units = (tiles - dp) * k_tiles
    for b in range(sk):
        u, end = units * b // sk, units * (b + 1) // sk
        while u < end:
            t, lo = divmod(u, k_tiles)
            hi = min(k_tiles, end - t * k_tiles)
            cover.setdefault(dp + t, []).append((dp + b, lo, hi))
            u = t * k_tiles + hi
    return dp, sk, cover


@pytest.mark.parametrize("tiles,k_tiles,slots,min_k", [
    (4096, 1024, 264, 16), (1024, 512, 264, 16), (1089, 513, 264, 16), (4224, 1024, 264, 16),
    (64, 16, 264, 16), (64, 128, 264, 16), (256, 256, 264, 16), (1, 1, 2, 1), (7, 3, 5, 1), (13, 97, 6, 4),
    (300, 2, 264, 1)])
def test_schedule_covers_every_k_tile_once(tiles, k_tiles, slots, min_k):
    dp, sk, cover = covering(tiles, k_tiles, slots, min_k)
    assert 0 <= sk <= slots and dp <= tiles
    assert sorted(cover) == list(range(tiles))
    for t, parts in cover.items():  # each tile's k-tiles: once each, in k order, blocks in order
        assert [lo for _, lo, _ in parts] == [0] + [hi for _, _, hi in parts[:-1]], (t, parts)
        assert parts[-1][2] == k_tiles
        assert [b for b, _, _ in parts] == sorted({b for b, _, _ in parts})
    if sk:
        per_block = {}
        for parts in cover.values():
            for b, lo, hi in parts:
                per_block.setdefault(b, []).append(hi - lo)
        sk_runs = [sum(v) for b, v in per_block.items() if b >= dp]
        assert max(sk_runs) - min(sk_runs) <= 1  # equal shares of the last wave
        assert min(sk_runs) >= min_k
        # at most two segments that are not whole tiles per block: slots 0 and 1 of its workspace
        assert all(sum(1 for n in v if n < k_tiles) <= 2 for b, v in per_block.items())


def test_schedule_leaves_full_waves_and_shallow_tails_alone():
    assert host.stream_k_schedule(4224, 1024, 264, 16) == (4224, 0)  # 16 whole waves
    assert host.stream_k_schedule(256, 256, 264, 16) == (256, 0)  # N = 2048: one wave 97 % full
    assert host.stream_k_schedule(64, 16, 264, 16) == (64, 0)  # thin: 64 blocks of 16 k-tiles
    dp, sk = host.stream_k_schedule(4096, 1024, 264, 16)  # N = 8192 on an H200: 15.5 waves
    assert (dp, sk) == (15 * 264, 264)


def test_threads_have_their_own_workspaces():
    """Two host threads on "the default stream" may be on two streams (per-thread default
    streams) running at once: each gets its own workspace."""
    import threading

    got = []
    worker = threading.Thread(target=lambda: got.append(host.stream_k_workspace(3, 64)))
    worker.start()
    worker.join()
    mine = host.stream_k_workspace(3, 64)
    assert got[0][0] is not mine[0] and got[0][1] is not mine[1]
    assert host.stream_k_workspace(3, 64)[1] is mine[1]  # and keeps it between calls


def test_no_split_past_the_grid_height_limit():
    """A tall thin C: 65,535 rows of tiles in warptile's grid; stream-K blocks would need more."""
    policy = REGISTRY.get("streamk", "numba").policy
    params = {**REGISTRY.get("streamk", "numba").params, "SK_MIN": 1}
    grid, extra = host.stream_k_launch(policy, params, 65535 * 128, 128, 256)  # M, N, K
    assert grid[1] <= host.GRID_Y_MAX
    assert (int(extra[2]), int(extra[3])) == (65535, 0)


@pytest.mark.parametrize("bad", [0, -1, 1.5, None])
def test_bad_stream_k_parameters_are_refused(bad):
    v = REGISTRY.get("streamk", "numba")
    with pytest.raises(LimitError, match="SK_PER_SM"):
        host.stream_k_launch(v.policy, {**v.params, "SK_PER_SM": bad}, 256, 256, 256)


@pytest.mark.parametrize("backend,first", [("numba", 1), ("cuda-c", 2), ("cuda-c", -1), ("cuda-c", True),
                                           ("cuda-c", 1.0), ("cuda-c", "1")])
def test_stream_k_blocks_first_only_where_the_kernel_has_it(backend, first):
    """WT_SK_FIRST changes the host's grid: numba's kernel, which always runs its whole tiles
    first, would compute garbage with it, so the launch refuses it (before any kernel is built)."""
    v = REGISTRY.get("streamk", backend)
    dA = dB = dC = cuda.device_array((256, 256), np.float32)
    with pytest.raises(LimitError, match="WT_SK_FIRST"):
        v.run(dA, dB, dC, None, {**v.params, "WT_SK_FIRST": first})


@pytest.mark.parametrize("first", [0, 1])
@pytest.mark.parametrize("M,N,K,per_sm,min_k", [(4096, 4096, 4096, 2, 16), (8192, 8192, 8192, 2, 16),
                                                (4099, 4099, 4099, 2, 16), (1000, 1001, 999, 1, 1),
                                                (65535 * 128, 128, 256, 2, 1)])
def test_the_grid_holds_every_block_once(first, M, N, K, per_sm, min_k):
    """The kernel's block-to-work mapping (WT_SK_FIRST 0: whole tiles, then the stream-K blocks;
    1: the stream-K blocks' rows, then the whole tiles'), walked in Python over the grid the host
    launches: every whole tile and every stream-K block once."""
    v = REGISTRY.get("streamk", "cuda-c")
    params = {**v.params, "SK_PER_SM": per_sm, "SK_MIN": min_k, "WT_SK_FIRST": first}
    (gx, gy), extra = host.stream_k_launch(v.policy, params, M, N, K)
    dp, sk = int(extra[2]), int(extra[3])
    assert gy <= host.GRID_Y_MAX and gx == ceil_div(N, params["WT_BN"])
    tiles, blocks = [], []
    sk_rows = ceil_div(sk, gx)
    for y in range(gy):
        for x in range(gx):
            i = y * gx + x
            if first:  # matmul_streamk's arithmetic with WT_SK_FIRST 1
                b = i if y < sk_rows else -1
                if b >= sk or (b < 0 and (y - sk_rows) * gx + x >= dp):
                    continue
                (blocks.append(b) if b >= 0 else tiles.append((y - sk_rows) * gx + x))
            elif i < dp + sk:
                (blocks.append(i - dp) if i >= dp else tiles.append(i))
    assert sorted(tiles) == list(range(dp)) and sorted(blocks) == list(range(sk))


# ----------------------------------------------------------------------------- numba's kernel, anywhere

# A small warp tiling (one warp of 32 lanes per 32×32 tile) so that numba's simulator runs
# many tiles quickly; the stream-K arithmetic does not depend on the tile's size.
SMALL_TILE = dict(WT_BM=32, WT_BN=32, WT_BK=8, WT_WM=32, WT_WN=32, WT_WNITER=1, WT_TM=4, WT_TN=4, WT_THREADS=32)
# (M, K, N, SK_PER_SM, SK_MIN); (160, 80, 32, 3, 1) on the simulator's one SM and (224, 80, 32, 3, 3) on a
# 132-SM GPU give a block a run that ends in one split tile and starts the next (its slots 0 and 1)
NUMBA_CASES = [(96, 200, 96, 4, 1), (33, 57, 70, 4, 1), (64, 80, 64, 3, 1), (65, 1, 63, 4, 1), (32, 8, 32, 1, 1),
               (160, 80, 32, 3, 1), (224, 80, 32, 3, 3)]


def _spans_two_split_tiles(M, K, N, per_sm, min_k):
    """Whether some stream-K block of this case holds parts of two tiles."""
    dp, sk, cover = covering(ceil_div(M, 32) * ceil_div(N, 32), ceil_div(K, 8), device.info().sm_count * per_sm, min_k)
    blocks = [b for parts in cover.values() if len(parts) > 1 for b, _, _ in parts]
    return len(blocks) != len(set(blocks))


def test_numba_cases_include_a_block_with_two_split_tiles():
    assert any(_spans_two_split_tiles(*case) for case in NUMBA_CASES)


@pytest.mark.parametrize("M,K,N,per_sm,min_k", NUMBA_CASES)
def test_numba_streamk_splits_tiles_and_matches_reference(M, K, N, per_sm, min_k, rng):
    v = REGISTRY.get("streamk", "numba")
    params = {**v.params, **SMALL_TILE, "SK_PER_SM": per_sm, "SK_MIN": min_k}
    tiles = ceil_div(M, 32) * ceil_div(N, 32)
    dp, sk = host.stream_k_schedule(tiles, ceil_div(K, 8), device.info().sm_count * per_sm, min_k)
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.standard_normal((K, N), dtype=np.float32)
    # twice: the arrival counts were set back to 0, and the sums' order is fixed
    results = [_run(v, A, B, params) for _ in range(2)]
    err = relative_error(results[0], mm.matmul_reference(A, B))
    assert err <= float32_tolerance(K), f"{(M, K, N, per_sm, min_k)}: relative error {err:.3g}"
    assert np.array_equal(results[0], results[1])
    if K > 8:  # more than one k-tile: the case is built to split tiles (on the simulator's 1 SM and on a GPU)
        assert sk > 0, (dp, sk)


# ----------------------------------------------------------------------------- on a GPU

SK = REGISTRY.get("streamk", "cuda-c")


# (M, K, N, SK_PER_SM, SK_MIN): the fast path (multiples of 128 and 8) and the guarded one,
# tiles split into two segments and into many (SK_MIN 1: a block may hold one k-tile of a
# tile), K not a multiple of the k-tile, one tile, more tiles than slots.
GPU_CASES = [(1024, 1024, 1024, 2, 16), (1024, 1024, 1024, 1, 1), (1000, 999, 1001, 2, 16),
             (129, 4099, 257, 1, 1), (128, 2048, 128, 3, 1), (2049, 257, 1023, 2, 4), (4096, 4096, 4096, 2, 16),
             (8192, 8192, 8192, 2, 16)]


@pytest.mark.parametrize("order", [{"WT_SK_FIRST": 0}, {"WT_SK_FIRST": 1}], ids=["whole-first", "sk-first"])
@pytest.mark.parametrize("M,K,N,per_sm,min_k", GPU_CASES)
def test_streamk_matches_reference_and_is_deterministic(M, K, N, per_sm, min_k, order, rng):
    skip_unless_runnable(SK)
    _split_matches_reference(SK, M, K, N, per_sm, min_k, rng, **order)


def _split_matches_reference(v, M, K, N, per_sm, min_k, rng, **extra):
    """Variant `v` forced to split (SK_PER_SM, SK_MIN) against float64, launched twice."""
    params = {**v.params, "SK_PER_SM": per_sm, "SK_MIN": min_k, **extra}
    tiles = ceil_div(M, params["WT_BM"]) * ceil_div(N, params["WT_BN"])
    slots = device.info().sm_count * per_sm
    dp, sk = host.stream_k_schedule(tiles, ceil_div(K, params["WT_BK"]), slots, min_k)
    if sk == 0:  # built for 132 SMs (H100 SXM, H200): elsewhere the last wave may be too full to split
        pytest.skip(f"on {device.info().sm_count} SMs this case's last wave is not split")
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.standard_normal((K, N), dtype=np.float32)
    C = _run(v, A, B, params)
    err = relative_error(C, float64_product(A, B))
    assert err <= float32_tolerance(K), f"{v.key} {(M, K, N, per_sm, min_k)}: relative error {err:.3g}"
    # the arrival counts were set back to 0, and segments are summed in k order: a second launch
    # gives the same bits
    assert np.array_equal(_run(v, A, B, params), C)


def test_streams_have_their_own_workspaces(rng):
    skip_unless_runnable(SK)
    params = {**SK.params, "SK_PER_SM": 1, "SK_MIN": 1}
    M = K = N = 512
    A = [rng.standard_normal((M, K), dtype=np.float32) for _ in range(2)]
    B = [rng.standard_normal((K, N), dtype=np.float32) for _ in range(2)]
    streams = [cuda.stream(), cuda.stream()]
    dA = [cuda.to_device(a) for a in A]
    dB = [cuda.to_device(b) for b in B]
    dC = [cuda.to_device(poisoned((M, N), np.float32)) for _ in range(2)]
    launches = [SK.run(dA[i], dB[i], dC[i], B[i], params, stream=streams[i]) for i in range(2)]
    tile = params["WT_BM"] * params["WT_BN"]
    slots = device.info().sm_count * params["SK_PER_SM"]
    assert host.stream_k_schedule(16, 64, slots, 1)[1] > 0  # 512^3: 16 tiles of 64 k-tiles, split
    first, second = (host.stream_k_workspace(slots, tile, s) for s in streams)
    assert first[0] is not second[0] and first[1] is not second[1]
    for _ in range(5):  # both streams at once, many times
        for launch in launches:
            launch()
    cuda.synchronize()
    for i in range(2):
        err = relative_error(dC[i].copy_to_host(), mm.matmul_reference(A[i], B[i]))
        assert err <= float32_tolerance(K)


# `small` is the same kernel with 64x64 tiles 16 deep: its stream-K units are 16-deep k-tiles.
# (M, K, N, SK_PER_SM, SK_MIN): 512^3 as registered (16 tiles of 32 k-tiles: split), one tile split
# into many runs, the guarded path, a thin product.
SMALL_GPU_CASES = [(512, 512, 512, 2, 16), (64, 1024, 64, 2, 1), (1000, 999, 1001, 3, 1), (8191, 127, 129, 4, 1)]


@pytest.mark.parametrize("backend", ["cuda-c", "numba"])
@pytest.mark.parametrize("M,K,N,per_sm,min_k", SMALL_GPU_CASES)
def test_small_tiles_split_along_k_match_reference(backend, M, K, N, per_sm, min_k, rng):
    v = REGISTRY.get("small", backend)
    skip_unless_runnable(v)
    if device.on_simulator():
        pytest.skip("on a GPU (numba's simulator runs test_small_tiles_split_on_the_simulator)")
    _split_matches_reference(v, M, K, N, per_sm, min_k, rng)


def test_small_tiles_split_on_the_simulator(rng):
    """numba's `small` with its one 64x64 tile of five 16-deep k-tiles shared by three blocks
    (the simulator has one SM: SK_PER_SM 3 gives three slots), K not a multiple of 16."""
    v = REGISTRY.get("small", "numba")
    if not device.on_simulator():
        pytest.skip("the GPU runs test_small_tiles_split_along_k_match_reference")
    M, K, N = 64, 77, 61
    params = {**v.params, "SK_PER_SM": 3, "SK_MIN": 1}
    dp, sk = host.stream_k_schedule(1, ceil_div(K, 16), device.info().sm_count * 3, 1)
    assert (dp, sk) == (0, 3)
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.standard_normal((K, N), dtype=np.float32)
    C = _run(v, A, B, params)
    assert relative_error(C, mm.matmul_reference(A, B)) <= float32_tolerance(K)
    assert np.array_equal(_run(v, A, B, params), C)

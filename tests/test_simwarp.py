"""gpulab.simwarp: the simulator's warp intrinsics against results computed by hand.

A block of 48 threads has one full warp and one of 16 lanes, so partial warps are covered.
On a GPU the same kernels run on the hardware's intrinsics: the expectations are the hardware's.
"""

import time

import numpy as np
import pytest
from numba import cuda, int32, uint32

from gpulab import simwarp
from tests.conftest import ON_SIMULATOR

THREADS = 48
FULL = 0xFFFFFFFF


def present_mask(warp):
    lanes = min(32, THREADS - 32 * warp)
    return FULL if lanes == 32 else (1 << lanes) - 1


@cuda.jit
def shuffles(x, out):
    t = cuda.threadIdx.x
    lane = t % 32
    m = cuda.activemask()
    v = x[t]
    out[t, 0] = cuda.shfl_sync(m, v, 3)
    out[t, 1] = cuda.shfl_up_sync(m, v, 2)
    out[t, 2] = cuda.shfl_down_sync(m, v, 5)
    out[t, 3] = cuda.shfl_xor_sync(m, v, 1)
    out[t, 4] = cuda.shfl_sync(m, v, lane + 33)  # source lanes wrap modulo 32
    out[t, 5] = m


@cuda.jit
def votes(x, out):
    t = cuda.threadIdx.x
    m = cuda.activemask()
    pred = x[t] % 3 == 0
    out[t, 0] = cuda.ballot_sync(m, pred)
    out[t, 1] = cuda.all_sync(m, x[t] >= 0)
    out[t, 2] = cuda.any_sync(m, x[t] == 7)
    out[t, 3] = cuda.match_any_sync(m, x[t] % 4)
    mask, same = cuda.match_all_sync(m, x[t] // 1000)
    out[t, 4] = mask
    out[t, 5] = same
    out[t, 6] = cuda.lanemask_lt()
    cuda.syncwarp(m)
    out[t, 7] = cuda.eq_sync(m, x[t] < 1000)


def run(kernel, x, cols):
    out = cuda.to_device(np.full((THREADS, cols), -1, np.int64))
    kernel[1, THREADS](cuda.to_device(x), out)
    return out.copy_to_host()


def test_shuffles_match_hand_computed_results(rng):
    x = rng.integers(0, 1000, THREADS).astype(np.int64)
    out = run(shuffles, x, 6)
    for t in range(THREADS):
        warp, lane = divmod(t, 32)
        base, width = 32 * warp, min(32, THREADS - 32 * warp)
        own = x[t]

        def check(col, j):
            # a source lane outside the warp's range gives the caller's own value; one inside the
            # range that does not exist (a partial warp) is undefined on the hardware: not checked
            if j is None:
                assert out[t, col] == own, (t, col)
            elif j < width:
                assert out[t, col] == x[base + j], (t, col)

        check(0, 3)
        check(1, lane - 2 if lane >= 2 else None)
        check(2, lane + 5 if lane + 5 < 32 else None)
        check(3, lane ^ 1)
        check(4, (lane + 33) % 32)
        assert out[t, 5] & 0xFFFFFFFF == present_mask(warp)


def test_votes_match_hand_computed_results(rng):
    x = rng.integers(8, 1000, THREADS).astype(np.int64)
    x[5] = 7
    out = run(votes, x, 8)
    for t in range(THREADS):
        warp, lane = divmod(t, 32)
        base, width = 32 * warp, min(32, THREADS - 32 * warp)
        xs = x[base:base + width]
        assert out[t, 0] & 0xFFFFFFFF == sum(1 << j for j in range(width) if xs[j] % 3 == 0)
        assert out[t, 1] == 1
        assert out[t, 2] == int(warp == 0)  # lane 5 of warp 0 holds 7 (others may too, by chance)
        assert out[t, 3] & 0xFFFFFFFF == sum(1 << j for j in range(width) if xs[j] % 4 == x[t] % 4)
        assert out[t, 4] & 0xFFFFFFFF == present_mask(warp) and out[t, 5] == 1
        assert out[t, 6] == (1 << lane) - 1
        assert out[t, 7] == 1


def test_votes_can_fail(rng):
    """A check that cannot fail proves nothing: a value the other lanes do not share breaks match_all."""
    x = rng.integers(0, 1000, THREADS).astype(np.int64)
    x[3] = 5000
    out = run(votes, x, 8)
    assert out[0, 4] == 0 and out[0, 5] == 0 and out[0, 7] == 0
    assert out[40, 4] & 0xFFFFFFFF == present_mask(1) and out[40, 5] == 1


@pytest.mark.skipif(not ON_SIMULATOR, reason="the shim exists on the simulator only")
def test_the_shim_is_installed_by_default():
    assert simwarp.installed()
    from numba.cuda.simulator.kernelapi import FakeCUDAModule

    assert all(hasattr(FakeCUDAModule, name) for name in simwarp.INTRINSICS)


# --8<-- [start:mask_widths]
@cuda.jit
def mask_widths(out):
    """What chapter 4's ballot ranking did: a mask mixed with a uint32. numba-cuda types the
    mask as int32, so with lane 31 voting the mix widens to int64 with the sign copied into the
    high 32 bits; uint32(mask) keeps it 32 bits wide."""
    t = cuda.threadIdx.x
    mask = cuda.ballot_sync(FULL, True)  # every lane votes: lane 31's bit is set
    out[t, 0] = cuda.popc(mask)
    out[t, 1] = cuda.popc(mask ^ uint32(0))  # int32 ^ uint32 -> int64, sign-extended
    out[t, 2] = cuda.popc(uint32(mask) ^ uint32(0))
    out[t, 3] = cuda.popc(cuda.match_any_sync(FULL, 1) ^ uint32(0))


def test_masks_have_numba_types_on_gpu_and_simulator():
    """Run on the simulator AND on the GPU with the same expectations: the simulator's masks
    must behave as the compiled ones do (numba-cuda 0.30: int32), or it hides such bugs."""
    out = cuda.to_device(np.full((32, 4), -1, np.int64))
    mask_widths[1, 32](out)
    got = out.copy_to_host()
    assert (got[:, 0] == 32).all() and (got[:, 2] == 32).all()
    assert (got[:, 1] == 64).all(), "numba-cuda's ballot_sync mask is no longer int32: update gpulab.simwarp"
    assert (got[:, 3] == 64).all()
# --8<-- [end:mask_widths]


@cuda.jit
def neighbours(out):
    s = cuda.shared.array(64, int32)
    t = cuda.threadIdx.x
    s[t] = t
    cuda.syncthreads()
    out[cuda.blockIdx.x, t] = s[(t + 1) % 64]


@pytest.mark.skipif(not ON_SIMULATOR, reason="the simulator's shared arrays")
def test_a_blocks_threads_share_one_shared_array_when_they_race(monkeypatch):
    """numba-cuda's simulator creates a block's shared array in two steps (look up, then store);
    a thread switch between them gave two threads of one block two arrays (a scan read garbage,
    CI 2026-11-27). The switch is forced here, in every thread, by a look-up that sleeps: numba's
    own method then splits the block (the premise), gpulab's keeps one array."""
    from numba.cuda.simulator import kernelapi

    class SlowLookup(dict):
        def get(self, key, default=None):
            found = super().get(key, default)
            time.sleep(0.02)  # the other threads run between this thread's look-up and its store
            return found

    real_init = kernelapi.FakeCUDAShared.__init__

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        self._allocations = SlowLookup()

    monkeypatch.setattr(kernelapi.FakeCUDAShared, "__init__", init)
    want = np.tile((np.arange(64) + 1) % 64, (2, 1))
    for method, shared in ((simwarp._numba_shared_array, False), (simwarp._shared_array, True)):
        monkeypatch.setattr(kernelapi.FakeCUDAShared, "array", method)
        out = np.full((2, 64), -1, np.int32)
        neighbours[2, 64](out)
        assert np.array_equal(out, want) == shared, (method, out)

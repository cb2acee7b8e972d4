"""The ruling set's pick (`pick_splitters`) on its own, both backends: a warp's segment of
WARP · PICK_ITEMS edges appended with one atomic, the first round writing every owner.

Premise: each case fixes the splitters by the hash itself (numpy's `mix32` against the
threshold), so every round below has splitters to find; sizes around a segment's edges (1,
segment − 1, segment, segment + 1, a prime, several segments) with a random seed each run."""

from __future__ import annotations

import numpy as np
import pytest

from gpulab.euler import generators as gen
from gpulab.euler.host import ROUND
from gpulab.euler.kernels_numba import PICK_ITEMS
from gpulab.euler.variants import REGISTRY
from gpulab.launch import ceil_div, u32
from gpulab.launch import i32 as _i
from tests.conftest import skip_unless_runnable

NONE = -1
POISON = -7


def _plan(backend, n):
    v = REGISTRY.get("ruling_set", backend)
    skip_unless_runnable(v)
    return v.run(n + 1, v.launch_params())


def _pick(plan, own, n, thresh, seed, scale, first, slot, grid=None):
    args = (own, _i(n), u32(thresh), u32(seed), plan.buf("spl"), plan.ctr, _i(slot), _i(scale), _i(first))
    if grid is None:
        plan.launch("pick_splitters", ceil_div(n, PICK_ITEMS), *args)
    else:  # a fixed small grid: every warp loops over several segments
        plan.K("pick_splitters", (grid,), (plan.params["BLOCK"],), *args)
    return plan.read()


@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
@pytest.mark.parametrize("which", ["1", "seg-1", "seg", "seg+1", "prime", "many", "looping"])
def test_pick_writes_every_owner_and_appends_each_splitter_once(backend, which, rng):
    probe = _plan(backend, 1)
    block = probe.params["BLOCK"]
    warp = min(32, block)
    seg = warp * PICK_ITEMS
    grid = 2 if which == "looping" else None  # two blocks: 2·BLOCK/WARP warps, three segments each and a part
    n = {"1": 1, "seg-1": seg - 1, "seg": seg, "seg+1": seg + 1, "prime": 1009, "many": 7 * seg + 13,
         "looping": 3 * (2 * block // warp) * seg + 13}[which]
    plan = _plan(backend, n)
    scale = int(rng.choice([1, 4]))
    ids = np.arange(n, dtype=np.uint64)
    for _ in range(50):  # a seed whose hash picks at least one splitter and leaves at least one edge (n > 1)
        seed = int(rng.integers(1 << 32))
        h = gen.mix32((ids ^ seed).astype(np.uint32))
        thresh = int(np.sort(h)[max(0, n // 4 - 1)])  # about a quarter of the edges
        pick = h <= thresh
        if pick.any() and (n == 1 or not pick.all()):
            break
    else:
        pytest.fail("no seed in 50 picked some but not all edges")
    own = plan.buf("owner")
    own[:n].copy_to_device(np.full(n, POISON, np.int32))  # the first round must write every owner
    plan.buf("spl")[:n].copy_to_device(np.full(n, POISON, np.int32))
    plan.set_ctr(0)
    plan.preset(ROUND, 0)
    c = _pick(plan, own, n, thresh, seed, scale, 1, ROUND, grid)
    total = int(c[0])
    assert total == int(pick.sum()) and int(c[ROUND]) == n
    spl = plan.buf("spl")[:total].copy_to_host()
    assert np.array_equal(np.sort(spl), np.flatnonzero(pick))  # each splitter once
    got = own[:n].copy_to_host()
    assert np.array_equal(got[~pick], np.full(int((~pick).sum()), NONE))
    assert np.array_equal(got[spl], np.arange(total, dtype=np.int32) * scale)  # a splitter owns its slot

    # a later round: only the edges still NONE count and can be picked, appended after the first
    left = np.flatnonzero(~pick)
    if left.size == 0:
        return
    got[left[: left.size // 2]] = 3 * scale  # half of them owned since
    own[:n].copy_to_device(got)
    free = got == NONE
    seed2 = int(rng.integers(1 << 32))
    h2 = gen.mix32((ids ^ seed2).astype(np.uint32))
    # about half the free edges (all of them when a single one is free): the hash decides here too
    thresh2 = int(np.sort(h2[free])[int(free.sum()) // 2])
    plan.preset(ROUND + 1, 0)
    c = _pick(plan, own, n, thresh2, seed2, scale, 0, ROUND + 1, grid)
    pick2 = free & (h2 <= thresh2)
    assert pick2.any() and (int(free.sum()) < 3 or not pick2[free].all())  # the premise: some, not all
    assert int(c[ROUND + 1]) == int(free.sum()) and int(c[0]) == total + int(pick2.sum())
    spl2 = plan.buf("spl")[total:int(c[0])].copy_to_host()
    assert np.array_equal(np.sort(spl2), np.flatnonzero(pick2))
    after = own[:n].copy_to_host()
    assert np.array_equal(after[spl2], (total + np.arange(spl2.size, dtype=np.int32)) * scale)
    rest = np.ones(n, bool)
    rest[spl2] = False
    assert np.array_equal(after[rest], got[rest])  # nothing else written


def test_a_block_that_is_not_whole_warps_is_refused_on_a_gpu():
    from gpulab.errors import LimitError
    from tests.conftest import ON_SIMULATOR

    if ON_SIMULATOR:
        pytest.skip("the simulator's blocks are 8 lanes on purpose")
    v = REGISTRY.get("ruling_set", "numba")
    with pytest.raises(LimitError, match="BLOCK = 48: a multiple of 32"):
        v.run(10, v.launch_params({"BLOCK": 48}))

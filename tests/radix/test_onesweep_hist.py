"""The one-sweep histogram kernel (`onesweep_hist`, numba's and on a GPU also CUDA C's) on its own:
full tiles take the loads-first path without bounds checks, the last partial tile the checked one; a grid smaller than the number
of tiles makes each block walk several tiles. Its counts must equal numpy's bincount of every
digit, for all passes or only the first few; what lies past the first `passes` rows of `hist`
(the later rows, and the pass flags the plan keeps after them) is never written.

Runs with the onesweep variant's simulator parameters (BLOCK=32, ITEMS=2, BITS=5: 64-key tiles,
7 passes) on the simulator and on a GPU alike; the CUDA C kernel through the sorts' kernel
provider (`gpulab.radix.host.provider`) where CUDA C runs.
"""

import numpy as np
import pytest
from numba import cuda

from gpulab.radix import host
from gpulab.radix.variants import REGISTRY
from tests.conftest import skip_unless_runnable

P = REGISTRY.get("onesweep", "numba").sim_params
BLOCK, ITEMS, BITS = P["BLOCK"], P["ITEMS"], P["BITS"]
TILE = BLOCK * ITEMS
R = 1 << BITS
PASSES = -(-32 // BITS)

# n: one key, a tile minus/plus one, one full tile, a prime, whole tiles and several plus a partial.
SIZES = [1, TILE - 1, TILE, TILE + 1, 131, 6 * TILE, 7 * TILE + 5]


def test_sim_params_are_the_small_ones():
    assert (BLOCK, ITEMS, BITS) == (32, 2, 5)
    assert 131 % TILE and 7 * TILE + 5 > 2 * TILE  # the prime and the last size end in a partial tile


@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
@pytest.mark.parametrize("passes", [PASSES, 3])
@pytest.mark.parametrize("n", SIZES)
def test_onesweep_hist_counts_equal_bincount(rng, n, passes, backend):
    skip_unless_runnable(REGISTRY.get("onesweep", backend))
    K = host.provider(backend, {**P, "PAIRS": 0}, 0)
    keys = rng.integers(0, 2**32, n, dtype=np.uint32)
    tiles = -(-n // TILE)
    grid = max(1, tiles // 2)  # fewer blocks than tiles (from 2 tiles on): the tile-stride loop runs
    assert tiles == 1 or grid < tiles
    SENTINEL = -7  # past the rows counted: must stay as it is
    want = np.full(PASSES * R + PASSES, SENTINEL, np.int32)  # the rows, then one flag per pass (as a plan's)
    for p in range(passes):
        want[p * R:(p + 1) * R] = np.bincount((keys >> np.uint32(p * BITS)) & np.uint32(R - 1), minlength=R)
    start = np.full(want.size, SENTINEL, np.int32)
    start[:passes * R] = 0
    hist = cuda.to_device(start)
    K("onesweep_hist", (grid,), (BLOCK,), cuda.to_device(keys), hist, np.int32(n), np.int32(passes))
    cuda.synchronize()
    got = hist.copy_to_host()
    np.testing.assert_array_equal(got, want)
    assert got[:R].sum() == n

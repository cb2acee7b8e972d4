"""incremental_lanes' walk (`kernels_numba.scan_lanes`) lane by lane, against `scan_chunk`.

On numba's simulator a device function is a Python function, so the 32 lanes of one warp can
be called one after the other and their answers merged as the block's argmin merges them.
That reaches what the end-to-end tests (n <= 11 on the simulator) cannot: lanes' second to
eighth slots (x = xb + lane + 32 s, s >= 1: units wider than 32, n up to 256), chunks that cut
a unit (the bounded walk) and chunks of whole units, ties between lanes (a tie-heavy Q, where
the lowest rank must win whichever lane holds it), and k from 1 to 16. The sums must be
`scan_chunk`'s bit for bit, the rank the same.
"""

import numpy as np
import pytest

from gpulab.subset import host
from gpulab.subset.combinatorics import binomial_table, choose, rank
from gpulab.subset.reference import scan_chunk, squared_packed
from tests.conftest import ON_SIMULATOR

pytestmark = pytest.mark.skipif(not ON_SIMULATOR, reason="calls device functions from Python: simulator only")


def corr(rng, n, ties: bool):
    """A symmetric unit-diagonal matrix: random entries, or two values only whose squares (and
    their sums) are exact in binary, so that many subsets share the smallest sum exactly."""
    A = rng.choice([0.25, 0.5], (n, n), p=[0.3, 0.7]) if ties else rng.uniform(-0.9, 0.9, (n, n))
    return np.tril(A, -1) + np.tril(A, -1).T + np.eye(n)


def warp(Q, T, n, k, start, count):
    """The warp's answer: every lane's (sum, rank), merged by (sum, then rank)."""
    from gpulab.subset import kernels_numba as kn

    c, P = np.zeros(k, np.int32), np.zeros(k)
    PX, g = np.zeros(kn.LANE_SLOTS), np.zeros(max(k - 2, 1))
    best = (np.inf, int(kn.RANK_NONE))
    for lane in range(32):
        v, r = kn.scan_lanes(Q, T, np.int32(n), k, np.uint64(start), np.uint64(count), c, P, PX, g, lane,
                             np.inf, kn.RANK_NONE)
        if (v, int(r)) < best:
            best = (v, int(r))
    return best


def expected(Q, T, n, k, start, count):
    v, r = scan_chunk(Q, T, n, k, np.uint64(start), np.uint64(count), np.zeros(k, np.int64), np.zeros(k))
    return v, int(r)


def unit_start(n, k, prefix):
    """The rank of a unit's first subset: prefix G, then its two smallest next indices."""
    last = prefix[-1] if prefix else -1
    return rank(n, k, (*prefix, last + 1, last + 2))


@pytest.mark.parametrize("ties", [False, True], ids=["random", "ties"])
def test_a_warp_gives_scan_chunks_answer(rng, ties):
    for _ in range(6):
        k = int(rng.choice([1, 2, 3, 4, 5, 6]))
        n = int(rng.integers(max(k, 80), 257))
        Q, T = squared_packed(corr(rng, n, ties)), binomial_table(n, k)
        total = choose(n, k)
        chunks = []
        if k >= 3:
            G = tuple(range(k - 2))  # the first unit: rows x = k-2 .. n-2, so every slot s < (n-k+1)/32
            wide = unit_start(n, k, G)
            chunks.append((wide, choose(n - k + 2, 2)))  # the whole unit: the walk without bounds
            deep = rank(n, k, (*G, k + 68, k + 69))  # x = xb + 70: slot 2, in a chunk that cuts the unit
            chunks.append((deep - int(rng.integers(0, 40)), int(rng.integers(100, 400))))
            # whole units: the last few (small) ones, from the first subset of one to the end
            tail = unit_start(n, k, tuple(range(n - k - 1, n - 3)))
            chunks.append((tail, total - tail))
        else:
            chunks.append((0, min(total, 4000)))
        s = int(rng.integers(0, total))  # and a chunk anywhere, cut where it falls
        chunks.append((s, min(total - s, int(rng.integers(1, 700)))))
        for start, count in chunks:
            count = min(count, total - start)
            assert warp(Q, T, n, k, start, count) == expected(Q, T, n, k, start, count), (n, k, start, count)


def test_k_16_and_n_at_the_kernels_limit(rng):
    for n, k in ((32 * host.LANE_SLOTS, 3), (32 * host.LANE_SLOTS, 5), (60, 16)):
        Q, T = squared_packed(corr(rng, n, False)), binomial_table(n, k)
        total = choose(n, k)
        start = int(rng.integers(0, total - 3000))
        assert warp(Q, T, n, k, start, 3000) == expected(Q, T, n, k, start, 3000), (n, k, start)
        assert warp(Q, T, n, k, total - 700, 700) == expected(Q, T, n, k, total - 700, 700), (n, k)


def test_the_slot_count_is_one_number():
    """host.LANE_SLOTS (the plan's n limit), kernels_numba.LANE_SLOTS and kernels.cu's #define agree."""
    import re
    from pathlib import Path

    from gpulab.subset import kernels_numba as kn

    src = (Path(host.__file__).with_name("kernels.cu")).read_text()
    assert int(re.search(r"#define LANE_SLOTS (\d+)", src).group(1)) == kn.LANE_SLOTS == host.LANE_SLOTS


@pytest.mark.parametrize("k", [3, 5])
def test_a_tie_seen_later_in_a_lane_still_wins_by_rank(rng, k):
    """Every sum equal (all off-diagonal correlations 0.5), so the answer is the chunk's first
    rank. The chunk starts near the end of row x0 of a unit, and the lane that owns x0 also owns
    x0 + 32, whose first subset it meets earlier in its walk of j (j = x0 + 33 < the chunk's
    first j) though its rank is higher: only the rank comparison on equal sums gets it right."""
    n = int(rng.integers(120, 257))
    C = np.full((n, n), 0.5)
    np.fill_diagonal(C, 1.0)
    Q, T = squared_packed(C), binomial_table(n, k)
    G = tuple(range(k - 2))
    x0 = k - 2 + int(rng.integers(0, 32))  # slot 0 of some lane
    start = rank(n, k, (*G, x0, n - 2))
    count = rank(n, k, (*G, x0 + 32, x0 + 34)) - start  # through (x0 + 32, x0 + 33): seen first
    assert x0 + 33 < n - 2  # the premise: the higher-ranked tie comes first in the walk of j
    assert warp(Q, T, n, k, start, count) == expected(Q, T, n, k, start, count) == (expected(Q, T, n, k, start, 1)[0], start)

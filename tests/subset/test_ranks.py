"""Chapter 2's search over a part of the ranks (`least_correlated(..., ranks=(start, stop))`):
what `gpulab.distributed` hands each worker. Every variant, against a brute force over
exactly those ranks, on ranges aligned to nothing (one subset, across partitions and chunks,
the last rank), and the bad ranges rejected by name."""

import math
from itertools import combinations

import numpy as np
import pytest

import gpulab.subset as ss
from gpulab.errors import DtypeError, LimitError
from gpulab.subset import host
from gpulab.subset.combinatorics import choose
from gpulab.subset.variants import COMPARES_SUMS, REGISTRY
from tests.conftest import ON_SIMULATOR, device_only, skip_unless_runnable

# small partitions / chunks / grids: a range then starts and ends inside a partition and a chunk
SMALL = dict(PARTITION=13, CHUNK=5, MAX_BLOCKS=2)


def brute_force(C, k, start, stop, key="distance"):
    """(combination, distance, rank) of the best subset among the ranks [start, stop), by the
    obvious enumeration; `key` is what the variant compares ("distance", or "sum" for the
    incremental scans): ties then go to the lowest rank."""
    n = C.shape[0]
    Q = ss.squared_packed(C).tolist()
    best = None
    for m, c in enumerate(combinations(range(n), k)):
        if start <= m < stop:
            s = ss.reference.subset_sum(Q, c)
            cand = ((s if key == "sum" else math.sqrt(2.0 * s)), m, c)
            if best is None or cand[:2] < best[:2]:
                best = cand
    _, m, c = best
    return ss.SubsetResult(c, math.sqrt(2.0 * ss.reference.subset_sum(Q, c)), m)


def ranges(total, rng):
    """One subset at each end, one inside, an unaligned stretch, everything."""
    a = int(rng.integers(0, total - 1))
    b = int(rng.integers(a + 1, total + 1))
    return [(0, 1), (total - 1, total), (a, a + 1), (a, b), (1, total - 1) if total > 2 else (0, total), (0, total)]


VARIANTS = [v for v in REGISTRY if not (ON_SIMULATOR and v.backend == "cuda-c")]


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.key)
@pytest.mark.parametrize("nk", [(9, 4), (11, 3)], ids=lambda nk: f"n{nk[0]}k{nk[1]}")
def test_a_range_is_the_reference_restricted_to_it(variant, nk, rng):
    skip_unless_runnable(variant)
    n, k = nk
    C = ss.correlation(rng.standard_normal((n + 5, n)))
    key = "sum" if variant.name in COMPARES_SUMS else "distance"
    params = SMALL if variant.backend != "cpu" else dict(CHUNK=5)
    for start, stop in ranges(choose(n, k), rng):
        got = ss.least_correlated(C, k, variant.name, variant.backend, params=params, ranks=(start, stop))
        ref = brute_force(C, k, start, stop, key)
        assert (got.rank, got.combination, got.distance) == (ref.rank, ref.combination, ref.distance), \
            (variant.key, (start, stop), got, ref)
        assert start <= got.rank < stop


def test_the_whole_range_is_the_default(rng):
    C = ss.correlation(rng.standard_normal((20, 10)))
    assert ss.least_correlated(C, 4, ranks=(0, choose(10, 4))) == ss.least_correlated(C, 4)


def test_a_range_of_device_input_stays_on_the_device(rng):
    C = ss.correlation(rng.standard_normal((20, 10)))
    got = ss.least_correlated(device_only(C), 4, params=SMALL, ranks=(17, 150))
    key = "sum" if ss.default_choice(10, 4)[0] in COMPARES_SUMS else "distance"  # the default, by the machine
    assert got == brute_force(C, 4, 17, 150, key)


def test_ties_inside_a_range_go_to_its_lowest_rank():
    """Every subset has the same distance: the range's first rank must win (not rank 0, which is outside)."""
    n, k = 9, 3
    C = np.full((n, n), 0.3)
    np.fill_diagonal(C, 1.0)
    for v in ("incremental", "shared", "global"):
        got = ss.least_correlated(C, k, v, params=SMALL, ranks=(23, 61))
        assert got.rank == 23 and got.combination == ss.unrank(n, k, 23), (v, got)


def test_a_wrong_range_would_be_caught(rng):
    """The brute force is sharp: the best of a range generally differs from the global best."""
    n, k = 11, 3
    C = ss.correlation(rng.standard_normal((16, n)))
    best = ss.least_correlated(C, k)
    total = choose(n, k)
    # the ranks after the best, or before it when the best is the last subset (1 draw in 165)
    rest = (best.rank + 1, total) if best.rank + 1 < total else (0, best.rank)
    got = ss.least_correlated(C, k, ranks=rest)
    assert rest[0] <= got.rank < rest[1] and got.rank != best.rank and got.distance >= best.distance


@pytest.mark.parametrize("ranks,error,pattern", [
    ((5, 5), LimitError, r"ranks = \(5, 5\) is not a non-empty range inside \[0, C\(9, 4\) = 126\)"),
    ((7, 3), LimitError, r"not a non-empty range"),
    ((-1, 3), LimitError, r"not a non-empty range"),
    ((0, 127), LimitError, r"inside \[0, C\(9, 4\) = 126\)"),
    ((0,), DtypeError, r"ranks must be a pair"),
    (5, DtypeError, r"ranks must be a pair"),
    ((0.0, 3), DtypeError, r"ranks must be two integers"),
    ((True, 3), DtypeError, r"ranks must be two integers"),
])
@pytest.mark.parametrize("variant", ["incremental", "shared", "cpu_parallel", "reference"])
def test_bad_ranges_are_rejected_by_name(ranks, error, pattern, variant, rng):
    C = ss.correlation(rng.standard_normal((14, 9)))
    backend = "cpu" if variant in ("cpu_parallel", "reference") else "numba"
    with pytest.raises(error, match=pattern):
        ss.least_correlated(C, 4, variant, backend, ranks=ranks)


def test_rank_range_accepts_numpy_integers():
    assert host.rank_range(9, 4, (np.uint64(3), np.int64(9))) == (3, 9)
    assert host.rank_range(9, 4, None) == (0, 126)


def test_the_reference_limit_counts_the_range_not_the_problem(rng):
    """A few ranks of a problem far beyond the itertools limit are within reach of the reference."""
    n, k = 60, 6  # C(60, 6) = 50 063 860
    C = ss.correlation(rng.standard_normal((70, n)))
    start = choose(n, k) - 40
    got = ss.least_correlated(C, k, "reference", "cpu", ranks=(start, start + 30))
    inc = ss.least_correlated(C, k, "cpu_parallel", "cpu", ranks=(start, start + 30))
    assert got.rank == inc.rank and start <= got.rank < start + 30
    with pytest.raises(LimitError, match=r"the ranks \[0, 3000001\) is over the itertools reference's limit"):
        ss.least_correlated(C, k, "reference", "cpu", ranks=(0, 3_000_001))

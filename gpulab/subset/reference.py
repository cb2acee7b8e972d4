"""CPU side of chapter 2: data (correlations, synthetic and CSV returns), the exact reference
search with `itertools`, and the fast CPU baseline (numba `njit(parallel=True)`).

[`correlation`][gpulab.subset.reference.correlation] and
[`squared_packed`][gpulab.subset.reference.squared_packed] also take device arrays and compute
on the device; the searches here are CPU code: a device array given to them is copied to the
host first.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from gpulab.errors import LimitError, ShapeError
from gpulab.subset.combinatorics import binomial_table, choose, pack, rank_range, unrank


@dataclass(frozen=True)
class SubsetResult:
    """The least-correlated subset: its indices, ||C_S - I||_F, and its lexicographic rank."""

    combination: tuple[int, ...]
    distance: float
    rank: int


# ----------------------------------------------------------------------------- data


def correlation(returns):
    """Pearson correlation matrix (n×n, float64) of a T×n matrix of host returns (one column per
    strategy), in numpy.

    The result is made exactly symmetric with an exact unit diagonal, which the search checks.
    [`gpulab.subset.correlation`][gpulab.subset.host.correlation] also takes returns that live
    on the device.
    """
    R = np.asarray(returns, dtype=np.float64)
    if R.ndim != 2:
        raise ShapeError(f"returns must be a 2-D T×n matrix (days × strategies), got shape {R.shape}")
    T, n = R.shape
    if T < 2:
        raise ShapeError(f"returns has {T} row(s); a correlation needs at least 2 days")
    if not np.all(np.isfinite(R)):
        raise ShapeError("returns contain NaN or inf")
    sd = R.std(axis=0)
    flat = np.flatnonzero(sd == 0)
    if flat.size:
        raise ShapeError(f"strategies {flat.tolist()[:10]} have zero variance; their correlation is undefined")
    C = np.corrcoef(R, rowvar=False)
    C = np.atleast_2d(C)
    C = (C + C.T) / 2
    np.fill_diagonal(C, 1.0)
    return C


def synthetic_returns(T: int, n: int, *, factors: int = 2, strength: float = 0.6, planted=(), seed=None) -> np.ndarray:
    """T days of returns for n strategies from a factor model with controllable correlation.

    Each strategy loads on ``factors`` common factors with loadings drawn around ``strength``
    (0: independent strategies, near 1: strongly correlated ones), plus its own noise. The
    strategies listed in ``planted`` get no factor exposure: they are mutually (nearly)
    uncorrelated, so for k = len(planted) they are the optimum when ``strength`` is large.
    """
    rng = np.random.default_rng(seed)
    F = rng.standard_normal((T, factors))
    L = strength * (1.0 + 0.3 * rng.standard_normal((n, factors))) / math.sqrt(factors)
    L[list(planted)] = 0.0
    noise = rng.standard_normal((T, n))
    return 0.01 * (F @ L.T + noise)


def load_returns_csv(path, *, delimiter: str = ",") -> tuple[np.ndarray, list[str]]:
    """Returns from a CSV file: one column per strategy, one row per day, an optional header row.

    Returns ``(R, names)``; names are the header's fields, or ``s0, s1, ...`` without one.
    """
    with open(path) as f:
        first = f.readline()
    fields = [x.strip() for x in first.strip().split(delimiter)]
    try:
        [float(x) for x in fields]
        header, skip = None, 0
    except ValueError:
        header, skip = fields, 1
    R = np.loadtxt(path, delimiter=delimiter, skiprows=skip, ndmin=2, dtype=np.float64)
    names = header or [f"s{i}" for i in range(R.shape[1])]
    if len(names) != R.shape[1]:
        raise ShapeError(f"{path}: header has {len(names)} names but rows have {R.shape[1]} values")
    return R, names


# ----------------------------------------------------------------------------- the objective

# --8<-- [start:objective]
def subset_sum(Q, c) -> float:
    """Sum of squared correlations over the pairs of ``c``, in canonical order.

    ``Q`` is the packed strictly-lower triangle of C∘C (squares computed once, on the host):
    every subset then costs additions only, which no compiler can contract into FMAs, so the
    CPU and every GPU variant produce bit-identical sums. ``||C_S - I||_F = sqrt(2 * sum)``.
    """
    s = 0.0
    for b in range(1, len(c)):
        rb = c[b] * (c[b] - 1) // 2
        for a in range(b):
            s += Q[rb + c[a]]
    return s
# --8<-- [end:objective]


def squared_packed(C):
    """`Q = pack(C)**2` of a host C: what every kernel reads.
    [`gpulab.subset.squared_packed`][gpulab.subset.host.squared_packed] also packs a device C."""
    P = pack(C)
    return P * P


def distance_from_sum(s: float) -> float:
    return math.sqrt(2.0 * s)


# --8<-- [start:reference]
def least_correlated_reference(C: np.ndarray, k: int) -> SubsetResult:
    """Exhaustive search with `itertools.combinations` (lexicographic = rank order).

    Strict ``<`` keeps the first (lowest-rank) subset among ties.
    """
    from gpulab.arrays import to_host

    C = to_host(C)
    n = C.shape[0]
    Q = squared_packed(C).tolist()
    best, best_rank, best_c = math.inf, -1, None
    for m, c in enumerate(itertools.combinations(range(n), k)):
        d = distance_from_sum(subset_sum(Q, c))
        if d < best:
            best, best_rank, best_c = d, m, c
    return SubsetResult(tuple(best_c), best, best_rank)
# --8<-- [end:reference]


def frobenius_distance(C: np.ndarray, combination) -> float:
    """``||C[S, S] - I||_F`` computed the obvious way with numpy (a cross-check of the packed sum)."""
    from gpulab.arrays import to_host

    idx = np.asarray(combination)
    S = to_host(C)[np.ix_(idx, idx)]
    return float(np.linalg.norm(S - np.eye(len(idx))))


# ----------------------------------------------------------------------------- the CPU baseline

# --8<-- [start:scan]
def scan_chunk(Q, T, n, k, start, count, c, P):
    """Best (sum, rank) over the ``count`` subsets of lexicographic ranks start, start+1, ...

    Incremental evaluation: ``P[b]`` holds the sum over the pairs inside c[0..b]; with the
    first k-1 indices fixed, each new last index j costs k-1 lookups (row j of the packed
    triangle) instead of k(k-1)/2. Compiled twice: ``numba.njit`` for the CPU baseline and
    ``cuda.jit(device=True)`` for the ``incremental`` kernels, so both walk the same order.
    ``start``/``count`` are uint64 (problems beyond 2**32 subsets).
    """
    # unrank `start` into c (T[r, a] = C(a, r))
    m = start
    x = 0
    for i in range(k):
        r = k - 1 - i
        while m >= T[r, n - 1 - x]:
            m -= T[r, n - 1 - x]
            x += 1
        c[i] = x
        x += 1
    # prefix sums over the pairs inside c[0..b], b <= k-2
    P[0] = 0.0
    for b in range(1, k - 1):
        rb = c[b] * (c[b] - 1) // 2
        s = P[b - 1]
        for a in range(b):
            s += Q[rb + c[a]]
        P[b] = s
    best = np.inf
    best_rank = start
    rank = start
    end = start + count
    one = end - end + 1  # a 1 of rank's type (uint64), without mixing signed and unsigned
    while True:
        base = P[k - 2] if k >= 2 else 0.0
        j = c[k - 1]
        while j < n and rank < end:
            # --8<-- [start:hot]
            rj = j * (j - 1) // 2
            s = base
            for a in range(k - 1):
                s += Q[rj + c[a]]
            if s < best:
                best = s
                best_rank = rank
            # --8<-- [end:hot]
            rank += one
            j += 1
        if rank >= end:
            break
        # next prefix in lexicographic order: the rightmost of c[0..k-2] that can still move.
        # Written with predicates over every position (no run-time array index) so that, when
        # k is a compile-time constant, c and P stay in registers.
        i = -1
        for t in range(k - 1):
            if c[t] != n - k + t:
                i = t
        if i < 0:
            break
        for t in range(k):
            if t == i:
                c[t] += 1
            elif t > i:
                c[t] = c[t - 1] + 1
        for b in range(1, k - 1):
            if b >= i:
                rb = c[b] * (c[b] - 1) // 2
                s = P[b - 1]
                for a in range(b):
                    s += Q[rb + c[a]]
                P[b] = s
    return best, best_rank
# --8<-- [end:scan]


_CPU = {}


def _cpu_kernels():
    if not _CPU:
        import numba

        scan = numba.njit(cache=False)(scan_chunk)

        @numba.njit(parallel=True, cache=False)
        def search(Q, T, n, k, base, stop, chunk, nchunks, best, best_rank):
            for t in numba.prange(nchunks):
                start = base + np.uint64(t) * chunk
                count = min(chunk, stop - start)
                c = np.empty(max(k, 1), np.int64)
                P = np.empty(max(k, 1), np.float64)
                s, r = scan(Q, T, n, k, start, count, c, P)
                best[t] = s
                best_rank[t] = r

        _CPU["search"] = search
    return _CPU["search"]


def least_correlated_cpu(Q: np.ndarray, n: int, k: int, chunk: int = 1 << 16, ranks=None) -> tuple[float, int]:
    """Fast CPU baseline: chunks of consecutive ranks in parallel (numba prange); returns (sum, rank).

    ``ranks=(start, stop)`` searches only those ranks (see `gpulab.subset.combinatorics.rank_range`)."""
    from gpulab.arrays import to_host

    Q = to_host(Q)
    start, stop = rank_range(n, k, ranks)
    search = _cpu_kernels()
    T = binomial_table(n, k)
    nchunks = -(-(stop - start) // chunk)
    best = np.empty(nchunks, np.float64)
    best_rank = np.empty(nchunks, np.uint64)
    search(Q, T, np.int64(n), np.int64(k), np.uint64(start), np.uint64(stop), np.uint64(chunk), np.int64(nchunks),
           best, best_rank)
    t = int(np.argmin(best))  # first minimum: chunks are in rank order, so the lowest rank wins ties
    return float(best[t]), int(best_rank[t])


def result_from(n: int, k: int, s: float, rank: int) -> SubsetResult:
    return SubsetResult(unrank(n, k, rank), distance_from_sum(s), int(rank))


# ----------------------------------------------------------------------------- the CPU variants


def cpu_parallel(Q, n, k, params, ranks=None):
    """The `run` of the `cpu_parallel` variant: [`least_correlated_cpu`][gpulab.subset.reference.least_correlated_cpu]
    over chunks of `params["CHUNK"]` ranks; `launch()` returns `(distance, rank)`."""
    chunk = params.get("CHUNK", 1 << 16)
    ranks = rank_range(n, k, ranks)

    def launch():
        s, r = least_correlated_cpu(Q, n, k, chunk=chunk, ranks=ranks)
        return math.sqrt(2.0 * s), r

    return launch


REFERENCE_LIMIT = 3_000_000


def cpu_reference(Q, n, k, params, ranks=None):
    """The `run` of the `reference` variant: every subset of the ranks, in itertools'
    lexicographic order, in pure Python (at most `REFERENCE_LIMIT` subsets)."""
    total = choose(n, k)
    start, stop = rank_range(n, k, ranks)
    if stop - start > REFERENCE_LIMIT:
        what = f"C({n}, {k}) = {total} subsets" if ranks is None else f"the ranks [{start}, {stop})"
        raise LimitError(f"{what} is over the itertools reference's limit of "
                         f"{REFERENCE_LIMIT} (pure Python: seconds per million subsets)")

    def launch():
        q = Q.tolist()
        best, best_rank = math.inf, -1
        first = unrank(n, k, start)  # the first subset of the range, then itertools' lexicographic order on
        subsets = itertools.islice(_lexicographic_from(n, k, first), stop - start)
        for m, c in enumerate(subsets, start):
            d = distance_from_sum(subset_sum(q, c))
            if d < best:
                best, best_rank = d, m
        return best, best_rank

    return launch


def _lexicographic_from(n: int, k: int, c):
    """The k-subsets of range(n) in lexicographic order, from ``c`` on (what
    `itertools.combinations` yields after it, without walking the ones before)."""
    c = list(c)
    while True:
        yield tuple(c)
        i = k - 1
        while i >= 0 and c[i] == n - k + i:
            i -= 1
        if i < 0:
            return
        c[i] += 1
        for t in range(i + 1, k):
            c[t] = c[t - 1] + 1

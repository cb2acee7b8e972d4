"""Combinations as numbers: exact binomials in uint64, lexicographic rank / unrank, packed storage.

Everything here runs on the CPU in plain Python integers (exact, checked against 2**64); the
device versions of [`unrank`][gpulab.subset.combinatorics.unrank] live in `gpulab.subset.kernels_numba` and
``kernels.cu`` and read a table built by [`binomial_table`][gpulab.subset.combinatorics.binomial_table].
"""

from __future__ import annotations

from functools import lru_cache
from math import gcd

import numpy as np

from gpulab.arrays import to_host
from gpulab.errors import DtypeError, LimitError

UINT64_MAX = 2**64 - 1


# --8<-- [start:choose]
@lru_cache(maxsize=65536)  # unrank asks for the same few hundred binomials on every answer
def choose(n: int, k: int) -> int:
    """C(n, k), exact, computed the way a uint64 kernel would: the alternating product.

    ``r = r * (n - k + i) / i`` for i = 1..k keeps every intermediate equal to C(n - k + i, i),
    an integer no larger than the result. Cancelling ``gcd(r, i)`` first makes the division
    exact before the multiplication, so no intermediate exceeds the result and overflow is
    detected exactly: [`LimitError`][gpulab.errors.LimitError] when C(n, k) does not fit in 64 bits.
    """
    n, k = int(n), int(k)
    if n < 0 or k < 0:
        raise LimitError(f"choose({n}, {k}): n and k must be non-negative")
    if k > n:
        return 0
    k = min(k, n - k)
    r = 1
    for i in range(1, k + 1):
        g = gcd(r, i)
        r //= g
        t = (n - k + i) // (i // g)  # exact: i/g divides (n-k+i) because C(n-k+i, i) is an integer
        if r > UINT64_MAX // t:
            raise LimitError(f"C({n}, {k}) does not fit in 64 bits (the limit is 2**64 - 1 = {UINT64_MAX} subsets)")
        r *= t
    return r
# --8<-- [end:choose]


# --8<-- [start:unrank]
def unrank(n: int, k: int, m: int) -> tuple[int, ...]:
    """The m-th (0-based) k-subset of {0, ..., n-1} in lexicographic order (the combinadic).

    Walk the candidates x = 0, 1, ...: the subsets that start with x (given what is already
    chosen) number C(n-1-x, r-1), with r elements still to choose. If m is smaller, x is the
    next element; otherwise skip all of them (m -= C(n-1-x, r-1)) and try x + 1.
    """
    total = choose(n, k)
    if not 0 <= m < total:
        raise LimitError(f"rank {m} is outside [0, C({n}, {k}) = {total})")
    out = []
    x = 0
    for i in range(k):
        r = k - i  # elements still to choose, this one included
        while True:
            c = choose(n - 1 - x, r - 1)
            if m < c:
                break
            m -= c
            x += 1
        out.append(x)
        x += 1
    return tuple(out)
# --8<-- [end:unrank]


def rank(n: int, k: int, combination) -> int:
    """Inverse of [`unrank`][gpulab.subset.combinatorics.unrank]: the lexicographic rank of a sorted k-subset of {0..n-1}."""
    c = [int(x) for x in combination]
    if len(c) != k or any(b <= a for a, b in zip(c, c[1:])) or (c and (c[0] < 0 or c[-1] >= n)):
        raise LimitError(f"{combination} is not a strictly increasing {k}-subset of 0..{n - 1}")
    m, prev = 0, -1
    for i, x in enumerate(c):
        for y in range(prev + 1, x):  # the subsets starting with y come before
            m += choose(n - 1 - y, k - 1 - i)
        prev = x
    return m


def binomial_table(n: int, k: int) -> np.ndarray:
    """``T[r, a] = C(a, r)`` for r in 0..k, a in 0..n, as uint64 (saturated at 2**64 - 1).

    Unranking a k-subset of n only ever reads entries no larger than C(n, k), so when
    [`choose`][gpulab.subset.combinatorics.choose] (n, k) fits, every entry a kernel reads is exact.
    """
    T = np.zeros((k + 1, n + 1), dtype=np.uint64)
    for a in range(n + 1):
        row = 1
        for r in range(min(a, k) + 1):
            T[r, a] = min(row, UINT64_MAX)
            row = row * (a - r) // (r + 1)
    return T


# --8<-- [start:packed]
def offset(i: int, j: int) -> int:
    """Index of C[i, j] (i > j) in the packed strictly-lower triangle: i(i-1)/2 + j."""
    if i < j:
        i, j = j, i
    if i == j:
        raise ValueError("the diagonal is not stored (it is 1 by definition)")
    return i * (i - 1) // 2 + j


def pack(C: np.ndarray) -> np.ndarray:
    """The strictly-lower triangle of C, row by row: n(n-1)/2 values, offset(i, j) = i(i-1)/2 + j.

    (On the host; a device C is copied there. The device twin is
    [`squared_packed`][gpulab.subset.reference.squared_packed], which also squares.)"""
    C = np.ascontiguousarray(to_host(C), dtype=np.float64)
    return C.ravel().take(lower_triangle(C.shape[0]))


@lru_cache(maxsize=8)
def lower_triangle(n: int) -> np.ndarray:
    """Where the strictly-lower triangle of an n×n C lies in `C.ravel()`, row by row
    ((1,0), (2,0), (2,1), (3,0) ...): kept per n (read-only), so a search called again and again
    does not recompute it."""
    rows, cols = np.tril_indices(n, -1)
    flat = (rows * n + cols).astype(np.int32 if n * n < 2**31 else np.int64)  # int32: half the memory
    flat.flags.writeable = False
    return flat


def gather(P: np.ndarray, combination) -> np.ndarray:
    """The packed entries of the submatrix for a sorted combination, in canonical order.

    Canonical order: pairs (c[a], c[b]) grouped by b = 1..k-1, a = 0..b-1 inside each group.
    Every variant sums in this order, so all of them produce bit-identical sums.
    """
    c = list(combination)
    return np.array([P[offset(c[b], c[a])] for b in range(1, len(c)) for a in range(b)], dtype=np.float64)
# --8<-- [end:packed]


# --8<-- [start:rank_range]
def rank_range(n: int, k: int, ranks=None) -> tuple[int, int]:
    """The ranks ``[start, stop)`` a search covers: all C(n, k) subsets when ``ranks`` is None,
    else the non-empty sub-range ``0 <= start < stop <= C(n, k)`` it names.

    Any range works, aligned to nothing: every variant unranks its first subset, so a search
    over part of the ranks is the same search with another first and last rank. That is what
    lets [`gpulab.distributed`][gpulab.distributed] hand ranges to different GPUs.
    """
    total = choose(n, k)
    if ranks is None:
        return 0, total
    try:
        start, stop = ranks
    except (TypeError, ValueError):
        raise DtypeError(f"ranks must be a pair (start, stop), got {ranks!r}") from None
    if any(isinstance(x, bool) or not isinstance(x, (int, np.integer)) for x in (start, stop)):
        raise DtypeError(f"ranks must be two integers (start, stop), got {ranks!r}")
    start, stop = int(start), int(stop)
    if not 0 <= start < stop <= total:
        raise LimitError(f"ranks = ({start}, {stop}) is not a non-empty range inside [0, C({n}, {k}) = {total})")
    return start, stop
# --8<-- [end:rank_range]
